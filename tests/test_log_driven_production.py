"""The log-driven spec's production mechanisms step by step: new-LAI reproposals,
lease changes with writes in flight, lease commands through the proposal buffer,
lease extensions and the timestamp cache after a lease change (reference §2.9, §2.5,
§6). Each test plays a scenario action by action and checks the state it reaches."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from checker.engines.explicit.bfs import BfsOptions, check
from checker.errors import SpecError
from checker.models import build_machine, load_model
from spec.log_driven import LOG_DRIVEN
from tests import scenarios

play = partial(scenarios.play, LOG_DRIVEN)
enabled_after = scenarios.enabled_after
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


REPRO = {"nodes": 2, "keys": 1, "writes": 2, "reads": 0, "max_ts": 4, "target": 1,
         "reproposals": 1}
# w1 and w2 are flushed at LAIs 1 and 2; Raft appends w2 first, so n1 accepts w2 and
# then rejects w1 for its LAI
REORDERED = ["flush(g=0, w=0)", "flush(g=0, w=1)", "append(g=0, w=1)", "append(g=0, w=0)",
             "apply(g=0, n=0)", "apply(g=0, n=0)"]


def _evaluate_both(c0: int, c1: int) -> list[str]:
    return [f"evaluate(g=0, w=0, k=a, c={c0})", f"evaluate(g=0, w=1, k=a, c={c1})",
            "finish(g=0, w=0)", "finish(g=0, w=1)"]


def test_a_write_rejected_for_its_lai_is_tracked_and_flushed_again():
    s = play(REPRO, _evaluate_both(3, 3) + REORDERED
             + ["flush(g=0, w=0)", "append(g=0, w=0)", "apply(g=0, n=0)"])
    rejected = s[10]
    assert not rejected["accepted"][0] and rejected["wphase"][0] == "buffered"
    assert rejected["buf"][0][:rejected["buflen"][0]] == [0]
    assert rejected["tb_ts"][0][rejected["tb_first"][0]] == 3  # tracked again at its ts
    assert rejected["reproposals_left"] == 0
    reflushed = s[11]
    assert reflushed["wlai"][0] == 3  # a fresh LAI and a fresh closed ts
    assert reflushed["wcts"][0] >= reflushed["wcts"][1]
    final = s[-1]
    assert final["accepted"][0] and final["lai"][0][0] == 3
    assert final["elai"][0][:3] == [2, 1, 3]  # each entry keeps its own LAI


def test_a_reproposal_gives_up_at_or_below_the_new_minimum():
    """w1 is at 1 and the assigned closed ts is already 0: the new minimum is 1, so w1
    cannot be re-proposed without re-evaluating; the client gets an error."""
    s = play(REPRO, _evaluate_both(1, 1) + REORDERED)
    last = s[-1]
    assert last["assigned_closed"][0] == 0 and last["wts"][0] == 1
    assert last["wphase"][0] == "failed" and not last["accepted"][0]
    assert last["reproposals_left"] == 1  # giving up spends no reproposal


def test_only_the_proposers_replica_triggers_a_reproposal():
    s = play({**REPRO, "reads": 0}, _evaluate_both(3, 3) + REORDERED[:4]
             + ["apply(g=0, n=1)", "apply(g=0, n=1)"])
    assert s[-1]["wphase"][0] == "flushed"  # n2 rejected w1, n1 has not applied yet


LEASE = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
         "lease_changes": 1, "lease_exp": 3}


def test_a_transfer_waits_behind_buffered_writes_and_the_old_leases_write_is_rejected():
    """At now 3 n1 transfers its lease while w1 (at 2) still evaluates: the transfer
    enters the buffer first, and the tracker holds its closed ts at 1, below w1."""
    s = play({**LEASE, "lease_exp": 0},
             ["tick()", "tick()", "evaluate(g=0, w=0, k=a, c=2)", "transfer_lease(g=0, x=1)",
              "finish(g=0, w=0)", "flush(g=0, w=1)", "flush(g=0, w=0)",
              "append_lease(g=0, j=2)", "append(g=0, w=0)",
              "apply(g=0, n=1)", "apply(g=0, n=1)"])
    proposed = s[5]
    assert proposed["buf"][0][:proposed["buflen"][0]] == [1, 0]  # lease #2, then w1
    assert proposed["revoked"][0]
    flushed = s[6]
    assert flushed["llai"][0][2] == 1 and flushed["lcts"][0][2] == 1  # LAI; below w1's ts
    assert s[7]["wlai"][0] == 2 and s[7]["wcts"][0] == 2
    took_over = s[10]
    assert took_over["lh"][0] == 1 and took_over["assigned_closed"][0] == 1
    final = s[-1]
    assert not final["accepted"][0] and final["lai"][0][1] == 1  # lease sequence mismatch


def test_writes_that_never_left_the_old_holder_fail_when_another_node_takes_over():
    s = play(LEASE, ["evaluate(g=0, w=0, k=a, c=3)", "transfer_lease(g=0, x=1)",
                     "flush(g=0, w=1)", "append_lease(g=0, j=2)", "apply(g=0, n=1)"])
    assert s[-1]["wphase"][0] == "failed" and s[-1]["buflen"][0] == 0
    assert s[-1]["tb_ts"][0] == [-1, -1]


def test_the_new_leaseholder_writes_strictly_above_its_lease_start():
    s = play(LEASE, ["tick()", "tick()", "tick()", "request_lease(g=0, x=1)",
                     "append_lease(g=0, j=2)", "apply(g=0, n=1)",
                     "evaluate(g=0, w=0, k=a, c=1)"])
    assert s[4]["lstart"][0][2] == 4
    assert s[-1]["wts"][0] == 5
    at_start = play(LEASE, ["tick()", "tick()", "tick()", "request_lease(g=0, x=1)",
                            "append_lease(g=0, j=2)", "apply(g=0, n=1)",
                            "evaluate(g=0, w=0, k=a, c=1)"], ("WriteAtLeaseStart",))
    assert at_start[-1]["wts"][0] == 4


EXT = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
       "lease_changes": 2, "lease_exp": 2, "lease_extensions": True}


def test_an_extension_goes_through_the_buffer_and_moves_nothing():
    s = play(EXT, ["evaluate(g=0, w=0, k=a, c=2)", "finish(g=0, w=0)",
                   "extend_lease(g=0, d=3)", "flush(g=0, w=0)", "flush(g=0, w=1)",
                   "append_lease(g=0, j=2)", "apply(g=0, n=0)"])
    queued = s[3]
    assert queued["buf"][0][:queued["buflen"][0]] == [0, 1]  # behind w1
    assert (queued["lstart"][0][2], queued["lexp"][0][2], queued["lbase"][0][2]) == (0, 4, 1)
    before, after = s[4], s[5]
    assert after["lcts"][0][2] == -1 and after["llai"][0][2] == 0
    assert after["assigned_closed"][0] == before["assigned_closed"][0]
    assert after["assigned_lai"][0] == before["assigned_lai"][0]
    assert s[-1]["lseq"][0][0] == 2 and s[-1]["lh"][0] == 0


def test_an_extension_never_moves_the_expiration_back():
    s = play(EXT, ["extend_lease(g=0, d=3)"])
    assert s[-1]["lexp"][0][2] == 4  # now 1 + 3 > 2: forward
    long = {**EXT, "lease_exp": 4}
    s = play(long, ["extend_lease(g=0, d=1)"])
    assert s[-1]["lexp"][0][2] == 4  # now 1 + 1 < 4: kept, not shortened
    short = play(long, ["extend_lease(g=0, d=1)"], ("ExtensionMayShorten",))
    assert short[-1]["lexp"][0][2] == 2


def test_a_stale_request_loses_the_race_to_the_extension():
    """n1 extends its lease; n2, which has not applied the extension, sees the old lease
    expire and requests one built on it. The extension is first in the log, so every
    replica rejects the request."""
    s = play(EXT, ["extend_lease(g=0, d=3)", "flush(g=0, w=1)", "tick()", "tick()",
                   "request_lease(g=0, x=1)", "append_lease(g=0, j=2)",
                   "append_lease(g=0, j=3)", "apply(g=0, n=1)", "apply(g=0, n=1)"])
    assert s[5]["lprev"][0][3] == 1  # built on the initial lease
    assert s[-1]["lseq"][0][1] == 2 and s[-1]["lh"][0] == 0


def test_the_leaseholder_closes_below_the_expiration_it_applied():
    """Under LEAD (close now + 2) n1 proposed an extension to 4 but has not applied it:
    a flush may close up to 2 (its applied lease expires at 3), not up to 3."""
    lead = {**EXT, "lease_exp": 3, "lead": 2, "policy": "lead"}
    labels = ["evaluate(g=0, w=0, k=a, c=3)", "finish(g=0, w=0)", "extend_lease(g=0, d=3)",
              "flush(g=0, w=0)"]
    assert play(lead, labels)[-1]["wcts"][0] == 2
    trusting = play(lead, labels, ("ExtensionTrustsProposedExpiration",))
    assert trusting[-1]["lexp"][0][2] == 4 and trusting[-1]["wcts"][0] == 3


@pytest.mark.parametrize("params, mutations, message", [
    ({"reproposals": 1, "tracker": "rfc"}, (), "reproposals and lease changes are modelled"),
    ({}, ("ReproposeKeepsClosed",), "reproposal mutations need reproposals >= 1"),
    ({"lease_changes": 1}, ("ExtensionMayShorten",), "need lease_extensions = true"),
    ({"lease_extensions": True}, (), "lease_extensions needs lease_changes >= 1"),
    ({}, ("WriteAtLeaseStart",), "lease mutations need lease_changes >= 1"),
])
def test_mechanism_switches_are_checked(params, mutations, message):
    with pytest.raises(SpecError, match=message):
        LOG_DRIVEN.instantiate({"nodes": 2, "keys": 1, "writes": 1, "reads": 0, **params},
                               mutations)


SPLIT = {"nodes": 2, "keys": 2, "writes": 1, "reads": 0, "max_ts": 3, "target": 1,
         "structure": "split", "lease_changes": 1}


def test_a_split_after_r1s_lease_moved_gives_r2_a_copy_of_the_new_lease():
    """n1 transfers r1 to n2; n2 evaluates the split under its own lease, and r2 starts
    with a copy of it on n2, its buffer seeded there."""
    s = play(SPLIT, ["transfer_lease(g=0, x=1)", "flush(g=0, w=2)", "append_lease(g=0, j=2)",
                     "apply(g=0, n=1)", "evaluate_split()", "flush(g=0, w=1)",
                     "append(g=0, w=1)", "apply(g=0, n=1)"])
    evaluated = s[5]
    assert evaluated["wseq"][1] == 2  # stamped with r1's current lease
    assert (evaluated["lholder"][1][1], evaluated["lh"][1]) == (1, 1)
    applied = s[-1]
    assert applied["accepted"][1] and applied["span_changed"] == [False, True]
    assert applied["assigned_closed"][1] == applied["closed"][1][1]



SPLIT_MERGE = {"nodes": 2, "keys": 2, "writes": 1, "reads": 0, "max_ts": 3, "target": 1,
               "structure": "split_merge"}
# the split is proposal 1 (after the one write), the merge proposal 2
SPLIT_EVERYWHERE = ["evaluate_split()", "flush(g=0, w=1)", "append(g=0, w=1)",
                    "apply(g=0, n=0)", "subsume()", "apply(g=0, n=1)"]


def test_a_split_then_a_merge_creates_r2_and_takes_it_back():
    """r1 splits off r2 on both nodes; r2 is subsumed and merged back into r1, after
    which r1 covers r2's key again and r2 exists nowhere it applied the merge."""
    s = play(SPLIT_MERGE, SPLIT_EVERYWHERE + ["evaluate_merge()", "flush(g=0, w=2)",
                                              "append(g=0, w=2)", "apply(g=0, n=0)"])
    split = s[len(SPLIT_EVERYWHERE)]
    assert split["span_changed"] == [True, True] and split["merged"] == [False, False]
    assert split["subsumed"]
    merged = s[-1]
    assert merged["accepted"][2] and merged["merged"] == [True, False]
    assert merged["rhs_tsc"] == merged["merge_closed"]  # r1's cache over b, on n1


def test_a_merge_waits_for_every_node_to_have_applied_the_split():
    """Subsume needs r2 on its leaseholder, and the merge needs r2 on every node
    (AdminMerge waits on each of r2's replicas): n2 has not applied the split yet."""
    assert not enabled_after(LOG_DRIVEN, SPLIT_MERGE, [], "subsume()")
    assert not enabled_after(LOG_DRIVEN, SPLIT_MERGE, SPLIT_EVERYWHERE[:-1], "evaluate_merge()")
    assert enabled_after(LOG_DRIVEN, SPLIT_MERGE, SPLIT_EVERYWHERE, "evaluate_merge()")


@pytest.mark.parametrize(("model", "violated"), [
    ("log_driven_mutation_split_rhs_zero", "NoStaleRead"),
    ("log_driven_mutation_split_closed_at_eval", "NoStaleRead"),
    ("log_driven_mutation_split_seeds_evaluating_node", "FloorAboveClaims"),
    ("log_driven_finding_merge_takeover_below_rhs_closed", "FloorAboveClaims"),
])
def test_a_split_then_a_merge_keeps_each_structures_known_bugs(model, violated):
    """The known wrong designs of a split or a merge are caught just the same when the
    model does both (about 15,000 to 120,000 states each)."""
    machine = build_machine(load_model(model, MODELS_DIR), {"structure": "split_merge"})
    result = check(machine, BfsOptions(deadlock=False))
    assert result.violation is not None and result.violation.name == violated


def test_a_structure_mutation_needs_its_structure():
    with pytest.raises(SpecError, match="needs structure = 'split' or 'split_merge'"):
        LOG_DRIVEN.instantiate({"nodes": 2, "keys": 2, "writes": 1, "reads": 0,
                                "structure": "merge"}, ("SplitRHSZero",))

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
    assert rejected["buf"][0][0][:rejected["buflen"][0][0]] == [0]
    tracker = rejected["tb_ts"][0][0]
    assert tracker[rejected["tb_first"][0][0]] == 3  # tracked again at its ts
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
    assert last["assigned_closed"][0][0] == 0 and last["wts"][0] == 1
    assert last["wphase"][0] == "failed" and not last["accepted"][0]
    assert last["reproposals_left"] == 1  # giving up spends no reproposal


def test_only_the_proposers_replica_triggers_a_reproposal():
    s = play({**REPRO, "reads": 0}, _evaluate_both(3, 3) + REORDERED[:4]
             + ["apply(g=0, n=1)", "apply(g=0, n=1)"])
    assert s[-1]["wphase"][0] == "flushed"  # n2 rejected w1, n1 has not applied yet


def test_an_injected_stale_lai_is_rejected_everywhere_and_reproposed():
    """CockroachDB's tests override a proposal's LAI at flush (LeaseIndexFilter): the
    counter still advances, the command is rejected for its LAI on every replica, and the
    proposer re-proposes it with a fresh LAI."""
    params = {**REPRO, "writes": 1, "lai_errors": 1}
    s = play(params, ["evaluate(g=0, w=0, k=a, c=3)", "finish(g=0, w=0)",
                      "flush_stale_lai(g=0, w=0)", "append(g=0, w=0)", "apply(g=0, n=1)",
                      "apply(g=0, n=0)", "flush(g=0, w=0)"])
    injected = s[3]
    assert injected["wlai"][0] == 0 and injected["assigned_lai"][0][0] == 1
    assert injected["lai_errors_left"] == 0
    assert s[5]["lai"][0][1] == 0 and not s[5]["accepted"][0]  # n2 rejects it too
    assert s[6]["wphase"][0] == "buffered"  # n1, its proposer, re-proposes it
    assert s[-1]["wlai"][0] == 2


def test_an_injected_lai_of_one_can_win_a_real_lai_one():
    """InjectedLAIMayBeReal (#118017): the injected LAI is 1; w2 gets the real LAI 1
    first, w1 is flushed after it with LAI 1 injected and a higher closed ts, Raft
    appends w1 first: it wins LAI 1, and w2 is rejected for it."""
    params = {**REPRO, "lai_errors": 1, "reproposals": 0, "max_ts": 4}
    s = play(params, ["evaluate(g=0, w=1, k=a, c=4)", "finish(g=0, w=1)",
                      "flush(g=0, w=1)", "tick()", "evaluate(g=0, w=0, k=a, c=4)",
                      "finish(g=0, w=0)", "flush_stale_lai(g=0, w=0)",
                      "append(g=0, w=0)", "append(g=0, w=1)", "apply(g=0, n=1)",
                      "apply(g=0, n=1)"], ("InjectedLAIMayBeReal",))
    assert s[7]["wlai"] == [1, 1] and s[7]["wcts"][0] > s[7]["wcts"][1]
    assert s[-1]["accepted"] == [True, False] and s[-1]["lai"][0][1] == 1


LEASE = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
         "lease_changes": 1, "lease_exp": 3}
# with one write (proposal 0), lease command j sits in buffers as P + j - 2 = j - 1
TRANSFER = ["transfer_lease(g=0, y=0, x=1)", "flush(g=0, x=0, w=1)",
            "append_lease(g=0, j=2)"]


def test_a_transfer_waits_behind_buffered_writes_and_the_old_leases_write_is_rejected():
    """At now 3 n1 transfers its lease while w1 (at 2) still evaluates: the transfer
    enters n1's buffer first, and n1's tracker holds its closed ts at 1, below w1."""
    s = play({**LEASE, "lease_exp": 0},
             ["tick()", "tick()", "evaluate(g=0, x=0, w=0, k=a, c=2)",
              "transfer_lease(g=0, y=0, x=1)", "finish(g=0, w=0)", "flush(g=0, x=0, w=1)",
              "flush(g=0, x=0, w=0)", "append_lease(g=0, j=2)", "append(g=0, w=0)",
              "apply(g=0, n=1)", "apply(g=0, n=1)"])
    proposed = s[5]
    assert proposed["buf"][0][0][:proposed["buflen"][0][0]] == [1, 0]  # lease #2, then w1
    assert proposed["proscribed"][0] == [True, False]  # n1 revoked its lease
    flushed = s[6]
    assert flushed["llai"][0][2] == 1 and flushed["lcts"][0][2] == 1  # LAI; below w1's ts
    assert s[7]["wlai"][0] == 2 and s[7]["wcts"][0] == 2
    took_over = s[10]
    assert took_over["assigned_closed"][0] == [2, 1]  # n2 forwards to the applied 1
    assert took_over["lsum"][0][2] == 3 and took_over["tsc"][1] == [3]  # read summary
    final = s[-1]
    assert not final["accepted"][0] and final["lai"][0][1] == 1  # lease sequence mismatch


def test_a_node_that_lost_the_lease_keeps_its_buffer_and_its_writes_are_rejected_below_raft():
    """n1 evaluated w1 before its transfer applied; the write stays in n1's buffer, whose
    assigned LAI and closed ts n1 zeroes when it applies n2's lease (OnLeaseChangeLocked);
    flushed later it takes LAI 1 from the zeroed counter and is rejected everywhere."""
    s = play(LEASE, ["evaluate(g=0, x=0, w=0, k=a, c=2)"] + TRANSFER
             + ["apply(g=0, n=1)", "apply(g=0, n=0)", "finish(g=0, w=0)",
                "flush(g=0, x=0, w=0)", "append(g=0, w=0)", "apply(g=0, n=1)"])
    zeroed = s[6]
    assert zeroed["assigned_closed"][0][0] == -1 and zeroed["assigned_lai"][0][0] == 0
    assert zeroed["wphase"][0] == "evaluating"
    stale = s[8]
    assert stale["wlai"][0] == 1 and stale["wnode"][0] == 0
    assert not s[-1]["accepted"][0] and s[-1]["closed"][0][1] == s[5]["closed"][0][1]


def test_a_lease_request_waits_in_its_proposers_buffer_and_flushing_it_moves_nothing():
    s = play(LEASE, ["tick()", "tick()", "request_lease(g=0, x=1)", "flush(g=0, x=1, w=1)"])
    queued = s[3]
    assert queued["buf"][0][1][:queued["buflen"][0][1]] == [1] and not queued["lready"][0][2]
    before, after = s[3], s[4]
    assert after["lready"][0][2] and after["llai"][0][2] == 0 and after["lcts"][0][2] == -1
    assert after["assigned_closed"] == before["assigned_closed"]
    assert after["assigned_lai"] == before["assigned_lai"]


def test_a_node_runs_one_lease_operation_at_a_time():
    """A replica with a lease command of its own not yet applied there proposes no other
    (a new request joins the pending one: InitOrJoinRequest)."""
    two = {**LEASE, "lease_changes": 2}
    assert not enabled_after(LOG_DRIVEN, two, ["transfer_lease(g=0, y=0, x=1)"],
                             "transfer_lease(g=0, y=0, x=1)")
    assert not enabled_after(LOG_DRIVEN, two, ["tick()", "tick()", "request_lease(g=0, x=1)"],
                             "request_lease(g=0, x=1)")
    assert enabled_after(LOG_DRIVEN, two, ["tick()", "tick()", "request_lease(g=0, x=1)",
                                           "flush(g=0, x=1, w=1)", "append_lease(g=0, j=2)",
                                           "apply(g=0, n=1)", "tick()"],
                         "request_lease(g=0, x=0)")


def test_the_new_leaseholder_writes_strictly_above_its_lease_start():
    """n1's lease expires at 3; n2's request is backdated to start there (leases/build.go),
    and n2's timestamp cache rises to it when n2 applies the lease."""
    labels = ["tick()", "tick()", "tick()", "request_lease(g=0, x=1)", "flush(g=0, x=1, w=1)",
              "append_lease(g=0, j=2)", "apply(g=0, n=1)", "evaluate(g=0, x=1, w=0, k=a, c=1)"]
    s = play(LEASE, labels)
    assert s[4]["lstart"][0][2] == 3 and s[4]["lexp"][0][2] == 6
    assert s[-1]["tsc"][1] == [3] and s[-1]["wts"][0] == 4
    assert play(LEASE, labels, ("WriteAtLeaseStart",))[-1]["wts"][0] == 3


def test_a_renewal_of_an_expired_own_lease_keeps_its_start_and_sequence():
    """n1 requests its own lease again once it expired: an extension by store, so writes
    evaluated under the old lease still apply under the new one."""
    s = play(LEASE, ["evaluate(g=0, x=0, w=0, k=a, c=2)", "tick()", "tick()",
                     "request_lease(g=0, x=0)"])
    assert s[-1]["lstart"][0][2] == 0 and s[-1]["lbase"][0][2] == 1


EXT = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
       "lease_changes": 2, "lease_exp": 2, "lease_extensions": True}


def test_an_extension_goes_through_the_buffer_and_moves_nothing():
    s = play(EXT, ["evaluate(g=0, x=0, w=0, k=a, c=1)", "finish(g=0, w=0)",
                   "extend_lease(g=0, x=0, d=3)", "flush(g=0, x=0, w=0)",
                   "flush(g=0, x=0, w=1)", "append_lease(g=0, j=2)", "apply(g=0, n=0)"])
    queued = s[3]
    assert queued["buf"][0][0][:queued["buflen"][0][0]] == [0, 1]  # behind w1
    assert (queued["lstart"][0][2], queued["lexp"][0][2], queued["lbase"][0][2]) == (0, 4, 1)
    before, after = s[4], s[5]
    assert after["lcts"][0][2] == -1 and after["llai"][0][2] == 0
    assert after["assigned_closed"] == before["assigned_closed"]
    assert after["assigned_lai"] == before["assigned_lai"]
    assert s[-1]["lseq"][0][0] == 2


def test_an_extension_never_moves_the_expiration_back():
    s = play(EXT, ["extend_lease(g=0, x=0, d=3)"])
    assert s[-1]["lexp"][0][2] == 4  # now 1 + 3 > 2: forward
    long = {**EXT, "lease_exp": 4}
    s = play(long, ["extend_lease(g=0, x=0, d=1)"])
    assert s[-1]["lexp"][0][2] == 4  # now 1 + 1 < 4: kept, not shortened
    short = play(long, ["extend_lease(g=0, x=0, d=1)"], ("ExtensionMayShorten",))
    assert short[-1]["lexp"][0][2] == 2


def test_a_stale_request_loses_the_race_to_the_extension():
    """n1 extends its lease; n2, which has not applied the extension, sees the old lease
    expire and requests one built on it. The extension is first in the log, so every
    replica rejects the request."""
    s = play(EXT, ["extend_lease(g=0, x=0, d=3)", "flush(g=0, x=0, w=1)", "tick()",
                   "request_lease(g=0, x=1)", "flush(g=0, x=1, w=2)",
                   "append_lease(g=0, j=2)", "append_lease(g=0, j=3)", "apply(g=0, n=1)",
                   "apply(g=0, n=1)"])
    assert s[4]["lprev"][0][3] == 1  # built on the initial lease
    assert s[-1]["lseq"][0][1] == 2


def test_a_flush_closes_below_the_expiration_of_the_lease_it_was_evaluated_under():
    """Under LEAD (close now + 2) n1 proposed an extension to 4 but has not applied it:
    w1, evaluated under the lease expiring at 3, may carry at most 2 (p.leaseStatus)."""
    lead = {**EXT, "lease_exp": 3, "lead": 2, "policy": "lead"}
    labels = ["evaluate(g=0, x=0, w=0, k=a, c=2)", "finish(g=0, w=0)",
              "extend_lease(g=0, x=0, d=3)", "flush(g=0, x=0, w=0)"]
    assert play(lead, labels)[-1]["wcts"][0] == 2
    trusting = play(lead, labels, ("ExtensionTrustsProposedExpiration",))
    assert trusting[-1]["lexp"][0][2] == 4 and trusting[-1]["wcts"][0] == 3


REQ63672 = {"nodes": 2, "keys": 1, "writes": 2, "reads": 0, "max_ts": 5, "target": 1,
            "lease_changes": 2, "lease_exp": 3, "lease_duration": 3}
# TestRejectedLeaseDoesntDictateClosedTimestamp's order: n1 transfers to n2 at 2; the
# clock passes n1's expiration and n2, not knowing of the transfer, requests a lease
# (start 3); the transfer applies on n2; two writes evaluate on n2 under it, at 3;
# n2's request is flushed and will be rejected below Raft; then the two writes.
REQ63672_ORDER = ["tick()", "transfer_lease(g=0, y=0, x=1)", "flush(g=0, x=0, w=2)",
                  "tick()", "request_lease(g=0, x=1)", "append_lease(g=0, j=2)",
                  "apply(g=0, n=1)", "evaluate(g=0, x=1, w=0, k=a, c=1)",
                  "evaluate(g=0, x=1, w=1, k=a, c=1)", "flush(g=0, x=1, w=3)",
                  "finish(g=0, w=0)", "finish(g=0, w=1)", "flush(g=0, x=1, w=0)",
                  "flush(g=0, x=1, w=1)"]


def test_a_flushed_lease_request_dictates_no_closed_ts():
    """#63672: the request waited in n2's buffer while the transfer made n2 leaseholder;
    flushing it leaves n2's assigned closed ts alone, so w1 and w2 (both at 3) carry
    closed ts below 3. With LeaseRequestSetsAssignedClosed it becomes the request's
    start, 3: w1 carries 3 and w2, at 3, is below a closed ts carried before it."""
    s = play(REQ63672, REQ63672_ORDER)
    assert s[7]["lseq"][0][1] == 2 and s[5]["lstart"][0][3] == 3
    assert s[8]["wts"] == [3, 0] and s[-1]["wts"] == [3, 3]
    assert s[-1]["wcts"][0] < 3 and s[-1]["wcts"][1] < 3
    bug = play(REQ63672, REQ63672_ORDER, ("LeaseRequestSetsAssignedClosed",))
    assert bug[10]["assigned_closed"][0][1] == 3
    assert bug[-1]["wcts"] == [3, 3] and bug[-1]["wts"][1] <= bug[-1]["wcts"][0]


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
    with a copy of it, its buffer seeded on n2 when n2 applies the split."""
    s = play(SPLIT, ["transfer_lease(g=0, y=0, x=1)", "flush(g=0, x=0, w=2)",
                     "append_lease(g=0, j=2)", "apply(g=0, n=1)", "evaluate_split(x=1)",
                     "flush(g=0, x=1, w=1)", "append(g=0, w=1)", "apply(g=0, n=1)"])
    evaluated = s[5]
    assert evaluated["wseq"][1] == 2 and evaluated["wnode"][1] == 1  # r1's current lease
    assert evaluated["lholder"][1][1] == 1
    applied = s[-1]
    assert applied["accepted"][1] and applied["span_changed"] == [False, True]
    assert applied["assigned_closed"][1] == [-1, applied["closed"][1][1]]


SPLIT_MERGE = {"nodes": 2, "keys": 2, "writes": 1, "reads": 0, "max_ts": 3, "target": 1,
               "structure": "split_merge"}
# the split is proposal 1 (after the one write), the merge proposal 2
SPLIT_EVERYWHERE = ["evaluate_split()", "flush(g=0, w=1)", "append(g=0, w=1)",
                    "apply(g=0, n=0)", "apply(g=0, n=1)", "begin_merge()", "subsume()"]


def test_a_split_then_a_merge_creates_r2_and_takes_it_back():
    """r1 splits off r2 on both nodes; r2 is subsumed and merged back into r1, after
    which r1 covers r2's key again and r2 exists nowhere it applied the merge."""
    s = play(SPLIT_MERGE, SPLIT_EVERYWHERE + ["evaluate_merge()", "flush(g=0, w=2)",
                                              "append(g=0, w=2)", "apply(g=0, n=0)"])
    split = s[len(SPLIT_EVERYWHERE)]
    assert split["span_changed"] == [True, True] and split["merged"] == [False, False]
    assert split["subsumed"] and split["frozen"] and split["merge_ts"] == 1
    merged = s[-1]
    assert merged["accepted"][2] and merged["merged"] == [True, False]
    assert merged["tsc"][0][1] == max(merged["merge_closed"], 0)  # n1's cache over b


def test_a_merge_waits_for_every_node_to_have_applied_the_split():
    """The merge transaction needs r2 on every node (AdminMerge waits on each of r2's
    replicas), Subsume needs its deletion intent, the EndTxn needs Subsume."""
    assert not enabled_after(LOG_DRIVEN, SPLIT_MERGE, [], "subsume()")
    assert not enabled_after(LOG_DRIVEN, SPLIT_MERGE, SPLIT_EVERYWHERE[:4], "begin_merge()")
    assert not enabled_after(LOG_DRIVEN, SPLIT_MERGE, SPLIT_EVERYWHERE[:-1], "evaluate_merge()")
    assert enabled_after(LOG_DRIVEN, SPLIT_MERGE, SPLIT_EVERYWHERE, "evaluate_merge()")


@pytest.mark.parametrize(("model", "violated"), [
    ("log_driven_mutation_split_rhs_zero", "NoStaleRead"),
    ("log_driven_mutation_split_closed_at_eval", "NoStaleRead"),
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

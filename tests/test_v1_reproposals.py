"""The 2018 design's new-LAI reproposals step by step (reference §2.9; bug #42821, fix
#42939): a write n1's replica rejects for its LAI goes through the MPT again, or gives
up below Track's minimum; the mutations' counterexamples tell the bug's story."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from checker.engines.explicit.bfs import BfsOptions, check
from checker.errors import SpecError
from checker.models import build_machine, load_model
from checker.views import Step
from spec.follower_reads_2018 import FOLLOWER_READS_2018
from tests import scenarios

play = partial(scenarios.play, FOLLOWER_READS_2018)
enabled_after = partial(scenarios.enabled_after, FOLLOWER_READS_2018)
MODELS = Path(__file__).resolve().parent.parent / "models"

REPRO = {"nodes": 2, "writes": 2, "reads": 0, "max_ts": 6, "max_seq": 3, "failures": False,
         "reorder": True, "reproposals": 1}


def _evaluate_both(c0: int, c1: int) -> list[str]:
    """w1 and w2 on n1, tracked and proposed at LAIs 1 and 2."""
    return [f"evaluate(g=0, w=0, h=0, k=a, c={c0})", f"evaluate(g=0, w=1, h=0, k=a, c={c1})",
            "propose(w=0)", "propose(w=1)"]


# Raft appends w2 first, so n1 accepts w2 and then rejects w1 for its LAI
REORDERED = ["append(g=0, w=1)", "append(g=0, w=0)", "apply(g=0, n=0)", "apply(g=0, n=0)"]


def test_a_write_rejected_for_its_lai_is_tracked_again_and_proposed_with_a_new_lai():
    s = play(REPRO, _evaluate_both(1, 1) + REORDERED
             + ["propose(w=0)", "append(g=0, w=0)", "apply(g=0, n=0)"])
    rejected = s[8]
    assert not rejected["accepted"][0] and rejected["wphase"][0] == "evaluating"
    assert rejected["wmpt"][0] and not rejected["wleft"][0]  # Track(): on the right
    assert (rejected["right_ref"], rejected["left_ref"]) == (1, 0)
    assert rejected["wts"][0] == 2 > rejected["mpt_next"]  # at Track's minimum: kept
    assert rejected["reproposals_left"] == 0
    reproposed = s[9]
    assert reproposed["wlai"][0] == 3 and reproposed["right_mlai"] == [3]  # released
    assert (reproposed["right_ref"], reproposed["wmpt"][0]) == (0, False)
    final = s[-1]
    assert final["accepted"][0] and final["lai"][0][0] == 3
    assert final["elai"][0] == [2, 1, 3]  # each entry keeps its own LAI


def test_a_reproposal_below_tracks_minimum_gives_up():
    """A close moved next to 2 before n1 rejected w1 (at 2): Track's minimum is 3, a
    closed ts at 2 may be out without w1's new LAI, so w1 fails and the reference it
    took is released at once."""
    s = play(REPRO, _evaluate_both(1, 1) + ["tick()", "close()"] + REORDERED)
    last = s[-1]
    assert (last["mpt_next"], last["wts"][0]) == (2, 2)
    assert last["wphase"][0] == "failed" and not last["accepted"][0]
    assert (last["right_ref"], last["left_ref"], last["wmpt"][0]) == (0, 0, False)
    assert last["reproposals_left"] == 1  # giving up spends no reproposal


def test_a_write_at_next_plus_one_is_still_reproposed():
    """The 2019-20 check gives up only below `next.Next()` (`Less`), so a write at
    next + 1 goes on."""
    s = play(REPRO, _evaluate_both(3, 3) + ["tick()", "close()"] + REORDERED)
    last = s[-1]
    assert (last["mpt_next"], last["wts"][0]) == (2, 3)
    assert last["wphase"][0] == "evaluating" and last["wmpt"][0]


def test_the_close_that_covers_a_reproposal_carries_its_new_lai():
    """A close between Track() and propose moves the reproposal left; it then blocks the
    next close until it is released, and that close emits its new LAI."""
    s = play(REPRO, _evaluate_both(3, 3) + REORDERED
             + ["tick()", "close()", "tick()", "close()", "propose(w=0)", "close()"])
    moved = s[10]
    assert moved["wleft"][0] and (moved["left_ref"], moved["right_ref"]) == (1, 0)
    assert moved["mpt_closed"] == 1 and moved["mpt_next"] == 2
    blocked = s[12]
    assert (blocked["mpt_closed"], blocked["ct_seq"][1]) == (1, 0)  # w1 (at 3) is on the left
    released = s[13]
    assert released["left_mlai"] == [3] and released["left_ref"] == 0
    emitted = s[-1]
    assert (emitted["mpt_closed"], emitted["ct_seq"][1]) == (2, 1)
    assert emitted["msg_mlai"][1] == [3]


def test_only_n1s_replica_triggers_a_reproposal():
    s = play(REPRO, _evaluate_both(1, 1) + REORDERED[:2]
             + ["apply(g=0, n=1)", "apply(g=0, n=1)"])
    assert s[-1]["wphase"][0] == "flushed"  # n2 rejected w1; n1 has not applied yet


def test_the_bypass_neither_tracks_nor_releases_nor_gives_up():
    """#42821: before the fix the reproposal went straight to `propose`."""
    s = play(REPRO, _evaluate_both(1, 1) + ["tick()", "close()"] + REORDERED
             + ["propose(w=0)"], ("ReproposeBypassesMPT",))
    rejected = s[-2]
    assert rejected["wts"][0] <= rejected["mpt_next"]  # the fix would give up here
    assert rejected["wphase"][0] == "evaluating" and not rejected["wmpt"][0]
    assert (rejected["right_ref"], rejected["left_ref"]) == (0, 0)
    last = s[-1]
    assert last["wlai"][0] == 3
    assert (last["left_mlai"], last["right_mlai"]) == \
        (rejected["left_mlai"], rejected["right_mlai"])  # LAI 3 is in no MLAI


def test_without_mlai_the_reproposal_is_tracked_but_releases_nothing():
    s = play(REPRO, _evaluate_both(1, 1) + REORDERED + ["propose(w=0)"],
             ("ReproposeWithoutMLAI",))
    rejected, last = s[-2], s[-1]
    assert rejected["wmpt"][0] and rejected["right_ref"] == 1
    assert last["wlai"][0] == 3 and last["right_ref"] == 0
    assert last["right_mlai"] == rejected["right_mlai"] == [2]


def test_below_closed_tracks_a_write_at_or_below_next():
    s = play(REPRO, _evaluate_both(1, 1) + ["tick()", "close()"] + REORDERED,
             ("ReproposeBelowClosed",))
    last = s[-1]
    assert last["wphase"][0] == "evaluating" and last["wmpt"][0]
    assert last["wts"][0] <= last["mpt_next"]  # TrackedAboveClosed no longer holds


SPLIT = {"nodes": 2, "keys": 2, "writes": 2, "reads": 0, "max_ts": 4, "max_seq": 2,
         "structure": "split", "failures": False, "reorder": True, "reproposals": 1}
ON_B = ["evaluate(g=0, w=0, h=0, k=b, c=1)", "evaluate(g=0, w=1, h=0, k=b, c=1)",
        "propose(w=0)", "propose(w=1)", "append(g=0, w=1)", "apply(g=0, n=0)"]


def test_the_split_waits_for_a_write_n1_may_still_repropose():
    """n1's LAI (2) is past w1's (1), but w1 is not done: n1 will reject its entry and
    propose it again, and it holds its latches until then (a stale read of r2 if the
    split went first)."""
    assert not enabled_after(SPLIT, ON_B, "split()")
    done = ON_B + ["append(g=0, w=0)", "apply(g=0, n=0)", "propose(w=0)", "append(g=0, w=0)",
                   "apply(g=0, n=0)"]
    assert play(SPLIT, done)[-1]["accepted"][0]
    assert enabled_after(SPLIT, done, "split()")
    without = {**SPLIT, "reproposals": 0}
    assert enabled_after(without, ON_B, "split()")  # the entry can only be rejected


def test_reproposals_need_n1_to_propose_every_write():
    with pytest.raises(SpecError, match="reproposals are modelled for writes n1 proposes"):
        FOLLOWER_READS_2018.instantiate({"reproposals": 1, "lease_changes": 1})
    with pytest.raises(SpecError, match="reproposal mutations need reproposals"):
        FOLLOWER_READS_2018.instantiate({}, ["ReproposeBypassesMPT"])


def _counterexample(name: str, invariants: tuple[str, ...] | None = None):
    """The BFS result of a model, or of its spec instance checking `invariants` only."""
    model = load_model(name, MODELS)
    if invariants is None:
        machine = build_machine(model)
    else:
        machine = FOLLOWER_READS_2018.instantiate(model.params, model.mutations)
        machine = replace(machine,
                          invariants=[p for p in machine.invariants if p.name in invariants],
                          step_invariants=[p for p in machine.step_invariants
                                           if p.name in invariants], lemmas=[], liveness=[])
    return check(machine, BfsOptions(deadlock=False))


@pytest.mark.parametrize("name", ["v1_mutation_repropose_bypasses_mpt",
                                  "v1_mutation_repropose_below_closed",
                                  "v1_mutation_repropose_without_mlai"])
def test_each_mutation_ends_in_a_read_that_a_reproposal_changes(name):
    """The story of #42821: n1 rejects w1 and proposes it again at a new LAI; a
    follower at or past an MLAI below that LAI serves a read at or above w1's ts
    without w1, and w1 applies at its new LAI (on n1, before or after the read)."""
    result = _counterexample(name)
    v = result.violation
    assert v is not None and v.name == "NoStaleRead" and len(v.trace) == 19
    states = [v.trace.machine.decode(x) for x in v.trace.states]
    steps = list(zip(v.trace.actions[1:], states[:-1], states[1:], strict=True))
    again = [(b, a) for act, b, a in steps if act.name == "apply"
             and any(b["wphase"][w] == "flushed" and a["wphase"][w] == "evaluating"
                     for w in range(2))]
    assert len(again) == 1
    w = next(w for w in range(2) if again[0][0]["wphase"][w] != again[0][1]["wphase"][w])
    read = next(a for act, _, a in steps if act.name == "read")
    last = states[-1]
    assert read["rts"][0] >= last["wts"][w] and not read["robs"][0][w]
    assert last["accepted"][w] and read["rc_mlai"][1][0] < last["wlai"][w]


@pytest.mark.parametrize(("name", "caught"), [
    ("v1_mutation_repropose_bypasses_mpt", True),
    ("v1_mutation_repropose_below_closed", True),
    ("v1_mutation_repropose_without_mlai", False),
])
def test_reproposal_above_closed_catches_the_timestamp_half_only(name, caught):
    """ReproposalAboveClosed sees a reproposal at or below a closed ts n1 sent; a
    reproposal above every one whose new LAI is never released is V2's to catch."""
    result = _counterexample(name, ("ReproposalAboveClosed",))
    assert (result.violation is not None) == caught
    if caught:
        assert result.violation.name == "ReproposalAboveClosed"
        assert len(result.violation.trace) < 19
    v2 = _counterexample(name, ("MLAICoversWrites",)).violation
    assert v2 is not None and v2.name == "MLAICoversWrites" and len(v2.trace) < 19


def _story(params: dict, labels: list[str], mutations: tuple[str, ...] = ()) -> list[str]:
    """The narration and the protocol view's events of each step, as one line each
    (the trace viewers hide a failing narrator behind a note, so call it directly)."""
    machine = FOLLOWER_READS_2018.instantiate(params, mutations)
    states = play(params, labels, mutations)
    lines = []
    for label, before, after in zip(labels, states[:-1], states[1:], strict=True):
        name, args = label[:-1].split("(")
        step = {k: int(v) if v.isdigit() else v
                for k, v in (a.split("=") for a in args.split(", ") if a)}
        events = machine.view.events(Step(name, step, before, after))
        lines.append(machine.narrator(name, step, before, after) + " | "
                     + "; ".join(e.label for e in events))
    return lines


def test_the_narration_tells_a_reproposal_and_a_give_up():
    lines = _story(REPRO, _evaluate_both(1, 1) + REORDERED + ["propose(w=0)"])
    assert "n1 applies log[1] = w1 (LAI 1) on r1: rejected (applied LAI is 2); w1 is " \
           "re-proposed: tracked by n1's MPT again at 2, above its minimum 2" in lines[7]
    assert "w1 re-proposed" in lines[7]
    assert lines[8].startswith("w1 gets LAI 3 and is proposed again;")
    assert "re-propose w1 at LAI 3" in lines[8]
    gave_up = _story(REPRO, _evaluate_both(1, 1) + ["tick()", "close()"] + REORDERED)
    assert "n1 gives up on w1: its ts 2 is below the MPT's minimum 3 (next + 1)" in gave_up[-1]
    assert "w1 fails" in gave_up[-1]
    bypass = _story(REPRO, _evaluate_both(1, 1) + REORDERED + ["propose(w=0)"],
                    ("ReproposeBypassesMPT",))
    assert "without going through the MPT" in bypass[7]
    no_mlai = _story(REPRO, _evaluate_both(1, 1) + REORDERED + ["propose(w=0)"],
                     ("ReproposeWithoutMLAI",))
    assert "proposed again (its LAI reaches no MLAI)" in no_mlai[8]

"""The 2018 spec's components step by step (RFC "Min proposal tracker" walk-through,
"Reference-level explanation" receiver rules), and what its liveness lassos show."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from checker.engines.explicit.bfs import BfsOptions, check
from checker.errors import SpecError
from checker.models import build_machine, load_model
from spec.follower_reads_2018 import FOLLOWER_READS_2018
from tests import scenarios

MODELS = Path(__file__).resolve().parent.parent / "models"

play = partial(scenarios.play, FOLLOWER_READS_2018)


SMALL = {"nodes": 2, "writes": 2, "reads": 0, "max_ts": 6, "max_seq": 3, "failures": False}
EVAL = "evaluate(g=0, w={w}, h=0, k=a, c=1)"


def test_mpt_walk_through():
    """Commands are tracked on the right and forced above next; a close moves them left;
    the left side blocks the next close until its last command gets its LAI; the close
    then emits the left side's MLAI, and the right side moves left."""
    s = play(SMALL, ["tick()", EVAL.format(w=0), "close()", EVAL.format(w=1), "tick()",
                     "close()", "propose(w=0)", "tick()", "close()"])
    tracked = s[2]
    assert (tracked["right_ref"], tracked["left_ref"], tracked["wts"][0]) == (1, 0, 2)
    rotated = s[3]  # seq 0: the full update, sent while w1 is still evaluating
    assert (rotated["left_ref"], rotated["right_ref"], rotated["mpt_closed"]) == (1, 0, 1)
    assert rotated["ct_seq"][1] == 0 and rotated["wleft"][0]
    assert s[4]["wts"][1] > s[4]["mpt_next"]  # w2 is forced above next, on the right
    blocked = s[6]
    assert (blocked["ct_seq"][1], blocked["mpt_closed"], blocked["left_ref"]) == (0, 1, 1)
    released = s[7]
    assert (released["left_ref"], released["left_mlai"]) == (0, [1])
    emitted = s[9]
    assert emitted["ct_seq"][1] == 1 and emitted["msg_mlai"][1] == [1]
    assert (emitted["left_ref"], emitted["right_ref"]) == (1, 0)  # w2 moved left


def test_receiver_gap_discards_map_and_asks_for_a_full_update():
    s = play(SMALL, ["tick()", "close()", "deliver(n=1)", "tick()", "close()", "lose(n=1)",
                     "tick()", "close()", "deliver(n=1)"])
    after_full = s[3]
    assert (after_full["rc_epoch"][1], after_full["rc_seq"][1], after_full["rc_mlai"][1]) == \
        (1, 0, [0])
    after_gap = s[9]
    # the receiver waits for the full update it asked for (the sender starts over at 0)
    assert after_gap["rc_seq"][1] == -1 and after_gap["rc_mlai"][1] == [-1]
    assert after_gap["full_next"][1]


def test_no_gap_reset_keeps_the_map():
    s = play(SMALL, ["tick()", "close()", "deliver(n=1)", "tick()", "close()", "lose(n=1)",
                     "tick()", "close()", "deliver(n=1)"], ("NoGapReset",))
    assert s[-1]["rc_mlai"][1] == [0]


def test_newer_epoch_resets_and_expects_a_full_update():
    params = {**SMALL, "failures": True}
    s = play(params, ["tick()", "close()", "deliver(n=1)", "expire()", "restart()", "tick()",
                      "close()", "tick()", "close()", "deliver(n=1)"])
    assert s[5]["full_next"][1] and s[5]["epoch"][0] == 2  # a restarted sender starts at 0
    assert s[7]["ct_seq"][1] == 0 and s[7]["ct_epoch"] == 1  # the old epoch's left: not sent
    assert s[9]["ct_seq"][1] == 0 and s[9]["ct_epoch"] == 2
    last = s[-1]
    # n1's lease belonged to epoch 1, so the new epoch's full update has no MLAI for r1
    assert (last["rc_epoch"][1], last["rc_seq"][1], last["rc_mlai"][1]) == (2, 0, [-1])


def test_mutations_need_their_components():
    with pytest.raises(SpecError, match="SubsumedKeepsEmitting needs"):
        FOLLOWER_READS_2018.instantiate({}, ["SubsumedKeepsEmitting"])
    with pytest.raises(SpecError, match="window models check liveness only"):
        FOLLOWER_READS_2018.instantiate({"window": True})


def _lasso(name: str):
    machine = build_machine(load_model(name, MODELS))
    result = check(machine, BfsOptions(deadlock=False))
    assert result.violation is not None and result.violation.kind == "liveness"
    trace = result.violation.trace
    loop = [a.name for a in trace.actions[trace.loop + 1:]] + [trace.loop_action.name]
    return trace, loop


def test_lagging_follower_applies_in_the_loop_but_never_catches_up():
    """The loop is the RFC's scenario: writes and closes go on, n2 keeps applying
    (apply is weakly fair and taken), yet every update it holds is one step ahead."""
    trace, loop = _lasso("v1_lagging_follower")
    assert {"evaluate", "propose", "close", "deliver", "apply"} <= set(loop)
    states = [trace.machine.decode(s) for s in trace.states[trace.loop:]]
    assert all(s["lai"][0][1] < max(s["rc_mlai"][1]) for s in states)


def test_epoch_pollution_loop_keeps_an_epoch_above_n1s():
    trace, loop = _lasso("v1_mutation_epoch_pollution")
    assert "close" in loop
    for state in trace.states[trace.loop:]:
        s = trace.machine.decode(state)
        assert max(s["left_epoch"], s["right_epoch"]) > s["epoch"][0]

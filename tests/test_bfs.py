"""The BFS engine on small specs whose behaviour is known exactly."""

from __future__ import annotations

import numpy as np

from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.result import ERROR, HOLDS, VIOLATED
from checker.lang import And, Array, Int, Not, Spec, require

GRID = Spec("grid", "two counters; x + y only grows; a bad corner to reach")
GRID.param("n", 4)
GRID.param("pad", 0, "extra constant bits: 1 widens the state past 64 bits")
GRID.param("bad_x", -1)
GRID.param("bad_y", -1)


@GRID.build
def _grid(m, p):
    m.var("x", Int(0, p.n), init=0)
    m.var("y", Int(0, p.n), init=0)
    if p.pad:
        m.var("pad", Array(Int(0, 2**40), 2), init=0)

    @m.action()
    def incx(s):
        require(s.x < p.n)
        s.x = s.x + 1

    @m.action()
    def incy(s):
        require(s.y < p.n)
        s.y = s.y + 1

    @m.invariant
    def NotBad(s):
        return Not(And(s.x == p.bad_x, s.y == p.bad_y))

    @m.step_invariant
    def Grows(before, after):
        return after.x + after.y == before.x + before.y + 1


OVERFLOW = Spec("overflow", "a counter whose increment is not guarded")


@OVERFLOW.build
def _overflow(m, p):
    m.var("x", Int(0, 3), init=0)
    m.var("y", Array(Int(0, 3), 2), init=0)

    @m.action(i=range(2))
    def bump(s, i):
        s.y[i] = s.y[i] + 1
        s.x = s.x + 1


def _run(spec, deadlock=False, **params):
    return check(spec.instantiate(params), BfsOptions(deadlock=deadlock))


def test_exact_counts_and_diameter():
    r = _run(GRID, n=4)
    assert r.outcome == HOLDS
    assert r.stats["distinct_states"] == 25
    assert r.stats["diameter"] == 8
    assert r.stats["generated"] == 2 * 4 * 5
    assert sum(c["new_states"] for c in r.coverage) == 24
    assert {c["action"]: c["enabled"] for c in r.coverage} == {"incx()": 20, "incy()": 20}


def test_hashed_fingerprints_give_the_same_counts():
    exact = _run(GRID, n=6)
    hashed = _run(GRID, n=6, pad=1)
    assert exact.stats["fingerprint"] == "exact"
    assert hashed.stats["fingerprint"] == "hashed"
    assert hashed.stats["collision_probability"] > 0
    for key in ("distinct_states", "diameter", "generated"):
        assert exact.stats[key] == hashed.stats[key]


def test_shortest_counterexample_is_found_and_deterministic():
    results = [_run(GRID, n=5, bad_x=2, bad_y=3) for _ in range(2)]
    for r in results:
        assert r.outcome == VIOLATED
        assert r.violation.name == "NotBad"
        assert len(r.violation.trace) == 5
    a, b = (r.violation.trace for r in results)
    assert a.states == b.states
    assert [x and x.label for x in a.actions] == [x and x.label for x in b.actions]


def test_canonical_predecessor_is_smallest_parent_then_action():
    # (2,3) is reached from (1,3) by incx and from (2,2) by incy. x takes the low 3 bits
    # and y the next 3, so fingerprint(2,2) = 2 + 2*8 = 18 < fingerprint(1,3) = 1 + 3*8 = 25.
    r = _run(GRID, n=5, bad_x=2, bad_y=3)
    trace = r.violation.trace
    assert trace.states[-1] == (2, 3)
    assert trace.states[-2] == (2, 2)
    assert trace.actions[-1].label == "incy()"


def test_deadlock_reported_at_the_shallowest_depth():
    r = _run(GRID, deadlock=True, n=2)
    assert r.outcome == VIOLATED
    assert r.violation.kind == "deadlock"
    assert r.violation.trace.states[-1] == (2, 2)
    assert len(r.violation.trace) == 4


def test_value_outside_type_names_action_params_and_variable():
    r = _run(OVERFLOW)
    assert r.outcome == ERROR
    message = r.violation.message
    assert "bump(i=0)" in message and "x = 4" in message
    assert len(r.violation.trace) == 3


def test_depth_bound_marks_the_result_incomplete():
    machine = GRID.instantiate({"n": 4})
    r = check(machine, BfsOptions(deadlock=False, max_depth=3))
    assert r.outcome == HOLDS and not r.complete
    assert r.stats["distinct_states"] == 1 + 2 + 3 + 4


def test_small_batches_give_identical_results():
    machine = GRID.instantiate({"n": 7, "bad_x": 5, "bad_y": 6})
    big = check(machine, BfsOptions(deadlock=False))
    small = check(machine, BfsOptions(deadlock=False, batch_size=3))
    assert big.violation.trace.states == small.violation.trace.states
    assert big.stats["generated"] == small.stats["generated"]


def test_records_keep_at_most_ten_bytes_a_state():
    r = _run(GRID, n=30)  # 8-byte fingerprints alone would take 8 bytes a state
    assert 0 < r.stats["bytes_per_state"] <= 10
    assert np.isclose(r.stats["distinct_states"], 31 * 31)

"""Random simulation: reproducible walks, violations with replayable traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.explicit import simulation
from checker.engines.explicit.simulation import SimulationOptions, simulate
from checker.engines.result import ERROR, HOLDS, VIOLATED, CheckResult
from checker.lang import Int, Spec, require
from checker.traces.itf import trace_to_itf, write_trace
from checker.traces.replay import check_trace, load_trace
from tests.specs.probe import PROBE

COUNTER = Spec("sim_counter")
COUNTER.param("limit", 5)
COUNTER.param("bad", 3, "the value the invariant forbids")
COUNTER.param("cap", 9, "constraint: states above it are not explored")


@COUNTER.build
def _counter(m, p):
    m.var("x", Int(0, p.limit), init=0)

    @m.action()
    def inc(s):
        require(s.x < p.limit)
        s.x = s.x + 1

    @m.invariant
    def NotBad(s):  # noqa: N802 - property names read like TLA+
        return s.x != p.bad

    @m.constraint
    def Capped(s):  # noqa: N802
        return s.x <= p.cap


WANDER = Spec("wander")
WANDER.param("size", 20)
WANDER.param("cap", 30)


@WANDER.build
def _wander(m, p):
    m.var("x", Int(0, p.size), init=0)
    m.var("y", Int(0, p.size), init=0)

    @m.init(x0=range(3))
    def start(s, x0):
        s.x = x0

    @m.action(d=[1, -1])
    def move_x(s, d):
        require((s.x + d >= 0) & (s.x + d <= p.size))
        s.x = s.x + d

    @m.action(d=[1, -1])
    def move_y(s, d):
        require((s.y + d >= 0) & (s.y + d <= p.size))
        s.y = s.y + d

    @m.invariant
    def InBox(s):  # noqa: N802
        return s.x + s.y <= p.cap

    @m.constraint
    def Near(s):  # noqa: N802
        return s.x + s.y <= p.cap


UNGUARDED = Spec("unguarded")


@UNGUARDED.build
def _unguarded(m, p):
    m.var("x", Int(0, 3), init=0)

    @m.action()
    def inc(s):
        s.x = s.x + 1


SHRINKING = Spec("shrinking")


@SHRINKING.build
def _shrinking(m, p):
    m.var("x", Int(0, 3), init=3)

    @m.action()
    def dec(s):
        require(s.x > 0)
        s.x = s.x - 1

    @m.step_invariant
    def Grows(s, t):  # noqa: N802
        return t.x >= s.x


def walks(result: CheckResult) -> tuple:
    """What must not change between runs with the same seed."""
    trace = result.violation.trace if result.violation else None
    stats = {k: v for k, v in result.stats.items() if k not in ("seconds", "steps_per_second")}
    return (result.outcome, stats, result.coverage,
            trace and (trace.states, trace.actions, trace.violation, trace.meta))


def test_same_seed_same_walks():
    machine = WANDER.instantiate({"cap": 12})
    first = simulate(machine, SimulationOptions(seed=7, steps=50, runs=20))
    assert walks(first) == walks(simulate(machine, SimulationOptions(seed=7, steps=50, runs=20)))
    assert first.outcome == HOLDS and first.engine == "simulate" and not first.complete
    assert first.stats["runs"] == 20 and first.stats["steps"] == 1000
    assert 1 < first.stats["distinct_states"] <= 1000
    assert sum(c["taken"] for c in first.coverage) == 1000
    assert [c["action"] for c in first.coverage] == ["move_x", "move_y"]
    distinct = {walks(simulate(machine, SimulationOptions(seed=s, steps=50, runs=2)))[1][
        "distinct_states"] for s in range(8)}
    assert len(distinct) > 1, "seeds give different walks"


def test_finds_invariant_violation_with_replayable_trace(tmp_path: Path):
    machine = COUNTER.instantiate()
    result = simulate(machine, SimulationOptions(seed=1, steps=10, runs=3))
    assert result.outcome == VIOLATED and result.expectation == "violates NotBad"
    trace = result.violation.trace
    assert result.violation.kind == "invariant"
    assert [machine.decode(s)["x"] for s in trace.states] == [0, 1, 2, 3]
    assert trace.violation == {"kind": "invariant", "name": "NotBad",
                               "message": "NotBad is violated after inc()"}
    assert trace.meta == {"engine": "simulate", "seed": 1, "run": 0}
    path = tmp_path / "cex.itf.json"
    write_trace(trace, path)
    replayed, violated = check_trace(path)
    assert violated == ["NotBad"] and replayed.states == trace.states
    assert load_trace(path).meta == trace.meta


def test_deadlock():
    machine = COUNTER.instantiate({"bad": 9, "limit": 4})
    result = simulate(machine, SimulationOptions(steps=10, runs=2))
    assert result.outcome == VIOLATED and result.violation.name == "Deadlock"
    assert result.violation.kind == "deadlock" and len(result.violation.trace) == 4
    assert check_trace(trace_to_itf(result.violation.trace))[1] == ["Deadlock"]
    relaxed = simulate(machine, SimulationOptions(steps=10, runs=2, deadlock=False))
    assert relaxed.outcome == HOLDS
    assert relaxed.stats["runs"] == 2 and relaxed.stats["steps"] == 8


def test_respects_constraints():
    # the invariant would fail at x=3, but the constraint never lets a walk get there
    result = simulate(COUNTER.instantiate({"cap": 2}), SimulationOptions(steps=10, runs=3))
    assert result.outcome == HOLDS
    assert result.stats["distinct_states"] == 3 and result.stats["steps"] == 6
    boxed = simulate(WANDER.instantiate({"cap": 4}), SimulationOptions(seed=3, steps=200, runs=5))
    assert boxed.outcome == HOLDS and boxed.stats["distinct_states"] <= 15


def test_no_initial_state_within_constraints():
    result = simulate(WANDER.instantiate({"cap": -1}), SimulationOptions(steps=10, runs=3))
    assert result.outcome == HOLDS and result.stats["runs"] == 0


def test_eval_error_is_an_error_with_trace():
    machine = UNGUARDED.instantiate()
    result = simulate(machine, SimulationOptions(steps=10, runs=2))
    assert result.outcome == ERROR and result.expectation == "violates EvalError"
    v = result.violation
    assert v.kind == "error" and v.name == "EvalError"
    assert v.message == "action inc() assigns x = 4, outside its type Int(0..3)"
    assert [machine.decode(s)["x"] for s in v.trace.states] == [0, 1, 2, 3]
    assert check_trace(trace_to_itf(v.trace))[1] == ["EvalError"]


def test_step_invariant_violation():
    result = simulate(SHRINKING.instantiate(), SimulationOptions(steps=5, runs=1))
    assert result.outcome == VIOLATED
    v = result.violation
    assert (v.kind, v.name) == ("step_invariant", "Grows")
    assert v.message == "Grows is violated after dec()"
    assert len(v.trace) == 1
    assert check_trace(trace_to_itf(v.trace))[1] == ["Grows"]


def test_progress(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(simulation, "PROGRESS_SECONDS", 0.0)
    lines: list[str] = []
    simulate(WANDER.instantiate(), SimulationOptions(steps=5, runs=2, progress=lines.append))
    assert lines and all(line.startswith("simulate: run ") for line in lines)
    assert "10 steps" in lines[-1]


@pytest.mark.parametrize("where", ["constraint", "invariant"])
def test_eval_error_in_a_property_ends_the_trace_at_that_state(where: str):
    machine = PROBE.instantiate({"where": where})
    result = simulate(machine, SimulationOptions(steps=10, runs=1))
    assert result.outcome == ERROR
    assert result.violation.message == (f"{where} first_flag_unset reads flags[i] at index 3: "
                                        "flags has indexes 0 to 2")
    assert "action" not in result.violation.trace.violation  # a property's error, not a step's
    trace = result.violation.trace
    assert [machine.decode(s)["i"] for s in trace.states] == [0, 1, 2, 3]
    assert check_trace(trace_to_itf(trace))[1] == ["EvalError"]


def test_violation_in_the_initial_state():
    result = simulate(COUNTER.instantiate({"bad": 0}), SimulationOptions(steps=10, runs=3))
    assert result.outcome == VIOLATED and result.stats["steps"] == 0
    assert result.violation.message == "NotBad is violated in the initial state"
    assert len(result.violation.trace) == 0
    assert check_trace(trace_to_itf(result.violation.trace))[1] == ["NotBad"]


def test_liveness_is_confirmed_on_the_lassos_walks_close(tmp_path: Path):
    """The spin spec loops 0 -> 1 -> 2 -> 0 without finishing: a walk that comes back to
    a state closes that lasso, which is confirmed (fair to spin) and replays; with
    finish weakly fair and always enabled, no lasso a walk closes is fair."""
    import dataclasses

    from tests.specs.liveness_spin import SPIN

    def finishes(params):  # the spec's Finishes property only
        machine = SPIN.instantiate(params)
        return dataclasses.replace(machine, liveness=machine.liveness[:1])

    result = simulate(finishes({}), SimulationOptions(steps=20, runs=5, deadlock=False))
    assert result.expectation == "violates Finishes"
    trace = result.violation.trace
    assert result.violation.kind == "liveness" and trace.loop is not None
    assert check_trace(trace_to_itf(trace))[1] == ["Finishes"]
    fair = simulate(finishes({"finish_always": True, "fair_finish": True}),
                    SimulationOptions(steps=20, runs=20, deadlock=False))
    assert fair.outcome == HOLDS and fair.stats["lassos_checked"] > 0


def test_simulation_finds_the_2018_epoch_pollution_lasso():
    from checker.models import build_machine, load_model

    models = Path(__file__).resolve().parent.parent / "models"
    machine = build_machine(load_model("v1_mutation_epoch_pollution", models))
    result = simulate(machine, SimulationOptions(steps=100, runs=20, deadlock=False))
    assert result.expectation == "violates CloseEventuallySucceeds"
    assert check_trace(trace_to_itf(result.violation.trace))[1] == ["CloseEventuallySucceeds"]

"""The liveness checker on hand-derived specs (`tests/specs/liveness_*.py`), held to the
derivations and to the naive oracle, and its lassos through ITF, `trace check` and
`trace show`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.explicit.liveness import build_graph, confirm_lasso, find_lasso, labels_of
from checker.engines.explicit.successors import Kernel
from checker.errors import SpecError, TraceError
from checker.lang import Int, Spec, require
from checker.traces.itf import trace_to_itf, write_trace
from checker.traces.replay import check_trace
from checker.traces.view import show_trace
from tests.naive_liveness import naive_liveness
from tests.specs import liveness_spin, liveness_stop

CASES = [(spec, params, name, want)
         for spec, module in ((liveness_spin.SPIN, liveness_spin),
                              (liveness_stop.STOP, liveness_stop))
         for params, name, want in module.LIVENESS]
IDS = [f"{spec.name}-{name}-{'-'.join(f'{k}={v}' for k, v in params.items())}"
       for spec, params, name, _ in CASES]


def _prop(machine, name):
    return next(p for p in machine.liveness if p.name == name)


@pytest.mark.parametrize(("spec", "params", "name", "want"), CASES, ids=IDS)
def test_engine_matches_hand_derivation(spec, params, name, want):
    machine = spec.instantiate(params)
    kernel = Kernel(machine)
    graph, words = build_graph(machine, kernel)
    prop = _prop(machine, name)
    lasso = find_lasso(graph, labels_of(kernel, graph, words, prop), prop.fair,
                       len(machine.actions))
    if want is None:
        assert lasso is None
        return
    stem, loop = want
    assert lasso is not None
    assert lasso.loop == stem
    if loop == "stutter":
        assert lasso.stutter and len(lasso.actions) == stem
    else:
        assert not lasso.stutter and len(lasso.actions) - stem == loop


@pytest.mark.parametrize(("spec", "params", "name", "want"), CASES, ids=IDS)
def test_naive_oracle_agrees(spec, params, name, want):
    machine = spec.instantiate(params)
    got = naive_liveness(machine, _prop(machine, name))
    assert got == (None if want is None else want[0])


@pytest.mark.parametrize(("spec", "params", "name", "want"), CASES, ids=IDS)
def test_lasso_round_trips_through_itf(spec, params, name, want, tmp_path: Path):
    machine = spec.instantiate(params)
    machine.liveness = [_prop(machine, name)]
    result = check(machine, BfsOptions(deadlock=False))
    if want is None:
        assert result.outcome == "holds"
        return
    assert result.expectation == f"violates {name}"
    path = tmp_path / "lasso.itf.json"
    write_trace(result.violation.trace, path)
    doc = json.loads(path.read_text())
    assert doc["loop"] == want[0]
    replayed, violated = check_trace(path)
    assert violated == [name]
    assert replayed.loop == want[0]
    console = Console(record=True, width=120)
    show_trace(replayed, console)
    text = console.export_text()
    assert "loop" in text and name in text


def test_a_lasso_that_is_not_fair_is_not_confirmed(tmp_path: Path):
    """The spin loop, replayed against the machine where finish is fair and always
    enabled, shows nothing: weak fairness excludes it."""
    unfair = liveness_spin.SPIN.instantiate({"finish_always": True, "fair_finish": False})
    result = check(unfair, BfsOptions(deadlock=False))
    trace = result.violation.trace
    assert confirm_lasso(trace) == ["Finishes"]
    fair = liveness_spin.SPIN.instantiate({"finish_always": True, "fair_finish": True})
    trace.machine = fair
    assert confirm_lasso(trace) == []


def test_a_lasso_without_its_loop_is_refused(tmp_path: Path):
    machine = liveness_spin.SPIN.instantiate({})
    doc = trace_to_itf(check(machine, BfsOptions(deadlock=False)).violation.trace)
    del doc["loop"]
    with pytest.raises(TraceError, match="claims the liveness property Finishes is violated, "
                                         "but it has no loop"):
        check_trace(doc)


def test_a_tampered_loop_is_refused(tmp_path: Path):
    machine = liveness_spin.SPIN.instantiate({})
    path = tmp_path / "lasso.itf.json"
    write_trace(check(machine, BfsOptions(deadlock=False)).violation.trace, path)
    doc = json.loads(path.read_text())
    doc["loop"] = 1  # spin from x = 2 does not lead to x = 1
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match="closing the loop"):
        check_trace(path)
    doc["loop"] = 7
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceError, match="not the index of a state"):
        check_trace(path)


def test_liveness_declarations_are_checked():
    spec = Spec("bad_liveness")

    @spec.build
    def _(m, p):
        m.var("x", Int(0, 1), init=0)

        @m.action()
        def inc(s):
            require(s.x < 1)
            s.x = s.x + 1

        m.liveness("L", lambda s: True, lambda s: s.x == 1, fair=("nope",))

    with pytest.raises(SpecError, match="no action named 'nope'"):
        spec.instantiate()

"""Every model in models/ gives its expected outcome, and every counterexample it
produces replays through `trace check`, renders with `trace show`, and is drawn by
its spec's protocol view."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from rich.console import Console

from checker.models import build_machine, list_models, load_model, outcome_matches
from checker.run import BfsOptions, run
from checker.traces.html import page_data
from checker.traces.itf import write_trace
from checker.traces.replay import check_trace
from checker.traces.trace import Trace
from checker.traces.view import show_trace
from checker.views import Step, render

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
MODELS = list_models(MODELS_DIR)
# Past this many states the search under symmetry is not repeated here (it would add a
# third of a minute per model): the smaller scalarset models show it equal to the plain
# search, and `ctmc gate` checks every model's orbit count.
SYMMETRY_RECHECK_LIMIT = 2_000_000
# Past this many states a model is left to `ctmc gate`, which `.ci/run` runs on them
# after the tests (`large_models`), so the suite stays within its time on two cores;
# CTMC_LARGE=1 runs them here too.
SUITE_STATE_LIMIT = 500_000


def large_models() -> list[Path]:
    """The model files the suite leaves to the gate: more states than SUITE_STATE_LIMIT."""
    return [p for p in MODELS if (load_model(p, MODELS_DIR).expect_states or 0)
            > SUITE_STATE_LIMIT]


def test_the_suite_is_not_empty():
    assert len(MODELS) >= 6


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_model_meets_its_expectation(path: Path, tmp_path: Path):
    model = load_model(path, MODELS_DIR)
    if not model.engine["full_search"] and not os.environ.get("CTMC_REACH"):
        pytest.skip("a reach model: minutes even under symmetry, so `ctmc gate` runs it "
                    "(CTMC_REACH=1 runs it here)")
    if (model.expect_states or 0) > SUITE_STATE_LIMIT and not os.environ.get("CTMC_LARGE"):
        pytest.skip(f"{model.expect_states:,} states: `.ci/run` gates it after the tests "
                    "(CTMC_LARGE=1 runs it here)")
    machine = build_machine(model)
    options = BfsOptions(max_depth=model.engine["max_depth"] or None,
                         deadlock=model.engine["deadlock"],
                         symmetry=not model.engine["full_search"])
    result = run(machine, options)
    assert outcome_matches(model, result), (model.expect_outcome, result.expectation)
    if model.engine["full_search"] and model.expect_states is not None:
        assert result.stats["distinct_states"] == model.expect_states
    if not model.engine["full_search"]:
        assert result.stats["distinct_states"] == model.expect_orbits
    elif machine.scalarsets and result.stats["distinct_states"] <= SYMMETRY_RECHECK_LIMIT:
        _same_under_symmetry(model, machine, options, result, tmp_path)
    if result.violation is None:
        return
    trace_file = tmp_path / f"{model.name}.itf.json"
    write_trace(result.violation.trace, trace_file)
    replayed, violated = check_trace(trace_file)
    assert result.violation.name in violated
    assert replayed.states == result.violation.trace.states
    console = Console(record=True, width=120)
    show_trace(replayed, console)
    text = console.export_text()
    for action in replayed.actions[1:]:
        assert action.name in text
    assert result.violation.name in text
    _view_draws_every_step(replayed)


def _same_under_symmetry(model, machine, options: BfsOptions, full, tmp_path: Path) -> None:
    """Storing one state per orbit changes the count (to the file's `orbits`), never the
    verdict, the diameter or the counterexample's length; that counterexample is a
    concrete trace that replays."""
    reduced = run(machine, dataclasses.replace(options, symmetry=True))
    assert reduced.expectation == full.expectation
    assert reduced.stats["diameter"] == full.stats["diameter"]
    assert reduced.stats["distinct_states"] < full.stats["distinct_states"]
    if model.expect_orbits is not None:
        assert reduced.stats["distinct_states"] == model.expect_orbits
    if full.violation is None:
        return
    assert reduced.violation is not None
    assert len(reduced.violation.trace) == len(full.violation.trace)
    trace_file = tmp_path / f"{model.name}-symmetry.itf.json"
    write_trace(reduced.violation.trace, trace_file)
    assert reduced.violation.name in check_trace(trace_file)[1]


def _view_draws_every_step(trace: Trace) -> None:
    """The spec's protocol view (if any) draws every state and step without failing:
    its failures would otherwise show only as a note in the viewers."""
    machine = trace.machine
    if machine.view is None:
        return
    states = [machine.decode(s) for s in trace.states]
    for state in states:
        rendered = render(machine.view, state)
        assert rendered.note == "" and rendered.lanes
    for i, action in enumerate(trace.actions[1:], start=1):
        machine.view.events(Step(action.name, action.params_json(), states[i - 1], states[i]))
    assert len(page_data(trace)["steps"]) == len(trace) + 1

"""Every model in models/ gives its expected outcome, and every counterexample it
produces replays through `trace check`, renders with `trace show`, and is drawn by
its spec's protocol view."""

from __future__ import annotations

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


def test_the_suite_is_not_empty():
    assert len(MODELS) >= 6


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_model_meets_its_expectation(path: Path, tmp_path: Path):
    model = load_model(path, MODELS_DIR)
    machine = build_machine(model)
    options = BfsOptions(max_depth=model.engine["max_depth"] or None,
                         deadlock=model.engine["deadlock"])
    result = run(machine, options)
    assert outcome_matches(model, result), (model.expect_outcome, result.expectation)
    if model.expect_states is not None:
        assert result.stats["distinct_states"] == model.expect_states
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

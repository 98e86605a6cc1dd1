"""What a trace says, whoever draws it: the terminal viewer (`view`) and the HTML page
(`html`) both tell a counterexample from these facts, so they cannot disagree.

A step's story is its action, the spec's narration, the protocol view's events and
tables before and after it; the trace's is where a lasso loops and which property
breaks at the end, with the values of the variables that property reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checker.lang.expr import Expr
from checker.lang.machine import Machine
from checker.traces.trace import Trace
from checker.views import Event, Rendered, Step, changed_cells, events, render, show

CTI = "cti"  # the violation kind `prove` gives a counterexample to induction


@dataclass(frozen=True)
class StepStory:
    """Step i of a trace in the spec's terms (the view's parts empty without a view)."""

    index: int
    title: str
    narration: str
    events: list[Event]
    before: dict[str, Any]  # decoded state before the step (the state itself for step 0)
    after: dict[str, Any]
    view: Rendered | None  # the protocol view of `after`
    changed: set[tuple[str, str, int, int]]  # the view's cells that this step changed


def step_story(trace: Trace, i: int, previous: Rendered | None = None) -> StepStory:
    """The story of step i; `previous` is the view of state i-1 when the caller has it."""
    machine = trace.machine
    after = machine.decode(trace.states[i])
    before = machine.decode(trace.states[i - 1]) if i else after
    view = render(machine.view, after) if machine.view is not None else None
    action = trace.actions[i]
    if action is None:
        return StepStory(i, f"Step {i}: {start_label(trace)}", "", [], before, after, view,
                         set())
    narration = narrate(machine, action.name, action.params_json(), before, after)
    happened = events(machine.view, Step(action.name, action.params_json(), before, after)) \
        if machine.view is not None else []
    changed: set[tuple[str, str, int, int]] = set()
    if view is not None:
        if previous is None:
            previous = render(machine.view, before)
        changed = changed_cells(previous, view)
    return StepStory(i, f"Step {i}: {action.label}", narration, happened, before, after,
                     view, changed)


def start_label(trace: Trace) -> str:
    """What the first state is: initial, or for a counterexample to induction any state
    satisfying the invariants and lemmas."""
    if trace.violation.get("kind") == CTI:
        return "start (satisfies the invariants and lemmas; may be unreachable)"
    return "initial state"


def narrate(machine: Machine, name: str, params: dict[str, Any], before: dict[str, Any],
            after: dict[str, Any]) -> str:
    """The spec's own words for a step; a failing narrator must not hide the trace."""
    if machine.narrator is None:
        return ""
    try:
        return str(machine.narrator(name, params, before, after))
    except Exception as exc:  # noqa: BLE001 - the trace still shows
        return f"(narrator failed: {type(exc).__name__}: {exc})"


def loop_sentence(trace: Trace) -> str:
    """How a lasso goes on after its last state ("" for a finite trace)."""
    if trace.loop is None:
        return ""
    if trace.loop_action is None:
        return "the behaviour stays in this last state forever (no fair action is enabled)"
    return (f"{trace.loop_action.label} leads back to step {trace.loop}, and the loop "
            f"repeats forever")


def violation_sentence(trace: Trace) -> str:
    """`kind name: message`, or "" for a trace that shows no violation."""
    v = trace.violation
    if not v:
        return ""
    message = v.get("message")
    return f"{v.get('kind', '?')} {v.get('name', '?')}" + (f": {message}" if message else "")


def property_values(trace: Trace) -> list[str]:
    """`name = value` for each variable the violated property reads, at the end."""
    machine = trace.machine
    names = property_vars(machine, str(trace.violation.get("name", "")))
    last = machine.decode(trace.states[-1])
    return [f"{name} = {show(last[name])}" for name in names]


def property_vars(machine: Machine, name: str) -> list[str]:
    """The variables a property of `machine` reads, in declaration order."""
    exprs: list[Expr] = [p.expr for p in machine.invariants + machine.step_invariants
                         + machine.lemmas if p.name == name]
    exprs += [e for p in machine.liveness if p.name == name for e in (p.trigger, p.goal)]
    slots: set[int] = set()
    seen: set[int] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if e.id in seen:
            continue
        seen.add(e.id)
        if e.op == "var":
            slots.add(e.slot)
        stack.extend(e.args)
    return [v.name for v in machine.vars
            if any(v.first <= slot < v.first + v.count for slot in slots)]

"""What a trace says, whoever draws it: the terminal viewer (`view`) and the HTML page
(`html`) both tell a counterexample from these facts, so they cannot disagree.

A step's story is its action, the spec's narration, the protocol view's events and
tables before and after it; the trace's is where a lasso loops and which property
breaks at the end, and why (`why`): the clause that fails, the values it reads and the
steps that set them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from checker.lang.machine import Machine, VarInfo
from checker.traces.trace import Trace
from checker.traces.why import Why
from checker.views import Event, Rendered, Step, changed_cells, events, render

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


def failing_title(trace: Trace) -> str:
    """The title of the step an action fails to take at the end of `trace`."""
    action = trace.failing_action
    assert action is not None
    return f"Step {len(trace) + 1}: {action.label} fails"


def narrate(machine: Machine, name: str, params: dict[str, Any], before: dict[str, Any],
            after: dict[str, Any]) -> str:
    """The spec's own words for a step; a failing narrator must not hide the trace."""
    if machine.narrator is None:
        return ""
    try:
        return str(machine.narrator(name, params, before, after))
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the trace still shows
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


def property_values(why: Why | None) -> list[str]:
    """`name = value` for each value the failing clauses read at the end (each slot
    once: `accepted[0] = yes`, not the whole array)."""
    if why is None:
        return []
    seen: dict[str, str] = {}
    for clause in why.clauses:
        for r in clause.readings:
            seen.setdefault(r.name, f"{r.name} = {r.value}")
    return list(seen.values())


@dataclass(frozen=True)
class SetStep:
    """A step that set a value the failing clause reads, in the spec's words."""

    index: int
    label: str
    narration: str
    names: tuple[str, ...]  # the values it set


def set_steps(trace: Trace, why: Why) -> list[SetStep]:
    """The steps that set what the failing clauses read, in order."""
    machine = trace.machine
    out = []
    for i, names in why.sets.items():
        action = trace.actions[i]
        assert action is not None  # step 0 sets nothing
        narration = narrate(machine, action.name, action.params_json(),
                            machine.decode(trace.states[i - 1]), machine.decode(trace.states[i]))
        out.append(SetStep(i, action.label, narration, names))
    return out


def slice_sentence(why: Why, steps: int) -> str:
    """How many steps lead to the values the failing clauses read."""
    others = steps - len(why.matters)
    if not others:
        return "Every step leads to these values."
    return (f"{len(why.matters)} of {steps} steps lead to these values; the other {others} "
            f"{'is' if others == 1 else 'are'} dimmed.")


class _Untouched:
    """A slot no step of the trace touches, shown as `·`."""

    def __str__(self) -> str:
        return UNTOUCHED

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Untouched)

    def __hash__(self) -> int:
        return hash(UNTOUCHED)


UNTOUCHED = "\u00b7"


def masked(var: VarInfo, value: Any, untouched: frozenset[int]) -> Any:
    """`value` (decoded) with the leaves at `untouched` slots replaced by `·`."""
    leaves = [(path, var.first + i) for i, (path, _) in enumerate(var.type.leaves())]
    if not any(slot in untouched for _, slot in leaves):
        return value
    out = copy.deepcopy(value)
    for path, slot in leaves:
        if slot in untouched and path:
            holder = out
            for key in path[:-1]:
                holder = holder[key]
            holder[path[-1]] = _Untouched()
    return out

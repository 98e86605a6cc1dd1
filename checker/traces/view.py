"""Showing a trace in the terminal so that a counterexample reads as a story.

A reader wants to see what each action changed and why, not every variable at
every step. When the spec declares a protocol view (`checker.views`), the trace
opens with each lane's tables for the initial state, and each step shows its
action, the spec's narration, the events between lanes, and the view's tables
that changed (changed cells highlighted). Without a view, or with `raw`, each step
shows the variables that changed (old -> new). Either way the trace ends in red at
the violation it demonstrates, and a last panel says why: the clause of the property
that fails, the values it reads with the step that set each, and the steps that set
them (marked in their titles; the steps that lead to none of it are dimmed).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from checker.errors import TraceError
from checker.traces.story import (
    failing_title,
    loop_sentence,
    masked,
    narrate,
    property_values,
    set_steps,
    slice_sentence,
    start_label,
    step_story,
    violation_sentence,
)
from checker.traces.trace import Trace
from checker.traces.why import Why, explain, unused_slots
from checker.views import Rendered, show

CHANGED = "bold yellow"
VIOLATION = "bold red"
GHOST = "dim"
# what a terminal would act on rather than show (ESC starts colour and title changes)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def show_trace(trace: Trace, console: Console, *, full: bool = False,
               step: int | None = None, raw: bool = False) -> None:
    """Print the header, every step and why the property fails; `step=k` prints step k
    alone; `raw` shows the variables even when the spec declares a protocol view."""
    trace = printable(trace)
    look = _Look(trace)
    failed = trace.failing_action is not None
    if step is not None:
        if not 0 <= step <= len(trace) + failed:
            raise TraceError(f"step {step} is out of range: the trace has {len(trace)} steps"
                             + (f" and a failing step {len(trace) + 1}" if failed else ""))
        console.print(failing_panel(trace) if step > len(trace)
                      else any_step_panel(trace, step, full=full, raw=raw, look=look))
        return
    console.print(header_panel(trace))
    for i in range(len(trace) + 1):
        console.print(any_step_panel(trace, i, full=full, raw=raw, look=look))
    if failed:
        console.print(failing_panel(trace))
    if look.why is not None:
        console.print(why_panel(trace, look.why))


def show_trace_interactive(trace: Trace, console: Console, raw: bool = False) -> None:
    """Like `show_trace`, waiting for Enter after each step (q quits); for a TTY."""
    trace = printable(trace)
    look = _Look(trace)
    console.print(header_panel(trace))
    for i in range(len(trace) + 1):
        console.print(any_step_panel(trace, i, raw=raw, look=look))
        if i == len(trace):
            if trace.failing_action is not None:
                console.print(failing_panel(trace))
            if look.why is not None:
                console.print(why_panel(trace, look.why))
            return
        try:
            answer = console.input(Text("Enter: next step, q: quit ", style="dim"))
        except EOFError:
            return
        if answer.strip().lower() == "q":
            return


class _Look:
    """What every step's panel needs to know about the whole trace: why it fails, and
    the slots it never touches."""

    def __init__(self, trace: Trace):
        self.why = explain(trace)
        self.untouched = unused_slots(trace)

    def title(self, i: int, title: str) -> tuple[str, str]:
        """The step's title, marked when it sets what the property reads, and the
        border's style (dim when the step leads to none of it)."""
        why = self.why
        if why is None or i == 0:
            return title, "blue"
        if i in why.sets:
            return f"{title}  \u25c6 sets {', '.join(why.sets[i])}", "blue"
        return title, "blue" if i in why.matters else "dim"


def printable(trace: Trace) -> Trace:
    """`trace` with the free text its file brought (`#meta`, the violation) made safe for
    a terminal: control characters shown as escapes, so a hostile trace cannot recolour
    the screen or retitle the window."""
    return dataclasses.replace(trace, meta=_escaped(trace.meta),
                               violation=_escaped(trace.violation))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escaped(v) for v in value]
    return value


def failing_panel(trace: Trace) -> Panel:
    """The action that fails to evaluate in the last state, as a step of its own: the
    error is its, not the last legal step's."""
    action = trace.failing_action
    assert action is not None
    parts: list[RenderableType] = [Text("violation: ", style=VIOLATION)
                                   + (violation_text(trace) or Text(""))]
    return Panel(Group(*parts), title=Text(failing_title(trace), style=VIOLATION),
                 title_align="left", border_style="red")


def why_panel(trace: Trace, why: Why) -> Panel:
    """Why the property fails: each failing clause, the values it reads and the step
    that set each, the steps that set them in the spec's words, and the slice."""
    parts: list[RenderableType] = []
    for clause in why.clauses:
        parts.append(Text(why.headline(clause), style=VIOLATION))
        grid = Table.grid(padding=(0, 2))
        grid.add_column()
        grid.add_column(style="dim")
        for r in clause.readings:
            grid.add_row(Text(f"{r.name} = {r.value}"),
                         Text(f"set at step {r.since}" if r.since else "from the first state"))
        parts.append(grid)
    if why.hidden:
        parts.append(Text(f"and {why.hidden} more failing instances", style="dim"))
    if why.doc:
        parts.append(Text(" ".join(why.doc.split()), style="italic"))
    for s in set_steps(trace, why):
        parts.append(Text(f"step {s.index} {s.label}" + (f": {s.narration}" if s.narration
                                                          else "")
                          + f" \u2014 sets {', '.join(s.names)}"))
    parts.append(Text(slice_sentence(why, len(trace)), style="dim"))
    return Panel(Group(*parts), title=Text("Why", style=VIOLATION), title_align="left",
                 border_style="red")


def header_panel(trace: Trace) -> Panel:
    """Spec, parameters, mutations, violation, length and provenance of a trace."""
    machine = trace.machine
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("spec", Text(machine.spec_name))
    grid.add_row("params", Text(", ".join(f"{k}={v}" for k, v in machine.params.items())
                                or "none"))
    grid.add_row("mutations", Text(", ".join(machine.mutations) or "none"))
    grid.add_row("violation", violation_text(trace) or Text("none"))
    grid.add_row("steps", Text(str(len(trace))))
    if trace.loop is not None:
        grid.add_row("loop", loop_text(trace))
    for key, value in sorted(trace.meta.items()):
        grid.add_row(key, Text(str(value)))
    return Panel(grid, title=Text("Trace"), title_align="left")


def loop_text(trace: Trace) -> Text:
    """How a lasso goes on after its last state."""
    return Text(loop_sentence(trace), style=VIOLATION)


def violation_text(trace: Trace) -> Text | None:
    """`kind name: message` in red, or None for a trace that shows no violation."""
    sentence = violation_sentence(trace)
    return Text(sentence, style=VIOLATION) if sentence else None


def any_step_panel(trace: Trace, i: int, *, full: bool = False, raw: bool = False,
                   look: _Look | None = None) -> Panel:
    """Step i through the spec's protocol view, or as variables (`raw`, `full`, or a
    spec without a view)."""
    look = look or _Look(trace)
    if raw or full or trace.machine.view is None:
        return step_panel(trace, i, full=full, look=look)
    return view_step_panel(trace, i, look)


def view_step_panel(trace: Trace, i: int, look: _Look | None = None) -> Panel:
    """Step i in the protocol's terms: the action, the narration, the events between
    lanes, and the tables that changed (all of them for the initial state)."""
    look = look or _Look(trace)
    story = step_story(trace, i)
    assert story.view is not None
    parts: list[RenderableType] = []
    if story.narration:
        parts.append(Text(story.narration, style="italic"))
    for event in story.events:
        arrow = f" -> {', '.join(event.targets)}" if event.targets else ""
        parts.append(Text(f"{event.source}{arrow}: {event.label}", style="cyan"))
    if i == 0:
        shown = {(lane, t.title) for lane, tables in story.view.tables.items() for t in tables}
    else:
        shown = {(lane, title) for lane, title, _, _ in story.changed}
        hidden = [v.name for v in trace.machine.vars
                  if story.before[v.name] != story.after[v.name]] if not shown else []
        if hidden:
            parts.append(Text(f"(not in the view: {', '.join(hidden)} changed)", style="dim"))
    if story.view.note:
        parts.append(Text(story.view.note, style="red"))
    parts += _lane_tables(story.view, shown, story.changed)
    _end_of_trace(trace, i, parts, look.why)
    return _panel(trace, i, story.title, parts, look)


def _panel(trace: Trace, i: int, title: str, parts: list[RenderableType], look: _Look) -> Panel:
    failed = i == len(trace) and bool(trace.violation) and trace.failing_action is None
    title, border = look.title(i, title)
    return Panel(Group(*parts), title=Text(title, style=VIOLATION if failed else "bold"),
                 title_align="left", border_style="red" if failed else border)


def _lane_tables(view: Rendered, shown: set[tuple[str, str]],
                 marked: set[tuple[str, str, int, int]]) -> list[RenderableType]:
    """The `shown` tables of each lane, under the lane's name, marked cells highlighted."""
    out: list[RenderableType] = []
    for lane in (*view.lanes, ""):
        tables = [t for t in view.tables.get(lane, []) if (lane, t.title) in shown]
        if not tables:
            continue
        out.append(Text(lane or "whole system", style="bold magenta"))
        for table in tables:
            grid = Table(title=Text(table.title, style="dim"), title_justify="left",
                         box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
            for column in table.columns:
                grid.add_column(column, overflow="fold")
            for r, row in enumerate(table.rows):
                grid.add_row(*[Text(show(cell), style=CHANGED
                                    if (lane, table.title, r, c) in marked else "")
                               for c, cell in enumerate(row)])
            out.append(grid)
    return out


def _end_of_trace(trace: Trace, i: int, parts: list[RenderableType], why: Why | None) -> None:
    """Where a lasso loops, and at the end the violation with the values it reads."""
    if trace.loop is not None and i == trace.loop:
        parts.append(Text("the loop starts here", style=VIOLATION))
    if i != len(trace):
        return
    if trace.loop is not None:
        parts.append(Text("then: ", style=VIOLATION) + loop_text(trace))
    if trace.failing_action is not None:
        parts.append(Text(f"then: {trace.failing_action.label} fails (step {i + 1})",
                          style=VIOLATION))
        return
    violation = violation_text(trace)
    if violation is not None:
        parts.append(Text("violation: ", style=VIOLATION) + violation)
        values = property_values(why)
        if values:
            parts.append(Text("it reads: " + "; ".join(values), style="red"))


def step_panel(trace: Trace, i: int, *, full: bool = False, look: _Look | None = None) -> Panel:
    """Step i: its action, narration and changed (or, with `full`, all) variables; an
    array element the trace never touches shows as `·`."""
    look = look or _Look(trace)
    machine = trace.machine
    after = machine.decode(trace.states[i])
    before = machine.decode(trace.states[i - 1]) if i else after
    action = trace.actions[i]
    parts: list[RenderableType] = []
    if action is None:
        title = f"Step {i}: {start_label(trace)}"
    else:
        title = f"Step {i}: {action.label}"
        narration = narrate(machine, action.name, action.params_json(), before, after)
        if narration:
            parts.append(Text(narration, style="italic"))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("variable", no_wrap=True)
    table.add_column("value", overflow="fold")
    for v in machine.vars:
        old, new = before[v.name], after[v.name]
        changed = old != new
        if not (changed or full or i == 0):
            continue
        old, new = masked(v, old, look.untouched), masked(v, new, look.untouched)
        value = value_text(old) + Text(" -> ") + value_text(new, old) if changed \
            else value_text(new)
        table.add_row(Text(v.name + (" (ghost)" if v.ghost else "")), value,
                      style=GHOST if v.ghost else None)
    parts.append(table if table.row_count else Text("(no variable changed)", style="dim"))
    _end_of_trace(trace, i, parts, look.why)
    return _panel(trace, i, title, parts, look)


def value_text(value: Any, old: Any = None) -> Text:
    """A compact JSON-like rendering; with `old`, the parts that differ are highlighted."""
    text = Text()
    _append(text, value, old, old is not None)
    return text


def _append(text: Text, value: Any, old: Any, compare: bool) -> None:
    if isinstance(value, list):
        text.append("[")
        for j, item in enumerate(value):
            text.append(", " if j else "")
            _append(text, item, old[j] if compare else None, compare)
        text.append("]")
    elif isinstance(value, dict):
        text.append("{")
        for j, (key, item) in enumerate(value.items()):
            text.append(f"{', ' if j else ''}{key}: ")
            _append(text, item, old[key] if compare else None, compare)
        text.append("}")
    else:
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        text.append(shown, style=CHANGED if compare and value != old else "")

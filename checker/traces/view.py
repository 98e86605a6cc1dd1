"""Showing a trace in the terminal so that a counterexample reads as a story.

A reader wants to see what each action changed and why, not every variable at
every step. When the spec declares a protocol view (`checker.views`), the trace
opens with each lane's tables for the initial state, and each step shows its
action, the spec's narration, the events between lanes, and the view's tables
that changed (changed cells highlighted). Without a view, or with `raw`, each step
shows the variables that changed (old -> new). Either way the trace ends in red at
the violation it demonstrates, with the values of the variables the violated
property reads.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from checker.errors import TraceError
from checker.traces.story import (
    loop_sentence,
    narrate,
    property_values,
    start_label,
    step_story,
    violation_sentence,
)
from checker.traces.trace import Trace
from checker.views import Rendered, show

CHANGED = "bold yellow"
VIOLATION = "bold red"
GHOST = "dim"


def show_trace(trace: Trace, console: Console, *, full: bool = False,
               step: int | None = None, raw: bool = False) -> None:
    """Print the header and every step; `step=k` prints step k alone; `raw` shows the
    variables even when the spec declares a protocol view."""
    if step is not None:
        if not 0 <= step <= len(trace):
            raise TraceError(f"step {step} is out of range: the trace has {len(trace)} steps")
        console.print(any_step_panel(trace, step, full=full, raw=raw))
        return
    console.print(header_panel(trace))
    for i in range(len(trace) + 1):
        console.print(any_step_panel(trace, i, full=full, raw=raw))


def show_trace_interactive(trace: Trace, console: Console, raw: bool = False) -> None:
    """Like `show_trace`, waiting for Enter after each step (q quits); for a TTY."""
    console.print(header_panel(trace))
    for i in range(len(trace) + 1):
        console.print(any_step_panel(trace, i, raw=raw))
        if i == len(trace):
            return
        try:
            answer = console.input(Text("Enter: next step, q: quit ", style="dim"))
        except EOFError:
            return
        if answer.strip().lower() == "q":
            return


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


def any_step_panel(trace: Trace, i: int, *, full: bool = False, raw: bool = False) -> Panel:
    """Step i through the spec's protocol view, or as variables (`raw`, `full`, or a
    spec without a view)."""
    if raw or full or trace.machine.view is None:
        return step_panel(trace, i, full=full)
    return view_step_panel(trace, i)


def view_step_panel(trace: Trace, i: int) -> Panel:
    """Step i in the protocol's terms: the action, the narration, the events between
    lanes, and the tables that changed (all of them for the initial state)."""
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
    _end_of_trace(trace, i, parts)
    failed = i == len(trace) and bool(trace.violation)
    return Panel(Group(*parts), title=Text(story.title, style=VIOLATION if failed else "bold"),
                 title_align="left", border_style="red" if failed else "blue")


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


def _end_of_trace(trace: Trace, i: int, parts: list[RenderableType]) -> None:
    """Where a lasso loops, and at the end the violation with the values it reads."""
    if trace.loop is not None and i == trace.loop:
        parts.append(Text("the loop starts here", style=VIOLATION))
    if i != len(trace):
        return
    if trace.loop is not None:
        parts.append(Text("then: ", style=VIOLATION) + loop_text(trace))
    violation = violation_text(trace)
    if violation is not None:
        parts.append(Text("violation: ", style=VIOLATION) + violation)
        values = property_values(trace)
        if values:
            parts.append(Text("it reads: " + "; ".join(values), style="red"))


def step_panel(trace: Trace, i: int, *, full: bool = False) -> Panel:
    """Step i: its action, narration and changed (or, with `full`, all) variables."""
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
        value = value_text(old) + Text(" -> ") + value_text(new, old) if changed \
            else value_text(new)
        table.add_row(Text(v.name + (" (ghost)" if v.ghost else "")), value,
                      style=GHOST if v.ghost else None)
    parts.append(table if table.row_count else Text("(no variable changed)", style="dim"))
    _end_of_trace(trace, i, parts)
    failed = i == len(trace) and bool(trace.violation)
    return Panel(Group(*parts), title=Text(title, style=VIOLATION if failed else "bold"),
                 title_align="left", border_style="red" if failed else "blue")


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

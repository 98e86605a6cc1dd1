"""Showing a trace in the terminal so that a counterexample reads as a story.

A reader wants to see what each action changed and why, not every variable at
every step: each step shows its action, the spec's narration, and only the
variables that changed (old -> new, the changed parts highlighted), ending in
red at the violation the trace demonstrates.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from checker.errors import TraceError
from checker.traces.trace import Trace

CHANGED = "bold yellow"
VIOLATION = "bold red"
GHOST = "dim"


def show_trace(trace: Trace, console: Console, *, full: bool = False,
               step: int | None = None) -> None:
    """Print the header and every step; `step=k` prints step k alone."""
    if step is not None:
        if not 0 <= step <= len(trace):
            raise TraceError(f"step {step} is out of range: the trace has {len(trace)} steps")
        console.print(step_panel(trace, step, full=full))
        return
    console.print(header_panel(trace))
    for i in range(len(trace) + 1):
        console.print(step_panel(trace, i, full=full))


def show_trace_interactive(trace: Trace, console: Console) -> None:
    """Like `show_trace`, waiting for Enter after each step (q quits); for a TTY."""
    console.print(header_panel(trace))
    for i in range(len(trace) + 1):
        console.print(step_panel(trace, i))
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
    if trace.loop_action is None:
        return Text("the behaviour stays in this last state forever (no fair action is "
                    "enabled)", style=VIOLATION)
    return Text(f"{trace.loop_action.label} leads back to step {trace.loop}, and the loop "
                f"repeats forever", style=VIOLATION)


def violation_text(trace: Trace) -> Text | None:
    """`kind name: message` in red, or None for a trace that shows no violation."""
    v = trace.violation
    if not v:
        return None
    message = v.get("message")
    return Text(f"{v.get('kind', '?')} {v.get('name', '?')}" + (f": {message}" if message else ""),
                style=VIOLATION)


def step_panel(trace: Trace, i: int, *, full: bool = False) -> Panel:
    """Step i: its action, narration and changed (or, with `full`, all) variables."""
    machine = trace.machine
    after = machine.decode(trace.states[i])
    before = machine.decode(trace.states[i - 1]) if i else after
    action = trace.actions[i]
    parts: list[RenderableType] = []
    if action is None:
        title = f"Step {i}: " + ("start (satisfies the invariants and lemmas; may be "
                                 "unreachable)" if trace.violation.get("kind") == "cti"
                                 else "initial state")
    else:
        title = f"Step {i}: {action.label}"
        if machine.narrator is not None:
            parts.append(_narration(machine.narrator, action.name, action.params_json(),
                                    before, after))
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
    if trace.loop is not None and i == trace.loop:
        parts.append(Text("the loop starts here", style=VIOLATION))
    if trace.loop is not None and i == len(trace):
        parts.append(Text("then: ", style=VIOLATION) + loop_text(trace))
    violation = violation_text(trace) if i == len(trace) else None
    if violation is not None:
        parts.append(Text("violation: ", style=VIOLATION) + violation)
    failed = violation is not None
    return Panel(Group(*parts), title=Text(title, style=VIOLATION if failed else "bold"),
                 title_align="left", border_style="red" if failed else "blue")


def _narration(narrator: Any, name: str, params: dict[str, Any], before: dict[str, Any],
               after: dict[str, Any]) -> Text:
    """The spec's own words for a step; a failing narrator must not hide the trace."""
    try:
        return Text(str(narrator(name, params, before, after)), style="italic")
    except Exception as exc:
        return Text(f"(narrator failed: {type(exc).__name__}: {exc})", style="red")


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

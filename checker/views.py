"""Protocol views: how a spec's state reads in its own terms, drawn by general code.

A spec may declare a `View` (`m.view(...)` in its build function): its lanes (the
processes, such as nodes), the tables each lane shows for a state (lane "" holds the
tables about the whole system), and the events a step makes between lanes (a
message from one lane to others, or something on one lane alone). The trace viewers
(terminal and HTML) and the state-graph export draw views; engines never see them.
A view works on decoded states (`Machine.decode`: variables by name, enums by member
name), so it is plain Python, and a failing view must never hide a trace: failures
become a note in the view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

State = dict[str, Any]


@dataclass(frozen=True)
class Table:
    """A small table on a lane: a title, column names, and rows of cells (the first
    cell names the row, e.g. the range)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    @classmethod
    def of(cls, title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> Table:
        return cls(title, tuple(columns), tuple(tuple(r) for r in rows))


@dataclass(frozen=True)
class Event:
    """What a step does between lanes: from `source` to each of `targets` (a message),
    or on `source` alone when there are no targets."""

    source: str
    label: str
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    """One step of a trace, as a view sees it."""

    action: str
    params: dict[str, Any]
    before: State
    after: State


@dataclass
class View:
    """A spec's protocol view; see the module docstring."""

    lanes: Callable[[State], list[str]]
    tables: Callable[[State], dict[str, list[Table]]]
    events: Callable[[Step], list[Event]] = field(default=lambda step: [])


@dataclass(frozen=True)
class Rendered:
    """A view of one state: each lane's tables, and what went wrong drawing it."""

    lanes: tuple[str, ...]
    tables: dict[str, list[Table]]
    note: str = ""


def render(view: View, state: State) -> Rendered:
    """The view of `state`; a failing view gives an empty one with a note."""
    try:
        lanes = tuple(view.lanes(state))
        tables = view.tables(state)
        return Rendered(lanes, {lane: list(tables.get(lane, [])) for lane in (*lanes, "")})
    except Exception as exc:  # noqa: BLE001 - a spec's view must not hide the trace
        return Rendered((), {}, f"(the view failed: {type(exc).__name__}: {exc})")


def events(view: View, step: Step) -> list[Event]:
    """The events of `step`; a failing view gives none."""
    try:
        return list(view.events(step))
    except Exception:  # noqa: BLE001 - the narration still tells the step
        return []


def changed_cells(before: Rendered, after: Rendered) -> set[tuple[str, str, int, int]]:
    """(lane, table title, row, column) of every cell of `after` that differs from the
    same cell of `before`: the same table, the row with the same first cell."""
    out: set[tuple[str, str, int, int]] = set()
    for lane, tables in after.tables.items():
        old = {t.title: t for t in before.tables.get(lane, [])}
        for table in tables:
            previous = {row[0]: row for row in old[table.title].rows} \
                if table.title in old else {}
            for r, row in enumerate(table.rows):
                was = previous.get(row[0])
                for c, cell in enumerate(row):
                    if was is None or c >= len(was) or was[c] != cell:
                        out.add((lane, table.title, r, c))
    return out


def show(value: Any) -> str:
    """A cell as text: lists compact, booleans as yes/no, None as a dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)

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

import inspect
import os
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
    """The view of `state`; a failing or malformed view gives an empty one with a note."""
    try:
        lanes = lane_names(view.lanes(state))
        tables = view.tables(state)
        problem = table_problem(tables, lanes)
        if problem:
            return Rendered((), {}, f"(the view's tables are malformed: {problem})")
        return Rendered(lanes, {lane: list(tables.get(lane, [])) for lane in (*lanes, "")})
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a spec's view must not hide the trace
        return Rendered((), {}, f"(the view failed: {type(exc).__name__}: {exc})")


def events(view: View, step: Step) -> list[Event]:
    """The events of `step` between the lanes of its states; a failing view gives none,
    and a malformed event is left out rather than drawn as lanes that do not exist."""
    try:
        lanes = {*lane_names(view.lanes(step.before)), *lane_names(view.lanes(step.after))}
        return [e for e in view.events(step) if not event_problem(e, lanes)]
    except (Exception, SystemExit):  # noqa: BLE001 - the narration still tells the step
        return []


def lane_names(lanes: Any) -> tuple[str, ...]:
    """A view's lanes, refused (ValueError) unless a list of distinct, non-empty names."""
    if isinstance(lanes, str) or not isinstance(lanes, list | tuple):
        raise ValueError(f"lanes must be a list of names, got {lanes!r}")
    bad = [lane for lane in lanes if not isinstance(lane, str) or not lane]
    if bad:
        raise ValueError(f"a lane must be a non-empty string, got {bad[0]!r}")
    if len(set(lanes)) != len(lanes):
        raise ValueError(f"lanes must be distinct, got {list(lanes)!r}")
    return tuple(lanes)


def table_problem(tables: Any, lanes: tuple[str, ...]) -> str:
    """What is wrong with a view's tables for a state ("" if nothing): a dict from a
    lane (or "" for the whole system) to a list of `Table`s whose rows fit the columns."""
    if not isinstance(tables, dict):
        return f"tables must return a dict from lane to a list of Table, got {tables!r}"
    for lane, items in tables.items():
        if lane != "" and lane not in lanes:
            return f"tables name lane {lane!r}, which is not one of the lanes {list(lanes)}"
        if not isinstance(items, list | tuple) or \
                not all(isinstance(item, Table) for item in items):
            return f"tables[{lane!r}] must be a list of Table, got {items!r}"
        for item in items:
            if not item.columns:
                return f"table {item.title!r} has no columns"
            wrong = [row for row in item.rows if len(row) != len(item.columns)]
            if wrong:
                return (f"table {item.title!r} has {len(item.columns)} columns but a row "
                        f"of {len(wrong[0])} cells: {list(wrong[0])!r}")
            for row in item.rows:  # its first cell names the row from step to step
                try:
                    hash(row[0])
                except TypeError:
                    return (f"table {item.title!r}: a row's first cell names the row, so it "
                            f"must be a value like a number or a string, got {row[0]!r}")
    return ""


def event_problem(event: Any, lanes: set[str] | tuple[str, ...]) -> str:
    """What is wrong with an event ("" if nothing): an `Event` from a lane, with a text
    label, to a tuple of lanes."""
    if not isinstance(event, Event):
        return f"events must return a list of Event, got {event!r}"
    if not isinstance(event.source, str) or event.source not in lanes:
        return f"{event!r}: source {event.source!r} is not one of the lanes {sorted(lanes)}"
    if not isinstance(event.label, str):
        return f"{event!r}: label must be a string, got {event.label!r}"
    if isinstance(event.targets, str) or not isinstance(event.targets, tuple | list):
        return (f"{event!r}: targets must be a tuple of lane names, got {event.targets!r}"
                + (" (a string: write (name,))" if isinstance(event.targets, str) else ""))
    unknown = [x for x in event.targets if x not in lanes]
    if unknown:
        return f"{event!r}: target {unknown[0]!r} is not one of the lanes {sorted(lanes)}"
    return ""


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


# --- checking a spec's declarations when it builds --------------------------------------

_STEPS_CHECKED = 20  # steps from the initial state the view and narration are run on
_ACTIONS_SCANNED = 2000  # action instances looked at to find them


def check_declared(machine: Any) -> None:
    """Run the spec's view and narration on its initial states and the first steps out
    of them, and refuse (SpecError, one line naming the declaration) what they could
    not draw: a wrong signature, an exception, or a malformed lane, table or event.
    Later states still get a note rather than an error, if the view fails there."""
    from checker.backends.scalar import ScalarMachine
    from checker.errors import CheckerError, SpecError

    view, narrator, spec = machine.view, machine.narrator, f"spec {machine.spec_name}"
    for fn, what, arity in ((narrator, "narration", 4),
                            *(((view.lanes, "view's lanes", 1), (view.tables, "view's tables", 1),
                               (view.events, "view's events", 1)) if view else ())):
        if fn is not None and not _takes(fn, arity):
            raise SpecError(f"{spec}: the {what} ({_where(fn)}) must take {arity} "
                            f"argument{'s' if arity > 1 else ''}")

    def run(fn: Callable, what: str, at: str, *args: Any) -> Any:
        try:
            return fn(*args)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the spec's own code
            raise SpecError(f"{spec}: the {what} ({_where(fn)}) fails on {at}: "
                            f"{type(exc).__name__}: {exc}") from None

    def refuse(fn: Callable, what: str, at: str, problem: str) -> None:
        if problem:
            raise SpecError(f"{spec}: the {what} ({_where(fn)}) on {at}: {problem}")

    def lanes_of(state: State, at: str) -> tuple[str, ...]:
        got = run(view.lanes, "view's lanes", at, state)
        try:
            return lane_names(got)
        except ValueError as exc:
            raise SpecError(f"{spec}: the view's lanes ({_where(view.lanes)}) on {at}: "
                            f"{exc}") from None

    starts = machine.init_states[:3]
    if view is not None:
        for state in starts:
            decoded = machine.decode(state)
            at = "the initial state"
            lanes = lanes_of(decoded, at)
            refuse(view.tables, "view's tables", at,
                   table_problem(run(view.tables, "view's tables", at, decoded), lanes))
    scalar = ScalarMachine(machine)
    found = 0
    for action in machine.actions[:_ACTIONS_SCANNED]:
        if found == _STEPS_CHECKED:
            break
        try:
            if not scalar.enabled(starts[0], action):
                continue
            after = scalar.apply(starts[0], action)
        except CheckerError:
            continue  # an evaluation error: the engines report it, with its trace
        found += 1
        step = Step(action.name, action.params_json(), machine.decode(starts[0]),
                    machine.decode(after))
        at = f"step {action.label} from the initial state"
        if narrator is not None:
            said = run(narrator, "narration", at, step.action, step.params, step.before,
                       step.after)
            if not isinstance(said, str):
                refuse(narrator, "narration", at, f"it must return a string, got {said!r}")
        if view is not None:
            around = {*lanes_of(step.before, at), *lanes_of(step.after, at)}
            happened = run(view.events, "view's events", at, step)
            if not isinstance(happened, list | tuple):
                refuse(view.events, "view's events", at,
                       f"it must return a list of Event, got {happened!r}")
            for event in happened:
                refuse(view.events, "view's events", at, event_problem(event, around))


def _takes(fn: Callable, n: int) -> bool:
    """Whether `fn` can be called with n positional arguments."""
    try:
        inspect.signature(fn).bind(*range(n))
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature: let the call tell
        return True
    return True


def _where(fn: Callable) -> str:
    """`file.py:line` of a function, or its name."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return getattr(fn, "__name__", repr(fn))
    return f"{os.path.relpath(code.co_filename)}:{code.co_firstlineno}"

"""Why a counterexample breaks its property, from what every spec declares: the clause of
the violated property that is false (a top-level conjunct; a ForAll's instance says the
values it binds), the values that clause reads with the step each came from, and the
steps that matter (a backward slice of the trace).

Reads are the slots an expression actually evaluates, lazily, as the scalar backend does
(`If`, `And`, `Or` and array reads look at what they need only), so a clause over
`robs[i][w]` reads one element, not the array. The slice walks the trace backwards from
what the failing clauses read: a step that changed one of those slots matters, and then
so do the slots its guard and its updates of them read, before it. In a shortest
counterexample nearly every step matters; the slice pays off on long traces (simulation)
and the steps that set the values read stand out in either (decision 0020).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from checker.backends.scalar import OutOfRange, evaluate
from checker.lang.expr import BOOL, EnumType, Expr, const, indexed, slots_read
from checker.lang.machine import Machine, Slot
from checker.lang.types import Array
from checker.traces.trace import Trace

SHOWN_CLAUSES = 3  # failing clauses spelled out; the rest are counted


@dataclass(frozen=True)
class Reading:
    """One value a failing clause reads: the slot's name (`x'` for the state after the
    step, in a step invariant), its value, and the step that set it (0: the first
    state)."""

    name: str
    value: str
    since: int


@dataclass(frozen=True)
class Clause:
    """A failing clause of the property: as a reader writes it, the ForAll values bound
    in it, and what it reads."""

    text: str
    binding: str  # the ForAll values bound in it ("iw=(0, 1)"), or ""
    readings: tuple[Reading, ...]


@dataclass(frozen=True)
class Why:
    """The explanation of a trace's violation."""

    name: str
    doc: str
    clauses: tuple[Clause, ...]
    hidden: int  # failing clauses not spelled out
    sets: dict[int, tuple[str, ...]]  # step -> the read values it set
    matters: frozenset[int]  # the steps in the slice (1-based step indexes)

    def headline(self, clause: Clause) -> str:
        where = f" for {clause.binding}" if clause.binding else ""
        return f"{self.name} fails{where}: {clause.text}"


def explain(trace: Trace) -> Why | None:
    """The explanation of `trace`'s violation, or None when it claims none that a
    property states (a deadlock, an evaluation error, no violation)."""
    machine = trace.machine
    found = _property(machine, str(trace.violation.get("name", ""))) if trace.violation \
        else None
    if found is None:
        return None
    n, origin = len(trace), _origins(trace)
    every: set[int] = set()
    if found.liveness:  # the trigger's values where the loop starts
        start = n if trace.loop is None else trace.loop
        trigger, goal = found.clauses
        state = trace.states[start]
        failing = [(trigger, f"once {_text(machine, trigger)} holds (at step {start}), "
                             f"{_text(machine, goal)} never does on the loop that follows",
                    {(slot, start, False) for slot, _ in _reads(trigger, (state, state))})]
        # the goal fails for want of a step, which a slice cannot point at: no dimming
        every = set(range(1, n + 1))
    else:
        frames = _frames(trace, found.over_step)
        failing = [(e, _text(machine, e), {_point(slot, frame, n, found.over_step)
                                           for slot, frame in _reads(e, frames)})
                   for e in found.clauses if not _holds(e, frames)]
    ends = {(slot, at) for _, _, points in failing for slot, at, _ in points}
    shown = []
    for e, text, points in failing[:SHOWN_CLAUSES]:
        readings = tuple(Reading(machine.slots[slot].name + ("'" if primed else ""),
                                 slot_value(machine.slots[slot], trace.states[at][slot]),
                                 origin(slot, at))
                         for slot, at, primed in sorted(points))
        shown.append(Clause(text, found.bindings.get(e.id, ""), readings))
    sets: dict[int, list[str]] = {}
    for slot, at in sorted(ends):
        since = origin(slot, at)
        if since:
            sets.setdefault(since, []).append(machine.slots[slot].name)
    return Why(found.name, found.doc, tuple(shown), len(failing) - len(shown),
               {k: tuple(v) for k, v in sorted(sets.items())},
               frozenset(_slice(trace, ends) | every))


def _point(slot: int, frame: int, n: int, over_step: bool) -> tuple[int, int, bool]:
    """Where a read slot is read: (slot, state index, read after the step)."""
    if over_step and n:
        return slot, n - 1 + frame, bool(frame)
    return slot, n, False


def unused_slots(trace: Trace) -> frozenset[int]:
    """Slots of array variables that take no part in `trace`: they never change, and
    no step's guard or updates (of other slots) and no violated property read them.
    Viewers show them as `·`, not as values that exist (decision 0020)."""
    machine = trace.machine
    used: set[int] = set()
    for i in range(1, len(trace.states)):
        action, before, after = trace.actions[i], trace.states[i - 1], trace.states[i]
        used |= {s for s in range(machine.n_slots) if before[s] != after[s]}
        if action is not None:
            used |= {s for s, _ in _reads(action.guard, (before, before))}
            for slot, e in action.updates:
                used |= {s for s, _ in _reads(e, (before, before))} - {slot}
    failing = trace.failing_action
    if failing is not None:  # what the action that fails at the end reads and writes
        last = trace.states[-1]
        used |= {s for s, _ in _reads(failing.guard, (last, last))}
        for slot, e in failing.updates:
            used |= {s for s, _ in _reads(e, (last, last))} | {slot}
    found = _property(machine, str(trace.violation.get("name", "")))
    if found is not None:
        frames = _frames(trace, found.over_step)
        for e in found.clauses:
            used |= {s for s, _ in _reads(e, frames)}
    arrays = {s for v in machine.vars if isinstance(v.type, Array)
              for s in range(v.first, v.first + v.count)}
    return frozenset(arrays - used)


@dataclass(frozen=True)
class _Found:
    name: str
    doc: str
    clauses: list[Expr]  # top-level conjuncts; a liveness property's trigger and goal
    bindings: dict[int, str]
    over_step: bool  # read over (before, after) of the last step
    liveness: bool


def _property(machine: Machine, name: str) -> _Found | None:
    for p in machine.invariants + machine.lemmas + machine.step_invariants:
        if p.name == name:
            parts = list(p.expr.args) if p.expr.op == "and" else [p.expr]
            return _Found(name, p.doc, parts, dict(p.bindings),
                          p in machine.step_invariants, False)
    for live in machine.liveness:
        if live.name == name:
            return _Found(name, live.doc, [live.trigger, live.goal], {}, live.goal_is_step,
                          True)
    return None


def _frames(trace: Trace, over_step: bool) -> tuple[Sequence[int], Sequence[int]]:
    """The states a property reads at the end of `trace`: (before, after) of the last
    step, or the last state twice."""
    last = trace.states[-1]
    return (trace.states[-2], last) if over_step and len(trace) else (last, last)


class _Recording(Sequence[int]):
    """A state that notes which slots are read."""

    def __init__(self, state: Sequence[int], frame: int, seen: set[tuple[int, int]]):
        self.state, self.frame, self.seen = state, frame, seen

    def __getitem__(self, i: int) -> int:  # type: ignore[override]
        self.seen.add((i, self.frame))
        return self.state[i]

    def __len__(self) -> int:
        return len(self.state)

    def __iter__(self) -> Iterator[int]:
        return iter(self.state)


def _reads(e: Expr, frames: tuple[Sequence[int], Sequence[int]]) -> set[tuple[int, int]]:
    """(slot, frame) of every slot evaluating `e` reads."""
    seen: set[tuple[int, int]] = set()
    try:
        evaluate(e, _Recording(frames[0], 0, seen), _Recording(frames[1], 1, seen))
    except OutOfRange as exc:  # it read up to the bad index, into this array
        seen |= {(a.slot, a.frame) for a in exc.node.args[1:] if a.op == "var"}
    return seen


def _holds(e: Expr, frames: tuple[Sequence[int], Sequence[int]]) -> bool:
    try:
        return bool(evaluate(e, frames[0], frames[1]))
    except OutOfRange:
        return False


def _origins(trace: Trace) -> Callable[[int, int], int]:
    """origin(slot, at): the step whose action last changed `slot` at or before state
    `at` (0: it holds its first value)."""
    states = trace.states

    def origin(slot: int, at: int) -> int:
        for i in range(at, 0, -1):
            if states[i][slot] != states[i - 1][slot]:
                return i
        return 0

    return origin


def _slice(trace: Trace, ends: set[tuple[int, int]]) -> set[int]:
    """The steps that changed a slot read at the end (`ends`: (slot, state index)), and,
    before each, the steps that changed what its guard and its updates of those slots
    read."""
    relevant: set[int] = set()
    steps: set[int] = set()
    for i in range(len(trace), 0, -1):
        relevant |= {slot for slot, at in ends if at == i}
        before, after, action = trace.states[i - 1], trace.states[i], trace.actions[i]
        hit = {s for s in relevant if before[s] != after[s]}
        if not hit or action is None:
            continue
        steps.add(i)
        relevant -= hit
        relevant |= {s for s, _ in _reads(action.guard, (before, before))}
        for slot, e in action.updates:
            if slot in hit:
                relevant |= {s for s, _ in _reads(e, (before, before))}
    return steps


def slot_value(slot: Slot, value: int) -> str:
    """A slot's value as the viewers show values: yes/no, enum members, numbers."""
    if slot.leaf.sort == BOOL:
        return "yes" if value else "no"
    return slot.show(value)


# --- clauses as text -------------------------------------------------------------------

_BINARY = {"eq": "==", "lt": "<", "le": "<=", "add": "+", "sub": "-"}


def _text(machine: Machine, e: Expr) -> str:
    """A clause as a reader writes it: `if a and b == c then d`, `x[i]` for an array
    read at a computed index, parentheses only where precedence needs them."""

    def name(x: Expr) -> str:
        return machine.slots[x.slot].name + ("'" if x.frame else "")

    def go(x: Expr, outer: int = 0) -> str:
        """x's text inside an operator binding at `outer` (0: nothing)."""
        op, args = x.op, x.args
        if op == "const":
            if x.sort == BOOL:
                return "true" if x.value else "false"
            if isinstance(x.sort, EnumType):
                assert x.value is not None  # a constant carries its value
                return x.sort.members[x.value]
            return str(x.value)
        if op == "var":
            return name(x)
        if op in ("min", "max"):
            return f"{op.capitalize()}({go(args[0])}, {go(args[1])})"
        if op == "ite":
            return f"If({go(args[0])}, {go(args[1])}, {go(args[2])})"
        if op == "select":
            return _select(args, go)
        if op == "or" and args[0].op == "not":
            rest = " or ".join(go(a, _PREC["or"]) for a in args[1:])
            text, prec = f"if {go(args[0].args[0], _PREC['if'])} then {rest}", _PREC["if"]
        elif op in ("and", "or"):
            text, prec = f" {op} ".join(go(a, _PREC[op]) for a in args), _PREC[op]
        elif op == "not" and args[0].op == "eq":
            left, right = args[0].args
            text, prec = f"{go(left, _PREC['eq'] - 1)} != {go(right, _PREC['eq'])}", _PREC["eq"]
        elif op == "not":
            text, prec = f"not {go(args[0], _PREC['eq'])}", _PREC["not"]
        else:  # a comparison or + and -: the right operand of - binds tighter
            prec, symbol, left, right = _PREC[op], _BINARY[op], args[0], args[1]
            if op == "eq" and _first_slot(right) < _first_slot(left):
                left, right = right, left  # `hop == 3`, `a[0] == a[3]`: not by node ids
            if op == "add" and right.is_const and right.value is not None and right.value < 0:
                symbol, right = "-", const(-right.value)  # x - 1 is built as x + -1
            text = f"{go(left, prec - 1)} {symbol} {go(right, prec)}"
        return f"({text})" if prec <= outer else text

    return go(e)


def _first_slot(e: Expr) -> float:
    """The first slot `e` reads (a constant reads none, so it goes last): operands of
    `==` are ordered by it, as node ids depend on what was built before."""
    slots = slots_read(e)
    return min(slots) if slots else float("inf")


_PREC = {"if": 1, "or": 2, "and": 3, "not": 4, "eq": 5, "lt": 5, "le": 5, "add": 7, "sub": 7}


def _select(args: tuple[Expr, ...], go: Callable[[Expr], str]) -> str:
    """`closed[0][lh[0]]` for a read of closed[0][0..n-1] at index lh[0]."""
    names = [go(a) for a in args[1:]]
    axis = indexed(names)
    if axis is not None:
        return f"{axis[0]}[{go(args[0])}]{axis[1]}"
    return f"[{', '.join(names)}][{go(args[0])}]"

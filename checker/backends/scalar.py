"""The reference backend: evaluates expressions on one concrete state.

A lazy, memoised interpreter: `If`, `And` and `Or` evaluate only what they
need, so an array read out of range is an error exactly when a reader of the
spec would expect one. Simulation, trace replay and the agreement tests use it.
"""

from __future__ import annotations

from collections.abc import Sequence

from checker.errors import EvalError
from checker.lang.expr import Expr, indexed, render
from checker.lang.machine import ActionInstance, Machine

State = tuple[int, ...]


class OutOfRange(Exception):
    """An array read (`node`, a select) with an index outside the array."""

    def __init__(self, index: int, length: int, node: Expr):
        super().__init__(f"index {index} out of range for an array of size {length}")
        self.index, self.length, self.node = index, length, node


def evaluate(e: Expr, before: Sequence[int], after: Sequence[int] | None = None,
             memo: dict[int, int] | None = None) -> int:
    """Value of `e` (bools as 0/1); frame-1 variables read `after`."""
    memo = {} if memo is None else memo

    def go(x: Expr) -> int:
        got = memo.get(x.id)
        if got is not None:
            return got
        op, args = x.op, x.args
        v: int
        if op == "const":
            assert x.value is not None  # a constant carries its value
            v = x.value
        elif op == "var":
            v = (after if x.frame else before)[x.slot]  # type: ignore[index]
        elif op == "not":
            v = 1 - go(args[0])
        elif op == "and":
            v = 1
            for arg in args:
                if not go(arg):
                    v = 0
                    break
        elif op == "or":
            v = 0
            for arg in args:
                if go(arg):
                    v = 1
                    break
        elif op == "ite":
            v = go(args[1]) if go(args[0]) else go(args[2])
        elif op == "select":
            i = go(args[0])
            if not 0 <= i < len(args) - 1:
                raise OutOfRange(i, len(args) - 1, x)
            v = go(args[1 + i])
        else:
            a, b = go(args[0]), go(args[1])
            if op == "eq":
                v = int(a == b)
            elif op == "lt":
                v = int(a < b)
            elif op == "le":
                v = int(a <= b)
            elif op == "add":
                v = a + b
            elif op == "sub":
                v = a - b
            elif op == "min":
                v = min(a, b)
            elif op == "max":
                v = max(a, b)
            else:
                raise AssertionError(f"unknown op {op}")
        memo[x.id] = v
        return v

    return go(e)


class ScalarMachine:
    """Steps one concrete state of a Machine at a time."""

    def __init__(self, machine: Machine):
        self.machine = machine

    def _eval(self, e: Expr, state: Sequence[int], what: str, after: Sequence[int] | None = None,
              memo: dict | None = None, action: ActionInstance | None = None) -> int:
        try:
            return evaluate(e, state, after, memo)
        except OutOfRange as exc:
            raise EvalError(f"{what} {self._read_outside(exc)}",
                            action=None if action is None else action.id) from None

    def _read_outside(self, exc: OutOfRange) -> str:
        """`reads a[i] at index 3: a has indexes 0 to 2`: the read, the index, the bound."""
        def name(x: Expr) -> str:
            return render(x, self.machine.slot_name)

        axis = indexed([name(a) for a in exc.node.args[1:]])
        read = f"reads {name(exc.node)} at index {exc.index}"
        if axis is None:
            return f"{read}, outside an array of {exc.length} elements"
        return f"{read}: {axis[0]} has indexes 0 to {exc.length - 1}"

    def enabled(self, state: State, action: ActionInstance) -> bool:
        return bool(self._eval(action.guard, state, f"action {action.label}", action=action))

    def apply(self, state: State, action: ActionInstance) -> State:
        """Successor of an enabled action; errors name the action and its parameters, the
        variable, and the index and bound of an array access out of range."""
        memo: dict[int, int] = {}
        for check in action.write_checks:
            if not self._eval(check.cond, state, f"action {action.label}", memo=memo,
                              action=action):
                index = evaluate(check.index, state, None, memo)
                raise EvalError(f"action {action.label} writes {check.array}"
                                f"[{render(check.index, self.machine.slot_name)}] at index "
                                f"{index}: {check.array} has indexes 0 to {check.length - 1}",
                                action=action.id)
        out = list(state)
        for slot, e in action.updates:
            s = self.machine.slots[slot]
            v = self._eval(e, state, f"action {action.label} (assigning {s.name})", memo=memo,
                           action=action)
            if not s.lo <= v <= s.hi:
                raise EvalError(f"action {action.label} assigns {s.name} = {v}, "
                                f"outside its type {s.leaf.describe()}", action=action.id)
            out[slot] = v
        return tuple(out)

    def step(self, state: State, action: ActionInstance) -> State | None:
        return self.apply(state, action) if self.enabled(state, action) else None

    def successors(self, state: State) -> list[tuple[ActionInstance, State]]:
        out = []
        for a in self.machine.actions:
            nxt = self.step(state, a)
            if nxt is not None:
                out.append((a, nxt))
        return out

    def violated_invariants(self, state: State) -> list[str]:
        props = self.machine.invariants + self.machine.lemmas
        return [p.name for p in props if not self._eval(p.expr, state, f"invariant {p.name}")]

    def violated_step_invariants(self, before: State, after: State) -> list[str]:
        return [p.name for p in self.machine.step_invariants
                if not self._eval(p.expr, before, f"step invariant {p.name}", after=after)]

    def within_constraints(self, state: State) -> bool:
        return all(self._eval(p.expr, state, f"constraint {p.name}")
                   for p in self.machine.constraints)



"""The Z3 backend: a Machine's expressions as Z3 terms, for BMC and induction.

Each expression kind has one small translation rule, looked up by op (in the
style of Apalache's rewriting rules). Traced specs share subexpressions
heavily, so terms are memoised per node within an environment: the pair of
before/after variable vectors they are built over (one per BMC step).

Array reads become nested `If`s over the index. Off the array their value is
unconstrained but deterministic (the last element): whether a read is in
range is a separate question, answered by `defined_term`, so engines can
report out-of-range reads the way the scalar backend does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import z3

from checker.lang.expr import BOOL, Expr, defined
from checker.lang.machine import ActionInstance, Machine


class IntNumbers:
    """Int and enum slots as unbounded Z3 integers.

    Every choice that depends on the numeric sort goes through this class, so
    a bit-vector encoding (signed compare, a width from the slot intervals)
    can be swapped in without touching the rules.
    """

    def var(self, name: str) -> z3.ArithRef:
        return z3.Int(name)

    def val(self, value: int) -> z3.ArithRef:
        return z3.IntVal(value)

    def lt(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        return a < b

    def le(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.BoolRef:
        return a <= b

    def add(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return a + b

    def sub(self, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return a - b


class _Env:
    """One translation context: the variable vectors and the terms built over them."""

    def __init__(self, numbers: IntNumbers, before: Sequence[z3.ExprRef],
                 after: Sequence[z3.ExprRef] | None):
        self.numbers = numbers
        self.before = list(before)
        self.after = None if after is None else list(after)
        self.memo: dict[int, z3.ExprRef] = {}


# A rule builds the term of one node from the terms of its arguments.
Rule = Callable[[Expr, list[z3.ExprRef], _Env], z3.ExprRef]


def _const(x: Expr, args: list[z3.ExprRef], env: _Env) -> z3.ExprRef:
    assert x.value is not None  # a constant carries its value
    return z3.BoolVal(bool(x.value)) if x.sort == BOOL else env.numbers.val(x.value)


def _var(x: Expr, args: list[z3.ExprRef], env: _Env) -> z3.ExprRef:
    if not x.frame:
        return env.before[x.slot]
    if env.after is None:
        raise ValueError("the expression reads the after-state but no after variables were given")
    return env.after[x.slot]


def _select(x: Expr, args: list[z3.ExprRef], env: _Env) -> z3.ExprRef:
    index, elems = args[0], args[1:]
    out = elems[-1]
    for k in range(len(elems) - 2, -1, -1):
        out = z3.If(index == env.numbers.val(k), elems[k], out)
    return out


def _min(x: Expr, args: list[z3.ExprRef], env: _Env) -> z3.ExprRef:
    a, b = args
    return z3.If(env.numbers.le(a, b), a, b)


def _max(x: Expr, args: list[z3.ExprRef], env: _Env) -> z3.ExprRef:
    a, b = args
    return z3.If(env.numbers.le(a, b), b, a)


RULES: dict[str, Rule] = {
    "const": _const,
    "var": _var,
    "not": lambda x, args, env: z3.Not(args[0]),
    "and": lambda x, args, env: z3.And(*args),
    "or": lambda x, args, env: z3.Or(*args),
    "eq": lambda x, args, env: args[0] == args[1],
    "lt": lambda x, args, env: env.numbers.lt(*args),
    "le": lambda x, args, env: env.numbers.le(*args),
    "add": lambda x, args, env: env.numbers.add(*args),
    "sub": lambda x, args, env: env.numbers.sub(*args),
    "min": _min,
    "max": _max,
    "ite": lambda x, args, env: z3.If(*args),
    "select": _select,
}


class Z3Encoder:
    """Translates one Machine's expressions, states and transitions to Z3."""

    def __init__(self, machine: Machine, numbers: IntNumbers | None = None):
        self.machine = machine
        self.numbers = numbers or IntNumbers()
        self._envs: dict[tuple, _Env] = {}

    def state_vars(self, prefix: str) -> list[z3.ExprRef]:
        """Constants for one state, `{prefix}{slot name}` (Bool for bool slots); Z3 identifies
        constants by name, so each state needs its own prefix."""
        return [z3.Bool(f"{prefix}{s.name}") if s.leaf.sort == BOOL
                else self.numbers.var(f"{prefix}{s.name}") for s in self.machine.slots]

    def domain(self, state: Sequence[z3.ExprRef]) -> z3.BoolRef:
        """Every int and enum slot within its type (bool slots need nothing)."""
        num = self.numbers
        return z3.And([z3.And(num.le(num.val(s.lo), v), num.le(v, num.val(s.hi)))
                       for s, v in zip(self.machine.slots, state, strict=True)
                       if s.leaf.sort != BOOL])

    def term(self, e: Expr, before: Sequence[z3.ExprRef],
             after: Sequence[z3.ExprRef] | None = None) -> z3.ExprRef:
        """`e` over the given state vectors: a Bool term for bool sort, else a numeric one."""
        env = self._env(before, after)
        memo = env.memo
        stack = [e]
        while stack:  # post-order without recursion: traced If chains can be deep
            x = stack[-1]
            if x.id in memo:
                stack.pop()
                continue
            pending = [a for a in x.args if a.id not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            memo[x.id] = RULES[x.op](x, [memo[a.id] for a in x.args], env)
        return memo[e.id]

    def defined_term(self, e: Expr, before: Sequence[z3.ExprRef],
                     after: Sequence[z3.ExprRef] | None = None) -> z3.BoolRef:
        """Condition under which `e` reads no array out of range."""
        return self.term(defined(e), before, after)

    def transition(self, action: ActionInstance, before: Sequence[z3.ExprRef],
                   after: Sequence[z3.ExprRef]) -> z3.BoolRef:
        """Guard, each updated slot equal to its update, every other slot unchanged.

        Definedness and write checks are not part of the relation: engines
        check them separately to report errors rather than block steps.
        """
        updates = dict(action.updates)
        frame = [a == (self.term(updates[i], before, after) if i in updates else b)
                 for i, (b, a) in enumerate(zip(before, after, strict=True))]
        return z3.And(self.term(action.guard, before, after), *frame)

    def _env(self, before: Sequence[z3.ExprRef], after: Sequence[z3.ExprRef] | None) -> _Env:
        # The env holds the vectors, so the AST ids in its key stay unique while it lives.
        key = (tuple(v.get_id() for v in before),
               None if after is None else tuple(v.get_id() for v in after))
        env = self._envs.get(key)
        if env is None:
            env = self._envs[key] = _Env(self.numbers, before, after)
        return env

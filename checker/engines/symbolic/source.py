"""A Z3 formula over one state's variables, written back as spec source.

PDR's invariant comes out of Spacer as a formula over the slots of the state vector
(integers, enum codes, booleans). A user pastes it into a spec's build function as
lemmas, so it is printed the way the spec language writes it: `s.rm[0]` for a slot,
`Rm.prepared` for an enum code, `+` and `-` for linear terms (the language has no `*`:
a small coefficient is written as a repeated sum), `And`, `Or`, `Not`, `Implies`.
A comparison of an enum slot with a number becomes the equalities it allows. What
cannot be written so (a large coefficient, an enum inside arithmetic) raises
`Unwritable`; the caller shows such a clause in Z3's own syntax instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import z3

from checker.lang.expr import EnumType
from checker.lang.machine import Machine, Slot

_MAX_REPEAT = 4  # the largest coefficient written as a repeated sum


def lemma_block(name: str, doc: str, body: str) -> str:
    """One `@m.lemma` function of spec source: `body` is its indented lines, the last a
    `return`. `infer` and PDR print what they find this way, to paste into a build
    function."""
    return f"@m.lemma\ndef {name}(s):  # noqa: N802\n    \"\"\"{doc}\"\"\"\n{body}"


def first_free_number(prefix: str, taken: Iterable[str]) -> int:
    """Where lemmas named `prefix`0, 1, ... should start numbering so that none is a
    name in `taken`: one past the highest such name there. A proof pasted into the
    spec and found again is then numbered after it, and pastes without a clash."""
    numbered = re.compile(re.escape(prefix) + r"(\d+)")
    return max((int(m.group(1)) for name in taken if (m := numbered.fullmatch(name))),
               default=-1) + 1


class Unwritable(Exception):
    """A formula the spec language cannot state."""


class SourceWriter:
    """Writes formulas over the state vector `state` (one Z3 constant per slot)."""

    def __init__(self, machine: Machine, state: Sequence[z3.ExprRef]):
        self.machine = machine
        self.slot_of = {v.get_id(): slot for v, slot in zip(state, machine.slots, strict=True)}

    def clause(self, e: z3.ExprRef) -> str:
        """Spec source for the boolean formula `e`."""
        if z3.is_true(e):
            return "True"
        if z3.is_false(e):
            return "False"
        if self._slot(e) is not None:
            return self._ref(e)
        kind = e.decl().kind() if z3.is_app(e) else None
        args = e.children()
        if kind == z3.Z3_OP_NOT:
            inner = args[0]
            if self._slot(inner) is not None:
                return f"Not({self._ref(inner)})"
            inner_kind = inner.decl().kind() if z3.is_app(inner) else None
            if inner_kind in _NEGATED and not z3.is_bool(inner.children()[0]):
                return self._compare(_NEGATED[inner_kind], *inner.children())
            text = self.clause(inner)
            return _CONSTANT_NOT.get(text, f"Not({text})")
        if kind in (z3.Z3_OP_AND, z3.Z3_OP_OR):
            return _junction(kind == z3.Z3_OP_AND, [self.clause(a) for a in args])
        if kind == z3.Z3_OP_IMPLIES:
            guard, then = self.clause(args[0]), self.clause(args[1])
            if guard in _CONSTANT_NOT or then in _CONSTANT_NOT:
                return _junction(False, [_CONSTANT_NOT.get(guard, f"Not({guard})"), then])
            return f"Implies({guard}, {then})"
        if kind is not None and kind in _COMPARE and len(args) == 2:
            return self._compare(kind, args[0], args[1])
        raise Unwritable(str(e))

    def _compare(self, kind: int, a: z3.ExprRef, b: z3.ExprRef) -> str:
        if z3.is_bool(a):  # an equality of two booleans
            return f"{self.clause(a)} == {self.clause(b)}"
        for var, number, flip in ((a, b, False), (b, a, True)):
            slot = self._slot(var)
            if slot is not None and isinstance(slot.leaf.sort, EnumType) and \
                    z3.is_int_value(number):
                return self._enum(slot, kind if not flip else _FLIPPED[kind],
                                  number.as_long())
        return f"{self._term(a)} {_COMPARE[kind]} {self._term(b)}"

    def _enum(self, slot: Slot, kind: int, code: int) -> str:
        """`slot <op> code` as the members it allows."""
        sort = slot.leaf.sort
        assert isinstance(sort, EnumType)
        test = {z3.Z3_OP_EQ: code.__eq__, _DISTINCT: code.__ne__, z3.Z3_OP_LE: code.__ge__,
                z3.Z3_OP_GE: code.__le__, z3.Z3_OP_LT: code.__gt__,
                z3.Z3_OP_GT: code.__lt__}[kind]
        allowed = [m for i, m in enumerate(sort.members) if test(i)]
        barred = [m for m in sort.members if m not in allowed]
        ref = f"s.{slot.name}"
        if not allowed or not barred:
            return "True" if allowed else "False"
        if len(barred) == 1:  # the shorter way to say it
            return f"{ref} != {sort.name}.{barred[0]}"
        parts = [f"{ref} == {sort.name}.{m}" for m in allowed]
        return parts[0] if len(parts) == 1 else f"Or({', '.join(parts)})"

    def _term(self, e: z3.ExprRef) -> str:
        """An integer term: a slot, a number, a sum, a small multiple."""
        if z3.is_int_value(e):
            return str(e.as_long())
        slot = self._slot(e)
        if slot is not None:
            if isinstance(slot.leaf.sort, EnumType):
                raise Unwritable(f"enum slot {slot.name} inside arithmetic")
            return f"s.{slot.name}"
        kind = e.decl().kind() if z3.is_app(e) else None
        args = e.children()
        if kind == z3.Z3_OP_ADD:
            out = self._term(args[0])
            for a in args[1:]:
                text = self._term(a)
                out += f" - {text[1:]}" if text.startswith("-") else f" + {text}"
            return out
        if kind == z3.Z3_OP_SUB:
            return " - ".join(self._wrapped(a) for a in args)
        if kind == z3.Z3_OP_UMINUS:
            return f"-{self._wrapped(args[0])}"
        if kind == z3.Z3_OP_MUL and len(args) == 2 and z3.is_int_value(args[0]):
            times = args[0].as_long()
            if 0 < abs(times) <= _MAX_REPEAT:
                one = self._wrapped(args[1])
                text = " + ".join([one] * abs(times))
                return text if times > 0 else f"-({text})" if abs(times) > 1 else f"-{one}"
        raise Unwritable(str(e))

    def _wrapped(self, e: z3.ExprRef) -> str:
        text = self._term(e)
        return f"({text})" if " " in text else text

    def _slot(self, e: z3.ExprRef) -> Slot | None:
        return self.slot_of.get(e.get_id()) if z3.is_const(e) else None

    def _ref(self, e: z3.ExprRef) -> str:
        slot = self._slot(e)
        assert slot is not None
        return f"s.{slot.name}"


_CONSTANT_NOT = {"True": "False", "False": "True"}


def _junction(conjunction: bool, parts: list[str]) -> str:
    """`And` (or `Or`) of the written `parts`, folding the constants an enum comparison
    becomes when a slot's range decides it (`tm <= 2` over three members is `True`)."""
    unit, zero = ("True", "False") if conjunction else ("False", "True")
    if zero in parts:
        return zero
    parts = [p for p in parts if p != unit]
    if len(parts) <= 1:
        return parts[0] if parts else unit
    return f"{'And' if conjunction else 'Or'}({', '.join(parts)})"


_DISTINCT = z3.Z3_OP_DISTINCT  # `!=`, as a negated equality is written
_COMPARE = {z3.Z3_OP_EQ: "==", _DISTINCT: "!=", z3.Z3_OP_LE: "<=", z3.Z3_OP_GE: ">=",
            z3.Z3_OP_LT: "<", z3.Z3_OP_GT: ">"}
_FLIPPED = {z3.Z3_OP_EQ: z3.Z3_OP_EQ, _DISTINCT: _DISTINCT, z3.Z3_OP_LE: z3.Z3_OP_GE,
            z3.Z3_OP_GE: z3.Z3_OP_LE, z3.Z3_OP_LT: z3.Z3_OP_GT, z3.Z3_OP_GT: z3.Z3_OP_LT}
_NEGATED = {z3.Z3_OP_EQ: _DISTINCT, z3.Z3_OP_LE: z3.Z3_OP_GT, z3.Z3_OP_GE: z3.Z3_OP_LT,
            z3.Z3_OP_LT: z3.Z3_OP_GE, z3.Z3_OP_GT: z3.Z3_OP_LE}

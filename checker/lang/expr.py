"""Symbolic expressions: the one representation every backend compiles.

Nodes are hash-consed (structurally equal nodes are the same object), folded
and simplified as they are built, and carry a sort and an integer interval.
The interval lets us drop range checks that can never fail and pick NumPy
dtypes; the sort lets us refuse ill-typed specs at build time.

`defined(e)` gives the condition under which `e` is defined (every array read
in range, with lazy `and`/`or`/`If`, as a reader of the spec expects), so that
all backends report the same out-of-range reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Iterator
from typing import Any, NoReturn

from checker.errors import SpecError

BOOL = "bool"
INT = "int"

CONTROL_FLOW_HINT = (
    "a symbolic value was used in Python control flow (if/while/and/or/not/min/max/bool); "
    "use If(c, a, b), And/Or/Not, Min/Max, ForAll/Exists instead"
)


class EnumType:
    """A finite set of named values, stored as their index."""

    def __init__(self, name: str, members: Iterable[str] | str):
        if isinstance(members, str):
            members = members.replace(",", " ").split()
        self.name = name
        self.members: tuple[str, ...] = tuple(members)
        if not self.members:
            raise SpecError(f"enum {name} has no members")
        if len(set(self.members)) != len(self.members):
            raise SpecError(f"enum {name} has duplicate members")
        self.values = tuple(EnumValue(self, i) for i in range(len(self.members)))
        for value in self.values:
            if value.member in ("name", "members", "values", "value"):
                raise SpecError(f"enum {name}: member name {value.member!r} is reserved")
            setattr(self, value.member, value)

    def value(self, member: str) -> EnumValue:
        try:
            return self.values[self.members.index(member)]
        except ValueError:
            raise SpecError(f"{member!r} is not a member of enum {self.name}") from None

    def __iter__(self) -> Iterator[EnumValue]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.members)

    def __repr__(self) -> str:
        return f"Enum {self.name}({', '.join(self.members)})"


def Enum(name: str, members: Iterable[str] | str) -> EnumType:  # noqa: N802 - reads like a type
    return EnumType(name, members)


class EnumValue:
    """A concrete enum member; usable in expressions and as an action parameter."""

    __slots__ = ("enum", "index")

    def __init__(self, enum: EnumType, index: int):
        self.enum = enum
        self.index = index

    @property
    def member(self) -> str:
        return self.enum.members[self.index]

    def __eq__(self, other: object) -> Any:
        if isinstance(other, EnumValue):
            return self.enum is other.enum and self.index == other.index
        if isinstance(other, Expr):
            return NotImplemented
        return False

    def __ne__(self, other: object) -> Any:
        if isinstance(other, Expr):
            return NotImplemented
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((id(self.enum), self.index))

    def __repr__(self) -> str:
        return self.member

    def __str__(self) -> str:
        return self.member


def sort_name(sort: Any) -> str:
    return sort.name if isinstance(sort, EnumType) else str(sort)


class Expr:
    """An immutable, interned expression node. Build with the helpers below."""

    __slots__ = ("op", "args", "value", "sort", "lo", "hi", "slot", "frame", "id", "__weakref__")

    op: str
    args: tuple[Expr, ...]
    value: int | None
    sort: Any
    lo: int
    hi: int
    slot: int
    frame: int
    id: int

    # --- Python control flow is refused ---------------------------------
    def __bool__(self) -> bool:
        raise SpecError(CONTROL_FLOW_HINT)

    def __index__(self) -> int:
        raise SpecError("a symbolic value cannot index a Python list; index a spec array instead")

    def __iter__(self) -> NoReturn:
        raise SpecError("a symbolic value is not iterable")

    __hash__ = object.__hash__

    # --- operators build expressions ------------------------------------
    def __eq__(self, other: object) -> Expr:  # type: ignore[override]
        return eq(self, other)

    def __ne__(self, other: object) -> Expr:  # type: ignore[override]
        return Not(eq(self, other))

    def __lt__(self, other: Any) -> Expr:
        return lt(self, other)

    def __le__(self, other: Any) -> Expr:
        return le(self, other)

    def __gt__(self, other: Any) -> Expr:
        return lt(other, self)

    def __ge__(self, other: Any) -> Expr:
        return le(other, self)

    def __add__(self, other: Any) -> Expr:
        return add(self, other)

    def __radd__(self, other: Any) -> Expr:
        return add(other, self)

    def __sub__(self, other: Any) -> Expr:
        return sub(self, other)

    def __rsub__(self, other: Any) -> Expr:
        return sub(other, self)

    def __neg__(self) -> Expr:
        return sub(0, self)

    def __and__(self, other: Any) -> Expr:
        return And(self, other)

    def __rand__(self, other: Any) -> Expr:
        return And(other, self)

    def __or__(self, other: Any) -> Expr:
        return Or(self, other)

    def __ror__(self, other: Any) -> Expr:
        return Or(other, self)

    def __invert__(self) -> Expr:
        return Not(self)

    def __mul__(self, other: Any) -> Expr:
        raise SpecError("multiplication is not in the spec language; use + and -")

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return render(self)

    @property
    def is_const(self) -> bool:
        return self.op == "const"


_TABLE: dict[tuple, Expr] = {}


def _node(op: str, args: tuple[Expr, ...], sort: Any, lo: int, hi: int,
          value: int | None = None, slot: int = -1, frame: int = 0) -> Expr:
    sort_key = id(sort) if isinstance(sort, EnumType) else sort
    key = (op, tuple(a.id for a in args), sort_key, value, slot, frame, lo, hi)
    node = _TABLE.get(key)
    if node is None:
        node = object.__new__(Expr)
        node.op, node.args, node.sort, node.lo, node.hi = op, args, sort, lo, hi
        node.value, node.slot, node.frame = value, slot, frame
        node.id = len(_TABLE)
        _TABLE[key] = node
        _SORT_REFS[node.id] = sort  # keep enum sorts alive while their nodes are
    return node


_SORT_REFS: dict[int, Any] = {}


def const(value: Any, sort: Any = None) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, EnumValue):
        return _node("const", (), value.enum, value.index, value.index, value=value.index)
    if isinstance(value, bool):
        v = int(value)
        return _node("const", (), BOOL, v, v, value=v)
    if isinstance(value, int):
        return _node("const", (), INT if sort is None else sort, value, value, value=value)
    raise SpecError(f"cannot use {value!r} ({type(value).__name__}) in an expression")


def var(slot: int, sort: Any, lo: int, hi: int, frame: int = 0) -> Expr:
    return _node("var", (), sort, lo, hi, slot=slot, frame=frame)


TRUE = const(True)
FALSE = const(False)


def lift(x: Any) -> Expr:
    return x if isinstance(x, Expr) else const(x)


def _want(e: Expr, sort: Any, what: str) -> None:
    if e.sort != sort:
        raise SpecError(f"{what} needs {sort_name(sort)}, got {sort_name(e.sort)}: {render(e)}")


def _want_int(e: Expr, what: str) -> None:
    _want(e, INT, what)


def _same_sort(a: Expr, b: Expr, what: str) -> None:
    if a.sort is not b.sort and a.sort != b.sort:
        raise SpecError(
            f"{what} compares {sort_name(a.sort)} with {sort_name(b.sort)}: "
            f"{render(a)} vs {render(b)}"
        )


# --- boolean connectives --------------------------------------------------

def Not(x: Any) -> Expr:  # noqa: N802
    x = lift(x)
    _want(x, BOOL, "Not")
    if x.is_const:
        return const(not x.value)
    if x.op == "not":
        return x.args[0]
    if x.op == "lt":
        return le(x.args[1], x.args[0])
    if x.op == "le":
        return lt(x.args[1], x.args[0])
    return _node("not", (x,), BOOL, 0, 1)


def _flatten(op: str, items: Iterable[Any]) -> list[Expr]:
    out: list[Expr] = []
    seen: set[int] = set()
    for item in items:
        e = lift(item)
        _want(e, BOOL, "And" if op == "and" else "Or")
        parts = e.args if e.op == op else (e,)
        for p in parts:
            if p.id not in seen:
                seen.add(p.id)
                out.append(p)
    return out


def And(*items: Any) -> Expr:  # noqa: N802
    """Conjunction, evaluated left to right (later conjuncts may assume earlier ones)."""
    args = [a for a in _flatten("and", _spread(items)) if not (a.is_const and a.value)]
    consts = [i for i, a in enumerate(args) if a.is_const]  # each is FALSE
    if consts:
        if _safe(*args[:consts[0]]):
            return FALSE
        args = args[:consts[0] + 1]  # what follows the FALSE is never evaluated
    if not args:
        return TRUE
    if len(args) == 1:
        return args[0]
    return _node("and", tuple(args), BOOL, 0, 1)


def Or(*items: Any) -> Expr:  # noqa: N802
    """Disjunction, evaluated left to right."""
    args = [a for a in _flatten("or", _spread(items)) if not (a.is_const and not a.value)]
    consts = [i for i, a in enumerate(args) if a.is_const]  # each is TRUE
    if consts:
        if _safe(*args[:consts[0]]):
            return TRUE
        args = args[:consts[0] + 1]
    if not args:
        return FALSE
    if len(args) == 1:
        return args[0]
    return _node("or", tuple(args), BOOL, 0, 1)


def Implies(a: Any, b: Any) -> Expr:  # noqa: N802
    return Or(Not(a), b)


def _spread(items: tuple[Any, ...]) -> list[Any]:
    """And(gen) and And(a, b) both work."""
    if len(items) == 1 and not isinstance(items[0], Expr | bool | int | EnumValue):
        return list(items[0])
    return list(items)


def ForAll(domain: Iterable[Any], body: Callable[[Any], Any]) -> Expr:  # noqa: N802
    """Finite universal quantifier, expanded when the spec is built. While a property is
    built (`recording_bindings`), each instance's conjuncts are noted with the value
    bound, so a viewer can say which instance fails (`iw=(0, 1)`)."""
    if not BINDINGS:
        return And(*[body(x) for x in domain])
    name = _parameter_name(body)
    parts = []
    for x in domain:
        _BOUND.append(f"{name}={x!r}")
        try:
            part = lift(body(x))
        finally:
            label = ", ".join(_BOUND)
            _BOUND.pop()
        for conjunct in part.args if part.op == "and" else (part,):
            BINDINGS[-1].setdefault(conjunct.id, label)  # an inner ForAll's is fuller
        parts.append(part)
    return And(*parts)


# While a property is built: conjunct id -> the ForAll values bound where it was made
BINDINGS: list[dict[int, str]] = []
_BOUND: list[str] = []  # the enclosing ForAlls' `name=value`, outermost first


def _parameter_name(body: Callable[[Any], Any]) -> str:
    """The bound variable's name as the spec wrote it (`lambda w: ...` gives `w`)."""
    code = getattr(body, "__code__", None)
    return code.co_varnames[0] if code is not None and code.co_argcount else "x"


def Exists(domain: Iterable[Any], body: Callable[[Any], Any]) -> Expr:  # noqa: N802
    return Or(*[body(x) for x in domain])


# --- comparisons ----------------------------------------------------------

def eq(a: Any, b: Any) -> Expr:
    a, b = lift(a), lift(b)
    _same_sort(a, b, "==")
    if a.is_const and b.is_const:
        return const(a.value == b.value)
    if a is b and _safe(a):
        return TRUE
    if (a.hi < b.lo or b.hi < a.lo) and _safe(a, b):
        return FALSE
    if a.sort == BOOL and (a.is_const or b.is_const):
        c, other = (a, b) if a.is_const else (b, a)
        return other if c.value else Not(other)
    if b.id < a.id:
        a, b = b, a
    return _node("eq", (a, b), BOOL, 0, 1)


def lt(a: Any, b: Any) -> Expr:
    a, b = lift(a), lift(b)
    _want_int(a, "<")
    _want_int(b, "<")
    if _safe(a, b):
        if a.hi < b.lo:
            return TRUE
        if a.lo >= b.hi:
            return FALSE
    return _node("lt", (a, b), BOOL, 0, 1)


def le(a: Any, b: Any) -> Expr:
    a, b = lift(a), lift(b)
    _want_int(a, "<=")
    _want_int(b, "<=")
    if _safe(a, b):
        if a.hi <= b.lo or a is b:
            return TRUE
        if a.lo > b.hi:
            return FALSE
    return _node("le", (a, b), BOOL, 0, 1)


# --- arithmetic -----------------------------------------------------------

def add(a: Any, b: Any) -> Expr:
    a, b = lift(a), lift(b)
    _want_int(a, "+")
    _want_int(b, "+")
    if a.is_const and b.is_const:
        return const(a.value + b.value)
    if a.is_const and a.value == 0:
        return b
    if b.is_const and b.value == 0:
        return a
    if a.is_const:
        a, b = b, a
    if b.is_const and a.op in ("add", "sub") and a.args[1].is_const:
        c = a.args[1].value if a.op == "add" else -a.args[1].value
        return add(a.args[0], c + b.value)
    return _node("add", (a, b), INT, a.lo + b.lo, a.hi + b.hi)


def sub(a: Any, b: Any) -> Expr:
    a, b = lift(a), lift(b)
    _want_int(a, "-")
    _want_int(b, "-")
    if a.is_const and b.is_const:
        return const(a.value - b.value)
    if b.is_const and b.value == 0:
        return a
    if a is b and _safe(a):
        return const(0)
    if b.is_const:
        return add(a, -b.value)
    return _node("sub", (a, b), INT, a.lo - b.hi, a.hi - b.lo)


def Min(a: Any, b: Any, *more: Any) -> Expr:  # noqa: N802
    a, b = lift(a), lift(b)
    _want_int(a, "Min")
    _want_int(b, "Min")
    if a.hi <= b.lo and _safe(b):
        out = a
    elif b.hi <= a.lo and _safe(a):
        out = b
    else:
        if b.id < a.id:
            a, b = b, a
        out = _node("min", (a, b), INT, min(a.lo, b.lo), min(a.hi, b.hi))
    return Min(out, *more) if more else out


def Max(a: Any, b: Any, *more: Any) -> Expr:  # noqa: N802
    a, b = lift(a), lift(b)
    _want_int(a, "Max")
    _want_int(b, "Max")
    if a.lo >= b.hi and _safe(b):
        out = a
    elif b.lo >= a.hi and _safe(a):
        out = b
    else:
        if b.id < a.id:
            a, b = b, a
        out = _node("max", (a, b), INT, max(a.lo, b.lo), max(a.hi, b.hi))
    return Max(out, *more) if more else out


def If(cond: Any, then: Any, otherwise: Any) -> Expr:  # noqa: N802
    """Conditional expression; only the taken branch needs to be defined."""
    c, a, b = lift(cond), lift(then), lift(otherwise)
    _want(c, BOOL, "If condition")
    _same_sort(a, b, "If branches")
    if c.is_const:
        return a if c.value else b
    if a is b and _safe(c):
        return a
    if a.sort == BOOL and a is not b:
        if a.is_const and b.is_const:
            return c if a.value else Not(c)
        if b.is_const and not b.value:
            return And(c, a)
        if a.is_const and a.value:
            return Or(c, b)
    if c.op == "not":
        c, a, b = c.args[0], b, a
    if a.op == "ite" and a.args[0] is c:
        return If(c, a.args[1], b)
    if b.op == "ite" and b.args[0] is c:
        return If(c, a, b.args[2])
    return _node("ite", (c, a, b), a.sort, min(a.lo, b.lo), max(a.hi, b.hi))


def select(index: Any, elems: list[Expr]) -> Expr:
    """`elems[index]` for a symbolic index; out-of-range is an evaluation error."""
    i = lift(index)
    _want_int(i, "array index")
    n = len(elems)
    if i.is_const:
        assert i.value is not None  # a constant carries its value
        if not 0 <= i.value < n:
            raise SpecError(f"index {i.value} out of range for an array of size {n}")
        return elems[i.value]
    lo, hi = max(i.lo, 0), min(i.hi, n - 1)
    if lo > hi:
        raise SpecError(f"index {render(i)} is never in range for an array of size {n}")
    live = elems[lo:hi + 1]
    first = live[0]
    for e in live:
        _same_sort(first, e, "array elements")
    if i.lo >= 0 and i.hi < n and all(e is first for e in live):
        return first
    args = (i, *elems)
    return _node("select", args, first.sort, min(e.lo for e in live), max(e.hi for e in live))


# --- analysis -------------------------------------------------------------

def _safe(*xs: Expr) -> bool:
    """Whether dropping these operands during simplification hides no out-of-range read."""
    return all(defined(x) is TRUE for x in xs)


_DEFINED: dict[int, Expr] = {}


def defined(e: Expr) -> Expr:
    """Condition under which evaluating `e` reads no array out of range."""
    cached = _DEFINED.get(e.id)
    if cached is not None:
        return cached
    op = e.op
    if op in ("const", "var"):
        out = TRUE
    elif op == "select":
        i, elems = e.args[0], list(e.args[1:])
        in_range = And(le(0, i), lt(i, len(elems)))
        elem_defs = [defined(x) for x in elems]
        picked = TRUE if all(d is TRUE for d in elem_defs) else select(
            Max(Min(i, len(elems) - 1), 0), elem_defs)
        out = And(defined(i), in_range, picked)
    elif op == "ite":
        c, a, b = e.args
        out = And(defined(c), If(c, defined(a), defined(b)))
    elif op in ("and", "or"):
        out = TRUE
        for arg in reversed(e.args):
            rest = out
            d = defined(arg)
            if d is TRUE and rest is TRUE:
                continue
            guard = Not(arg) if op == "and" else arg
            out = And(d, Or(guard, rest))
    else:
        out = And(*[defined(a) for a in e.args])
    _DEFINED[e.id] = out
    return out


def substitute(e: Expr, mapping: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild `e` replacing variables: `mapping(var)` returns a replacement or None."""
    memo: dict[int, Expr] = {}

    def go(x: Expr) -> Expr:
        got = memo.get(x.id)
        if got is not None:
            return got
        if x.op == "var":
            replaced = mapping(x)
            out = x if replaced is None else replaced
        elif x.op == "const":
            out = x
        else:
            out = rebuild(x, [go(a) for a in x.args])
        memo[x.id] = out
        return out

    return go(e)


def rebuild(x: Expr, args: list[Expr]) -> Expr:
    """The node `x` with new arguments, re-simplified."""
    op = x.op
    if op == "not":
        return Not(args[0])
    if op == "and":
        return And(*args)
    if op == "or":
        return Or(*args)
    if op == "eq":
        return eq(args[0], args[1])
    if op == "lt":
        return lt(args[0], args[1])
    if op == "le":
        return le(args[0], args[1])
    if op == "add":
        return add(args[0], args[1])
    if op == "sub":
        return sub(args[0], args[1])
    if op == "min":
        return Min(args[0], args[1])
    if op == "max":
        return Max(args[0], args[1])
    if op == "ite":
        return If(args[0], args[1], args[2])
    if op == "select":
        return select(args[0], list(args[1:]))
    raise AssertionError(f"unknown op {op}")


def slots_read(e: Expr) -> set[int]:
    """The slots `e` reads, in either frame."""
    return {x.slot for x in walk([e]) if x.op == "var"}


def walk(roots: Iterable[Expr], known: Container[int] = ()) -> list[Expr]:
    """All nodes reachable from `roots`, children before parents, each once; without
    looking into nodes whose id is `known` (a caller's memo of those already done).
    Iterative: traced If chains outgrow the recursion limit."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(list(roots))]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node.id in seen or node.id in known:
            continue
        seen.add(node.id)
        stack.append((node, True))
        for a in reversed(node.args):
            if a.id not in seen and a.id not in known:
                stack.append((a, False))
    return order


_INDEX = re.compile(r"\[(\d+)\]")


def indexed(names: list[str]) -> tuple[str, str] | None:
    """(prefix, suffix) when `names[j]` is `prefix[j]suffix` for every j: the elements
    along one axis of one array (`closed[0][0]`, `closed[0][1]` give `closed[0]`, "")."""
    first = names[0]
    for m in _INDEX.finditer(first):
        pre, post = first[:m.start()], first[m.end():]
        if all(n == f"{pre}[{j}]{post}" for j, n in enumerate(names)):
            return pre, post
    return None


_SYMBOL = {"eq": "==", "lt": "<", "le": "<=", "add": "+", "sub": "-"}
NAMER: list[Callable[[Expr], str] | None] = [None]


def render(e: Expr, namer: Callable[[Expr], str] | None = None) -> str:
    """A readable form of `e`, for error messages."""
    namer = namer or NAMER[0] or (lambda v: f"v{v.slot}" + ("'" if v.frame else ""))

    def go(x: Expr) -> str:
        op = x.op
        if op == "const":
            if x.sort == BOOL:
                return "TRUE" if x.value else "FALSE"
            if isinstance(x.sort, EnumType):
                assert x.value is not None  # a constant carries its value
                return x.sort.members[x.value]
            return str(x.value)
        if op == "var":
            return namer(x)
        if op == "not":
            return f"~{go(x.args[0])}"
        if op in ("and", "or"):
            sep = " & " if op == "and" else " | "
            return "(" + sep.join(go(a) for a in x.args) + ")"
        if op in _SYMBOL:
            return f"({go(x.args[0])} {_SYMBOL[op]} {go(x.args[1])})"
        if op in ("min", "max"):
            return f"{op.capitalize()}({go(x.args[0])}, {go(x.args[1])})"
        if op == "ite":
            return f"If({go(x.args[0])}, {go(x.args[1])}, {go(x.args[2])})"
        if op == "select":
            names = [go(a) for a in x.args[1:]]
            axis = indexed(names)
            if axis is not None:  # `a[i]`, not `[a[0], a[1], a[2]][i]`
                return f"{axis[0]}[{go(x.args[0])}]{axis[1]}"
            return f"[{', '.join(names)}][{go(x.args[0])}]"
        return op

    return go(e)

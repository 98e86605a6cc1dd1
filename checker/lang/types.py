"""Finite types of state variables, and their flattening into integer slots.

Every engine sees a state as a vector of small integers ("slots"): a bool is
0/1, an enum its member index, an int itself. Arrays and records flatten in
declaration order. The structure is kept so values can be shown and written
to traces in the shape the spec author declared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checker.errors import SpecError
from checker.lang.expr import BOOL, INT, EnumType, EnumValue


class Type:
    """A finite type; `leaves()` lists (path suffix, Leaf) in slot order."""

    def leaves(self) -> list[tuple[tuple, Leaf]]:
        raise NotImplementedError

    def size(self) -> int:
        return len(self.leaves())

    def to_python(self, values: list[int]) -> Any:
        """Slot values (in order) to a JSON-friendly value."""
        raise NotImplementedError

    def from_python(self, value: Any, where: str) -> list[int]:
        raise NotImplementedError


@dataclass(frozen=True)
class Leaf(Type):
    """A scalar: bool, bounded int or enum, stored in one slot."""

    sort: Any
    lo: int
    hi: int

    def leaves(self) -> list[tuple[tuple, Leaf]]:
        return [((), self)]

    def describe(self) -> str:
        if self.sort == BOOL:
            return "Bool"
        if isinstance(self.sort, EnumType):
            return self.sort.name
        return f"Int({self.lo}..{self.hi})"

    def to_python(self, values: list[int]) -> Any:
        v = values[0]
        if self.sort == BOOL:
            return bool(v)
        if isinstance(self.sort, EnumType):
            return self.sort.members[v]
        return v

    def from_python(self, value: Any, where: str) -> list[int]:
        if self.sort == BOOL:
            if not isinstance(value, bool):
                raise SpecError(f"{where}: expected a bool, got {value!r}")
            return [int(value)]
        if isinstance(self.sort, EnumType):
            if isinstance(value, EnumValue) and value.enum is self.sort:
                return [value.index]
            if isinstance(value, str) and value in self.sort.members:
                return [self.sort.members.index(value)]
            raise SpecError(f"{where}: expected a member of {self.sort.name}, got {value!r}")
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"{where}: expected an int, got {value!r}")
        if not self.lo <= value <= self.hi:
            raise SpecError(f"{where}: {value} is outside {self.describe()}")
        return [value]


def Bool() -> Leaf:  # noqa: N802 - reads like a type
    return Leaf(BOOL, 0, 1)


def Int(lo: int, hi: int) -> Leaf:  # noqa: N802
    if not (isinstance(lo, int) and isinstance(hi, int)) or lo > hi:
        raise SpecError(f"Int({lo}, {hi}) is empty or not integral")
    return Leaf(INT, lo, hi)


def as_type(t: Any) -> Type:
    if isinstance(t, Type):
        return t
    if isinstance(t, EnumType):
        return Leaf(t, 0, len(t.members) - 1)
    raise SpecError(f"{t!r} is not a type (use Bool(), Int(lo, hi), an Enum, Array or Record)")


@dataclass(frozen=True)
class Array(Type):
    """A fixed-size array; `size` usually comes from a spec parameter."""

    elem: Type
    length: int

    def __init__(self, elem: Any, length: int):
        if not isinstance(length, int) or length < 1:
            raise SpecError(f"Array length must be a positive int, got {length!r}")
        object.__setattr__(self, "elem", as_type(elem))
        object.__setattr__(self, "length", length)

    def leaves(self) -> list[tuple[tuple, Leaf]]:
        inner = self.elem.leaves()
        return [((i, *path), leaf) for i in range(self.length) for path, leaf in inner]

    def to_python(self, values: list[int]) -> Any:
        k = self.elem.size()
        return [self.elem.to_python(values[i * k:(i + 1) * k]) for i in range(self.length)]

    def from_python(self, value: Any, where: str) -> list[int]:
        if not isinstance(value, list | tuple) or len(value) != self.length:
            raise SpecError(f"{where}: expected a list of {self.length} elements, got {value!r}")
        out: list[int] = []
        for i, item in enumerate(value):
            out += self.elem.from_python(item, f"{where}[{i}]")
        return out


@dataclass(frozen=True)
class Record(Type):
    """Named fields, e.g. a log entry with `lai` and `closed`."""

    name: str
    fields: tuple[tuple[str, Type], ...]

    def __init__(self, name: str, **fields: Any):
        if not fields:
            raise SpecError(f"record {name} has no fields")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fields", tuple((k, as_type(v)) for k, v in fields.items()))

    def field(self, name: str) -> tuple[int, Type]:
        offset = 0
        for fname, ftype in self.fields:
            if fname == name:
                return offset, ftype
            offset += ftype.size()
        raise SpecError(f"record {self.name} has no field {name!r}")

    def leaves(self) -> list[tuple[tuple, Leaf]]:
        return [((fname, *path), leaf)
                for fname, ftype in self.fields for path, leaf in ftype.leaves()]

    def to_python(self, values: list[int]) -> Any:
        out, offset = {}, 0
        for fname, ftype in self.fields:
            k = ftype.size()
            out[fname] = ftype.to_python(values[offset:offset + k])
            offset += k
        return out

    def from_python(self, value: Any, where: str) -> list[int]:
        if not isinstance(value, dict) or set(value) != {f for f, _ in self.fields}:
            names = ", ".join(f for f, _ in self.fields)
            raise SpecError(f"{where}: expected a record with fields {names}, got {value!r}")
        out: list[int] = []
        for fname, ftype in self.fields:
            out += ftype.from_python(value[fname], f"{where}.{fname}")
        return out


def path_name(var: str, path: tuple) -> str:
    """`log[2].lai` for var `log` and path (2, 'lai')."""
    out = var
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else f".{step}"
    return out

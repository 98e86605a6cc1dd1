"""The flat form of a built spec: what every engine and backend consumes.

Building a spec (see `spec.py`) traces each action once per parameter
instance and leaves a guard and one update expression per changed slot. The
`Machine` holds those plus the slot layout, initial states and properties.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.errors import TraceError
from checker.lang.expr import BOOL, EnumType, EnumValue, Expr
from checker.lang.types import Leaf, Type


@dataclass(frozen=True)
class Slot:
    index: int
    name: str  # e.g. "log[2].lai"
    var: str
    leaf: Leaf

    @property
    def lo(self) -> int:
        return self.leaf.lo

    @property
    def hi(self) -> int:
        return self.leaf.hi

    def show(self, value: int) -> str:
        if self.leaf.sort == BOOL:
            return "TRUE" if value else "FALSE"
        if isinstance(self.leaf.sort, EnumType):
            return self.leaf.sort.members[value]
        return str(value)


@dataclass(frozen=True)
class VarInfo:
    name: str
    type: Type
    first: int
    count: int
    ghost: bool
    doc: str


def param_text(value: Any) -> str:
    return value.member if isinstance(value, EnumValue) else repr(value)


@dataclass(frozen=True)
class WriteCheck:
    """An assignment at a computed index: `array[index]` is written when `cond` fails
    to hold only if the index is outside 0..length-1."""

    cond: Expr  # the write is in range (or not taken)
    array: str  # the array written, as the spec names it ("log[0]")
    index: Expr
    length: int


@dataclass(frozen=True)
class ActionInstance:
    """One action with its parameters fixed: `guard` and updates over slots."""

    id: int
    name: str
    params: tuple[tuple[str, Any], ...]
    guard: Expr
    updates: tuple[tuple[int, Expr], ...]
    write_checks: tuple[WriteCheck, ...] = ()

    @property
    def writes(self) -> frozenset[int]:
        """The slots the action assigns (every other slot keeps its value)."""
        return frozenset(slot for slot, _ in self.updates)

    @property
    def label(self) -> str:
        inner = ", ".join(f"{k}={param_text(v)}" for k, v in self.params)
        return f"{self.name}({inner})"

    def params_json(self) -> dict[str, Any]:
        return {k: (v.member if isinstance(v, EnumValue) else v) for k, v in self.params}


@dataclass(frozen=True)
class Property:
    """A named predicate: an invariant, step invariant, constraint or lemma.
    `bindings` names, for conjuncts made by a ForAll, the values bound there."""

    name: str
    expr: Expr
    doc: str = ""
    bindings: tuple[tuple[int, str], ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class LivenessProperty:
    """`trigger ~> goal` under weak fairness of the `fair` action instances.

    From every reachable state satisfying `trigger`, every fair behaviour reaches
    a state satisfying `goal` (`goal_is_step`: takes a transition satisfying the
    predicate over (before, after)). See `checker/engines/explicit/liveness.py`.
    """

    name: str
    trigger: Expr
    goal: Expr
    goal_is_step: bool
    fair: tuple[int, ...]  # ids of the weakly fair action instances
    doc: str = ""


@dataclass(frozen=True)
class Scalarset:
    """Interchangeable members (as in Murphi): permuting them maps the behaviours of
    the machine onto each other. `index` names the variables with an array axis (0 is
    the outermost) indexed by the members; `values` the variables whose leaves hold
    members (other values in them are left alone). Engines that reduce by symmetry
    store one state per orbit (`checker/symmetry`); the declaration is checked there,
    not trusted (`ctmc check --check-symmetry`)."""

    name: str
    members: tuple[int, ...]
    index: tuple[tuple[str, tuple[int, ...]], ...]
    values: tuple[str, ...]


@dataclass
class Machine:
    spec_name: str
    params: dict[str, Any]
    mutations: tuple[str, ...]
    slots: list[Slot]
    vars: list[VarInfo]
    init_states: list[tuple[int, ...]]
    actions: list[ActionInstance]
    invariants: list[Property]
    step_invariants: list[Property]
    constraints: list[Property]
    lemmas: list[Property] = field(default_factory=list)
    narrator: Any = None
    view: Any = None  # checker.views.View: how a state reads in the protocol's terms
    liveness: list[LivenessProperty] = field(default_factory=list)
    spec_ref: str = ""  # "module:attribute" of the Spec, so traces can find it again
    scalarsets: list[Scalarset] = field(default_factory=list)

    @property
    def n_slots(self) -> int:
        return len(self.slots)

    def declared_names(self) -> list[str]:
        """Every property's name (invariants, step invariants, constraints, lemmas,
        liveness): lemmas printed for pasting into the spec must reuse none of them."""
        return [p.name for p in self.invariants + self.step_invariants + self.constraints
                + self.lemmas + self.liveness]

    def action_names(self) -> list[str]:
        seen: dict[str, None] = {}
        for a in self.actions:
            seen.setdefault(a.name, None)
        return list(seen)

    def decode(self, state: tuple[int, ...]) -> dict[str, Any]:
        """A state as {var: structured value} (enums by name, bools as bools)."""
        return {v.name: v.type.to_python(list(state[v.first:v.first + v.count]))
                for v in self.vars}

    def encode(self, values: dict[str, Any], where: str = "state") -> tuple[int, ...]:
        missing = [v.name for v in self.vars if v.name not in values]
        if missing:
            raise TraceError(f"{where}: missing variables {', '.join(missing)}")
        out: list[int] = []
        for v in self.vars:
            try:
                out += v.type.from_python(values[v.name], f"{where}.{v.name}")
            except Exception as exc:  # SpecError from the type, reported as a trace problem
                raise TraceError(str(exc)) from None
        return tuple(out)

    def slot_name(self, e: Expr) -> str:
        return self.slots[e.slot].name + ("'" if e.frame else "")

    def describe_state(self, state: tuple[int, ...]) -> str:
        return ", ".join(f"{s.name}={s.show(v)}" for s, v in zip(self.slots, state, strict=True))


def changed_params(machine: Machine, other: Machine) -> dict[str, Any]:
    """The parameters `other` was built with that `machine` was not."""
    return {name: value for name, value in other.params.items()
            if machine.params.get(name) != value}

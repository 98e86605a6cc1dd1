"""Declaring a spec and building it into a `Machine`.

A spec declares parameters (bounds with defaults) and mutations (named
switches for known wrong designs), and a build function that, given resolved
parameters, declares variables, actions, initial states and properties:

    counter = Spec("counter")
    counter.param("limit", 5, "largest value")

    @counter.build
    def _(m, p):
        m.var("x", Int(0, p.limit), init=0)

        @m.action()
        def inc(s):
            require(s.x < p.limit)
            s.x = s.x + 1

Actions are traced once per parameter instance over a symbolic state with
sequential semantics: a read after an assignment sees the new value.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import math
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from checker.errors import CheckerError, ModelError, SpecError, did_you_mean
from checker.lang import expr as E
from checker.lang.expr import BOOL, Expr, lift
from checker.lang.machine import (
    ActionInstance,
    LivenessProperty,
    Machine,
    Property,
    Scalarset,
    Slot,
    VarInfo,
    WriteCheck,
    param_text,
)
from checker.lang.types import Array, Leaf, Record, Type, as_type, path_name
from checker.progress import Ticker

MAX_INSTANCES = 1_000_000  # per action: tracing one takes about a millisecond

_CHECKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# how an error names a property: "lemma AcceptedByLog: ..."
_KIND_WORDS = {"invariant": "invariant", "step": "step invariant", "constraint": "constraint",
               "lemma": "lemma"}


# --- parameters -----------------------------------------------------------

@dataclass(frozen=True)
class ParamDecl:
    name: str
    default: Any
    doc: str
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] | None = None

    @property
    def kind(self) -> type:
        return type(self.default)

    def coerce(self, value: Any, where: str) -> Any:
        """Check (and parse, for command-line strings) a value for this parameter."""
        kind = self.kind
        if isinstance(value, str) and kind is not str:
            text = value.strip().lower()
            if kind is bool:
                if text not in ("true", "false", "1", "0", "yes", "no"):
                    raise ModelError(
                        f"{where}: parameter {self.name} wants true/false, got {value!r}")
                value = text in ("true", "1", "yes")
            else:
                try:
                    if not text.isascii():  # int() reads other scripts' digits too
                        raise ValueError(text)
                    value = int(text)
                except ValueError:
                    raise ModelError(
                        f"{where}: parameter {self.name} wants an integer, got {value!r}") from None
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ModelError(
                f"{where}: parameter {self.name} wants an integer, got {value!r}")
        if kind is not int and not isinstance(value, kind):
            raise ModelError(
                f"{where}: parameter {self.name} wants a {kind.__name__}, got {value!r}")
        if self.min is not None and value < self.min:
            raise ModelError(
                f"{where}: parameter {self.name}={value} is below its minimum {self.min}")
        if self.max is not None and value > self.max:
            raise ModelError(
                f"{where}: parameter {self.name}={value} is above its maximum {self.max}")
        if self.choices is not None and value not in self.choices:
            raise ModelError(f"{where}: parameter {self.name}={value!r} is not one of "
                             f"{', '.join(self.choices)}")
        return value


class Params:
    """Resolved parameter values, read as attributes: `p.requests`."""

    def __init__(self, values: dict[str, Any], mutations: frozenset[str]):
        self._values = dict(values)
        self.mutations = mutations

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise SpecError(f"unknown parameter {name!r}") from None

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)


# --- the spec declaration -------------------------------------------------

class Spec:
    """A named spec: parameters, mutations and a build function."""

    def __init__(self, name: str, doc: str = ""):
        self.name = name
        self.doc = doc
        self.module = sys._getframe(1).f_globals.get("__name__", "")
        self.origin = ""  # `path/file.py:attribute`, when loaded from a file (registry)
        self.params: dict[str, ParamDecl] = {}
        self.mutations: dict[str, str] = {}
        self._build: Callable[[ModelBuilder, Params], None] | None = None

    def param(self, name: str, default: Any, doc: str = "", *, min: int | None = None,
              max: int | None = None, choices: Iterable[str] | None = None) -> None:
        if name in self.params:
            raise SpecError(f"spec {self.name}: parameter {name} declared twice")
        if not isinstance(default, bool | int | str):
            raise SpecError(f"spec {self.name}: parameter {name} must default to int, bool or str")
        self.params[name] = ParamDecl(name, default, doc, min, max,
                                      tuple(choices) if choices is not None else None)

    @property
    def ref(self) -> str:
        """`module:attribute` (or `path/file.py:attribute`) that loads this spec again."""
        if self.origin:
            return self.origin
        module = sys.modules.get(self.module)
        for attr, value in vars(module).items() if module else ():
            if value is self:
                return f"{self.module}:{attr}"
        return ""

    def mutation(self, name: str, doc: str) -> None:
        if name in self.mutations:
            raise SpecError(f"spec {self.name}: mutation {name} declared twice")
        self.mutations[name] = doc

    def build(self, fn: Callable[[ModelBuilder, Params], None]) -> Callable:
        self._build = fn
        return fn

    def with_defaults(self, name: str, **defaults: Any) -> Spec:
        """The same spec under another name with other parameter defaults: for checks
        that build every spec with its defaults, such as backend agreement."""
        variant = Spec(name, doc=f"{self.name} with {defaults}")
        variant.module = sys._getframe(1).f_globals.get("__name__", "")
        for decl in self.params.values():
            variant.param(decl.name, defaults.pop(decl.name, decl.default), decl.doc,
                          min=decl.min, max=decl.max, choices=decl.choices)
        if defaults:
            raise SpecError(f"spec {self.name} has no parameter {sorted(defaults)[0]!r}")
        variant.mutations = dict(self.mutations)
        variant._build = self._build
        return variant

    def resolve(self, overrides: dict[str, Any] | None = None, where: str = "parameters",
                mutations: Iterable[str] = ()) -> Params:
        values = {name: decl.default for name, decl in self.params.items()}
        for name, value in (overrides or {}).items():
            decl = self.params.get(name)
            if decl is None:
                known = ", ".join(self.params) or "none"
                raise ModelError(f"{where}: spec {self.name} has no parameter {name!r}"
                                 f"{did_you_mean(name, self.params)} (known: {known})")
            values[name] = decl.coerce(value, where)
        muts = frozenset(mutations)
        unknown = sorted(muts - set(self.mutations))
        if unknown:
            known = ", ".join(self.mutations) or "none"
            raise ModelError(f"{where}: spec {self.name} has no mutation {unknown[0]!r}"
                             f"{did_you_mean(unknown[0], self.mutations)} (known: {known})")
        return Params(values, muts)

    def instantiate(self, overrides: dict[str, Any] | None = None,
                    mutations: Iterable[str] = (), where: str = "parameters",
                    progress: Callable[[str], None] | None = None) -> Machine:
        """The machine for these parameters and mutations; `progress` hears how far
        tracing the action instances is, when that takes more than a moment."""
        params = self.resolve(overrides, where, mutations)
        if self._build is None:
            raise SpecError(f"spec {self.name} has no build function")
        builder = ModelBuilder(self, params, progress)
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout is the command's (--json)
                self._build(builder, params)
        except CheckerError as exc:
            raise SpecError(_located(exc, f"spec {self.name}")) from None
        except (Exception, SystemExit) as exc:  # a bug in the spec's own Python code
            raise SpecError(_located(exc, f"spec {self.name}: {type(exc).__name__}")) from None
        machine = builder.finish()
        machine.spec_ref = self.ref
        from checker.views import check_declared

        check_declared(machine)  # a view or narration the viewers could not draw: refused
        return machine


def _located(exc: BaseException, context: str) -> str:
    """`context: message (file:line)`, naming the spec file and line where the error
    arose (as the views' errors do), or without a place when it arose in ctmc itself."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(_CHECKER_DIR)]
    where = f" ({_shown(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{context}: {exc}{where}"


def _declared_at(fn: Callable) -> str:
    """` (file:line)` where a spec function is declared, for errors about what it returns."""
    code = getattr(fn, "__code__", None)
    return "" if code is None else f" ({_shown(code.co_filename)}:{code.co_firstlineno})"


def _shown(filename: str) -> str:
    """A spec file's name relative to here when it is below here, else in full."""
    relative = os.path.relpath(filename)
    return filename if relative.startswith("..") else relative


# --- symbolic state -------------------------------------------------------

class _Trace:
    """What tracing one action instance collects."""

    def __init__(self, label: str):
        self.label = label
        self.requires: list[Expr] = []
        self.write_checks: list[WriteCheck] = []


_ACTIVE: list[_Trace] = []


def require(cond: Any) -> None:
    """Guard of the action being traced; conjoined in order with earlier ones."""
    if not _ACTIVE:
        raise SpecError("require() called outside an action or init")
    c = lift(cond)
    if c.sort != BOOL:
        raise SpecError(f"require() needs a bool, got {E.sort_name(c.sort)}")
    _ACTIVE[-1].requires.append(c)


class SymState:
    """The state an action reads and writes: attributes are the spec's variables."""

    def __init__(self, builder: ModelBuilder, exprs: list[Expr], writable: bool,
                 trace: _Trace | None):
        object.__setattr__(self, "_b", builder)
        object.__setattr__(self, "_exprs", exprs)
        object.__setattr__(self, "_writable", writable)
        object.__setattr__(self, "_trace", trace)

    def __getattr__(self, name: str) -> Any:
        info = self._b.var_info(name)
        return _View(self, info.type, info.first, name).resolve()

    def __setattr__(self, name: str, value: Any) -> None:
        info = self._b.var_info(name)
        _View(self, info.type, info.first, name).assign(value, E.TRUE)


class _View:
    """A location: a variable plus a path of field names and (maybe symbolic) indices."""

    def __init__(self, state: SymState, type_: Type, base: int, name: str,
                 steps: tuple = (), final: Type | None = None):
        object.__setattr__(self, "_state", state)
        object.__setattr__(self, "_root", (type_, base))
        object.__setattr__(self, "_steps", steps)
        object.__setattr__(self, "_type", final if final is not None else type_)
        object.__setattr__(self, "_name", name)

    def resolve(self) -> Any:
        return self._read(self._steps) if isinstance(self._type, Leaf) else self

    def _extend(self, step: tuple, final: Type, name: str) -> Any:
        root, base = self._root
        return _View(self._state, root, base, name, self._steps + (step,), final).resolve()

    # reads -----------------------------------------------------------------
    def _read(self, steps: tuple) -> Expr:
        root, base = self._root
        return self._read_at(root, base, steps)

    def _read_at(self, t: Type, base: int, steps: tuple) -> Expr:
        if not steps:
            return self._state._exprs[base]
        kind, key = steps[0]
        if kind == "field":
            assert isinstance(t, Record)  # a field step is taken only on a record
            offset, ftype = t.field(key)
            return self._read_at(ftype, base + offset, steps[1:])
        assert isinstance(t, Array)  # an index step is taken only on an array
        k = t.elem.size()
        if not isinstance(key, Expr):
            return self._read_at(t.elem, base + key * k, steps[1:])
        return E.select(key, [self._read_at(t.elem, base + j * k, steps[1:])
                              for j in range(t.length)])

    def leaves(self) -> list[Expr]:
        """The leaf values of this location, in slot order."""
        return [self._read(self._steps + _path_steps(path)) for path, _ in self._type.leaves()]

    # writes ----------------------------------------------------------------
    def assign(self, value: Any, cond: Expr) -> None:
        if not self._state._writable:
            raise SpecError(f"cannot assign {self._name} here (state is read-only)")
        values = _leaf_values(self._type, value, self._name)
        root, base = self._root
        self._write_at(root, base, self._steps, values, cond)

    def _write_at(self, t: Type, base: int, steps: tuple, values: list[Any], cond: Expr) -> None:
        if not steps:
            for off, ((_, leaf), v) in enumerate(zip(t.leaves(), values, strict=True)):
                _assign_leaf(self._state, base + off, leaf, v, cond, self._name)
            return
        kind, key = steps[0]
        if kind == "field":
            assert isinstance(t, Record)  # a field step is taken only on a record
            offset, ftype = t.field(key)
            self._write_at(ftype, base + offset, steps[1:], values, cond)
            return
        assert isinstance(t, Array)  # an index step is taken only on an array
        k = t.elem.size()
        if not isinstance(key, Expr):
            self._write_at(t.elem, base + key * k, steps[1:], values, cond)
            return
        in_range = E.Implies(cond, E.And(E.le(0, key), E.lt(key, t.length)))
        trace = self._state._trace
        if not (in_range.is_const and in_range.value) and trace is not None:
            shown = f"[{_show_index(key)}]"  # this step of the name: a[i][j] -> a[i]
            at = self._name.rfind(shown)
            array = self._name[:at] if at >= 0 else self._name
            trace.write_checks.append(WriteCheck(in_range, array, key, t.length))
        for j in range(t.length):
            hit = E.And(cond, E.eq(key, j))
            if not (hit.is_const and not hit.value):
                self._write_at(t.elem, base + j * k, steps[1:], values, hit)

    # the Python protocol -----------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        arr = self._array()
        key = _index_value(key, self._name)
        if not isinstance(key, Expr) and not 0 <= key < arr.length:
            raise SpecError(f"index {key} out of range for {self._name} (size {arr.length})")
        return self._extend(("index", key), arr.elem, f"{self._name}[{_show_index(key)}]")

    def __setitem__(self, key: Any, value: Any) -> None:
        arr = self._array()
        key = _index_value(key, self._name)
        if not isinstance(key, Expr) and not 0 <= key < arr.length:
            raise SpecError(f"index {key} out of range for {self._name} (size {arr.length})")
        root, base = self._root
        _View(self._state, root, base, f"{self._name}[{_show_index(key)}]",
              self._steps + (("index", key),), arr.elem).assign(value, E.TRUE)

    def __getattr__(self, field: str) -> Any:
        if field.startswith("_"):
            raise AttributeError(field)
        rec = self._record(field)
        _, ftype = rec.field(field)
        return self._extend(("field", field), ftype, f"{self._name}.{field}")

    def __setattr__(self, field: str, value: Any) -> None:
        rec = self._record(field)
        _, ftype = rec.field(field)
        root, base = self._root
        _View(self._state, root, base, f"{self._name}.{field}",
              self._steps + (("field", field),), ftype).assign(value, E.TRUE)

    def _array(self) -> Array:
        if not isinstance(self._type, Array):
            raise SpecError(f"{self._name} is not an array")
        return self._type

    def _record(self, field: str) -> Record:
        if not isinstance(self._type, Record):
            raise SpecError(f"{self._name} has no field {field!r}")
        return self._type

    def __len__(self) -> int:
        return self._array().length

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        raise SpecError(E.CONTROL_FLOW_HINT)


def _path_steps(path: tuple) -> tuple:
    return tuple(("index", p) if isinstance(p, int) else ("field", p) for p in path)


def _index_value(key: Any, name: str) -> Any:
    if isinstance(key, Expr):
        return key
    if isinstance(key, bool) or not isinstance(key, int):
        raise SpecError(f"{name} must be indexed by an int or an Int expression, got {key!r}")
    return key


def _show_index(key: Any) -> str:
    return E.render(key) if isinstance(key, Expr) else str(key)


def _leaf_values(t: Type, value: Any, name: str) -> list[Any]:
    """A value for a location of type `t`, as its list of leaf values."""
    if isinstance(t, Leaf):
        return [value]
    if isinstance(value, _View):
        if value._type != t:
            raise SpecError(f"cannot assign {value._name} to {name}: types differ")
        return value.leaves()
    if isinstance(t, Array):
        if not isinstance(value, list | tuple) or len(value) != t.length:
            raise SpecError(f"{name} needs a list of {t.length} values, got {value!r}")
        return [leaf for item in value for leaf in _leaf_values(t.elem, item, f"{name}[..]")]
    assert isinstance(t, Record)
    if not isinstance(value, dict) or set(value) != {f for f, _ in t.fields}:
        raise SpecError(f"{name} needs a dict with fields "
                        f"{', '.join(f for f, _ in t.fields)}, got {value!r}")
    return [leaf for f, ft in t.fields for leaf in _leaf_values(ft, value[f], f"{name}.{f}")]


def _assign_leaf(state: SymState, slot: int, leaf: Leaf, value: Any, cond: Expr,
                 name: str) -> None:
    v = lift(value)
    if v.sort != leaf.sort:
        raise SpecError(f"cannot assign a {E.sort_name(v.sort)} to {name} ({leaf.describe()})")
    exprs = state._exprs
    exprs[slot] = E.If(cond, v, exprs[slot])


# --- the builder ------------------------------------------------------------

@dataclass
class _VarDecl:
    info: VarInfo
    init: Any


class ModelBuilder:
    """Collects declarations during a spec's build function; `finish()` traces them."""

    def __init__(self, spec: Spec, params: Params,
                 progress: Callable[[str], None] | None = None):
        self.spec = spec
        self.params = params
        self.progress = progress  # told how far tracing is, every couple of seconds
        self._vars: dict[str, _VarDecl] = {}
        self._slots: list[Slot] = []
        self._actions: list[tuple[str, Callable, dict[str, Iterable]]] = []
        self._init: tuple[Callable, dict[str, Iterable]] | None = None
        self._props: dict[str, list[tuple[str, Callable, str]]] = {
            "invariant": [], "step": [], "constraint": [], "lemma": []}
        self._names: set[str] = set()
        self._liveness: list[tuple[str, Callable, Callable, tuple[str, ...], str]] = []
        self._scalarsets: list[Scalarset] = []
        self.narrator: Any = None
        self.protocol_view: Any = None  # a checker.views.View, if the spec declares one

    def mutated(self, name: str) -> bool:
        if name not in self.spec.mutations:
            raise SpecError(f"spec {self.spec.name} declares no mutation {name!r}")
        return name in self.params.mutations

    # variables -------------------------------------------------------------
    def var(self, name: str, type_: Any, init: Any = None, *, ghost: bool = False,
            doc: str = "") -> None:
        if name in self._vars or not name.isidentifier() or name.startswith("_"):
            raise SpecError(f"variable {name!r} is declared twice or is not a valid name")
        t = as_type(type_)
        first = len(self._slots)
        for path, leaf in t.leaves():
            self._slots.append(Slot(len(self._slots), path_name(name, path), name, leaf))
        info = VarInfo(name, t, first, len(self._slots) - first, ghost, doc)
        self._vars[name] = _VarDecl(info, init)

    def scalarset(self, name: str, members: int | range, *,
                  index: dict[str, int | tuple[int, ...]] | None = None,
                  values: Iterable[str] = ()) -> None:
        """Declare interchangeable members (`members` ids, or `range(k)` for an int k):
        `index` maps each variable to the array axis (or axes; 0 is the outermost) its
        members index, `values` lists the variables whose leaves hold members. Engines
        then store one state per orbit; `ctmc check --check-symmetry` tests the claim."""
        ids = tuple(range(members) if isinstance(members, int) else members)
        if not ids or len(set(ids)) != len(ids) or min(ids) < 0:
            raise SpecError(f"scalarset {name}: needs distinct member ids >= 0, "
                            f"got {list(ids)}")
        self._claim(name)
        axes = tuple((var, (ax,) if isinstance(ax, int) else tuple(ax))
                     for var, ax in (index or {}).items())
        if isinstance(values, str):
            raise SpecError(f"scalarset {name}: values must be a list of variable names")
        self._scalarsets.append(Scalarset(name, ids, axes, tuple(values)))

    def _checked_scalarsets(self) -> list[Scalarset]:
        """The scalarsets, each variable and axis they name checked against the types."""
        for sset in self._scalarsets:
            where = f"scalarset {sset.name}"
            for var in [v for v, _ in sset.index] + list(sset.values):
                if var not in self._vars:
                    raise SpecError(f"{where}: no state variable named {var!r}"
                                    f"{did_you_mean(var, self._vars)}")
            for var, axes in sset.index:
                paths = [[i for i in path if isinstance(i, int)]
                         for path, _ in self._vars[var].info.type.leaves()]
                for axis in axes:
                    if axis < 0 or any(axis >= len(path) for path in paths):
                        raise SpecError(f"{where}: {var} has no array axis {axis}")
                    size = 1 + max(path[axis] for path in paths)
                    if max(sset.members) >= size:
                        raise SpecError(f"{where}: axis {axis} of {var} has {size} entries, "
                                        f"fewer than member {max(sset.members)} needs")
        for i, a in enumerate(self._scalarsets):
            for b in self._scalarsets[i + 1:]:
                shared = {v for v, _ in a.index} & {v for v, _ in b.index}
                for var in sorted(shared):
                    if set(dict(a.index)[var]) & set(dict(b.index)[var]):
                        raise SpecError(f"scalarsets {a.name} and {b.name} both index "
                                        f"the same axis of {var}")
                both = sorted(set(a.values) & set(b.values))
                if both and set(a.members) & set(b.members):
                    raise SpecError(f"scalarsets {a.name} and {b.name} share member ids in "
                                    f"the values of {both[0]}")
        return [s for s in self._scalarsets if len(s.members) > 1]  # one member: no symmetry

    def has_var(self, name: str) -> bool:
        """Whether a variable of this name is declared (specs whose variables depend on
        parameters use it to list, say, the ones a scalarset indexes)."""
        return name in self._vars

    def var_info(self, name: str) -> VarInfo:
        decl = self._vars.get(name)
        if decl is None:
            raise SpecError(f"no state variable named {name!r}{did_you_mean(name, self._vars)}")
        return decl.info

    # actions and properties -------------------------------------------------
    def action(self, fn: Callable | None = None, **domains: Iterable) -> Callable:
        """Declare an action; keyword arguments give each parameter's finite domain."""
        def register(f: Callable) -> Callable:
            self._claim(f.__name__)
            self._actions.append((f.__name__, f, _fixed(domains)))
            return f
        return register(fn) if fn is not None else register

    def init(self, fn: Callable | None = None, **domains: Iterable) -> Callable:
        """Declare initial states: one per parameter instance whose requires hold."""
        def register(f: Callable) -> Callable:
            if self._init is not None:
                raise SpecError("init declared twice")
            self._init = (f, _fixed(domains))
            return f
        return register(fn) if fn is not None else register

    def invariant(self, fn: Callable) -> Callable:
        return self._prop("invariant", fn)

    def step_invariant(self, fn: Callable) -> Callable:
        """A predicate over (before, after) that every transition must satisfy."""
        return self._prop("step", fn)

    def constraint(self, fn: Callable) -> Callable:
        """States violating a constraint are discarded: not checked, not explored."""
        return self._prop("constraint", fn)

    def lemma(self, fn: Callable) -> Callable:
        """An auxiliary invariant for inductive proofs (also checked like an invariant)."""
        return self._prop("lemma", fn)

    def liveness(self, name: str, trigger: Callable, goal: Callable, *,
                 fair: Iterable[str] = (), doc: str = "") -> None:
        """`trigger ~> goal`: from every reachable state where trigger(s) holds, every
        behaviour that is weakly fair to each instance of the `fair` actions reaches
        goal(s), or takes a step where goal(before, after) holds (by goal's arity)."""
        self._claim(name)
        if isinstance(fair, str):
            raise SpecError(f"liveness {name}: fair must be a list of action names")
        self._liveness.append((name, trigger, goal, tuple(fair), doc))

    def view(self, lanes: Callable, tables: Callable, events: Callable | None = None) -> None:
        """Declare how a state reads in the protocol's own terms (`checker.views`): the
        lanes, each lane's tables for a decoded state, and the events of a step."""
        from checker.views import View

        self.protocol_view = View(lanes, tables) if events is None \
            else View(lanes, tables, events)

    def narrate(self, fn: Callable) -> Callable:
        """Register fn(action, params, before, after) -> str for trace views."""
        self.narrator = fn
        return fn

    def _prop(self, kind: str, fn: Callable) -> Callable:
        self._claim(fn.__name__)
        self._props[kind].append((fn.__name__, fn, (fn.__doc__ or "").strip()))
        return fn

    def _claim(self, name: str) -> None:
        """Reserve an action's or property's name: a Python identifier, since it names
        files (a trace's) and is typed in options (--inv), and used once."""
        if not isinstance(name, str) or not name.isidentifier():
            raise SpecError(f"{name!r} is not a name (letters, digits "
                            "and _, not starting with a digit); actions and properties name "
                            "trace files and are given to --inv")
        if name in self._names:
            raise SpecError(f"name {name!r} is declared twice in spec {self.spec.name}")
        self._names.add(name)

    # building ----------------------------------------------------------------
    def _base_exprs(self, frame: int = 0) -> list[Expr]:
        return [E.var(s.index, s.leaf.sort, s.lo, s.hi, frame) for s in self._slots]

    def _trace(self, label: str, fn: Callable, exprs: list[Expr], kwargs: dict) -> tuple:
        trace = _Trace(label)
        state = SymState(self, exprs, True, trace)
        _ACTIVE.append(trace)
        try:
            result = fn(state, **kwargs)
        except CheckerError as exc:
            raise SpecError(_located(exc, label)) from None
        except (Exception, SystemExit) as exc:  # a bug in the spec's Python code
            raise SpecError(_located(exc, f"{label}: {type(exc).__name__}")) from None
        finally:
            _ACTIVE.pop()
        if result is not None:
            raise SpecError(f"{label}: actions assign to the state and return nothing")
        return trace, exprs

    def _property(self, kind: str, name: str, fn: Callable, doc: str) -> Property:
        """A property, with the ForAll values bound in each of its conjuncts."""
        E.BINDINGS.append({})
        try:
            expr = self._predicate(f"{_KIND_WORDS[kind]} {name}", fn, 2 if kind == "step" else 1)
        finally:
            bindings = E.BINDINGS.pop()
        return Property(name, expr, doc, tuple(sorted(bindings.items())))

    def _predicate(self, label: str, fn: Callable, frames: int) -> Expr:
        """`fn` traced over symbolic states; every way it can fail is one SpecError that
        starts with `label` (say `lemma Name`), so the user knows which one to fix."""
        states = [SymState(self, self._base_exprs(f), False, None) for f in range(frames)]
        try:
            returned = fn(*states)
        except CheckerError as exc:
            raise SpecError(_located(exc, label)) from None
        except (Exception, SystemExit) as exc:
            raise SpecError(_located(exc, f"{label}: {type(exc).__name__}")) from None
        out = lift(returned) if isinstance(returned, bool | int | Expr) else None
        if out is None or out.sort != BOOL:
            got = type(returned).__name__ if out is None else E.sort_name(out.sort)
            raise SpecError(f"{label}: must return a bool expression, got {got}"
                            f"{_declared_at(fn)}")
        return out

    def finish(self) -> Machine:
        if not self._slots:
            raise SpecError(f"spec {self.spec.name} declares no variables")
        def namer(v: Expr) -> str:
            return self._slots[v.slot].name + ("'" if v.frame else "")

        E.NAMER[0] = namer
        actions: list[ActionInstance] = []
        total = sum(instance_count(domains) for _, _, domains in self._actions)
        ticker = Ticker(self.progress, lambda traced: (
            f"building {self.spec.name}: {traced:,} of {total:,} action instances traced "
            f"({100 * traced / total:.0f}%)"))
        for name, fn, domains in self._actions:
            for combo in _instances(domains, f"action {name}"):
                ticker.tick()
                label = f"{name}({', '.join(f'{k}={param_text(v)}' for k, v in combo.items())})"
                base = self._base_exprs()
                trace, exprs = self._trace(label, fn, list(base), combo)
                guard = E.And(*trace.requires)
                if guard.is_const and not guard.value:
                    continue  # statically disabled instance
                updates = tuple((i, e) for i, e in enumerate(exprs) if e is not base[i])
                actions.append(ActionInstance(len(actions), name, tuple(combo.items()), guard,
                                              updates, tuple(trace.write_checks)))
        if not actions:
            raise SpecError(f"spec {self.spec.name} has no enabled action instance")
        props = {kind: [self._property(kind, n, fn, doc) for n, fn, doc in items]
                 for kind, items in self._props.items()}
        return Machine(
            liveness=self._liveness_props(actions),
            spec_name=self.spec.name,
            params=self.params.as_dict(),
            mutations=tuple(sorted(self.params.mutations)),
            slots=list(self._slots),
            vars=[d.info for d in self._vars.values()],
            init_states=self._init_states(),
            actions=actions,
            invariants=props["invariant"],
            step_invariants=props["step"],
            constraints=props["constraint"],
            lemmas=props["lemma"],
            narrator=self.narrator,
            view=self.protocol_view,
            scalarsets=self._checked_scalarsets(),
        )

    def _liveness_props(self, actions: list[ActionInstance]) -> list[LivenessProperty]:
        declared = {name for name, _, _ in self._actions}
        out = []
        for name, trigger, goal, fair, doc in self._liveness:
            unknown = sorted(set(fair) - declared)
            if unknown:
                raise SpecError(f"liveness {name}: no action named {unknown[0]!r} to be fair to")
            frames = len(inspect.signature(goal).parameters)
            if frames not in (1, 2):
                raise SpecError(f"liveness {name}: goal takes a state, or (before, after)")
            out.append(LivenessProperty(
                name, self._predicate(f"liveness {name} (trigger)", trigger, 1),
                self._predicate(f"liveness {name} (goal)", goal, frames), frames == 2,
                tuple(a.id for a in actions if a.name in fair), doc))
        return out

    def _init_states(self) -> list[tuple[int, ...]]:
        defaults: list[Expr | None] = []
        for decl in self._vars.values():
            t = decl.info.type
            if decl.init is None:
                defaults += [None] * t.size()
                continue
            values = _broadcast(t, decl.init)
            for (_, leaf), v in zip(t.leaves(), _leaf_values(t, values, decl.info.name),
                                    strict=True):
                e = lift(v)
                if not e.is_const or e.sort != leaf.sort and e.sort is not leaf.sort:
                    raise SpecError(f"initial value of {decl.info.name} must be a constant "
                                    f"{leaf.describe()}")
                defaults.append(e)
        if self._init is None:
            return [self._concrete_init(defaults, "initial state")]
        fn, domains = self._init
        states: dict[tuple[int, ...], None] = {}
        for combo in _instances(domains):
            label = f"init({', '.join(f'{k}={param_text(v)}' for k, v in combo.items())})"
            start = [d if d is not None else E.var(i, s.leaf.sort, s.lo, s.hi)
                     for i, (d, s) in enumerate(zip(defaults, self._slots, strict=True))]
            trace, exprs = self._trace(label, fn, start, combo)
            guard = E.And(*trace.requires)
            if not guard.is_const:
                raise SpecError(f"{label}: requires must be constant in init")
            if guard.value:
                states.setdefault(self._concrete_init(exprs, label), None)
        if not states:
            raise SpecError(f"spec {self.spec.name} has no initial state")
        return list(states)

    def _concrete_init(self, exprs: list[Expr | None], label: str) -> tuple[int, ...]:
        out = []
        for e, s in zip(exprs, self._slots, strict=True):
            if e is None or not e.is_const:
                raise SpecError(f"{label}: {s.name} has no constant initial value")
            assert e.value is not None  # a constant carries its value
            if not s.lo <= e.value <= s.hi:
                raise SpecError(f"{label}: initial {s.name}={e.value} is outside "
                                f"{s.leaf.describe()}")
            out.append(e.value)
        return tuple(out)


def _broadcast(t: Type, value: Any) -> Any:
    """`init=0` for an array of ints means every element is 0."""
    if isinstance(t, Array) and not isinstance(value, list | tuple):
        return [_broadcast(t.elem, value) for _ in range(t.length)]
    if isinstance(t, Array):
        return [_broadcast(t.elem, v) for v in value]
    return value




def _fixed(domains: dict[str, Iterable]) -> dict[str, Iterable]:
    """Each parameter domain as a sequence read the same way every time and in every
    process: a generator would be used up by the first count of its values, and a set's
    order changes with the hash seed, so Spark's executors would number a set's action
    instances differently from the driver. Sets are sorted; ranges stay lazy."""
    fixed: dict[str, Iterable] = {}
    for name, domain in domains.items():
        if isinstance(domain, range):
            fixed[name] = domain
        elif isinstance(domain, set | frozenset):
            try:
                fixed[name] = sorted(domain)
            except TypeError:  # values of kinds that do not compare
                fixed[name] = sorted(domain, key=lambda v: (type(v).__name__, repr(v)))
        else:
            fixed[name] = list(domain)
    return fixed


def _domain_size(domain: Iterable) -> int:
    """How many values a parameter domain holds, without listing a huge range."""
    if isinstance(domain, range):
        return max(0, (domain.stop - domain.start + domain.step - (1 if domain.step > 0 else -1))
                   // domain.step)
    return len(list(domain))


def instance_count(domains: dict[str, Iterable]) -> int:
    """The number of parameter combinations of an action or init."""
    return math.prod(_domain_size(d) for d in domains.values())


def _instances(domains: dict[str, Iterable], label: str = "init") -> Iterator[dict[str, Any]]:
    """Every combination of the parameters, refusing a number no engine could trace."""
    count = instance_count(domains)
    if count > MAX_INSTANCES:
        sizes = ", ".join(f"{name}: {_domain_size(d):,} values" for name, d in domains.items())
        raise SpecError(f"{label} has {count:,} parameter instances ({sizes}); at most "
                        f"{MAX_INSTANCES:,} can be traced: lower the parameters that size "
                        "these domains")
    names = list(domains)
    pools = [list(domains[n]) for n in names]
    for combo in itertools.product(*pools):
        yield dict(zip(names, combo, strict=True))

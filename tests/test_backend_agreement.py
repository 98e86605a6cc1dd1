"""The backends must agree with the scalar reference on every expression of every spec.

For each spec (the registry, `tests/specs/*.py` and `tests/*_specs.py`, which
include `agreement_specs.py`, written for this test) and each guard, update,
write check and property, on random in-type states: (a) `defined(e)` has the
same truth value in every backend, (b) where it holds, `e` has the same value,
and (c) the scalar backend raises OutOfRange exactly where it does not (and
its value lies in the node's interval). Everything is compared with the
scalar backend, so Z3 and NumPy agree with each other too, and a failure
names the backend at fault.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checker.backends import vector
from checker.backends.scalar import OutOfRange, evaluate
from checker.backends.z3_terms import Z3Encoder
from checker.errors import SpecError
from checker.lang.expr import BOOL, Expr, defined, render, walk
from checker.lang.machine import Machine
from checker.lang.spec import Spec
from checker.registry import all_specs

TESTS = Path(__file__).resolve().parent

# Work per backend test, in node evaluations (expression nodes x states, plus a per-state
# overhead), shared equally by the specs so that the file's run time stays near 20 s as specs
# are added. An example is a batch of states, larger for NumPy, which compiles per call.
Z3_BUDGET, Z3_BATCH = 10_000_000, 8
NUMPY_BUDGET, NUMPY_BATCH = 30_000_000, 64
STATE_OVERHEAD = 200
MIN_EXAMPLES, MAX_EXAMPLES = 5, 100
MAX_DRAWS = 2_000  # slot values per example, well within Hypothesis's buffer

State = tuple[int, ...]


def _module_specs(module_name: str) -> list[tuple[str, Spec]]:
    module = importlib.import_module(module_name)
    return [(f"{module_name}:{attr}", value) for attr, value in vars(module).items()
            if isinstance(value, Spec)]


def _discover() -> list[tuple[str, Spec]]:
    found = [(f"registry:{name}", spec) for name, spec in all_specs().items()]
    specs_dir = TESTS / "specs"
    if specs_dir.is_dir():
        for info in sorted(pkgutil.iter_modules([str(specs_dir)]), key=lambda i: i.name):
            found += _module_specs(f"tests.specs.{info.name}")
    for path in sorted(TESTS.glob("*_specs.py")):  # e.g. this test's agreement_specs.py
        found += _module_specs(f"tests.{path.stem}")
    unique: dict[int, tuple[str, Spec]] = {}
    for label, spec in found:
        unique.setdefault(id(spec), (label, spec))
    return list(unique.values())


SPECS = _discover()


@dataclass(frozen=True)
class Case:
    """One expression to compare, named for failure messages."""

    what: str
    expr: Expr
    two_states: bool  # reads the after-state (step invariants)


@cache
def _machine(label: str) -> Machine:
    spec = dict(SPECS)[label]
    try:
        return spec.instantiate()
    except SpecError as exc:  # e.g. a spec in tests/specs that is broken on purpose
        pytest.skip(f"does not build with default parameters: {exc}")


def _cases(machine: Machine) -> list[Case]:
    """Every expression of the machine once, named by its first use."""
    named: list[tuple[str, Expr]] = []
    for a in machine.actions:
        named.append((f"guard of {a.label}", a.guard))
        named += [(f"update of {machine.slots[i].name} in {a.label}", e) for i, e in a.updates]
        named += [(f"write check of {a.label} ({c.array})", c.cond) for c in a.write_checks]
    for kind, props in (("invariant", machine.invariants), ("lemma", machine.lemmas),
                        ("constraint", machine.constraints),
                        ("step invariant", machine.step_invariants)):
        named += [(f"{kind} {p.name}", p.expr) for p in props]
    cases: dict[int, Case] = {}
    for what, e in named:
        if e.id not in cases:
            two = any(x.op == "var" and x.frame for x in walk([e]))
            cases[e.id] = Case(what, e, two)
    return list(cases.values())


def _run(machine: Machine, cases: list[Case], budget: int, batch: int,
         check: Callable[[list[tuple[State, State]]], None]) -> None:
    """Run `check` on batches of random in-type states, reproducibly, within the budget."""
    batch = max(1, min(batch, MAX_DRAWS // (2 * machine.n_slots)))
    work = sum(len(walk([c.expr])) + len(walk([defined(c.expr)])) for c in cases)
    share = budget // (len(SPECS) * batch * (work + STATE_OVERHEAD))
    state = st.tuples(*[st.integers(s.lo, s.hi) for s in machine.slots])
    run = settings(max_examples=max(MIN_EXAMPLES, min(MAX_EXAMPLES, share)), derandomize=True,
                   database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])(
        given(st.lists(st.tuples(state, state), min_size=1, max_size=batch))(check))
    run()


def _where(machine: Machine, case: Case, before: State, after: State) -> str:
    """What failed, for an assertion message (rendered only on failure)."""
    state = f"before: {machine.describe_state(before)}"
    if case.two_states:
        state += f"\nafter: {machine.describe_state(after)}"
    return f"{machine.spec_name}: {case.what}\n  {_show(case.expr, machine)}\n{state}"


def _show(e: Expr, machine: Machine, limit: int = 400) -> str:
    """`e` rendered, unless its tree (a DAG unfolded) is too big to render."""
    size: dict[int, int] = {}
    for x in walk([e]):
        size[x.id] = 1 + sum(size[a.id] for a in x.args)
    if size[e.id] > 4 * limit:
        return f"<expression of {size[e.id]} nodes>"
    text = render(e, machine.slot_name)
    return text if len(text) <= limit else text[:limit] + "..."


def _reference(machine: Machine, case: Case, before: State, after: State) -> tuple[bool, int]:
    """Scalar definedness and value (0 when undefined), checking (c) on the way."""
    try:
        ok = bool(evaluate(defined(case.expr), before, after))
    except OutOfRange as exc:
        raise AssertionError(f"defined(e) itself reads out of range ({exc})\n"
                             f"{_where(machine, case, before, after)}") from None
    try:
        value = evaluate(case.expr, before, after)
    except OutOfRange as exc:
        assert not ok, (f"scalar raised {exc} although defined(e) holds\n"
                        f"{_where(machine, case, before, after)}")
        return False, 0
    assert ok, (f"scalar evaluated to {value} although defined(e) is false\n"
                f"{_where(machine, case, before, after)}")
    e = case.expr  # NumPy picks dtypes from the interval, so it must be sound
    assert e.lo <= value <= e.hi, (f"value {value} is outside the interval [{e.lo}, {e.hi}]\n"
                                   f"{_where(machine, case, before, after)}")
    return True, value


def _z3_int(t: z3.ExprRef) -> int:
    """A value Z3 computed: 0/1 for a bool, else the integer."""
    if z3.is_bool(t):
        assert z3.is_true(t) or z3.is_false(t), f"Z3 left a bool term unevaluated: {t}"
        return int(z3.is_true(t))
    assert z3.is_int_value(t), f"Z3 left an int term unevaluated: {t}"
    return t.as_long()


@pytest.mark.parametrize("label", [label for label, _ in SPECS])
def test_z3_agrees_with_scalar(label: str) -> None:
    machine = _machine(label)
    cases = _cases(machine)
    enc = Z3Encoder(machine)
    bvars, avars = enc.state_vars("b:"), enc.state_vars("a:")
    terms = [(case, enc.defined_term(case.expr, bvars, avars), enc.term(case.expr, bvars, avars))
             for case in cases]
    bool_slot = [s.leaf.sort == BOOL for s in machine.slots]

    def load(model: z3.ModelRef, zvars: Sequence[z3.ExprRef], state: State) -> None:
        for v, x, is_bool in zip(zvars, state, bool_slot, strict=True):
            model.update_value(v, z3.BoolVal(bool(x)) if is_bool else z3.IntVal(x))

    def check(states: list[tuple[State, State]]) -> None:
        for before, after in states:
            model = z3.Model()  # evaluating in a model is much faster than substitute+simplify
            load(model, bvars, before)
            load(model, avars, after)
            for case, dterm, vterm in terms:
                ok, value = _reference(machine, case, before, after)
                got_ok = bool(_z3_int(model.eval(dterm, model_completion=True)))
                assert got_ok == ok, (f"defined(e) is {got_ok} in Z3, {ok} in scalar\n"
                                      f"{_where(machine, case, before, after)}")
                if ok:
                    got = _z3_int(model.eval(vterm, model_completion=True))
                    assert got == value, (f"Z3 gives {got}, scalar {value}\n"
                                          f"{_where(machine, case, before, after)}")

    _run(machine, cases, Z3_BUDGET, Z3_BATCH, check)


@pytest.mark.parametrize("label", [label for label, _ in SPECS])
def test_numpy_agrees_with_scalar(label: str) -> None:
    machine = _machine(label)
    cases = _cases(machine)

    def batch(e: Expr, before: np.ndarray, after: np.ndarray | None) -> np.ndarray:
        out = vector.evaluate_batch(e, before, after)
        assert out.shape == (len(before),), f"shape {out.shape} for {len(before)} states"
        if e.sort == BOOL:
            assert out.dtype == np.bool_, f"bool expression gave dtype {out.dtype}"
        else:
            assert np.issubdtype(out.dtype, np.integer), f"int expression gave {out.dtype}"
        return out

    def check(states: list[tuple[State, State]]) -> None:
        before = np.array([b for b, _ in states], dtype=np.int64)
        after = np.array([a for _, a in states], dtype=np.int64)
        for case in cases:
            a = after if case.two_states else None
            oks, values = batch(defined(case.expr), before, a), batch(case.expr, before, a)
            for k, (b_state, a_state) in enumerate(states):
                ok, value = _reference(machine, case, b_state, a_state)
                assert bool(oks[k]) == ok, (f"defined(e) is {bool(oks[k])} in NumPy, {ok} in "
                                            f"scalar\n{_where(machine, case, b_state, a_state)}")
                if ok:
                    assert int(values[k]) == value, (
                        f"NumPy gives {values[k]}, scalar {value}\n"
                        f"{_where(machine, case, b_state, a_state)}")

    _run(machine, cases, NUMPY_BUDGET, NUMPY_BATCH, check)

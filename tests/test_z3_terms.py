"""Unit tests of the Z3 encoding: states, domains, sorts, and the transition relation."""

from __future__ import annotations

import itertools

import pytest
import z3

from checker.backends.scalar import ScalarMachine
from checker.backends.z3_terms import Z3Encoder
from checker.lang import And, Array, Bool, Enum, If, Int, Max, Min, Record, Spec, require
from checker.lang.machine import Machine

Light = Enum("Light", "red green blue")

COUNTER = Spec("z3_counter", "a wrapping counter with a flag and a colour")
COUNTER.param("limit", 3, "largest value of x")


@COUNTER.build
def _counter(m, p):
    m.var("x", Int(0, p.limit), init=0)
    m.var("up", Bool(), init=True)
    m.var("light", Light, init=Light.red)

    @m.action()
    def inc(s):
        require(And(s.up, s.x < p.limit))
        s.x = s.x + 1

    @m.action()
    def wrap(s):
        require(s.x == p.limit)
        s.x = 0
        s.up = ~s.up

    @m.action(to=Light)
    def paint(s, to):
        require(s.light != to)
        s.light = to
        s.up = If(s.x > 1, s.up, to == Light.green)

    @m.step_invariant
    def x_moves(before, after):
        return Max(after.x - before.x, before.x - after.x) <= p.limit - 1  # not folded


LOG = Spec("z3_log", "an array of records read at a symbolic index")


@LOG.build
def _log(m, p):
    Entry = Record("Entry", lai=Int(0, 5), closed=Bool(), light=Light)
    m.var("log", Array(Entry, 3), init={"lai": 0, "closed": False, "light": Light.red})
    m.var("head", Int(-1, 3), init=0)

    @m.action()
    def close(s):
        s.log[s.head].closed = True

    @m.invariant
    def head_open(s):
        return And(~s.log[s.head].closed, s.log[s.head].light == Light.blue)

    @m.invariant
    def small(s):
        return Min(s.log[0].lai, s.head) >= 0


def valid(claim: z3.BoolRef) -> bool:
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    return solver.check() == z3.unsat


def all_models(formula: z3.BoolRef, over: list[z3.ExprRef]) -> set[tuple[int, ...]]:
    """Every assignment to `over` satisfying `formula` (bools as 0/1)."""
    solver = z3.Solver()
    solver.add(formula)
    found: set[tuple[int, ...]] = set()
    while solver.check() == z3.sat:
        model = solver.model()
        values = [model.eval(v, model_completion=True) for v in over]
        found.add(tuple(int(z3.is_true(x)) if z3.is_bool(x) else x.as_long() for x in values))
        solver.add(z3.Or([v != x for v, x in zip(over, values, strict=True)]))
    return found


def every_state(machine: Machine) -> list[tuple[int, ...]]:
    return list(itertools.product(*[range(s.lo, s.hi + 1) for s in machine.slots]))


@pytest.fixture(scope="module")
def counter() -> Machine:
    return COUNTER.instantiate()


@pytest.fixture(scope="module")
def log() -> Machine:
    return LOG.instantiate()


def test_state_vars_are_named_per_slot_with_bool_sort_for_bools(counter: Machine) -> None:
    enc = Z3Encoder(counter)
    x, up, light = enc.state_vars("s0.")
    assert [str(v) for v in (x, up, light)] == ["s0.x", "s0.up", "s0.light"]
    assert x.sort() == z3.IntSort() and light.sort() == z3.IntSort()
    assert up.sort() == z3.BoolSort()


def test_domain_admits_exactly_the_in_type_states(counter: Machine) -> None:
    enc = Z3Encoder(counter)
    state = enc.state_vars("s.")
    assert all_models(enc.domain(state), state) == set(every_state(counter))


def test_domain_bounds_every_int_and_enum_slot(log: Machine) -> None:
    enc = Z3Encoder(log)
    state = enc.state_vars("s.")
    for slot, v in zip(log.slots, state, strict=True):
        if z3.is_bool(v):
            continue
        for value, inside in ((slot.lo - 1, False), (slot.lo, True), (slot.hi, True),
                              (slot.hi + 1, False)):
            solver = z3.Solver()
            solver.add(enc.domain(state), v == value)
            assert (solver.check() == z3.sat) == inside, (slot.name, value)


def test_transition_holds_exactly_for_scalar_steps(counter: Machine) -> None:
    enc = Z3Encoder(counter)
    before, after = enc.state_vars("b."), enc.state_vars("a.")
    scalar = ScalarMachine(counter)
    for action in counter.actions:
        relation = z3.And(enc.domain(before), enc.domain(after),
                          enc.transition(action, before, after))
        expected = {s + t for s in every_state(counter)
                    if (t := scalar.step(s, action)) is not None}
        assert expected, f"{action.label} is never enabled: the test proves nothing"
        assert all_models(relation, before + after) == expected, action.label


def test_enum_constants_are_member_indices(counter: Machine) -> None:
    enc = Z3Encoder(counter)
    state = enc.state_vars("s.")
    paint_green = next(a for a in counter.actions if a.label == "paint(to=green)")
    assert valid(enc.term(paint_green.guard, state) == (state[2] != 1))
    assert valid(enc.term(dict(paint_green.updates)[2], state) == 1)


def test_step_invariant_reads_both_states_and_needs_after(counter: Machine) -> None:
    enc = Z3Encoder(counter)
    before, after = enc.state_vars("b."), enc.state_vars("a.")
    prop = counter.step_invariants[0].expr
    moves = enc.term(prop, before, after)
    assert valid(moves == (z3.If(after[0] - before[0] >= before[0] - after[0],
                                 after[0] - before[0], before[0] - after[0]) <= 2))
    with pytest.raises(ValueError, match="after"):
        enc.term(prop, enc.state_vars("c."))


def test_record_fields_read_through_a_symbolic_index(log: Machine) -> None:
    enc = Z3Encoder(log)
    state = enc.state_vars("s.")
    names = [str(v) for v in state]
    head = state[names.index("s.head")]
    closed = [state[names.index(f"s.log[{k}].closed")] for k in range(3)]
    light = [state[names.index(f"s.log[{k}].light")] for k in range(3)]
    head_open = log.invariants[0].expr
    in_range = z3.And(0 <= head, head < 3)
    picked = z3.Or([z3.And(head == k, z3.Not(closed[k]), light[k] == 2) for k in range(3)])
    assert valid(z3.Implies(in_range, enc.term(head_open, state) == picked))
    assert valid(enc.defined_term(head_open, state) == in_range)


def test_min_and_a_total_definedness(log: Machine) -> None:
    enc = Z3Encoder(log)
    state = enc.state_vars("s.")
    names = [str(v) for v in state]
    lai0, head = state[names.index("s.log[0].lai")], state[names.index("s.head")]
    small = log.invariants[1].expr
    assert valid(enc.term(small, state) == (z3.If(lai0 <= head, lai0, head) >= 0))
    assert z3.is_true(z3.simplify(enc.defined_term(small, state)))


def test_symbolic_write_updates_every_element_and_keeps_the_rest(log: Machine) -> None:
    enc = Z3Encoder(log)
    before, after = enc.state_vars("b."), enc.state_vars("a.")
    names = [str(v) for v in before]
    head = before[names.index("b.head")]
    close = log.actions[0]
    step = z3.And(enc.domain(before), enc.transition(close, before, after))
    for k in range(3):
        i = names.index(f"b.log[{k}].closed")
        assert valid(z3.Implies(step, after[i] == z3.Or(head == k, before[i])))
    for i, name in enumerate(names):
        if ".closed" not in name:
            assert valid(z3.Implies(step, after[i] == before[i])), name


def test_terms_are_memoised_per_state_vectors(counter: Machine) -> None:
    enc = Z3Encoder(counter)
    s0, s1 = enc.state_vars("s0."), enc.state_vars("s1.")
    guard = counter.actions[0].guard
    assert enc.term(guard, s0) is enc.term(guard, list(s0))
    assert not enc.term(guard, s0).eq(enc.term(guard, s1))

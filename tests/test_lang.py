"""The spec language: what it accepts, what it refuses, and how it says so."""

from __future__ import annotations

import re

import pytest

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.result import ERROR
from checker.errors import ModelError, SpecError
from checker.lang import Array, Bool, Enum, ForAll, If, Int, Max, Min, Record, Spec, require
from checker.lang import expr as E

Phase = Enum("Phase", "idle busy")


def _spec(body, **params):
    spec = Spec("t")
    for name, default in params.items():
        spec.param(name, default)

    @spec.build
    def _(m, p):
        body(m, p)

    return spec


def test_python_control_flow_on_a_symbol_is_refused_with_a_hint():
    def body(m, p):
        m.var("x", Int(0, 3), init=0)

        @m.action()
        def bad(s):
            if s.x > 1:
                s.x = 0

    with pytest.raises(SpecError, match=r"use If\(c, a, b\)") as info:
        _spec(body).instantiate()
    assert "test_lang.py" in str(info.value) and "bad()" in str(info.value)


def test_python_min_on_symbols_is_refused():
    def body(m, p):
        m.var("x", Int(0, 3), init=0)

        @m.action()
        def bad(s):
            s.x = min(s.x, 2)

    with pytest.raises(SpecError, match="Min/Max"):
        _spec(body).instantiate()


def test_sequential_semantics_read_your_own_writes():
    def body(m, p):
        m.var("x", Int(0, 9), init=1)
        m.var("y", Int(0, 9), init=0)

        @m.action()
        def step(s):
            old = s.x
            s.x = s.x + 2
            s.y = s.x + old  # new x (3) + old x (1)

    machine = _spec(body).instantiate()
    assert ScalarMachine(machine).apply((1, 0), machine.actions[0]) == (3, 4)


def test_symbolic_index_reads_and_writes_records():
    E2 = Record("Entry", lai=Int(0, 5), closed=Bool())

    def body(m, p):
        m.var("log", Array(E2, 3), init={"lai": 0, "closed": False})
        m.var("len", Int(0, 3), init=0)

        @m.action(v=range(1, 3))
        def append(s, v):
            require(s.len < 3)
            s.log[s.len] = {"lai": v, "closed": v == 2}
            s.len = s.len + 1

    machine = _spec(body).instantiate()
    scalar = ScalarMachine(machine)
    state = machine.init_states[0]
    state = scalar.apply(state, machine.actions[1])
    state = scalar.apply(state, machine.actions[0])
    assert machine.decode(state) == {
        "log": [{"lai": 2, "closed": True}, {"lai": 1, "closed": False},
                {"lai": 0, "closed": False}],
        "len": 2}


def test_out_of_range_read_is_an_error_even_when_simplification_could_hide_it():
    def body(m, p):
        m.var("a", Array(Int(0, 3), 2), init=0)
        m.var("i", Int(0, 2), init=2)

        @m.action()
        def loose(s):
            require(s.a[s.i] <= 3)  # true for every in-range value: folds if unchecked

    result = check(_spec(body).instantiate(), BfsOptions(deadlock=False))
    assert result.outcome == ERROR
    assert result.violation.message == "action loose() reads a[i] at index 2: a has indexes 0 to 1"
    assert result.violation.trace.violation["action"] == {"action": "loose", "params": {}}


def test_guarded_read_is_fine():
    def body(m, p):
        m.var("a", Array(Int(0, 3), 2), init=0)
        m.var("i", Int(0, 2), init=2)

        @m.action()
        def careful(s):
            require(s.i < 2)
            require(s.a[s.i] < 3)
            s.a[s.i] = s.a[s.i] + 1

    result = check(_spec(body).instantiate(), BfsOptions(deadlock=False))
    assert result.outcome == "holds"


def test_type_errors_are_refused_at_build_time():
    def body(m, p):
        m.var("x", Int(0, 3), init=0)
        m.var("ph", Phase, init=Phase.idle)

        @m.action()
        def bad(s):
            s.x = s.ph

    with pytest.raises(SpecError, match="cannot assign a Phase to x"):
        _spec(body).instantiate()


def test_comparing_different_enums_is_refused():
    Other = Enum("Other", "a b")
    with pytest.raises(SpecError, match="compares Phase with Other"):
        E.eq(E.const(Phase.idle), E.const(Other.a))


def test_quantifiers_min_max_and_if_fold_on_constants():
    assert ForAll(range(3), lambda i: i < 5) is E.TRUE
    assert Min(3, 5).value == 3 and Max(3, 5).value == 5
    assert If(True, 1, 2).value == 1


def test_parameters_are_checked():
    spec = Spec("p")
    spec.param("n", 2, "size", min=1, max=4)

    @spec.build
    def _(m, p):
        m.var("x", Int(0, p.n), init=0)

        @m.action()
        def inc(s):
            require(s.x < p.n)
            s.x = s.x + 1

    assert spec.instantiate({"n": "3"}).params["n"] == 3
    with pytest.raises(ModelError, match="above its maximum 4"):
        spec.instantiate({"n": 9})
    with pytest.raises(ModelError, match="no parameter 'm'"):
        spec.instantiate({"m": 1})
    with pytest.raises(ModelError, match="no mutation 'Nope'"):
        spec.instantiate({}, mutations=["Nope"])


def test_initial_states_from_a_parameterised_init():
    def body(m, p):
        m.var("x", Int(0, 5), init=0)
        m.var("flag", Bool(), init=False)

        @m.init(v=range(4))
        def start(s, v):
            require(v % 2 == 0)
            s.x = v

        @m.action()
        def toggle(s):
            s.flag = ~s.flag

    machine = _spec(body).instantiate()
    assert machine.init_states == [(0, 0), (2, 0)]
    result = check(machine, BfsOptions(deadlock=False))
    assert result.stats["distinct_states"] == 4


def test_with_defaults_builds_the_same_spec_with_other_defaults():
    from tests.specs.counter import COUNTER

    bigger = COUNTER.with_defaults("counter_9", n=9)
    assert bigger.params["n"].default == 9 and COUNTER.params["n"].default == 5
    result = check(bigger.instantiate(), BfsOptions())
    assert result.stats["distinct_states"] == 10  # 0..9
    with pytest.raises(SpecError, match="no parameter 'm'"):
        COUNTER.with_defaults("counter_m", m=1)


@pytest.mark.parametrize("domain, values", [
    ((k for k in range(3)), [0, 1, 2]),  # a generator: used up by counting its values once
    ({2, 0, 1}, [0, 1, 2]),
    (frozenset({"b", "a", "c"}), ["a", "b", "c"]),  # in a string hash's order otherwise
    ({"x": 1, "y": 2}, ["x", "y"]),  # a dict: its keys
], ids=["generator", "set", "frozenset", "dict"])
def test_every_kind_of_parameter_domain_gives_every_instance_in_a_fixed_order(domain, values):
    def body(m, p):
        m.var("c", Int(0, 1), init=0)

        @m.action(v=domain)
        def a(s, v):
            s.c = 1

    assert [dict(a.params)["v"] for a in _spec(body).instantiate({}).actions] == values


def test_a_set_domain_is_sorted_even_when_its_values_do_not_compare():
    def body(m, p):
        m.var("c", Int(0, 1), init=0)

        @m.action(v={1, "a"})
        def a(s, v):
            s.c = 1

    assert [dict(a.params)["v"] for a in _spec(body).instantiate({}).actions] == [1, "a"]


@pytest.mark.parametrize("name", ["x/../../victim/keep", "Eventually Two", "line\nbreak", "2nd"])
def test_an_action_or_property_name_must_be_an_identifier(name):
    """It names trace files: a slash once put a trace outside the traces folder."""
    def invariant(m, p):
        m.var("c", Int(0, 1), init=0)

        def ok(s):
            return s.c < 2

        ok.__name__ = name
        m.invariant(ok)

    def liveness(m, p):
        m.var("c", Int(0, 1), init=0)
        m.liveness(name, lambda s: s.c == 0, lambda s: s.c == 1)

    for body in (invariant, liveness):
        with pytest.raises(SpecError, match=f"{re.escape(repr(name))} is not a name"):
            _spec(body).instantiate({})

"""Specs written to exercise every corner of the expression language.

They model nothing: the backend agreement test evaluates each of their
expressions on random in-type states, so they reach for the shapes that
backends get wrong — symbolic reads and writes that may fall off an array,
reads whose index is itself a read, laziness that guards a read, enums and
records inside arrays, sequential writes, quantifiers and nested `If`.
"""

from __future__ import annotations

from checker.lang import (
    And,
    Array,
    Bool,
    Enum,
    Exists,
    ForAll,
    If,
    Implies,
    Int,
    Max,
    Min,
    Not,
    Or,
    Record,
    Spec,
    require,
)
from spec.log_driven import LOG_DRIVEN

ARITH = Spec("agreement_arith", "every scalar operator on ints and bools")
ARITH.param("bound", 3, "ints range over -bound..bound")


@ARITH.build
def _arith(m, p):
    b = p.bound
    m.var("x", Int(-b, b), init=0)
    m.var("y", Int(-1, 2 * b), init=0)
    m.var("u", Bool(), init=False)
    m.var("v", Bool(), init=True)

    @m.action()
    def mix(s):
        require(Or(Not(s.u), s.x != s.y))
        s.x = Min(Max(s.x + s.y - 1, -b), b)
        s.u = Or(And(s.u, Not(s.v)), s.x == s.y)  # reads the new x
        s.v = s.u != s.v

    @m.action(d=range(-1, 2))
    def nudge(s, d):
        require(Implies(s.v, s.x - d >= -b))
        s.y = If(s.x < d, If(s.u, s.y, -s.x + b), Max(s.y - d, s.x, 0))
        s.x = If(s.v == s.u, s.x, Min(s.x + d, b))

    @m.invariant
    def bounded(s):
        return And(s.x + s.y <= 3 * b, -s.y < b + 2, s.x >= -b)

    @m.lemma
    def either(s):
        return Or(s.u, s.v, s.x > s.y, s.x <= s.y - 1)

    @m.constraint
    def small(s):
        return Max(s.x, s.y) - Min(s.x, s.y) <= 3 * b

    @m.step_invariant
    def moves_slowly(before, after):
        return And(after.x - before.x <= 2 * b,
                   Implies(after.u == before.u, after.y >= before.y - 2 * b))


Mode = Enum("Mode", "idle busy done")

LOG = Spec("agreement_log", "records and enums in an array, indexed by a cursor that can run off")
LOG.param("size", 3, "log entries")


@LOG.build
def _log(m, p):
    n = p.size
    Entry = Record("Entry", lai=Int(0, 3), closed=Bool(), mode=Mode)
    m.var("log", Array(Entry, n), init={"lai": 0, "closed": False, "mode": Mode.idle})
    m.var("head", Int(0, n), init=0)  # head == n is one past the end
    m.var("mode", Mode, init=Mode.idle)

    @m.action()
    def append(s):
        require(s.head < n)
        s.log[s.head].lai = Min(s.log[Max(s.head - 1, 0)].lai + 1, 3)
        s.log[s.head].closed = False
        s.head = s.head + 1

    @m.action(to=Mode)
    def set_mode(s, to):
        s.log[s.head].mode = to  # may write past the end: a write check
        s.mode = If(s.log[s.head - 1].closed, to, s.mode)  # may read at -1 or n

    @m.action()
    def close_last(s):
        require(And(s.head > 0, Not(s.log[s.head - 1].closed)))  # guarded read
        s.log[s.head - 1].closed = True

    @m.action()
    def rotate(s):
        s.log[0] = s.log[s.head]  # a whole record through a symbolic index
        s.head = If(s.log[0].mode == Mode.done, 0, s.head)

    @m.invariant
    def closed_entries_are_done(s):
        return ForAll(range(n), lambda k: Implies(s.log[k].closed, s.log[k].mode != Mode.idle))

    @m.invariant
    def head_entry(s):
        return s.log[s.head].lai >= 0  # undefined when head == n

    @m.lemma
    def some_mode(s):
        return Exists(Mode, lambda md: And(s.mode == md, Or(s.head == n, s.log[s.head].mode == md)))

    @m.step_invariant
    def head_moves_by_one(before, after):
        return Or(after.head == 0, after.head - before.head <= 1,
                  after.log[after.head - 1].lai == before.log[before.head].lai)


ARRAYS = Spec("agreement_arrays", "symbolic reads and writes, nested and possibly out of range")
ARRAYS.param("n", 3, "array length")


@ARRAYS.build
def _arrays(m, p):
    n = p.n
    m.var("a", Array(Int(-1, n), n), init=0)  # values are indices, including both ends off
    m.var("flags", Array(Bool(), n), init=False)
    m.var("grid", Array(Array(Int(0, 2), n), 2), init=0)
    m.var("i", Int(-1, n), init=0)
    m.var("j", Int(0, n - 1), init=0)

    @m.action()
    def chase(s):
        s.i = s.a[s.a[s.j]]  # the inner read is in range, the outer may not be

    @m.action()
    def swap(s):
        t = s.a[s.i]
        s.a[s.i] = s.a[s.j]
        s.a[s.j] = t

    @m.action()
    def guarded(s):
        require(And(s.i >= 0, s.i < n, s.flags[s.i]))
        s.flags[s.i] = Not(s.flags[s.j])
        s.a[s.j] = If(s.flags[s.j], s.a[s.i], Max(s.a[s.j] - 1, -1))

    @m.action()
    def either(s):
        require(Or(s.i < 0, s.i >= n, s.a[s.i] > 0))
        s.i = If(s.i < 0, 0, If(s.i >= n, n - 1, s.i))

    @m.action(k=range(n))
    def shift(s, k):
        for q in range(k, n - 1):
            s.a[q] = s.a[q + 1]
        s.a[n - 1] = If(s.flags[s.a[k]], k, s.a[0])

    @m.action()
    def cell(s):
        s.grid[Min(s.j, 1)][s.i] = s.grid[1 - Min(s.j, 1)][s.a[s.j]]  # both ends may be off

    @m.action()
    def diagonal(s):
        s.grid[Min(s.j, 1)][s.j] = Max(s.grid[0][s.j], s.grid[1][n - 1 - s.j])
        s.j = Min(s.grid[Min(s.j, 1)][s.j] + s.j, n - 1)

    @m.invariant
    def all_in_range(s):
        return ForAll(range(n), lambda k: And(s.a[k] >= -1, s.a[k] <= n))

    @m.invariant
    def flagged_read(s):
        return Implies(s.flags[s.j], s.a[s.a[s.j]] != s.i)  # may read off the array

    @m.lemma
    def some_flag(s):
        return Or(Exists(range(n), lambda k: s.flags[k]), s.grid[1][s.j] >= 0)

    @m.constraint
    def usable_i(s):
        return Or(s.i < 0, s.i >= n, Not(s.flags[s.i]), s.a[s.i] < n)

    @m.step_invariant
    def flags_follow(before, after):
        return Or(after.flags[before.j] == before.flags[after.j],
                  after.a[before.i] <= before.a[after.i])


# The log-driven spec with other defaults, so that this test, which builds every spec with
# its defaults, also covers the two-range components (a split, a merge, and both).
LOG_DRIVEN_SPLIT = LOG_DRIVEN.with_defaults(
    "log_driven_split", structure="split", side_transport=True, stream_breaks=True,
    duplicate=True, writes=2)
LOG_DRIVEN_MERGE = LOG_DRIVEN.with_defaults(
    "log_driven_merge", structure="merge", side_transport=True, lease_changes=1, lead=1,
    policy_flip=True, writes=2)
LOG_DRIVEN_SPLIT_MERGE = LOG_DRIVEN.with_defaults(
    "log_driven_split_merge", structure="split_merge", side_transport=True, lease_changes=1,
    writes=2)

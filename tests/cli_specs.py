"""Tiny specs for the CLI and model-file tests, referenced as `tests.cli_specs:NAME`.

COUNTER climbs from 0 to `limit` and stops there (a deadlock unless deadlock
detection is off). `Small` holds while limit <= 3; the `overshoot` mutation
lets the counter pass its limit, which `WithinLimit` catches.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

COUNTER = Spec("cli_counter", "a counter climbing to a limit")
COUNTER.param("limit", 3, "the largest value inc reaches", min=1, max=8)
COUNTER.param("mode", "up", "unused; shows choices in list params", choices=("up", "flat"))
COUNTER.mutation("overshoot", "inc ignores the limit by one")


@COUNTER.build
def _counter(m, p):
    m.var("x", Int(0, 9), init=0)
    reach = p.limit + 1 if m.mutated("overshoot") else p.limit

    @m.action()
    def inc(s):
        require(s.x < reach)
        s.x = s.x + 1

    @m.invariant
    def Small(s):  # noqa: N802 - property names read like TLA+
        """x stays below 4"""
        return s.x < 4

    @m.invariant
    def WithinLimit(s):  # noqa: N802
        """x never passes the limit"""
        return s.x <= p.limit

    @m.step_invariant
    def Monotone(s, t):  # noqa: N802
        """x never decreases"""
        return t.x >= s.x

"""Two independent counters: a product state space.

`x` and `y` start at 0; `inc_x` adds 1 to x while x < n, `inc_y` likewise for y.

Derivation: x and y are each reachable in 0..n independently, so every pair is
reachable: (n + 1)^2 states. Each step adds 1 to exactly one counter, so (x, y) is
first reached after x + y steps; the farthest state (n, n) is at depth 2n, the
diameter. The only state with no enabled action is (n, n): the shortest deadlock trace
has 2n steps. The step invariant `OneAtATime` (x + y grows by exactly 1) always holds.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

TWO_COUNTERS = Spec("two_counters", "two independent counters, each from 0 up to n")
TWO_COUNTERS.param("n", 4, "each counter's top value", min=0)


@TWO_COUNTERS.build
def _build(m, p):
    m.var("x", Int(0, p.n), init=0)
    m.var("y", Int(0, p.n), init=0)

    @m.action()
    def inc_x(s):
        require(s.x < p.n)
        s.x = s.x + 1

    @m.action()
    def inc_y(s):
        require(s.y < p.n)
        s.y = s.y + 1

    @m.step_invariant
    def OneAtATime(before, after):  # noqa: N802
        """Every step moves exactly one counter up by one."""
        return after.x + after.y == before.x + before.y + 1


EXPECTED = {
    "two_counters": {"params": {"n": 4}, "states": 25, "diameter": 8, "deadlock": 8},
}

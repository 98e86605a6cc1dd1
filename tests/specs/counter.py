"""One counter: the smallest state space with a known diameter and deadlock depth.

`x` starts at 0 and `inc` adds 1 while x < n.

Derivation: the reachable states are x = 0, 1, ..., n, reached after exactly x steps
and in no fewer (each step adds 1), so there are n + 1 states and the diameter is n.
The only state without an enabled action is x = n, first reached after n steps: the
shortest deadlock trace has n steps. The invariant `Bounded` (x <= n) always holds.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

COUNTER = Spec("counter", "a counter from 0 up to n")
COUNTER.param("n", 5, "the counter's top value", min=0)


@COUNTER.build
def _build(m, p):
    m.var("x", Int(0, p.n), init=0)

    @m.action()
    def inc(s):
        require(s.x < p.n)
        s.x = s.x + 1

    @m.invariant
    def Bounded(s):  # noqa: N802
        """The counter never leaves 0..n."""
        return s.x <= p.n


EXPECTED = {
    "counter": {"params": {"n": 5}, "states": 6, "diameter": 5, "deadlock": 5},
}

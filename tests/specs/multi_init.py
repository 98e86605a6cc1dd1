"""Several initial states: BFS depth counts from the nearest one.

`x` ranges over 0..2n and starts at 0 or at n (two initial states); `inc` adds 1 while
x < 2n.

Derivation: every x in 0..2n is reachable: 2n + 1 states. x < n is reached only from 0,
at depth x (at most n - 1); x >= n is reached from n at depth x - n (at most n, for
x = 2n). The diameter is n. Only x = 2n has no enabled action, first at depth n: the
shortest deadlock trace has n steps. For n = 3: 7 states, diameter 3, deadlock 3.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

MULTI_INIT = Spec("multi_init", "a counter with two initial states")
MULTI_INIT.param("n", 3, "the second initial value; the top is 2n", min=1)


@MULTI_INIT.build
def _build(m, p):
    m.var("x", Int(0, 2 * p.n))

    @m.init(x0=[0, p.n])
    def start(s, x0):
        s.x = x0

    @m.action()
    def inc(s):
        require(s.x < 2 * p.n)
        s.x = s.x + 1


EXPECTED = {
    "multi_init": {"params": {"n": 3}, "states": 7, "diameter": 3, "deadlock": 3},
}

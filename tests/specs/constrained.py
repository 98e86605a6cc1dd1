"""A state constraint cuts a product space down to a triangle.

`x` and `y` range over 0..n; `inc_x` and `inc_y` add 1 to one of them (below n) and
`reset` sets both back to 0. The constraint `Triangle` (x + y <= n) discards every
state outside it: such states are neither counted nor explored.

Derivation: the kept states are the (x, y) with x + y <= n, all reachable by
increments that keep x + y <= n: (n + 1)(n + 2) / 2 states (15 for n = 4). Each
increment adds 1 to x + y and reset goes back to the origin, so (x, y) is first reached
after x + y steps: diameter n. `reset` is always enabled: no deadlock. `InTriangle`
always holds on kept states.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

CONSTRAINED = Spec("constrained", "two counters kept in the triangle x + y <= n")
CONSTRAINED.param("n", 4, "the triangle's size", min=0)


@CONSTRAINED.build
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

    @m.action()
    def reset(s):
        s.x = 0
        s.y = 0

    @m.constraint
    def Triangle(s):  # noqa: N802
        """Explore only x + y <= n."""
        return s.x + s.y <= p.n

    @m.invariant
    def InTriangle(s):  # noqa: N802
        """Every kept state is in the triangle."""
        return s.x + s.y <= p.n


CONSTRAINED_EXIT = Spec("constrained_exit", "a step invariant broken by a step out of the "
                                           "constraints")
CONSTRAINED_EXIT.param("n", 3, "the counter's top; the constraint keeps x < n", min=1)


@CONSTRAINED_EXIT.build
def _build_exit(m, p):
    """Derivation: x counts 0..n but the constraint keeps x <= n - 1: n kept states,
    diameter n - 1. The step from x = n - 1 to x = n is still a transition: it breaks
    `NeverTop` although the constraint then discards its target, so the shortest
    counterexample has n steps (decision 0005). `inc` stays enabled at n - 1 (its
    successor exists, only discarded), so there is no deadlock."""
    m.var("x", Int(0, p.n), init=0)

    @m.action()
    def inc(s):
        require(s.x < p.n)
        s.x = s.x + 1

    @m.constraint
    def BelowTop(s):  # noqa: N802
        """Explore only x < n."""
        return s.x < p.n

    @m.step_invariant
    def NeverTop(before, after):  # noqa: N802
        """No step reaches n."""
        return after.x != p.n


EXPECTED = {
    "constrained": {"params": {"n": 4}, "states": 15, "diameter": 4, "deadlock": None},
    "constrained_exit": {"params": {"n": 3}, "states": 3, "diameter": 2, "deadlock": None,
                         "violation": {"name": "NeverTop", "kind": "step_invariant",
                                       "length": 3}},
}

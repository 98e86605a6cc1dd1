"""A walk on a grid with one bad cell: a known shortest counterexample.

`x` and `y` range over 0..n and start at (0, 0); the walker moves one cell left, right,
down or up, staying on the grid. The bad cell is (bx, by) = (4, 3) by default.

Derivation: every cell is reachable, (n + 1)^2 states (36 for n = 5). Each move changes
x + y by exactly one, so cell (x, y) needs at least x + y steps, and x moves right then y
moves up take exactly that many: its depth is its Manhattan distance x + y from the
origin. The farthest cell is (n, n): diameter 2n (10 for n = 5). Some move is possible
from every cell: no deadlock.

Two specs share the walk:
* `grid`: the invariant `NotAtBad` fails only at the bad cell, so the shortest
  counterexample has bx + by = 7 steps; the step invariant `UnitMove` always holds;
* `grid_step`: the step invariant `NoEntryToBad` fails only on a move into the bad
  cell, first possible as the 7th step.
"""

from __future__ import annotations

from checker.lang import And, Int, Not, Or, Spec, require


def _walk(m, p):
    n = p.n
    m.var("x", Int(0, n), init=0)
    m.var("y", Int(0, n), init=0)

    @m.action()
    def right(s):
        require(s.x < n)
        s.x = s.x + 1

    @m.action()
    def left(s):
        require(s.x > 0)
        s.x = s.x - 1

    @m.action()
    def up(s):
        require(s.y < n)
        s.y = s.y + 1

    @m.action()
    def down(s):
        require(s.y > 0)
        s.y = s.y - 1


def _params(spec: Spec) -> None:
    spec.param("n", 5, "the grid is 0..n by 0..n", min=1)
    spec.param("bx", 4, "bad cell x", min=0)
    spec.param("by", 3, "bad cell y", min=0)


GRID = Spec("grid", "a grid walk whose invariant fails at one cell")
_params(GRID)


@GRID.build
def _build_grid(m, p):
    _walk(m, p)

    @m.invariant
    def NotAtBad(s):  # noqa: N802
        """The walker is not on the bad cell."""
        return Not(And(s.x == p.bx, s.y == p.by))

    @m.step_invariant
    def UnitMove(before, after):  # noqa: N802
        """Each step moves to a neighbouring cell."""
        return Or(And(after.x == before.x, Or(after.y == before.y + 1, after.y == before.y - 1)),
                  And(after.y == before.y, Or(after.x == before.x + 1, after.x == before.x - 1)))


GRID_STEP = Spec("grid_step", "a grid walk whose step invariant fails entering one cell")
_params(GRID_STEP)


@GRID_STEP.build
def _build_grid_step(m, p):
    _walk(m, p)

    @m.step_invariant
    def NoEntryToBad(before, after):  # noqa: N802
        """No step moves onto the bad cell."""
        return Not(And(after.x == p.bx, after.y == p.by))


EXPECTED = {
    "grid": {"params": {"n": 5, "bx": 4, "by": 3}, "states": 36, "diameter": 10,
             "deadlock": None,
             "violation": {"name": "NotAtBad", "kind": "invariant", "length": 7}},
    "grid_step": {"params": {"n": 5, "bx": 4, "by": 3}, "states": 36, "diameter": 10,
                  "deadlock": None,
                  "violation": {"name": "NoEntryToBad", "kind": "step_invariant",
                                "length": 7}},
}

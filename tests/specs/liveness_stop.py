"""Liveness by hand: a deadlock before the goal, and a trigger that avoids it.

`x` starts at 0; `inc` adds 1 while x < 2; `jump` goes from 0 to 3, where nothing is
enabled. `ReachesTwo` is `TRUE ~> x = 2`; `FromOne` is `x = 1 ~> x = 2`; both are
fair to both actions.

Derivation (4 states: x = 0, 1, 2, 3; x = 2 and x = 3 have no successor):
* ReachesTwo: 0 -> 3 (jump) and then stuttering at 3 forever is fair (nothing is
  enabled there): a 1-step stem, stuttering.
* FromOne: from x = 1 the only fair behaviour takes inc to 2: it holds.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

STOP = Spec("liveness_stop", "a counter that can jump into a dead end")


@STOP.build
def _build(m, p):
    m.var("x", Int(0, 3), init=0)

    @m.action()
    def inc(s):
        require(s.x < 2)
        s.x = s.x + 1

    @m.action()
    def jump(s):
        require(s.x == 0)
        s.x = 3

    m.liveness("ReachesTwo", lambda s: True, lambda s: s.x == 2, fair=("inc", "jump"))
    m.liveness("FromOne", lambda s: s.x == 1, lambda s: s.x == 2, fair=("inc", "jump"))


LIVENESS = [
    ({}, "ReachesTwo", (1, "stutter")),
    ({}, "FromOne", None),
]
EXPECTED = {
    "liveness_stop": {"params": {}, "states": 4, "diameter": 2, "deadlock": 1},
}

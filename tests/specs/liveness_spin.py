"""Liveness by hand: a lasso that exists, one that weak fairness excludes, and a stop.

`x` spins 0 -> 1 -> 2 -> 0 while `done` is false; `finish` sets `done`, either in any
state (`finish_always`) or only at x = 2. `Finishes` is `TRUE ~> done`; `Wraps` is
`TRUE ~> a 2 -> 0 step`. Both are fair to `spin`, and to `finish` when `fair_finish`.

Derivation (with finish only at x = 2: 4 reachable states, x in 0..2 not done and
(2, done), first reached after 3 steps, where nothing is enabled; with finish_always,
6 states):
* Finishes, finish not fair: spinning forever is fair (spin is taken); the shortest
  lasso starts at the initial state, loops 0 -> 1 -> 2 -> 0: stem 0, loop 3 steps.
* Finishes, finish fair and always enabled: the spin loop has finish enabled in every
  state and never taken, so weak fairness excludes it; every fair behaviour finishes.
* Finishes, finish fair but enabled only at x = 2: finish is disabled at x = 0, so the
  spin loop is still weakly fair (weak, not strong, fairness): the same lasso.
* Wraps, finish only at 2: spin, spin, finish reaches (2, done), where nothing is
  enabled, before any 2 -> 0 step: a 3-step stem that stutters forever.
"""

from __future__ import annotations

from checker.lang import And, Bool, If, Int, Not, Spec, require

SPIN = Spec("liveness_spin", "a spinning counter that may finish")
SPIN.param("finish_always", False, "finish is enabled at every x (else only at x = 2)")
SPIN.param("fair_finish", False, "finish is weakly fair")


@SPIN.build
def _build(m, p):
    m.var("x", Int(0, 2), init=0)
    m.var("done", Bool(), init=False)

    @m.action()
    def spin(s):
        require(Not(s.done))
        s.x = If(s.x == 2, 0, s.x + 1)

    @m.action()
    def finish(s):
        require(Not(s.done))
        if not p.finish_always:
            require(s.x == 2)
        s.done = True

    fair = ("spin", "finish") if p.fair_finish else ("spin",)
    m.liveness("Finishes", lambda s: True, lambda s: s.done, fair=fair)
    m.liveness("Wraps", lambda s: True, lambda b, a: And(b.x == 2, a.x == 0), fair=fair)


# per (params, property): None if it holds, else (stem steps, loop steps or "stutter")
LIVENESS = [
    ({"finish_always": False, "fair_finish": False}, "Finishes", (0, 3)),
    ({"finish_always": True, "fair_finish": True}, "Finishes", None),
    ({"finish_always": False, "fair_finish": True}, "Finishes", (0, 3)),
    ({"finish_always": False, "fair_finish": True}, "Wraps", (3, "stutter")),
]
EXPECTED = {
    "liveness_spin": {"params": {}, "states": 4, "diameter": 3, "deadlock": 3},
}

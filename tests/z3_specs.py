"""Tiny specs for the Z3 engine tests, referenced as `tests.z3_specs:NAME`.

LOCKSTEP moves two counters together: `inc` adds 1 to both while x < limit.
`YSmall` (y <= limit) holds in every reachable state but is not inductive on its
own: from the unreachable state x = limit - 1, y = limit, `inc` breaks it. The lemma
`InStep` (x == y) excludes that state, and `Positive` (y >= 0) is true but useless.
The `skew` mutation lets y run one ahead, which breaks YSmall for real after
`limit` steps. `BadLemma` (switched on by `bad_lemma`) does not type-check: it
returns an integer.
"""

from __future__ import annotations

from checker.lang import Int, Spec, require

LOCKSTEP = Spec("lockstep", "two counters moving together")
LOCKSTEP.param("limit", 3, "where x stops", min=1)
LOCKSTEP.param("bad_lemma", False, "declare a lemma that is not a predicate")
LOCKSTEP.mutation("skew", "y starts one ahead of x")


@LOCKSTEP.build
def _build(m, p):
    start = 1 if m.mutated("skew") else 0
    m.var("x", Int(0, 9), init=0)
    m.var("y", Int(0, 9), init=start)

    @m.action()
    def inc(s):
        require(s.x < p.limit)
        s.x = s.x + 1
        s.y = s.y + 1

    @m.invariant
    def YSmall(s):  # noqa: N802 - property names read like TLA+
        """y never passes the limit."""
        return s.y <= p.limit

    @m.step_invariant
    def YGrows(before, after):  # noqa: N802
        """y never decreases."""
        return after.y >= before.y

    @m.lemma
    def InStep(s):  # noqa: N802
        """x and y are equal: the strengthening YSmall needs."""
        return s.x == s.y

    @m.lemma
    def Positive(s):  # noqa: N802
        """True, and needed by no proof."""
        return s.y >= 0

    if p.bad_lemma:
        @m.lemma
        def BadLemma(s):  # noqa: N802
            return s.x + 1

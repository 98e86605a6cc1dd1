"""n bits, flipped one at a time: a hypercube.

`b[0..n-1]` start at FALSE; `flip(i)` negates bit i (always enabled).

Derivation: any bit vector is reached by flipping its set bits, so all 2^n vectors are
reachable. A vector with k bits set needs at least k flips (each flip changes one bit)
and k flips suffice, so its depth is k; the deepest is all-ones at depth n, the
diameter. Every state has n enabled flips: no deadlock. The invariant `Boolean`
(trivially true) makes the engines evaluate a quantifier over the array.
"""

from __future__ import annotations

from checker.lang import And, Array, Bool, Exists, ForAll, Not, Or, Spec

BITS = Spec("bits", "n bits flipped one at a time")
BITS.param("n", 4, "number of bits", min=1)


@BITS.build
def _build(m, p):
    m.var("b", Array(Bool(), p.n), init=False)

    @m.action(i=range(p.n))
    def flip(s, i):
        s.b[i] = Not(s.b[i])

    @m.invariant
    def Boolean(s):  # noqa: N802
        """Each bit is set or not, and some bit is unset or all are set."""
        return And(ForAll(range(p.n), lambda i: Or(s.b[i], Not(s.b[i]))),
                   Or(Exists(range(p.n), lambda i: Not(s.b[i])),
                      ForAll(range(p.n), lambda i: s.b[i])))


EXPECTED = {
    "bits": {"params": {"n": 4}, "states": 16, "diameter": 4, "deadlock": None},
}

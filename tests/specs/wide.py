"""A state wider than 64 bits with a small, hand-countable reachable set.

Nine (parameter `n`, at least 9) counters `c[i]`, each an Int(0, 255), so a packed state
needs 9 * 8 = 72 bits and an engine must use its hashed-fingerprint mode.
`climb` adds 85 to c[0] while c[0] < 255 (0 -> 85 -> 170 -> 255); `toggle(i)` for
1 <= i < n swaps c[i] between 0 and 255.

Derivation: c[0] takes the 4 values 0, 85, 170, 255 and each other counter the 2 values
0 and 255, independently: 4 * 2^(n-1) states (1024 for n = 9). A state with c[0] = 85j
and t counters at 255 needs j climbs and t toggles, in any order, and no fewer: depth
j + t; the deepest is j = 3, t = n - 1, so the diameter is n + 2 (11 for n = 9).
Toggles are always enabled: no deadlock. `Values` (each counter holds one of its
reachable values) always holds.
"""

from __future__ import annotations

from checker.lang import Array, ForAll, Int, Or, Spec, require

WIDE = Spec("wide", "nine 8-bit counters: a state wider than 64 bits")
WIDE.param("n", 9, "number of counters (9 or more: over 64 bits)", min=9)


@WIDE.build
def _build(m, p):
    m.var("c", Array(Int(0, 255), p.n), init=0)

    @m.action()
    def climb(s):
        require(s.c[0] < 255)
        s.c[0] = s.c[0] + 85

    @m.action(i=range(1, p.n))
    def toggle(s, i):
        s.c[i] = 255 - s.c[i]

    @m.invariant
    def Values(s):  # noqa: N802
        """c[0] is a multiple of 85 and every other counter is 0 or 255."""
        return ForAll(range(p.n), lambda i: Or(
            s.c[i] == 0, s.c[i] == 255, *([s.c[i] == 85, s.c[i] == 170] if i == 0 else [])))


EXPECTED = {
    "wide": {"params": {"n": 9}, "states": 1024, "diameter": 11, "deadlock": None},
}

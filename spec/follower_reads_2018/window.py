"""A window over time, LAIs and sequence numbers, so behaviours can go on forever.

Liveness is about infinite behaviours; with a clock, LAIs and sequence numbers that
only grow, every bounded run ends in a state where nothing can happen, and every
such state would be a counterexample (`docs/decisions/0006-liveness.md`). With
`window = true` the model keeps their *differences* instead of their values:

- `tick` at the clock's bound moves every timestamp down by one instead, and
  timestamps that fall below the window stay at 0 (all that is left of them is
  "long ago"; a stuck closed ts is one);
- `renumber` moves every live LAI down by one when all are at least 1 and the
  leaseholder's LAI is at its bound, and likewise the sequence numbers;
- `truncate` drops the first log entry once every replica has applied it, and the
  write slot it held is reused.

Renumbering by one preserves every comparison the protocol makes; saturation keeps
only the old value's order below everything live. The window models check liveness
only (no reads, no ghost-history invariants), and their transport is reliable: n1
sends an update only once the previous one was delivered, so every receiver's
sequence number stays within one of n1's and renumbering them is exact.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, ForAll, If, Max, Or, require
from spec.follower_reads_2018.parts import NONE, V1
from spec.log_driven.parts import NIL, Ctx, WPhase


def _all_positive(s: Any, locs: list) -> Any:
    return And(*[If(And(live(s), read(s) != NONE), read(s) >= 1, True)
                 for read, _, live in locs])


def add(m: Any, ctx: Ctx, v: V1) -> None:
    N, W, L = v.nodes, v.writes, ctx.log_len

    @m.action()
    def tick(s):
        """Time passes (in the window: everything else moves one tick into the past)."""
        if not v.window:
            require(s.now < v.max_ts)
            s.now = s.now + 1
            return
        at_top = s.now == v.max_ts
        s.now = If(at_top, s.now, s.now + 1)
        for read, write, live in v.locs["ts"]:
            x = read(s)
            write(s, If(And(at_top, live(s), x != NONE), Max(x - 1, 0), x))

    if not v.window:
        return
    for n in range(N):
        v.register("lai", lambda s, n=n: s.lai[0][n],
                   lambda s, x, n=n: s.lai[0].__setitem__(n, x))

    @m.action()
    def renumber(s):
        """Every live LAI (or sequence number) moves down by one, so the leaseholder
        (or n1's sender) can go on: the differences are all that matter."""
        lai_full = s.assigned_lai[0] == v.lai_hi
        seq_full = Or(*[s.ct_seq[n] == v.max_seq for n in range(1, N)])
        lai = And(lai_full, _all_positive(s, v.locs["lai"]))
        seq = And(seq_full, _all_positive(s, v.locs["seq"]))
        require(Or(lai, seq))
        for read, write, live in v.locs["lai"]:
            x = read(s)
            write(s, If(And(lai, live(s), x != NONE), x - 1, x))
        for read, write, live in v.locs["seq"]:
            x = read(s)
            write(s, If(And(seq, live(s), x != NONE), x - 1, x))

    @m.action()
    def truncate(s):
        """Every replica applied the first log entry: Raft truncates it, and the write
        slot it held becomes free."""
        require(s.loglen[0] > 0)
        require(ForAll(range(N), lambda n: s.applied[0][n] > 0))
        first = s.log[0][0]
        require(first < W)
        for w in range(W):
            gone = first == w
            s.wphase[w] = If(gone, WPhase.idle, s.wphase[w])
            s.wts[w] = If(gone, 0, s.wts[w])
            s.wlai[w] = If(gone, 0, s.wlai[w])
            s.wkey[w] = If(gone, ctx.key_type.values[0], s.wkey[w])
            s.wseq[w] = If(gone, 1, s.wseq[w])
            s.wepoch[w] = If(gone, 1, s.wepoch[w])
            s.worigin[w] = If(gone, False, s.worigin[w])
            s.wleft[w] = If(gone, False, s.wleft[w])
            s.appended[w] = If(gone, 0, s.appended[w])
            s.accepted[w] = If(gone, False, s.accepted[w])
            for n in range(N):
                s.has[n][w] = If(gone, False, s.has[n][w])
        for i in range(L - 1):
            s.log[0][i] = s.log[0][i + 1]
        s.log[0][L - 1] = NIL
        s.loglen[0] = s.loglen[0] - 1
        for n in range(N):
            s.applied[0][n] = s.applied[0][n] - 1

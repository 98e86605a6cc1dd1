"""Follower reads, recorded as ghost observations, and the end-to-end guarantee.

A replica serves a read at `t` only if `t` is at or below its closed ts
(RFC "Design"; ground truth §3.3). The read records what it saw compactly:
the replica's applied log length, since a write is visible exactly when its
accepted entry is below that length. NoStaleRead then says every accepted
write at or below `t` on the read's key was seen, whenever it is accepted.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, Implies, Int, require
from spec.log_driven.parts import Ctx


def add(m: Any, p: Any, ctx: Ctx) -> None:
    R, W = ctx.reads, ctx.writes
    if R == 0:
        return
    m.var("rdone", Array(Bool(), R), init=False, ghost=True, doc="read slot used")
    m.var("rkey", Array(ctx.key_type, R), init=ctx.key_type.values[0], ghost=True,
          doc="key read")
    m.var("rts", Array(Int(0, ctx.closed_hi), R), init=0, ghost=True, doc="read timestamp")
    m.var("rlen", Array(Int(0, ctx.log_len), R), init=0, ghost=True,
          doc="log entries the serving replica had applied when it served the read")

    @m.action(i=range(R), n=range(ctx.nodes), k=ctx.key_type, t=range(1, ctx.closed_hi + 1))
    def read(s, i, n, k, t):
        """Replica n serves a follower read of key k at t, using read slot i."""
        require(s.rdone[i] == False)  # noqa: E712 - a symbolic comparison
        if i > 0:
            require(s.rdone[i - 1])  # use slots in order: no symmetric duplicates
        effective = ctx.hooks.get("effective_closed", lambda s, n: s.closed[n])
        require(t <= effective(s, n))
        s.rdone[i] = True
        s.rkey[i] = k
        s.rts[i] = t
        s.rlen[i] = s.applied[n]

    def NoStaleRead(s):  # noqa: N802 - property names are CamelCase
        """Every accepted write at or below a follower read's timestamp on its key was
        observed by that read, whether accepted before or after it (ground truth A1)."""
        return ForAll([(i, w) for i in range(R) for w in range(W)], lambda iw: Implies(
            And(s.rdone[iw[0]], s.accepted[iw[1]], s.wkey[iw[1]] == s.rkey[iw[0]],
                s.wts[iw[1]] <= s.rts[iw[0]]),
            s.wpos[iw[1]] < s.rlen[iw[0]]))

    m.invariant(NoStaleRead)

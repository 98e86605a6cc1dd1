"""Follower reads, recorded as ghost observations, and the end-to-end guarantee.

A replica serves a read at `t` only if `t` is at or below its closed ts (RFC
"Design"; reference §3.3, A16) and it holds the key. The read records which
writes its node held when it served the read (`raft.has`). NoStaleRead then
says every accepted write at or below `t` on the read's key was seen, whenever
and in whichever range it is accepted (A1).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, Implies, Int, require
from spec.log_driven.parts import Ctx, covers, exists


def effective_closed(s: Any, ctx: Ctx, g: int, n: Any) -> Any:
    """The closed ts replica (g, n) serves reads at: its Raft closed ts, unless the side
    transport adds more (`ctx.hooks["effective_closed"]`)."""
    hook = ctx.hooks.get("effective_closed")
    return hook(s, g, n) if hook else s.closed[g][n]


def add(m: Any, p: Any, ctx: Ctx) -> None:
    R, W, G = ctx.reads, ctx.writes, ctx.ranges
    if R == 0:
        return
    m.var("rdone", Array(Bool(), R), init=False, ghost=True, doc="read slot used")
    m.var("rkey", Array(ctx.key_type, R), init=ctx.key_type.values[0], ghost=True,
          doc="key read")
    m.var("rts", Array(Int(0, ctx.closed_hi), R), init=0, ghost=True, doc="read timestamp")
    m.var("robs", Array(Array(Bool(), W), R), init=False, ghost=True,
          doc="the writes the serving node held when it served the read")

    @m.action(i=range(R), g=range(G), n=range(ctx.nodes), k=ctx.key_type,
              t=range(1, ctx.closed_hi + 1))
    def read(s, i, g, n, k, t):
        """Replica (g, n) serves a follower read of key k at t, using read slot i."""
        require(s.rdone[i] == False)  # noqa: E712 - any free slot: the Read scalarset
        require(exists(s, ctx, g, n))
        require(covers(s, ctx, g, k, n))
        require(t <= effective_closed(s, ctx, g, n))
        s.rdone[i] = True
        s.rkey[i] = k
        s.rts[i] = t
        for w in range(W):
            s.robs[i][w] = s.has[n][w]

    def NoStaleRead(s):  # noqa: N802 - property names are CamelCase
        """Every accepted write at or below a follower read's timestamp on its key was
        observed by that read, whether accepted before or after it, in any range
        (reference A1)."""
        return ForAll([(i, w) for i in range(R) for w in range(W)], lambda iw: Implies(
            And(s.rdone[iw[0]], s.accepted[iw[1]], s.wkey[iw[1]] == s.rkey[iw[0]],
                s.wts[iw[1]] <= s.rts[iw[0]]),
            s.robs[iw[0]][iw[1]]))

    m.invariant(NoStaleRead)


def add_claims_invariant(m: Any, ctx: Ctx) -> None:
    """NoUnrecordedClaim, for the log-driven design, whose claims are the ghost
    `claim_hi` (the 2018 design closes through its MPT and has none)."""

    def NoUnrecordedClaim(s):  # noqa: N802 - property names are CamelCase
        """Every replica's effective closed ts, from Raft or the side transport, is at or
        below the highest claim recorded for its range: nothing is closed that no
        leaseholder claimed (A2's premise)."""
        return ForAll([(g, n) for g in range(ctx.ranges) for n in range(ctx.nodes)],
                      lambda gn: Implies(exists(s, ctx, gn[0], gn[1]),
                                         effective_closed(s, ctx, gn[0], gn[1])
                                         <= s.claim_hi[gn[0]]))

    m.invariant(NoUnrecordedClaim)

"""Follower reads, recorded as ghost observations, and the end-to-end guarantee.

A replica serves a read at `t` only if its required frontier is at or below its
closed ts (RFC "Design"; reference §3.3, A16) and it holds the key: `t` itself, or,
with clocks that may be `max_offset` apart, its uncertainty limit `t + max_offset` (a
transactional read must see every write in its uncertainty window that committed
before it: the reads record which writes had committed, `racc`). The read records where it
was served (its node and range) and which writes that node held when it served
it (`raft.has`), so two reads that differ only in where they ran are different
states. NoStaleRead then says every accepted write at or below `t` on the read's
key was seen, whenever and in whichever range it is accepted (A1).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, Implies, Int, Max, Or, require
from spec.log_driven.parts import Ctx, covers, exists


def effective_closed(s: Any, ctx: Ctx, g: int, n: Any) -> Any:
    """The closed ts replica (g, n) serves reads at: its Raft closed ts, unless the side
    transport adds more (`ctx.hooks["effective_closed"]`). ReadsAtLeaseStart also counts
    the start of the lease it applied as closed (#35130, removed by #62570)."""
    hook = ctx.hooks.get("effective_closed")
    closed = hook(s, g, n) if hook else s.closed[g][n]
    if ctx.mutated("ReadsAtLeaseStart"):
        closed = Max(closed, s.lstart[g][s.lseq[g][n]])
    return closed


def add(m: Any, p: Any, ctx: Ctx) -> None:
    R, W, G = ctx.reads, ctx.writes, ctx.ranges
    if R == 0:
        return
    m.var("rdone", Array(Bool(), R), init=False, ghost=True, doc="read slot used")
    m.var("rkey", Array(ctx.key_type, R), init=ctx.key_type.values[0], ghost=True,
          doc="key read")
    m.var("rts", Array(Int(0, ctx.closed_hi), R), init=0, ghost=True, doc="read timestamp")
    m.var("rnode", Array(Int(0, ctx.nodes - 1), R), init=0, ghost=True,
          doc="the node whose replica served the read")
    if G > 1:
        m.var("rrng", Array(Int(0, G - 1), R), init=0, ghost=True,
              doc="the range whose replica served the read")
    m.var("robs", Array(Array(Bool(), W), R), init=False, ghost=True,
          doc="the writes the serving node held when it served the read")
    D = ctx.max_offset
    if D:
        m.var("racc", Array(Array(Bool(), W), R), init=False, ghost=True,
              doc="the writes accepted anywhere when the read was served")
    frontier_offset = 0 if ctx.mutated("FollowerReadIgnoresUncertainty") else D

    @m.action(i=range(R), g=range(G), n=range(ctx.nodes), k=ctx.key_type,
              t=range(1, ctx.closed_hi + 1))
    def read(s, i, g, n, k, t):
        """Replica (g, n) serves a follower read of key k at t, using read slot i."""
        require(s.rdone[i] == False)  # noqa: E712 - any free slot: the Read scalarset
        require(exists(s, ctx, g, n))
        require(covers(s, ctx, g, k, n))
        require(t + frontier_offset <= effective_closed(s, ctx, g, n))
        s.rdone[i] = True
        s.rkey[i] = k
        s.rts[i] = t
        s.rnode[i] = n
        if G > 1:
            s.rrng[i] = g
        for w in range(W):
            s.robs[i][w] = s.has[n][w]
            if D:
                s.racc[i][w] = s.accepted[w]

    def NoStaleRead(s):  # noqa: N802 - property names are CamelCase
        """Every accepted write at or below a follower read's timestamp on its key was
        observed by that read, whether accepted before or after it, in any range
        (reference A1); so was every write in the read's uncertainty window (up to its
        timestamp plus the maximum clock offset) accepted before it (A16)."""
        def seen(i: int, w: int) -> Any:
            below = s.wts[w] <= s.rts[i]
            if D:
                below = Or(below, And(s.racc[i][w], s.wts[w] <= s.rts[i] + D))
            return Implies(And(s.rdone[i], s.accepted[w], s.wkey[w] == s.rkey[i], below),
                           s.robs[i][w])
        return ForAll([(i, w) for i in range(R) for w in range(W)], lambda iw: seen(*iw))

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

"""The write path on the leaseholder (RFC "Constructing outgoing updates": the
`Track`/`done(LAI)`/`propose` API).

A write evaluates on the node holding the newest lease. On n1 it is tracked by the
MPT and forced above `next`; on another node it is only forced to its lease's start
(the other stores' trackers and updates are not modelled, so nobody serves follower
reads under their leases). When its LAI is assigned it is released into the MPT on
the side it was tracked on, with n1's epoch, and proposed to Raft (the log-driven
spec's `raft.py` appends and applies it; its `wcts` stays -1: 2018 commands carry no
closed timestamp).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, If, Int, Max, require
from spec.follower_reads_2018 import mpt
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1, holds_lease, rng
from spec.log_driven.parts import Ctx, WPhase, covers


def add(m: Any, p: Any, ctx: Ctx, v: V1) -> None:
    W, N, P, G = v.writes, v.nodes, ctx.props, ctx.ranges
    m.var("wphase", Array(WPhase, P), init=WPhase.idle, doc="each proposal's lifecycle")
    if G > 1:
        m.var("wrng", Array(Int(0, G - 1), W), init=0, doc="the range each write went to")
    m.var("wkey", Array(ctx.key_type, W), init=ctx.key_type.values[0], doc="key written")
    m.var("wts", Array(Int(0, v.max_ts + 1), W), init=0, doc="the write's timestamp")
    m.var("wlai", Array(Int(0, v.lai_hi), P), init=0, doc="LAI assigned (0: none yet)")
    m.var("wcts", Array(Int(NONE, NONE), P), init=NONE,
          doc="closed ts carried by the command: none in the 2018 design")
    m.var("wseq", Array(Int(1, v.lease_changes + 1), P), init=1,
          doc="the lease the proposal was evaluated under")
    m.var("wepoch", Array(Int(1, v.epochs), W), init=1, doc="n1's epoch when it tracked it")
    m.var("worigin", Array(Bool(), W), init=False, ghost=True, doc="n1 evaluated the write")
    m.var("assigned_lai", Array(Int(0, v.lai_hi), G), init=0,
          doc="each range's leaseholder's last assigned LAI")
    mpt.declare(m, v)
    for w in range(W):
        v.register("ts", lambda s, w=w: s.wts[w], lambda s, x, w=w: s.wts.__setitem__(w, x),
                   lambda s, w=w: s.wphase[w] != WPhase.idle)
        v.register("lai", lambda s, w=w: s.wlai[w],
                   lambda s, x, w=w: s.wlai.__setitem__(w, x),
                   lambda s, w=w: s.wphase[w] == WPhase.flushed)
    v.register("lai", lambda s: s.assigned_lai[0],
               lambda s, x: s.assigned_lai.__setitem__(0, x))

    @m.action(g=range(G), w=range(W), h=range(N), k=ctx.key_type, c=range(1, v.max_ts + 1))
    def evaluate(s, g, w, h, k, c):
        """Node h, holding range g's lease, evaluates write w to key k at client ts c."""
        require(s.wphase[w] == WPhase.idle)  # any free slot: the Write scalarset
        require(holds_lease(s, g, h))
        require(covers(s, ctx, g, k, h))
        for hook in v.may_write:
            require(hook(s, g))
        floor = s.lstart[g][s.lcount[g]]
        for hook in v.write_floor:
            floor = Max(floor, hook(s, g, k))
        if h == ORIGIN:
            floor = Max(floor, mpt.track(s, w))
            s.wepoch[w] = s.epoch[ORIGIN]
        s.worigin[w] = h == ORIGIN
        s.wts[w] = Max(c, floor)
        s.wkey[w] = k
        if G > 1:
            s.wrng[w] = g
        s.wseq[w] = s.lcount[g]
        s.wphase[w] = WPhase.evaluating

    without_mlai = v.mutated("ReproposeWithoutMLAI")

    @m.action(w=range(W))
    def propose(s, w):
        """Write w gets its range's next LAI, is released into n1's MPT if n1 tracked it
        (`done(LAI)`, with the epoch it was tracked in) and is proposed to Raft; a
        reproposal (reproposals.py) takes the same path with its new LAI."""
        require(s.wphase[w] == WPhase.evaluating)
        # ReproposeWithoutMLAI: a reproposal (it had an LAI) releases with zeros
        epoch = If(s.wlai[w] != 0, 0, s.wepoch[w]) if without_mlai else s.wepoch[w]
        for g in range(G):
            mine = rng(s, ctx, w) == g
            require(If(mine, s.assigned_lai[g] < v.lai_hi, True))
            s.assigned_lai[g] = If(mine, s.assigned_lai[g] + 1, s.assigned_lai[g])
        lai = s.assigned_lai[0] if G == 1 else If(s.wrng[w] == 0, s.assigned_lai[0],
                                                  s.assigned_lai[1])
        s.wlai[w] = lai
        for g in range(G):
            mpt.release(s, v, s.wleft[w], epoch, g, lai,
                        when=s.wmpt[w] if G == 1 else And(s.wmpt[w], s.wrng[w] == g))
        s.wmpt[w] = False
        s.wphase[w] = WPhase.flushed

    mpt.add_invariants(m, v, lambda s, w: And(s.wmpt[w], s.wphase[w] == WPhase.evaluating))

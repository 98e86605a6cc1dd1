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

from checker.lang import And, Array, Bool, Int, Max, require
from spec.follower_reads_2018 import mpt
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1, holds_lease
from spec.log_driven.parts import Ctx, WPhase


def add(m: Any, p: Any, ctx: Ctx, v: V1) -> None:
    W, N = v.writes, v.nodes
    m.var("wphase", Array(WPhase, W), init=WPhase.idle, doc="each write's lifecycle")
    m.var("wkey", Array(ctx.key_type, W), init=ctx.key_type.values[0], doc="key written")
    m.var("wts", Array(Int(0, v.max_ts + 1), W), init=0, doc="the write's timestamp")
    m.var("wlai", Array(Int(0, v.lai_hi), W), init=0, doc="LAI assigned (0: none yet)")
    m.var("wcts", Array(Int(NONE, NONE), W), init=NONE,
          doc="closed ts carried by the command: none in the 2018 design")
    m.var("wseq", Array(Int(1, v.lease_changes + 1), W), init=1,
          doc="the lease the write evaluated under")
    m.var("wepoch", Array(Int(1, v.epochs), W), init=1, doc="n1's epoch when it tracked it")
    m.var("worigin", Array(Bool(), W), init=False, ghost=True, doc="n1 evaluated the write")
    m.var("assigned_lai", Int(0, v.lai_hi), init=0, doc="the leaseholder's last assigned LAI")
    mpt.declare(m, v)
    live = lambda s, w: s.wphase[w] != WPhase.idle  # noqa: E731 - a local predicate
    for w in range(W):
        v.register("ts", lambda s, w=w: s.wts[w], lambda s, x, w=w: s.wts.__setitem__(w, x),
                   lambda s, w=w: live(s, w))
        v.register("lai", lambda s, w=w: s.wlai[w],
                   lambda s, x, w=w: s.wlai.__setitem__(w, x),
                   lambda s, w=w: s.wphase[w] == WPhase.flushed)
    v.register("lai", lambda s: s.assigned_lai, lambda s, x: setattr(s, "assigned_lai", x))

    @m.action(w=range(W), h=range(N), k=ctx.key_type, c=range(1, v.max_ts + 1))
    def evaluate(s, w, h, k, c):
        """Node h, holding the lease, evaluates write w to key k at client ts c."""
        require(s.wphase[w] == WPhase.idle)
        if w > 0:
            require(s.wphase[w - 1] != WPhase.idle)  # slots in order: no symmetric copies
        require(holds_lease(s, h))
        floor = s.lstart[s.lcount]
        if h == ORIGIN:
            floor = Max(floor, mpt.track(s, w))
            s.wepoch[w] = s.epoch[ORIGIN]
        s.worigin[w] = h == ORIGIN
        s.wts[w] = Max(c, floor)
        s.wkey[w] = k
        s.wseq[w] = s.lcount
        s.wphase[w] = WPhase.evaluating

    @m.action(w=range(W))
    def propose(s, w):
        """Write w gets the next LAI, is released into n1's MPT if n1 tracked it
        (`done(LAI)`, with the epoch it was tracked in) and is proposed to Raft."""
        require(s.wphase[w] == WPhase.evaluating)
        require(s.assigned_lai < v.lai_hi)
        s.assigned_lai = s.assigned_lai + 1
        s.wlai[w] = s.assigned_lai
        mpt.release(s, v, s.wleft[w], s.wepoch[w], 0, s.wlai[w], when=s.wmpt[w])
        s.wmpt[w] = False
        s.wphase[w] = WPhase.flushed

    mpt.add_invariants(m, v, lambda s, w: And(s.wmpt[w], s.wphase[w] == WPhase.evaluating))

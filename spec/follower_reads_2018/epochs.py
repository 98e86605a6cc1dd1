"""Liveness epochs and epoch-based leases (RFC "Implied guarantees"; reference
§C.1, §C.4).

n1's liveness record may lapse (`expire`); n1 may then heartbeat again in its epoch,
restart in a new one, or lose its lease to a node that increments n1's epoch and
takes the lease over (non-cooperatively) at the current time. n1 closes timestamps
only while live, and only below the present, so a takeover starts above every
closed ts n1 sent in the old epoch. n1 may also transfer its lease: the transfer goes
through the MPT like any proposal, so it starts above `next` (above every emitted
closed ts) and its LAI reaches the MLAI map, which forces followers to apply it, and
see the new lease, before they use a newer closed ts. TransferStartBelowClosed
bypasses the MPT.

Leases are Raft commands in the log-driven spec's log (`raft.py` calls the
`apply_lease` hook): lease j builds on lease j-1, a transfer also needs a new LAI.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.follower_reads_2018 import mpt
from spec.follower_reads_2018.parts import ORIGIN, V1, LeaseKind, holds_lease
from spec.log_driven.parts import Ctx


def add(m: Any, p: Any, ctx: Ctx, v: V1, holders: list[int]) -> None:
    """`holders[g]` holds range g's first lease; leases change on range 0 only."""
    N, E, C, P, G = v.nodes, v.epochs, v.lease_changes, ctx.props, ctx.ranges
    S = C + 1  # leases 1..S; index 0 unused
    ts_hi = v.max_ts + 1
    other = min(2, E)
    m.var("epoch", Array(Int(1, E), N), init=[1] + [other] * (N - 1),
          doc="each node's liveness epoch (n2, n3 restarted once before)")
    m.var("live", Bool(), init=True, doc="n1's liveness record is valid")
    m.var("lcount", Array(Int(1, S), G), init=1, doc="each range's newest lease")
    m.var("lholder", Array(Array(Int(0, N - 1), S + 1), G),
          init=[[h] * (S + 1) for h in holders], doc="each lease's holder")
    m.var("lepoch", Array(Array(Int(1, E), S + 1), G),
          init=[[1 if h == ORIGIN else other] * (S + 1) for h in holders],
          doc="the holder's epoch the lease belongs to")
    m.var("lstart", Array(Array(Int(0, ts_hi), S + 1), G), init=0, doc="each lease's start")
    m.var("lkind", Array(Array(LeaseKind, S + 1), G), init=LeaseKind.initial,
          doc="how it was obtained")
    m.var("llai", Array(Array(Int(0, v.lai_hi), S + 1), G), init=0,
          doc="a transfer's LAI (0: none)")
    m.var("lappended", Array(Array(Bool(), S + 1), G), init=False,
          doc="the lease command is in the log")
    m.var("lseq", Array(Array(Int(1, S), N), G), init=1, doc="the lease each replica applied")
    m.var("lcovered", Array(Bool(), S + 1), init=False, ghost=True,
          doc="an update n1 sent in the replaced lease's epoch has r1's transfer's LAI")
    m.var("emitted_hi", Array(Int(-1, ts_hi), E + 1), init=-1, ghost=True,
          doc="the highest closed ts n1 sent in each epoch")
    for e in range(1, E + 1):
        v.register("ts", lambda s, e=e: s.emitted_hi[e],
                   lambda s, x, e=e: s.emitted_hi.__setitem__(e, x),
                   lambda s, e=e: s.emitted_hi[e] >= 0)

    def on_close(s: Any, ok: Any, closed: Any, sent: list[list[Any]]) -> None:
        """`sent`: the MLAIs each peer's update carries (a full update to one peer
        carries more than a delta to another)."""
        e = s.epoch[ORIGIN]
        s.emitted_hi[e] = If(ok, Max(s.emitted_hi[e], closed), s.emitted_hi[e])
        for j in range(2, S + 1):
            s.lcovered[j] = Or(s.lcovered[j], And(ok, e == s.lepoch[0][j - 1], *[
                And(mlai[0] != -1, mlai[0] >= s.llai[0][j]) for mlai in sent]))

    v.on_close.append(on_close)

    if v.failures:
        @m.action()
        def expire(s):
            """n1's liveness record lapses (n1 is slow, partitioned or down)."""
            require(s.live)
            s.live = False

        @m.action()
        def heartbeat(s):
            """n1 heartbeats its liveness record again, in its current epoch."""
            require(Not(s.live))
            s.live = True

    if v.failures and v.restarts:
        @m.action()
        def restart(s):
            """n1 restarts: it comes back in a new epoch."""
            require(And(Not(s.live), s.epoch[ORIGIN] < E))
            s.epoch[ORIGIN] = s.epoch[ORIGIN] + 1
            s.live = True
            for n in range(1, N):  # a restarted sender starts over at sequence 0
                s.full_next[n] = True

    def new_lease(s: Any, x: int, start: Any, kind: Any) -> Any:
        j = s.lcount[0] + 1
        s.lholder[0][j] = x
        s.lepoch[0][j] = s.epoch[x]
        s.lstart[0][j] = start
        s.lkind[0][j] = kind
        s.lcount[0] = j
        return j

    if C and v.failures:
        @m.action(x=range(1, N))
        def takeover(s, x):
            """Node x increments n1's epoch (n1's liveness lapsed) and takes over its
            lease non-cooperatively, starting now."""
            j = s.lcount[0]
            require(j < S)
            require(And(s.lholder[0][j] == ORIGIN, Not(s.live),
                        s.lepoch[0][j] == s.epoch[ORIGIN], s.epoch[ORIGIN] < E))
            s.epoch[ORIGIN] = s.epoch[ORIGIN] + 1
            new_lease(s, x, s.now, LeaseKind.takeover)

    bypass = v.mutated("TransferStartBelowClosed")
    if C and v.transfers:
        @m.action(x=range(1, N), c=range(1, v.max_ts + 1))
        def transfer(s, x, c):
            """n1 transfers its lease to x, evaluated at ts c: tracked by the MPT (forced
            above next), given an LAI and released into the MLAI map."""
            require(s.lcount[0] < S)
            require(holds_lease(s, 0, ORIGIN))
            require(s.assigned_lai[0] < v.lai_hi)
            epoch = s.epoch[ORIGIN]
            start = c if bypass else Max(c, s.mpt_next + 1)
            s.assigned_lai[0] = s.assigned_lai[0] + 1
            j = new_lease(s, x, start, LeaseKind.transfer)
            s.llai[0][j] = s.assigned_lai[0]
            if not bypass:
                mpt.track_and_release(s, v, epoch, 0, s.assigned_lai[0])

    if C:
        @m.action(j=range(2, S + 1))
        def append_lease(s, j):
            """Raft appends lease command j of range 1."""
            require(And(j <= s.lcount[0], Not(s.lappended[0][j]), s.loglen[0] < ctx.log_len))
            s.log[0][s.loglen[0]] = P + j - 2
            s.loglen[0] = s.loglen[0] + 1
            s.lappended[0][j] = True

    def apply_lease(s: Any, g: int, n: int, j: Any, active: Any, lai_check: bool) -> Any:
        """Replica (g, n) applies lease command j when `active`: it builds on the
        replica's lease, and a transfer's LAI is new. The new holder continues the LAIs."""
        transfer = s.lkind[g][j] == LeaseKind.transfer
        ok = And(active, s.lseq[g][n] == j - 1, Or(Not(transfer), s.llai[g][j] > s.lai[g][n]))
        s.lseq[g][n] = If(ok, j, s.lseq[g][n])
        s.lai[g][n] = If(And(ok, transfer), s.llai[g][j], s.lai[g][n])
        s.assigned_lai[g] = If(And(ok, s.lholder[g][j] == n), s.lai[g][n], s.assigned_lai[g])
        return ok

    ctx.hooks["apply_lease"] = apply_lease

    def TransferStartsAboveClosed(s):  # noqa: N802 - property names are CamelCase
        """V4: a transfer's lease starts above every closed ts n1 sent, in the epoch of
        the lease it replaces, without the transfer's LAI in the MLAI map (RFC "Implied
        guarantees"; updates of other epochs are never used under that lease)."""
        return ForAll(range(2, S + 1), lambda j: Implies(
            And(j <= s.lcount[0], s.lkind[0][j] == LeaseKind.transfer, Not(s.lcovered[j])),
            s.lstart[0][j] > s.emitted_hi[s.lepoch[0][j - 1]]))

    if C:
        m.invariant(TransferStartsAboveClosed)

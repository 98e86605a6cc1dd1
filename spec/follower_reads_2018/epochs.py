"""Liveness epochs and epoch-based leases (RFC "Implied guarantees"; ground truth
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


def add(m: Any, p: Any, ctx: Ctx, v: V1) -> None:
    N, E, C, W = v.nodes, v.epochs, v.lease_changes, v.writes
    S = C + 1  # leases 1..S; index 0 unused
    ts_hi = v.max_ts + 1
    first = p.init_holder
    m.var("epoch", Array(Int(1, E), N), init=[1] + [min(2, E)] * (N - 1),
          doc="each node's liveness epoch (n2, n3 restarted once before)")
    m.var("live", Bool(), init=True, doc="n1's liveness record is valid")
    m.var("lcount", Int(1, S), init=1, doc="the newest lease")
    m.var("lholder", Array(Int(0, N - 1), S + 1), init=first, doc="each lease's holder")
    m.var("lepoch", Array(Int(1, E), S + 1), init=1 if first == ORIGIN else min(2, E),
          doc="the holder's epoch the lease belongs to")
    m.var("lstart", Array(Int(0, ts_hi), S + 1), init=0, doc="each lease's start")
    m.var("lkind", Array(LeaseKind, S + 1), init=LeaseKind.initial, doc="how it was obtained")
    m.var("llai", Array(Int(0, v.lai_hi), S + 1), init=0, doc="a transfer's LAI (0: none)")
    m.var("lappended", Array(Bool(), S + 1), init=False, doc="the lease command is in the log")
    m.var("lseq", Array(Int(1, S), N), init=1, doc="the lease each replica has applied")
    m.var("lcovered", Array(Bool(), S + 1), init=False, ghost=True,
          doc="an update n1 sent has an MLAI at or above the transfer's LAI")
    m.var("emitted_hi", Int(-1, ts_hi), init=-1, ghost=True,
          doc="the highest closed ts n1 ever sent")
    for j in range(2, S + 1):
        v.register("ts", lambda s, j=j: s.lstart[j], lambda s, x, j=j: s.lstart.__setitem__(j, x),
                   lambda s, j=j: j <= s.lcount)
        v.register("lai", lambda s, j=j: s.llai[j], lambda s, x, j=j: s.llai.__setitem__(j, x),
                   lambda s, j=j: And(j <= s.lcount, s.lkind[j] == LeaseKind.transfer))
    v.register("ts", lambda s: s.emitted_hi, lambda s, x: setattr(s, "emitted_hi", x),
               lambda s: s.emitted_hi >= 0)

    def on_close(s: Any, ok: Any, closed: Any, sent: list[Any]) -> None:
        s.emitted_hi = If(ok, Max(s.emitted_hi, closed), s.emitted_hi)
        for j in range(2, S + 1):
            s.lcovered[j] = Or(s.lcovered[j], And(ok, sent[0] != -1, sent[0] >= s.llai[j]))

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

        @m.action()
        def restart(s):
            """n1 restarts: it comes back in a new epoch."""
            require(And(Not(s.live), s.epoch[ORIGIN] < E))
            s.epoch[ORIGIN] = s.epoch[ORIGIN] + 1
            s.live = True
            s.full_next = True  # a restarted sender starts over at sequence 0

    def new_lease(s: Any, x: int, start: Any, kind: Any) -> Any:
        j = s.lcount + 1
        s.lholder[j] = x
        s.lepoch[j] = s.epoch[x]
        s.lstart[j] = start
        s.lkind[j] = kind
        s.lcount = j
        return j

    if C and v.failures:
        @m.action(x=range(1, N))
        def takeover(s, x):
            """Node x increments n1's epoch (n1's liveness lapsed) and takes over its
            lease non-cooperatively, starting now."""
            require(s.lcount < S)
            require(And(s.lholder[s.lcount] == ORIGIN, Not(s.live),
                        s.lepoch[s.lcount] == s.epoch[ORIGIN], s.epoch[ORIGIN] < E))
            s.epoch[ORIGIN] = s.epoch[ORIGIN] + 1
            new_lease(s, x, s.now, LeaseKind.takeover)

    bypass = v.mutated("TransferStartBelowClosed")
    if C:
        @m.action(x=range(1, N), c=range(1, v.max_ts + 1))
        def transfer(s, x, c):
            """n1 transfers its lease to x, evaluated at ts c: tracked by the MPT (forced
            above next), given an LAI and released into the MLAI map."""
            require(s.lcount < S)
            require(holds_lease(s, ORIGIN))
            require(s.assigned_lai < v.lai_hi)
            epoch = s.epoch[ORIGIN]
            start = c if bypass else Max(c, s.mpt_next + 1)
            s.assigned_lai = s.assigned_lai + 1
            j = new_lease(s, x, start, LeaseKind.transfer)
            s.llai[j] = s.assigned_lai
            if not bypass:
                mpt.track_and_release(s, v, epoch, 0, s.assigned_lai)

        @m.action(j=range(2, S + 1))
        def append_lease(s, j):
            """Raft appends lease command j."""
            require(And(j <= s.lcount, Not(s.lappended[j]), s.loglen < ctx.log_len))
            s.log[s.loglen] = W + j - 2
            s.loglen = s.loglen + 1
            s.lappended[j] = True

    def apply_lease(s: Any, n: int, j: Any, active: Any, lai_check: bool) -> Any:
        """Replica n applies lease command j when `active`: it builds on the replica's
        lease, and a transfer's LAI is new. The new holder continues the LAIs."""
        transfer = s.lkind[j] == LeaseKind.transfer
        ok = And(active, s.lseq[n] == j - 1, Or(Not(transfer), s.llai[j] > s.lai[n]))
        s.lseq[n] = If(ok, j, s.lseq[n])
        s.lai[n] = If(And(ok, transfer), s.llai[j], s.lai[n])
        s.assigned_lai = If(And(ok, s.lholder[j] == n), s.lai[n], s.assigned_lai)
        return ok

    ctx.hooks["apply_lease"] = apply_lease

    def TransferStartsAboveClosed(s):  # noqa: N802 - property names are CamelCase
        """V4: a transfer's lease starts above every closed ts n1 sent without the
        transfer's LAI in the MLAI map (RFC "Implied guarantees")."""
        return ForAll(range(2, S + 1), lambda j: Implies(
            And(j <= s.lcount, s.lkind[j] == LeaseKind.transfer, Not(s.lcovered[j])),
            s.lstart[j] > s.emitted_hi))

    if C:
        m.invariant(TransferStartsAboveClosed)

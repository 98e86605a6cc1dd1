"""Leases: the initial lease of n1, lease requests, and lease transfers.

A lease is a Raft command (ground truth §6, §2.5). A lease *request* is
non-cooperative: it starts after the previous lease expired, has no LAI, and
applies if it builds on the previous lease (PrevLeaseProposal). In the
implementation it carries no closed ts; the RFC let its start act as one
(`lease_request_closed`). A *transfer* is proposed by the leaseholder, which
revokes its lease first; it gets an LAI and a closed ts like any proposal and
starts at its evaluation time. When the new holder applies its lease it takes
over the proposal buffer: its write floor becomes its applied closed ts
(OnLeaseChangeLocked), its LAIs continue from its applied LAI, and its writes
are at or after the lease start (the timestamp cache's low water).

Scope: a lease changes only while the leaseholder has no write evaluating or
buffered, so one proposal buffer serves whoever holds the lease. Writes
evaluated under an older lease and still in the log are rejected below Raft
by the lease-sequence check.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, Enum, ForAll, If, Int, Max, Min, Not, Or, require
from spec.log_driven.parts import NIL, Ctx, WPhase
from spec.log_driven.policy import ceiling, closed_target

LeaseKind = Enum("LeaseKind", "initial request transfer")


def add(m: Any, p: Any, ctx: Ctx) -> None:
    C, N, W = ctx.lease_changes, ctx.nodes, ctx.writes
    S = C + 1  # lease sequence numbers 1..S; index 0 unused
    exp_hi = ctx.closed_hi + 2  # the default expiration lies beyond every closed ts
    m.var("lcount", Int(1, S), init=1, doc="the newest lease's sequence number")
    m.var("lholder", Array(Int(0, N - 1), S + 1), init=0, doc="each lease's holder")
    m.var("lstart", Array(Int(0, exp_hi), S + 1), init=0, doc="each lease's start")
    m.var("lexp", Array(Int(0, exp_hi), S + 1), init=[0, ctx.lease_exp] + [0] * (S - 1),
          doc="each lease's expiration")
    m.var("lkind", Array(LeaseKind, S + 1), init=LeaseKind.initial, doc="request or transfer")
    m.var("lcts", Array(Int(NIL, ctx.closed_hi), S + 1), init=NIL,
          doc="closed ts the lease command carries (-1: none)")
    m.var("llai", Array(Int(0, W + C), S + 1), init=0, doc="a transfer's LAI (0: none)")
    m.var("lappended", Array(Int(0, 2), S + 1), init=0, doc="times appended to the log")
    m.var("lseq", Array(Int(1, S), N), init=1, doc="the lease each replica has applied")
    m.var("lh", Int(0, N - 1), init=0, doc="the node whose proposal buffer is in use")
    m.var("revoked", Bool(), init=False, doc="the leaseholder revoked its lease (transfer)")
    m.var("lh_low", Int(0, exp_hi), init=0, doc="writes under this lease are at or after it")
    duration, carries_start = p.lease_duration, ctx.mutated("LeaseRequestCarriesStart")
    no_floor = ctx.mutated("NoFloorOnLeaseAcquire")
    quiet = lambda s: ForAll(range(W), lambda w: Not(Or(  # noqa: E731 - a local predicate
        s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered,
        s.wphase[w] == WPhase.released)))

    def new_lease(s: Any, holder: Any, kind: Any) -> Any:
        j = s.lcount + 1
        s.lholder[j] = holder
        s.lstart[j] = s.now
        s.lexp[j] = Min(s.now + duration, exp_hi)
        s.lkind[j] = kind
        s.lcount = j
        return j

    @m.action(x=range(N))
    def request_lease(s, x):
        """Node x acquires the lease after the newest one expired (non-cooperative)."""
        require(s.lcount < S)
        require(s.now > s.lexp[s.lcount])
        require(quiet(s))
        j = new_lease(s, x, LeaseKind.request)
        s.lcts[j] = s.now if carries_start else NIL

    @m.action(x=range(N))
    def transfer_lease(s, x):
        """The leaseholder revokes its lease and proposes a transfer to node x."""
        require(s.lcount < S)
        holder = s.lh
        require(And(x != holder, s.lholder[s.lcount] == holder, s.lseq[holder] == s.lcount,
                    Not(s.revoked), s.now < s.lexp[s.lcount]))
        require(quiet(s))
        closed = Max(s.assigned_closed, Min(closed_target(s, ctx), ceiling(s, ctx)))
        s.revoked = True
        j = new_lease(s, x, LeaseKind.transfer)
        s.assigned_lai = s.assigned_lai + 1
        s.llai[j] = s.assigned_lai
        s.lcts[j] = closed
        s.assigned_closed = closed

    @m.action(j=range(2, S + 1))
    def append_lease(s, j):
        """Raft appends lease command j (requests and transfers alike)."""
        require(j <= s.lcount)
        require(s.lappended[j] < (2 if p.duplicate else 1))
        require(s.loglen < ctx.log_len)
        s.log[s.loglen] = W + j - 2
        s.loglen = s.loglen + 1
        s.lappended[j] = s.lappended[j] + 1

    def apply_lease(s: Any, n: int, j: Any, active: Any, lai_check: bool) -> Any:
        """Replica n applies lease command j (when `active`); returns whether it was
        accepted: it builds on the replica's lease, and a transfer's LAI is new."""
        transfer = s.lkind[j] == LeaseKind.transfer
        ok = And(active, s.lseq[n] == j - 1,
                 Or(Not(transfer), s.llai[j] > s.lai[n], not lai_check))
        s.lseq[n] = If(ok, j, s.lseq[n])
        s.lai[n] = If(And(ok, transfer), s.llai[j], s.lai[n])
        carried = And(ok, s.lcts[j] != NIL)
        s.closed[n] = If(carried, s.lcts[j], s.closed[n])
        s.claim_hi = If(carried, Max(s.claim_hi, s.lcts[j]), s.claim_hi)
        takes_over = And(ok, s.lholder[j] == n)
        s.lh = If(takes_over, n, s.lh)
        s.revoked = If(takes_over, False, s.revoked)
        s.assigned_closed = If(takes_over, NIL if no_floor else s.closed[n], s.assigned_closed)
        s.assigned_lai = If(takes_over, s.lai[n], s.assigned_lai)
        s.lh_low = If(takes_over, s.lstart[j], s.lh_low)
        return ok

    ctx.hooks["apply_lease"] = apply_lease

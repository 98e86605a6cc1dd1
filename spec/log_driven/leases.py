"""Leases: the initial lease of n1, lease requests, and lease transfers.

A lease is a Raft command (reference §6, §2.5). A lease *request* is
non-cooperative: it starts after the previous lease expired, has no LAI, and
applies if it builds on the previous lease (PrevLeaseProposal). In the
implementation it carries no closed ts; the RFC let its start act as one
(`lease_request_closed`). A *transfer* is proposed by the leaseholder, which
revokes its lease first; it gets an LAI and a closed ts like any proposal and
starts at its evaluation time. When the new holder applies its lease it takes
over the proposal buffer: its write floor becomes its applied closed ts
(OnLeaseChangeLocked), its LAIs continue from its applied LAI, and its writes
are at or after the lease start (the timestamp cache's low water).

Each range has its own lease history. Scope: a lease changes only while the
leaseholder has no write evaluating or buffered, so one proposal buffer serves
whoever holds the lease; with a merge, only the right-hand side's lease
changes (the merge hazard of LeaseRequestCarriesStart), and models with a
split keep n1's leases. Writes evaluated under an older lease and still in the
log are rejected below Raft by the lease-sequence check.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, Enum, If, Int, Max, Min, Not, Or, require
from spec.log_driven.parts import NIL, Ctx
from spec.log_driven.policy import ceiling, closed_target
from spec.log_driven.proposals import quiet, struct_pending

LeaseKind = Enum("LeaseKind", "initial request transfer")


def add(m: Any, p: Any, ctx: Ctx) -> None:
    C, N, G, P = ctx.lease_changes, ctx.nodes, ctx.ranges, ctx.props
    S = C + 1  # lease sequence numbers 1..S; index 0 unused
    exp_hi = ctx.closed_hi + 2  # the default expiration lies beyond every closed ts
    changing = [1] if ctx.structure == "merge" else [0]
    m.var("lcount", Array(Int(1, S), G), init=1, doc="each range's newest lease sequence")
    m.var("lholder", Array(Array(Int(0, N - 1), S + 1), G), init=0, doc="each lease's holder")
    m.var("lstart", Array(Array(Int(0, exp_hi), S + 1), G), init=0, doc="each lease's start")
    first_exp = [ctx.lease_exp if g in changing else exp_hi for g in range(G)]
    m.var("lexp", Array(Array(Int(0, exp_hi), S + 1), G),
          init=[[0, first_exp[g]] + [0] * (S - 1) for g in range(G)],
          doc="each lease's expiration")
    m.var("lkind", Array(Array(LeaseKind, S + 1), G), init=LeaseKind.initial,
          doc="request or transfer")
    m.var("lcts", Array(Array(Int(NIL, ctx.closed_hi), S + 1), G), init=NIL,
          doc="closed ts the lease command carries (-1: none)")
    m.var("llai", Array(Array(Int(0, ctx.max_lai), S + 1), G), init=0,
          doc="a transfer's LAI (0: none)")
    m.var("lappended", Array(Array(Int(0, 2), S + 1), G), init=0,
          doc="times appended to the log")
    m.var("lseq", Array(Array(Int(1, S), N), G), init=1, doc="the lease each replica applied")
    m.var("lh", Array(Int(0, N - 1), G), init=0, doc="the node whose proposal buffer is in use")
    m.var("revoked", Array(Bool(), G), init=False,
          doc="the leaseholder revoked its lease (transfer)")
    m.var("lh_low", Array(Int(0, exp_hi), G), init=0,
          doc="writes under the current lease are at or after it")
    duration, carries_start = p.lease_duration, ctx.mutated("LeaseRequestCarriesStart")
    no_floor = ctx.mutated("NoFloorOnLeaseAcquire")

    def settled(s: Any, g: int) -> Any:
        """No write of range g evaluating or buffered, and no split or merge in progress."""
        conds = [quiet(s, ctx, g)]
        if ctx.structure != "none" and g == 0:
            conds.append(Not(struct_pending(s, ctx)))
        return And(*conds)

    def new_lease(s: Any, g: int, holder: Any, kind: Any) -> Any:
        j = s.lcount[g] + 1
        s.lholder[g][j] = holder
        s.lstart[g][j] = s.now
        s.lexp[g][j] = Min(s.now + duration, exp_hi)
        s.lkind[g][j] = kind
        s.lcount[g] = j
        return j

    @m.action(g=changing, x=range(N))
    def request_lease(s, g, x):
        """Node x acquires range g's lease after the newest one expired (non-cooperative)."""
        require(s.lcount[g] < S)
        require(s.now > s.lexp[g][s.lcount[g]])
        require(settled(s, g))
        j = new_lease(s, g, x, LeaseKind.request)
        s.lcts[g][j] = s.now if carries_start else NIL

    @m.action(g=changing, x=range(N))
    def transfer_lease(s, g, x):
        """Range g's leaseholder revokes its lease and proposes a transfer to node x."""
        require(s.lcount[g] < S)
        holder = s.lh[g]
        require(And(x != holder, s.lholder[g][s.lcount[g]] == holder,
                    s.lseq[g][holder] == s.lcount[g], Not(s.revoked[g]),
                    s.now < s.lexp[g][s.lcount[g]]))
        require(settled(s, g))
        if ctx.structure == "merge" and g == 1:
            require(Not(s.subsumed))  # a frozen leaseholder evaluates nothing
        closed = Max(s.assigned_closed[g], Min(closed_target(s, ctx), ceiling(s, ctx, g)))
        s.revoked[g] = True
        j = new_lease(s, g, x, LeaseKind.transfer)
        s.assigned_lai[g] = s.assigned_lai[g] + 1
        s.llai[g][j] = s.assigned_lai[g]
        s.lcts[g][j] = closed
        s.assigned_closed[g] = closed

    @m.action(g=changing, j=range(2, S + 1))
    def append_lease(s, g, j):
        """Raft appends range g's lease command j (requests and transfers alike)."""
        require(j <= s.lcount[g])
        require(s.lappended[g][j] < (2 if p.duplicate else 1))
        require(s.loglen[g] < ctx.log_len)
        s.log[g][s.loglen[g]] = P + j - 2
        s.loglen[g] = s.loglen[g] + 1
        s.lappended[g][j] = s.lappended[g][j] + 1

    def apply_lease(s: Any, g: int, n: int, j: Any, active: Any, lai_check: bool) -> Any:
        """Replica (g, n) applies lease command j (when `active`); returns whether it was
        accepted: it builds on the replica's lease, and a transfer's LAI is new."""
        transfer = s.lkind[g][j] == LeaseKind.transfer
        ok = And(active, s.lseq[g][n] == j - 1,
                 Or(Not(transfer), s.llai[g][j] > s.lai[g][n], not lai_check))
        s.lseq[g][n] = If(ok, j, s.lseq[g][n])
        s.lai[g][n] = If(And(ok, transfer), s.llai[g][j], s.lai[g][n])
        carried = And(ok, s.lcts[g][j] != NIL)
        s.closed[g][n] = If(carried, s.lcts[g][j], s.closed[g][n])
        s.claim_hi[g] = If(carried, Max(s.claim_hi[g], s.lcts[g][j]), s.claim_hi[g])
        takes_over = And(ok, s.lholder[g][j] == n)
        s.lh[g] = If(takes_over, n, s.lh[g])
        s.revoked[g] = If(takes_over, False, s.revoked[g])
        s.assigned_closed[g] = If(takes_over, NIL if no_floor else s.closed[g][n],
                                  s.assigned_closed[g])
        s.assigned_lai[g] = If(takes_over, s.lai[g][n], s.assigned_lai[g])
        s.lh_low[g] = If(takes_over, s.lstart[g][j], s.lh_low[g])
        if ctx.restarts and n == 0:  # a new lease of n1's own is not proscribed
            s.proscribed[g] = If(takes_over, False, s.proscribed[g])
        return ok

    ctx.hooks["apply_lease"] = apply_lease

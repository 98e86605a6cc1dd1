"""Leases: the initial lease of n1, lease requests, extensions and transfers.

A lease is a Raft command (reference §6, §2.5). Each range has a list of lease
commands, numbered as they are proposed; each names the lease it builds on (`lprev`,
the proposer's applied lease: `PrevLeaseProposal`) and applies on a replica only if
that is the replica's lease. Two proposals built on one lease race in the log; the
second is rejected below Raft. A replica applies the leases it accepts in log order,
so a lagging replica applies an older lease and later a newer one, possibly long
after the new holder started serving.

- A *request* is non-cooperative: node x proposes it once the lease x has applied
  has expired; it starts after that expiration. It has no LAI and carries no closed
  ts (the RFC let its start act as one: LeaseRequestCarriesStart).
- An *extension* (`lease_extensions`) is a request by the holder for its own valid
  lease: same holder, same start, and an expiration that only moves forward. It goes
  through the holder's proposal buffer like any command, takes its place there, and
  flushing it gives it no LAI and no closed ts and moves neither the assigned closed
  ts nor the write floor (§2.5, A11).
- A *transfer* is proposed by the holder, which revokes its lease first; it goes
  through the holder's buffer behind the writes already there, gets an LAI and a
  closed ts at flush like any proposal, and starts at its evaluation time.

Leases change while writes are in flight: writes evaluated under the old lease may
still be evaluating, buffered, or in the log. Those in the log are rejected below
Raft by the lease-sequence check once the new lease applied (or re-proposed, if only
their LAI failed; `proposals.py`). When a different node takes the lease over, the
old holder's writes that never left its node fail (the client gets an error): proposed
later, they would land after the new lease in the log and be rejected anyway. The
new holder's write floor is its applied closed ts (OnLeaseChangeLocked), its LAIs
continue from its applied LAI, and its writes are strictly above the lease start (the
timestamp cache's low water).
"""

from __future__ import annotations

from typing import Any

from checker.lang import (
    And,
    Array,
    Bool,
    Enum,
    ForAll,
    If,
    Implies,
    Int,
    Max,
    Min,
    Not,
    Or,
    require,
)
from spec.log_driven.parts import NIL, Ctx, WPhase, exists, in_range, lease_base
from spec.log_driven.proposals import enqueue_command, lease_usable, struct_pending

LeaseKind = Enum("LeaseKind", "initial request transfer extension")


def add(m: Any, p: Any, ctx: Ctx, tracker: Any) -> None:
    C, N, G, P, W = ctx.lease_changes, ctx.nodes, ctx.ranges, ctx.props, ctx.writes
    S = C + 1  # lease commands 1..S; index 0 unused; 1 is the initial lease
    exp_hi = ctx.closed_hi + 2  # the default expiration lies beyond every closed ts
    changing = list(range(G))
    m.var("lcount", Array(Int(1, S), G), init=1, doc="lease commands proposed per range")
    m.var("lholder", Array(Array(Int(0, N - 1), S + 1), G), init=0, doc="each lease's holder")
    m.var("lstart", Array(Array(Int(0, exp_hi), S + 1), G), init=0, doc="each lease's start")
    first_exp = [ctx.lease_exp if g in changing else exp_hi for g in range(G)]
    m.var("lexp", Array(Array(Int(0, exp_hi), S + 1), G),
          init=[[0, first_exp[g]] + [0] * (S - 1) for g in range(G)],
          doc="each lease's expiration")
    m.var("lkind", Array(Array(LeaseKind, S + 1), G), init=LeaseKind.initial,
          doc="request, transfer or extension")
    m.var("lprev", Array(Array(Int(0, S), S + 1), G), init=0,
          doc="the lease each lease command builds on (PrevLeaseProposal)")
    m.var("lready", Array(Array(Bool(), S + 1), G), init=False,
          doc="the lease command has left its proposer's buffer (Raft may append it)")
    if ctx.lease_extensions:
        m.var("lbase", Array(Array(Int(1, S), S + 1), G), init=1,
              doc="the lease sequence: an extension keeps the one it extends")
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
          doc="the leaseholder's timestamp cache low water: its lease's start")
    duration, carries_start = p.lease_duration, ctx.mutated("LeaseRequestCarriesStart")
    no_floor = ctx.mutated("NoFloorOnLeaseAcquire")

    def new_lease(s: Any, g: int, holder: Any, kind: Any, prev: Any) -> Any:
        j = s.lcount[g] + 1
        s.lholder[g][j] = holder
        s.lstart[g][j] = s.now
        s.lexp[g][j] = Min(s.now + duration, exp_hi)
        s.lkind[g][j] = kind
        s.lprev[g][j] = prev
        if ctx.lease_extensions:
            s.lbase[g][j] = j
        s.lcount[g] = j
        return j

    def may_change(s: Any, g: int, by_holder: bool) -> Any:
        """A lease command may be proposed: the model's budget allows one more, no split
        or merge waits to apply on r1's leaseholder (a simplification: a split's latches
        block transfers, and a merge whose command is lost to a lease change would have
        to abort and unfreeze r2, which the model leaves out), and a holder frozen by a
        merge proposes nothing (a request by another node may still come)."""
        conds = [s.lcount[g] < S]
        if g == 0:
            conds += [Not(struct_pending(s, ctx, X)) for X in ctx.struct_ids]
        if ctx.merges and g == 1 and by_holder:
            conds.append(Not(s.subsumed))
        return And(*conds)

    @m.action(g=changing, x=range(N))
    def request_lease(s, g, x):
        """Node x requests range g's lease after the lease it applied expired
        (non-cooperative); it builds on that lease, which may be stale."""
        require(may_change(s, g, by_holder=False))
        require(exists(s, ctx, g, x))
        seen = s.lseq[g][x]
        require(s.now > s.lexp[g][seen])
        j = new_lease(s, g, x, LeaseKind.request, seen)
        s.lcts[g][j] = s.now if carries_start else NIL
        s.lready[g][j] = True  # x's own buffer holds nothing else of this range

    def usable_by_holder(s: Any, g: int) -> Any:
        return And(exists(s, ctx, g, s.lh[g]), lease_usable(s, ctx, g))

    @m.action(g=changing, x=range(N))
    def transfer_lease(s, g, x):
        """Range g's leaseholder revokes its lease and proposes a transfer to node x,
        through its proposal buffer, behind the writes already there."""
        require(may_change(s, g, by_holder=True))
        holder = s.lh[g]
        require(And(x != holder, usable_by_holder(s, g), exists(s, ctx, g, x)))
        s.revoked[g] = True
        j = new_lease(s, g, x, LeaseKind.transfer, s.lseq[g][holder])
        enqueue_command(s, ctx, g, P + j - 2)

    if ctx.lease_extensions:
        shortens = ctx.mutated("ExtensionMayShorten")

        @m.action(g=changing, d=range(1, duration + 1))
        def extend_lease(s, g, d):
            """Range g's leaseholder proposes an extension of its valid lease, through its
            buffer; `d` is how far past now the new expiration source reaches (for an
            epoch lease, the liveness record's expiration), and the expiration only
            moves forward."""
            require(may_change(s, g, by_holder=True))
            holder = s.lh[g]
            require(usable_by_holder(s, g))
            cur = s.lseq[g][holder]
            j = new_lease(s, g, holder, LeaseKind.extension, cur)
            s.lstart[g][j] = s.lstart[g][cur]
            s.lbase[g][j] = lease_base(s, ctx, g, cur)
            reach = Min(s.now + d, exp_hi)
            s.lexp[g][j] = reach if shortens else Max(s.lexp[g][cur], reach)
            enqueue_command(s, ctx, g, P + j - 2)

    def flush_lease(s: Any, g: int, j: int, target: Any, limit: Any) -> None:
        """Lease command j leaves the leaseholder's buffer (§2.5): a transfer gets the
        next LAI and a closed ts like any proposal; an extension gets neither and moves
        nothing (A11)."""
        transfer = s.lkind[g][j] == LeaseKind.transfer
        value = tracker.flush_closed(s, g, P, target, limit)
        carried = Max(s.assigned_closed[g], value)
        s.assigned_lai[g] = If(transfer, s.assigned_lai[g] + 1, s.assigned_lai[g])
        s.llai[g][j] = If(transfer, s.assigned_lai[g], 0)
        closes = transfer
        if ctx.mutated("TransferCarriesNoClosed"):
            closes = False
        elif ctx.mutated("ExtensionCarriesClosed"):
            closes = True
        untouched = s.lstart[g][j] if ctx.mutated("ExtensionResetsAssignedClosed") \
            else s.assigned_closed[g]
        s.lcts[g][j] = If(closes, carried, NIL)
        s.assigned_closed[g] = If(closes, carried, untouched)
        s.lready[g][j] = True

    ctx.hooks["flush_lease"] = flush_lease

    @m.action(g=changing, j=range(2, S + 1))
    def append_lease(s, g, j):
        """Raft appends range g's lease command j once its proposer flushed it."""
        require(And(j <= s.lcount[g], s.lready[g][j]))
        require(s.lappended[g][j] < (2 if p.duplicate else 1))
        require(s.loglen[g] < ctx.log_len)
        s.log[g][s.loglen[g]] = P + j - 2
        s.loglen[g] = s.loglen[g] + 1
        s.lappended[g][j] = s.lappended[g][j] + 1

    def apply_lease(s: Any, g: int, n: int, j: Any, active: Any, lai_check: bool) -> Any:
        """Replica (g, n) applies lease command j (when `active`); returns whether it was
        accepted: it builds on the replica's lease, and a transfer's LAI is new."""
        transfer = s.lkind[g][j] == LeaseKind.transfer
        ok = And(active, s.lseq[g][n] == s.lprev[g][j],
                 Or(Not(transfer), s.llai[g][j] > s.lai[g][n], not lai_check))
        s.lseq[g][n] = If(ok, j, s.lseq[g][n])
        s.lai[g][n] = If(And(ok, transfer), s.llai[g][j], s.lai[g][n])
        carried = And(ok, s.lcts[g][j] != NIL)
        s.closed[g][n] = If(carried, s.lcts[g][j], s.closed[g][n])
        s.claim_hi[g] = If(carried, Max(s.claim_hi[g], s.lcts[g][j]), s.claim_hi[g])
        # the holder takes over, unless it is a lagging replica applying a lease older
        # than the one the current leaseholder applied (accepted leases form a chain,
        # numbered in proposal order)
        mine = And(ok, s.lholder[g][j] == n, Or(s.lh[g] == n, j > s.lseq[g][s.lh[g]]))
        moved = And(mine, s.lh[g] != n)  # another node's buffer takes over
        fail_stranded(s, g, moved)
        s.lh[g] = If(mine, n, s.lh[g])
        s.revoked[g] = If(mine, False, s.revoked[g])
        # OnLeaseChangeLocked: a new owner's assigned closed ts and LAI are forwarded to
        # what its replica applied (a node that lost the lease had them zeroed)
        applied_closed = NIL if no_floor else s.closed[g][n]
        s.assigned_closed[g] = If(moved, applied_closed,
                                  If(mine, Max(s.assigned_closed[g], applied_closed),
                                     s.assigned_closed[g]))
        s.assigned_lai[g] = If(moved, s.lai[g][n],
                               If(mine, Max(s.assigned_lai[g], s.lai[g][n]),
                                  s.assigned_lai[g]))
        s.lh_low[g] = If(mine, s.lstart[g][j], s.lh_low[g])
        if ctx.merges and g == 0:
            # a transfer hands the read summary over, so the new holder's timestamp cache
            # keeps the merge's bump over r2's keys; a request starts from its lease start
            summary = s.lkind[g][j] == LeaseKind.transfer
            if ctx.mutated("TransferWithoutReadSummary"):
                summary = False
            s.rhs_tsc = If(And(moved, Not(summary)), NIL, s.rhs_tsc)
        if ctx.restarts and n == 0:  # a new lease of n1's own is not proscribed
            s.proscribed[g] = If(mine, False, s.proscribed[g])
        return ok

    def fail_stranded(s: Any, g: int, moved: Any) -> None:
        """The old holder's writes that never left its node fail when another node's
        buffer takes over: its tracker and buffer are no longer the range's."""
        for w in range(P):  # the writes, and a split or merge command of r1
            stranded = And(moved, in_range(s, ctx, w, g), Or(
                s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered,
                s.wphase[w] == WPhase.released))
            s.wphase[w] = If(stranded, WPhase.failed, s.wphase[w])
        tracker.reset(s, g, moved)
        for i in range(ctx.buffer_len):
            s.buf[g][i] = If(moved, NIL, s.buf[g][i])
        s.buflen[g] = If(moved, 0, s.buflen[g])

    ctx.hooks["apply_lease"] = apply_lease

    def WritesAboveLeaseStart(s):  # noqa: N802 - property names are CamelCase
        """Every write evaluated under a lease is strictly above that lease's start (the
        timestamp cache's low water after a lease change; A9)."""
        return ForAll([(g, w) for g in changing for w in range(W)], lambda gw: Implies(
            And(s.wphase[gw[1]] != WPhase.idle, in_range(s, ctx, gw[1], gw[0])),
            s.wts[gw[1]] > s.lstart[gw[0]][s.wseq[gw[1]]]))

    def LeaseExpirationNeverRegresses(s):  # noqa: N802
        """An extension never moves its lease's expiration back (A9; bug #121480)."""
        return ForAll([(g, j) for g in changing for j in range(2, S + 1)], lambda gj: Implies(
            And(gj[1] <= s.lcount[gj[0]], s.lkind[gj[0]][gj[1]] == LeaseKind.extension),
            s.lexp[gj[0]][gj[1]] >= s.lexp[gj[0]][s.lprev[gj[0]][gj[1]]]))

    def ClaimsBelowLeaseExpiration(before, after):  # noqa: N802
        """A closed ts a flush newly claims is below the expiration of the lease its
        leaseholder has applied (A17, §6 ClosedTimestampUpperBound): it either repeats
        the assigned closed ts or lies under that lease."""
        def below(g: int, w: int) -> Any:
            limit = before.lexp[g][before.lseq[g][before.lh[g]]]
            return Implies(
                And(before.wphase[w] != WPhase.flushed, after.wphase[w] == WPhase.flushed,
                    in_range(before, ctx, w, g)),
                Or(after.wcts[w] < limit, after.wcts[w] <= before.assigned_closed[g]))
        return ForAll([(g, w) for g in changing for w in range(P)], lambda gw: below(*gw))

    m.invariant(WritesAboveLeaseStart)
    if ctx.lease_extensions:
        m.invariant(LeaseExpirationNeverRegresses)
    m.step_invariant(ClaimsBelowLeaseExpiration)

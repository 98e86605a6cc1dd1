"""Leases: the initial lease of n1, lease requests, extensions and transfers.

A lease is a Raft command (reference §6, §2.5). Each range has a list of lease
commands, numbered as they are proposed; each names the lease it builds on (`lprev`,
the proposer's applied lease: `PrevLeaseProposal`) and applies on a replica only if
that is still the replica's lease (`CheckForcedErr`). Two proposals built on one
lease race in the log; the second is rejected below Raft. A replica applies the
leases it accepts in log order, so a lagging replica applies an older lease and later
a newer one, possibly long after the new holder started serving.

Every lease command goes through its proposer's own proposal buffer (§2.1) and
reaches Raft only when flushed, so it may wait there while its proposer gains or
loses the lease by other means:

- A *request* is non-cooperative: node x proposes it once the lease its replica
  applied has expired at x's clock, or to replace its own proscribed lease. An
  expired expiration-based lease's successor starts at its expiration (the start is
  backdated to it, `leases/build.go`). Flushed, it gets no LAI, carries no closed ts
  and moves nothing in x's buffer (§2.5; LeaseRequestSetsAssignedClosed is #63672,
  LeaseRequestCarriesStart the RFC's design).
- An *extension* (`lease_extensions`) is a request by the holder for its own usable
  lease: same holder, start and sequence, and an expiration that only moves forward.
  Flushed, it too gets no LAI and no closed ts.
- A *transfer* is proposed by the holder, which revokes (proscribes) its own lease
  first (`RevokeLease`); it goes through the holder's buffer behind the writes already
  there, gets an LAI and a closed ts at flush like any proposal (capped by the
  outgoing lease), starts at the holder's clock and hands over a read summary: the
  outgoing replica's timestamp cache over its span and its closed ts.

With `lease_type = "epoch"`, new leases (requests, renewals) are epoch-based: valid
while their holder's liveness record is, in the lease's epoch; their expiration is the
record's (or a minimum one the lease carries: `MinExpiration`). A node heartbeats its
record forward; another node may increment a holder's epoch once the record expired at
its clock (`IncrementEpoch`), and only then request the lease, starting at its clock. A
transfer hands over an expiration-based lease, which its new holder promotes to an
epoch-based one with an extension of the same sequence that keeps the old expiration
as its minimum (PromotionRegressesExpiration drops it: #121480, fixed by #123442).

When a replica applies a lease (`leasePostApplyLocked`): if the lease changes hands
(another holder or sequence) and names this node, its store's timestamp cache over
the replica's span at that moment is raised to the read summary (a request's: its
start); then its proposal buffer is told (`OnLeaseChangeLocked`): a replica the
lease names forwards its assigned closed ts and LAI to what it applied; any other has
them zeroed. Writes its buffer still holds are flushed later and rejected below Raft
(their lease sequence is stale).
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
from spec.log_driven.follower_reads import effective_closed
from spec.log_driven.parts import (
    NIL,
    Ctx,
    WPhase,
    covers,
    exists,
    in_range,
    lease_base,
    owns_applied_lease,
    proposer,
)
from spec.log_driven.policy import clock, closed_target
from spec.log_driven.proposals import (
    enqueue_command,
    lease_usable,
    node_domain,
    processed,
    segment_keys,
    struct_pending,
)

LeaseKind = Enum("LeaseKind", "initial request transfer extension")


def add(m: Any, p: Any, ctx: Ctx, tracker: Any) -> None:
    C, N, G, P, W = ctx.lease_changes, ctx.nodes, ctx.ranges, ctx.props, ctx.writes
    S = C + 1  # lease commands 1..S; index 0 unused; 1 is the initial lease
    exp_hi = ctx.exp_hi
    changing = list(range(G))
    m.var("lcount", Array(Int(1, S), G), init=1, doc="lease commands proposed per range")
    m.var("lholder", Array(Array(Int(0, N - 1), S + 1), G), init=0, doc="each lease's holder")
    m.var("lstart", Array(Array(Int(0, exp_hi), S + 1), G), init=0, doc="each lease's start")
    first_exp = [ctx.lease_exp if g in changing else exp_hi for g in range(G)]
    m.var("lexp", Array(Array(Int(0, exp_hi), S + 1), G),
          init=[[0, 0 if ctx.epochs else first_exp[g]] + [0] * (S - 1) for g in range(G)],
          doc="each lease's expiration (an epoch-based one's minimum expiration)")
    m.var("lkind", Array(Array(LeaseKind, S + 1), G), init=LeaseKind.initial,
          doc="request, transfer or extension")
    m.var("lprev", Array(Array(Int(0, S), S + 1), G), init=0,
          doc="the lease each lease command builds on (PrevLeaseProposal)")
    m.var("lready", Array(Array(Bool(), S + 1), G), init=False,
          doc="the lease command has left its proposer's buffer (Raft may append it)")
    m.var("lbase", Array(Array(Int(1, S), S + 1), G), init=1,
          doc="the lease sequence: an extension keeps the one it extends")
    m.var("lcts", Array(Array(Int(NIL, ctx.closed_hi), S + 1), G), init=NIL,
          doc="closed ts the lease command carries (-1: none)")
    m.var("llai", Array(Array(Int(0, ctx.max_lai), S + 1), G), init=0,
          doc="a transfer's LAI (0: none)")
    m.var("lsum", Array(Array(Int(NIL, exp_hi), S + 1), G), init=NIL,
          doc="a transfer's read summary: the outgoing replica's timestamp cache over "
              "its span and its closed ts (-1: none)")
    m.var("lappended", Array(Array(Int(0, 2), S + 1), G), init=0,
          doc="times appended to the log")
    m.var("lseq", Array(Array(Int(1, S), N), G), init=1, doc="the lease each replica applied")
    E = C + 1  # liveness epochs: one more per takeover
    if ctx.epochs:
        m.var("live_epoch", Array(Int(1, E), N), init=1, doc="each node's liveness epoch")
        m.var("live_exp", Array(Int(0, exp_hi), N), init=ctx.lease_exp,
              doc="each node's liveness record's expiration")
        m.var("lepoch", Array(Array(Int(0, E), S + 1), G),
              init=[[0, 1] + [0] * (S - 1) for _ in range(G)],
              doc="an epoch-based lease's epoch (0: expiration-based)")
    m.var("proscribed", Array(Array(Bool(), N), G), init=False,
          doc="the replica's own lease is proscribed: revoked for a transfer, or older "
              "than its node's restart")
    duration, carries_start = p.lease_duration, ctx.mutated("LeaseRequestCarriesStart")
    no_floor = ctx.mutated("NoFloorOnLeaseAcquire")
    no_summary = ctx.mutated("TransferWithoutReadSummary")
    sets_assigned = ctx.mutated("LeaseRequestSetsAssignedClosed")
    nodes = node_domain(ctx)

    def expiration(s: Any, g: int, j: Any) -> Any:
        """When range g's lease j expires: its own expiration, or for an epoch-based
        lease its minimum expiration, forwarded to its holder's liveness record's while
        the epochs match (`LeaseStatus.Expiration`)."""
        if not ctx.epochs:
            return s.lexp[g][j]
        h = s.lholder[g][j]
        live = And(s.lepoch[g][j] > 0, s.live_epoch[h] == s.lepoch[g][j])
        return If(live, Max(s.lexp[g][j], s.live_exp[h]), s.lexp[g][j])

    ctx.hooks["lease_expiration"] = expiration
    ctx.hooks["evaluated_expiration"] = (lambda s, g, w: s.wexp[w]) if ctx.epochs \
        else (lambda s, g, w: s.lexp[g][s.wseq[w]])

    def new_lease(s: Any, g: int, holder: Any, kind: Any, prev: Any, start: Any,
                  now: Any) -> Any:
        j = s.lcount[g] + 1
        s.lholder[g][j] = holder
        s.lstart[g][j] = start
        s.lexp[g][j] = Min(now + duration, exp_hi)
        s.lkind[g][j] = kind
        s.lprev[g][j] = prev
        s.lbase[g][j] = j
        s.lcount[g] = j
        return j

    def lease_proposer(s: Any, g: int, j: Any) -> Any:
        """The node that proposed lease command j: the outgoing holder for a transfer,
        the new holder otherwise."""
        return If(s.lkind[g][j] == LeaseKind.transfer, s.lholder[g][s.lprev[g][j]],
                  s.lholder[g][j])

    def pending(s: Any, g: int, x: Any) -> Any:
        """Node x has a lease command of range g of its own that its replica has not
        applied yet (buffered or in flight): its `pendingLeaseRequest`."""
        forgotten = [s.lorphan[g][j] for j in range(2, S + 1)] if ctx.restarts \
            else [False] * (S - 1)
        return Or(*[And(j <= s.lcount[g], lease_proposer(s, g, j) == x, Not(gone),
                        Not(processed(s, ctx, g, x, P + j - 2)))
                    for j, gone in zip(range(2, S + 1), forgotten, strict=True)])

    def may_change(s: Any, g: int, x: Any, by_holder: bool) -> Any:
        """A lease command may be proposed by x: the model's budget allows one more, x has
        none of its own pending (a replica runs one lease operation at a time; a new
        request joins the pending one: `InitOrJoinRequest`), no split or merge waits to
        apply on x (a simplification: a split's latches block transfers, and a merge
        whose command is lost to a lease change would have to abort and unfreeze r2,
        which the model leaves out), and a holder frozen by a merge proposes nothing (a
        request by another node may still come)."""
        conds = [s.lcount[g] < S, Not(pending(s, g, x))]
        if g == 0:
            conds += [Not(struct_pending(s, ctx, X, x)) for X in ctx.struct_ids]
        if ctx.merges and g == 1 and by_holder:
            conds.append(Not(s.frozen[x]))
        return And(*conds)

    @m.action(g=changing, x=range(N))
    def request_lease(s, g, x):
        """Node x requests range g's lease, once the lease its replica applied has
        expired at its clock (non-cooperative; it builds on that lease, which may be
        stale), or to replace its own proscribed lease; the request waits in x's
        proposal buffer. A request for x's own expired lease is an extension by store
        (`leases/build.go`): same start and sequence; one replacing x's proscribed
        lease starts at x's clock (at or above `minLeaseProposedTS`) under a new one."""
        require(may_change(s, g, x, by_holder=False))
        require(exists(s, ctx, g, x))
        seen = s.lseq[g][x]
        now = clock(s, ctx, x)
        own = s.lholder[g][seen] == x
        epoch_based = s.lepoch[g][seen] > 0 if ctx.epochs else False
        # an epoch-based lease is taken over once its holder's epoch was incremented (and
        # its minimum expiration passed); its holder renews it by heartbeating instead
        incremented = And(Not(own), s.live_epoch[s.lholder[g][seen]]
                          != s.lepoch[g][seen]) if ctx.epochs else False
        expired = And(expiration(s, g, seen) <= now, If(epoch_based, incremented, True))
        proscribed = And(own, s.proscribed[g][x])
        require(Or(expired, proscribed))
        renewal = And(own, Not(proscribed))
        # an expired expiration-based lease's successor is backdated to its expiration
        backdated = And(expired, Not(own), Not(epoch_based))
        start = If(renewal, s.lstart[g][seen],
                   If(backdated, Min(expiration(s, g, seen), now), now))
        j = new_lease(s, g, x, LeaseKind.request, seen, start, now)
        s.lbase[g][j] = If(renewal, lease_base(s, ctx, g, seen), j)
        if ctx.epochs:  # new leases are epoch-based, in the requester's epoch
            s.lepoch[g][j] = s.live_epoch[x]
            s.lexp[g][j] = 0
        s.lcts[g][j] = start if carries_start else NIL
        enqueue_command(s, ctx, g, x, P + j - 2)

    def summary(s: Any, g: int, y: Any) -> Any:
        """The read summary node y's replica of range g hands over in a transfer: its
        store's timestamp cache over the replica's span and its closed ts (Raft or side
        transport; §5.2, `GetCurrentReadSummary`)."""
        out = effective_closed(s, ctx, g, y)
        for k in segment_keys(ctx):
            on_g = covers(s, ctx, g, k, y) if G > 1 else True
            out = If(on_g, Max(out, s.tsc[y][ctx.segment(k)]), out)
        return out

    @m.action(g=changing, y=range(N), x=range(N))
    def transfer_lease(s, g, y, x):
        """Node y, holding range g's lease, revokes it and proposes a transfer to node
        x, through its own proposal buffer, behind the writes already there."""
        require(may_change(s, g, y, by_holder=True))
        require(And(x != y, lease_usable(s, ctx, g, y), exists(s, ctx, g, y),
                    exists(s, ctx, g, x)))
        s.proscribed[g][y] = True
        now = clock(s, ctx, y)
        j = new_lease(s, g, x, LeaseKind.transfer, s.lseq[g][y], now, now)
        s.lsum[g][j] = now if no_summary else Max(now, summary(s, g, y))
        enqueue_command(s, ctx, g, y, P + j - 2)

    if ctx.lease_extensions:
        shortens = ctx.mutated("ExtensionMayShorten")

        @m.action(g=changing, **nodes, d=range(1, duration + 1))
        def extend_lease(s, g, d, x=0):
            """Node x, holding range g's lease, proposes an extension of it through its
            buffer; `d` is how far past its clock the new expiration source reaches (for
            an epoch lease, the liveness record's expiration), and the expiration only
            moves forward."""
            require(may_change(s, g, x, by_holder=True))
            require(And(lease_usable(s, ctx, g, x), exists(s, ctx, g, x)))
            if ctx.epochs:  # an epoch-based lease is extended by heartbeats
                require(s.lepoch[g][s.lseq[g][x]] == 0)
            cur = s.lseq[g][x]
            now = clock(s, ctx, x)
            j = new_lease(s, g, x, LeaseKind.extension, cur, s.lstart[g][cur], now)
            s.lbase[g][j] = lease_base(s, ctx, g, cur)
            reach = Min(now + d, exp_hi)
            s.lexp[g][j] = reach if shortens else Max(s.lexp[g][cur], reach)
            enqueue_command(s, ctx, g, x, P + j - 2)

    if ctx.epochs:
        add_liveness(m, p, ctx, new_lease, may_change, E)

    def flush_lease(s: Any, g: int, x: Any, j: int) -> None:
        """Lease command j leaves node x's buffer (§2.5): a transfer gets the next LAI
        and a closed ts like any proposal, capped by the outgoing lease; a request or
        extension gets neither and moves nothing (A11)."""
        transfer = s.lkind[g][j] == LeaseKind.transfer
        limit = s.lexp[g][s.lprev[g][j]] - 1 if not ctx.mutated("NoLeaseExpirationBound") \
            else ctx.closed_hi
        value = tracker.flush_closed(s, g, x, P, closed_target(s, ctx, x), limit)
        carried = Max(s.assigned_closed[g][x], value)
        s.assigned_lai[g][x] = If(transfer, s.assigned_lai[g][x] + 1, s.assigned_lai[g][x])
        s.llai[g][j] = If(transfer, s.assigned_lai[g][x], 0)
        closes = transfer
        if ctx.mutated("TransferCarriesNoClosed"):
            closes = False
        elif ctx.mutated("ExtensionCarriesClosed"):
            closes = True
        untouched = If(transfer, s.assigned_closed[g][x], s.lstart[g][j]) if sets_assigned \
            else s.assigned_closed[g][x]
        s.lcts[g][j] = If(closes, carried, s.lcts[g][j])
        s.assigned_closed[g][x] = If(closes, carried, untouched)
        s.lready[g][j] = True

    ctx.hooks["flush_lease"] = flush_lease

    def lease_in_flight(s: Any, g: int, x: Any, j: int) -> Any:
        """Lease command j was flushed by node x, and x's replica has not applied its
        entry yet (a lease request too sits in `r.mu.proposals`)."""
        forgotten = s.lorphan[g][j] if ctx.restarts else False
        return And(j <= s.lcount[g], s.lready[g][j], lease_proposer(s, g, j) == x,
                   Not(processed(s, ctx, g, x, P + j - 2)), Not(forgotten))

    ctx.hooks["lease_in_flight"] = lease_in_flight

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
        prev = s.lseq[g][n]
        owned = s.lholder[g][j] == n
        hands = Or(s.lholder[g][prev] != s.lholder[g][j],
                   lease_base(s, ctx, g, prev) != lease_base(s, ctx, g, j))
        s.lseq[g][n] = If(ok, j, s.lseq[g][n])
        s.lai[g][n] = If(And(ok, transfer), s.llai[g][j], s.lai[g][n])
        carried = And(ok, s.lcts[g][j] != NIL)
        s.closed[g][n] = If(carried, s.lcts[g][j], s.closed[g][n])
        s.claim_hi[g] = If(carried, Max(s.claim_hi[g], s.lcts[g][j]), s.claim_hi[g])
        # leasePostApplyLocked: a lease changing hands to n raises n's timestamp cache
        # over its replica's span to the read summary (a request's: its start)
        taken = And(ok, owned, hands)
        if not ctx.mutated("NoTimestampCacheOnLeaseChange"):
            low = If(transfer, s.lsum[g][j], s.lstart[g][j])
            for k in segment_keys(ctx):
                seg = ctx.segment(k)
                on_g = covers(s, ctx, g, k, n) if G > 1 else True
                s.tsc[n][seg] = If(And(taken, on_g), Max(s.tsc[n][seg], low), s.tsc[n][seg])
        if "observe_clock" in ctx.hooks:  # Clock.Update(newLease.Start)
            ctx.hooks["observe_clock"](s, n, s.lstart[g][j], taken)
        for hook in ctx.hooks["lease_taken"]:
            hook(s, g, n, taken)
        # OnLeaseChangeLocked: the holder forwards its assigned closed ts and LAI to what
        # its replica applied; any other replica has them zeroed
        forwarded = s.assigned_closed[g][n] if no_floor \
            else Max(s.assigned_closed[g][n], s.closed[g][n])
        s.assigned_closed[g][n] = If(ok, If(owned, forwarded, NIL), s.assigned_closed[g][n])
        s.assigned_lai[g][n] = If(ok, If(owned, Max(s.assigned_lai[g][n], s.lai[g][n]), 0),
                                  s.assigned_lai[g][n])
        # a lease that changes hands to n is not proscribed; n's old one is gone
        s.proscribed[g][n] = If(ok, And(owned, Not(hands), s.proscribed[g][n]),
                                s.proscribed[g][n])
        return ok

    ctx.hooks["apply_lease"] = apply_lease

    def WritesAboveLeaseStart(s):  # noqa: N802 - property names are CamelCase
        """Every write evaluated under a lease is strictly above that lease's start (the
        timestamp cache's low water after a lease change; A9), except a write to a key a
        merge brought into r1 later: the lease raised the cache over r1's span as it was
        when it applied (§5.2; #60929, #62570), and the merge's own bump guards those
        keys (FloorAboveClaims)."""
        def checked(g: int, w: int) -> Any:
            conds = [s.wphase[w] != WPhase.idle, in_range(s, ctx, w, g)]
            if ctx.merges and g == 0:
                conds += [s.wkey[w] != k for k in ctx.rhs_keys]
            return And(*conds)
        return ForAll([(g, w) for g in changing for w in range(W)], lambda gw: Implies(
            checked(*gw), s.wts[gw[1]] > s.lstart[gw[0]][s.wseq[gw[1]]]))

    def LeaseExpirationNeverRegresses(s):  # noqa: N802
        """An extension, or a promotion to an epoch-based lease, never moves its lease's
        expiration back (A9; bug #121480)."""
        def kept(g: int, j: int) -> Any:
            prev = s.lprev[g][j]
            conds = [j <= s.lcount[g], s.lkind[g][j] == LeaseKind.extension]
            if ctx.epochs:  # compared with the expiration-based lease it extends
                conds.append(s.lepoch[g][prev] == 0)
            return Implies(And(*conds), expiration(s, g, j) >= s.lexp[g][prev])
        return ForAll([(g, j) for g in changing for j in range(2, S + 1)],
                      lambda gj: kept(*gj))

    def ClaimsBelowLeaseExpiration(before, after):  # noqa: N802
        """A closed ts a flush newly claims under its proposer's current lease is below
        the expiration of the lease that replica has applied (A17, §6
        ClosedTimestampUpperBound): it either repeats the assigned closed ts or lies
        under that lease."""
        def below(g: int, w: int) -> Any:
            x = proposer(before, ctx, w)
            limit = expiration(before, g, before.lseq[g][x])
            if ctx.epochs:  # the status the proposal kept: an ended epoch's expiration
                limit = Max(limit, before.wexp[w])
            mine = And(owns_applied_lease(before, ctx, g, x),
                       lease_base(before, ctx, g, before.wseq[w])
                       == lease_base(before, ctx, g, before.lseq[g][x]))
            return Implies(
                And(before.wphase[w] != WPhase.flushed, after.wphase[w] == WPhase.flushed,
                    in_range(before, ctx, w, g), mine),
                Or(after.wcts[w] < limit, after.wcts[w] <= before.assigned_closed[g][x]))
        return ForAll([(g, w) for g in changing for w in range(P)], lambda gw: below(*gw))

    m.invariant(WritesAboveLeaseStart)
    if ctx.lease_extensions or ctx.epochs:
        m.invariant(LeaseExpirationNeverRegresses)
    m.step_invariant(ClaimsBelowLeaseExpiration)


def add_liveness(m: Any, p: Any, ctx: Ctx, new_lease: Any, may_change: Any, E: int) -> None:
    """Liveness records for epoch-based leases: heartbeats, epoch increments, and the
    promotion of an expiration-based lease its holder received by a transfer."""
    N, P, exp_hi, duration = ctx.nodes, ctx.props, ctx.exp_hi, p.lease_duration
    regresses = ctx.mutated("PromotionRegressesExpiration")

    @m.action(x=range(N))
    def heartbeat(s, x):
        """Node x heartbeats its liveness record: it expires `lease_duration` past x's
        clock, never earlier than it did."""
        reach = Min(clock(s, ctx, x) + duration, exp_hi)
        require(reach > s.live_exp[x])
        s.live_exp[x] = reach

    @m.action(x=range(N), h=range(N))
    def increment_epoch(s, x, h):
        """Node x increments node h's epoch, h's liveness record having expired at x's
        clock (`IncrementEpoch`): h's epoch-based leases end."""
        require(And(x != h, s.live_exp[h] <= clock(s, ctx, x), s.live_epoch[h] < E))
        s.live_epoch[h] = s.live_epoch[h] + 1

    @m.action(g=range(ctx.ranges), x=range(N))
    def promote_lease(s, g, x):
        """Node x, holding an expiration-based lease of range g (a transfer's), promotes
        it to an epoch-based one in its epoch: an extension of the same sequence and
        start, through its buffer, keeping the old expiration as its minimum."""
        require(may_change(s, g, x, by_holder=True))
        cur = s.lseq[g][x]
        require(And(s.lepoch[g][cur] == 0, lease_usable(s, ctx, g, x), exists(s, ctx, g, x)))
        now = clock(s, ctx, x)
        j = new_lease(s, g, x, LeaseKind.extension, cur, s.lstart[g][cur], now)
        s.lbase[g][j] = lease_base(s, ctx, g, cur)
        s.lepoch[g][j] = s.live_epoch[x]
        s.lexp[g][j] = 0 if regresses else s.lexp[g][cur]
        enqueue_command(s, ctx, g, x, P + j - 2)

"""Request evaluation and the proposal buffer of every replica.

A write evaluates on a node whose own replica applied a lease naming it that is
still usable (reference §6, D1 in the notes of issue 28), at a timestamp forwarded
above that replica's assigned closed ts and its store's timestamp cache (its write
floor); it is tracked while evaluating, then waits in that replica's proposal
buffer. Flushing takes the buffer's head: it leaves the tracker, is given the
replica's next lease applied index (LAI) and a closed ts, and the replica's assigned
closed ts moves up to it (RFC "Closing of timestamps"; reference §2.4-2.5). Each
replica has its own buffer, tracker, assigned LAI and assigned closed ts (§2.1): a
node that loses the lease keeps them, and the writes left in its buffer are flushed
with its zeroed counters and rejected below Raft by the lease-sequence check (§2.7
OnLeaseChangeLocked, §3.1 CheckForcedErr). A proposal's closed ts is capped by the
expiration of the lease it was evaluated under (`p.leaseStatus`, §2.5).

A write its proposer's replica rejects for its LAI is proposed again with a new one
(`reproposals`; reference §2.9 `tryReproposeWithNewLeaseIndex`): it is tracked again
at its write ts and re-enters the buffer, so its next flush gives it a fresh LAI and
closed ts; it gives up (the client gets an error) when its ts is at or below the
tracker's new minimum, the assigned closed ts + 1, since it cannot be re-evaluated
higher. With `lai_errors`, a flush may override a write's LAI with a stale one, as
CockroachDB's tests do to drive that path from any state (the `LeaseIndexFilter`
testing knob: the counter still advances; the command is then rejected for its LAI
everywhere).
"""

from __future__ import annotations

from typing import Any

from checker.lang import (
    And,
    Array,
    Bool,
    Exists,
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
from spec.log_driven.parts import (
    NIL,
    Ctx,
    WPhase,
    covers,
    exists,
    in_range,
    lease_base,
    merge_applied,
    owns_applied_lease,
    proposed_by,
    proposer,
    split_applied,
    tracked_in,
    write_floor,
)
from spec.log_driven.policy import clock, closed_target, proposal_ceiling, stasis
from spec.log_driven.tracker import Tracker


def node_domain(ctx: Ctx) -> dict[str, range]:
    """The `x` parameter of actions a replica takes (every node's when leases change;
    none, meaning n1, otherwise)."""
    return {"x": range(ctx.proposers)} if ctx.proposers > 1 else {}


def add(m: Any, p: Any, ctx: Ctx, tracker: Tracker) -> None:
    W, P, G, X = ctx.writes, ctx.props, ctx.ranges, ctx.proposers
    m.var("wphase", Array(WPhase, P), init=WPhase.idle,
          doc="each proposal's lifecycle (writes, then the split or merge command)")
    if G > 1:
        m.var("wrng", Array(Int(0, G - 1), W), init=0, doc="the range each write evaluated on")
    if X > 1:
        m.var("wnode", Array(Int(0, ctx.nodes - 1), P), init=0,
              doc="the node whose replica evaluated each proposal (its proposer)")
    m.var("wkey", Array(ctx.key_type, W), init=ctx.key_type.values[0],
          doc="the key each write writes")
    m.var("wts", Array(Int(0, ctx.ts_hi), W), init=0, doc="each write's timestamp")
    m.var("wlai", Array(Int(0, ctx.max_lai), P), init=0,
          doc="LAI assigned at flush (0: none yet, or an injected stale one)")
    if ctx.lease_changes:
        m.var("wseq", Array(Int(1, ctx.lease_changes + 1), P), init=1,
              doc="the lease (command number) its proposer had applied at evaluation")
    if ctx.epochs:
        m.var("wexp", Array(Int(0, ctx.exp_hi), P), init=0,
              doc="that lease's expiration at evaluation (an epoch-based lease's moves)")
    m.var("wcts", Array(Int(NIL, ctx.closed_hi), P), init=NIL,
          doc="closed ts the proposal carries (-1: none yet)")
    if ctx.mutated("ClosedFromEvalTime") or ctx.mutated("SplitClosedAtEval"):
        m.var("wevc", Array(Int(NIL, ctx.closed_hi), P), init=NIL,
              doc="closed ts captured at evaluation (ClosedFromEvalTime, SplitClosedAtEval)")
    m.var("assigned_lai", Array(Array(Int(0, ctx.max_lai), X), G), init=0,
          doc="each replica's proposal buffer: its last assigned LAI")
    m.var("assigned_closed", Array(Array(Int(NIL, ctx.closed_hi), X), G), init=NIL,
          doc="each replica's proposal buffer: its assigned closed ts, the write floor")
    B = ctx.buffer_len
    m.var("buf", Array(Array(Array(Int(NIL, B - 1), B), X), G), init=NIL,
          doc="each replica's proposal buffer, flush order: a proposal, or P + j - 2 for "
              "lease command j (-1 past buflen)")
    m.var("buflen", Array(Array(Int(0, B), X), G), init=0,
          doc="how many commands each replica has buffered")
    if ctx.timestamp_cache:
        m.var("tsc", Array(Array(Int(0, ctx.exp_hi), ctx.segments), ctx.nodes), init=0,
              doc="each store's timestamp cache: its low water over each key segment")
    tracker.declare(m)
    floor_on_track = not ctx.mutated("NoFloorOnTrack")
    if ctx.reproposals:
        add_reproposals(m, ctx, tracker)
    if p.lai_errors:
        m.var("lai_errors_left", Int(0, p.lai_errors), init=p.lai_errors,
              doc="stale LAIs the model may still inject at flush (a bound of the model)")
    keeps_closed = ctx.mutated("ReproposeKeepsClosed")
    # the stale LAI an injection gives: below every real LAI (CockroachDB's knob returns
    # 1, "always going to fail"; #121965 reserved it); InjectedLAIMayBeReal: 1 itself
    stale_lai = 1 if ctx.mutated("InjectedLAIMayBeReal") else 0
    nodes = node_domain(ctx)

    @m.action(g=range(G), **nodes, w=range(W), k=ctx.key_type, c=range(1, ctx.max_ts + 1))
    def evaluate(s, g, w, k, c, x=0):
        """A write to key k with client ts c starts evaluating on node x's replica of
        range g, under the lease that replica applied."""
        require(s.wphase[w] == WPhase.idle)
        require(may_evaluate(s, ctx, g, x))
        require(covers(s, ctx, g, k, x))
        stamp_lease(s, ctx, g, x, w)
        ts = Max(c, write_floor(s, ctx, g, x, k)) if floor_on_track else c
        if ctx.lease_changes:  # the lease must be usable at the request's ts (stasis)
            require(ts < stasis(s, ctx, g, x))
        tracker.track(s, g, x, w, ts)
        if G > 1:
            s.wrng[w] = g
        if X > 1:
            s.wnode[w] = x
        s.wkey[w] = k
        s.wphase[w] = WPhase.evaluating
        if ctx.mutated("ClosedFromEvalTime"):
            s.wevc[w] = s.assigned_closed[g][x]

    @m.action(g=range(G), w=range(W))
    def finish(s, g, w):
        """Evaluation is done; the proposal joins its replica's buffer (still tracked)."""
        require(s.wphase[w] == WPhase.evaluating)
        require(in_range(s, ctx, w, g))
        enqueue(s, ctx, g, proposer(s, ctx, w), w)

    def flush_proposal(s: Any, g: int, x: int, w: int, inject: bool) -> None:
        """Proposal w leaves node x's buffer: untrack, then LAI and closed ts."""
        if keeps_closed and w < W:
            old_cts, old_closed = s.wcts[w], s.assigned_closed[g][x]
        value = tracker.flush_closed(s, g, x, w, closed_target(s, ctx, x),
                                     proposal_ceiling(s, ctx, g, w))
        # the implementation never lets the carried closed ts regress (§2.5); the RFC
        # attaches its rules' value as is, and ClosedMonotone checks that it is enough
        carried = value if tracker.kind == "rfc" else Max(s.assigned_closed[g][x], value)
        s.assigned_lai[g][x] = s.assigned_lai[g][x] + 1
        s.wlai[w] = stale_lai if inject else s.assigned_lai[g][x]
        from_eval = ctx.mutated("ClosedFromEvalTime") and w < W
        s.wcts[w] = s.wevc[w] if from_eval else carried
        s.assigned_closed[g][x] = Max(s.assigned_closed[g][x], carried)
        if keeps_closed and w < W:  # only the LAI of the encoded command is patched
            s.wcts[w] = If(s.wrep[w], old_cts, s.wcts[w])
            s.assigned_closed[g][x] = If(s.wrep[w], old_closed, s.assigned_closed[g][x])
        s.wphase[w] = WPhase.flushed

    @m.action(g=range(G), **nodes, w=range(B))
    def flush(s, g, w, x=0):
        """The head of node x's buffer is flushed: untrack, then LAI and closed ts, in
        buffer order; a lease command takes what §2.5 gives its kind."""
        require(s.buflen[g][x] > 0)
        require(s.buf[g][x][0] == w)
        if w >= P:  # a lease request, extension or transfer (`leases.py`)
            ctx.hooks["flush_lease"](s, g, x, w - P + 2)
        else:
            flush_proposal(s, g, x, w, inject=False)
        shift_buffer(s, ctx, g, x)

    if p.lai_errors:
        @m.action(g=range(G), **nodes, w=range(W))
        def flush_stale_lai(s, g, w, x=0):
            """The head of node x's buffer, a write, is flushed with its LAI overridden by
            a stale one (CockroachDB's LeaseIndexFilter testing knob): it will be rejected
            for its LAI on every replica."""
            require(s.lai_errors_left > 0)
            require(s.buflen[g][x] > 0)
            require(s.buf[g][x][0] == w)
            flush_proposal(s, g, x, w, inject=True)
            s.lai_errors_left = s.lai_errors_left - 1
            shift_buffer(s, ctx, g, x)

    replicas = [(g, x) for g in range(G) for x in range(X)]

    def TrackedAboveFloor(s):  # noqa: N802 - property names are CamelCase
        """Every tracked write evaluated under its replica's current lease is above that
        replica's assigned closed ts (reference A7: `assignedClosed < min trackedTs`).
        A write left over from an earlier lease may be below it once the lease came
        back (#72428); it will be rejected below Raft."""
        def above(g: int, x: int, q: int) -> Any:
            return Implies(And(tracked_in(s, ctx, q, g, x), current(s, ctx, g, x, q)),
                           s.wts[q] > s.assigned_closed[g][x])
        return ForAll([(g, x, q) for g, x in replicas for q in range(W)],
                      lambda gxq: above(*gxq))

    def FloorAboveClaims(s):  # noqa: N802
        """The holder of each range's newest lease, once its replica applied it, writes
        above every closed ts claimed for the range's keys: its write floor (assigned
        closed ts, timestamp cache) is above them (A7, A9); after a merge, its timestamp
        cache over r2's keys is above r2's claims too (A15). A holder whose split waits
        to apply there writes nothing on r1 (the split's latches, §5.1), and may fall
        behind r2's claims on r2's keys meanwhile: r1 leaves them when the split
        applies."""
        checks = []
        for g in range(G):
            h = current_holder(s, ctx, g)
            serving = And(exists(s, ctx, g, h), holds_newest_lease(s, ctx, g, h))
            if ctx.splits and g == 0:
                serving = And(serving, Not(struct_pending(s, ctx, ctx.split_id, h)))
            for k in segment_keys(ctx):
                on_g = covers(s, ctx, g, k, h) if G > 1 else True
                claims = s.claim_hi[g]
                if ctx.merges and g == 0 and ctx.rhs(k):  # r2's claims bind its keys
                    claims = Max(s.claim_hi[0], s.claim_hi[1])
                checks.append(Implies(And(serving, on_g),
                                      write_floor(s, ctx, g, h, k) > claims))
        return And(*checks)

    m.invariant(TrackedAboveFloor)
    m.invariant(FloorAboveClaims)
    tracker.add_invariants(m)


def add_reproposals(m: Any, ctx: Ctx, tracker: Tracker) -> None:
    """New-LAI reproposals (§2.9): offers `raft.apply` the "repropose" hook."""
    W = ctx.writes
    m.var("reproposals_left", Int(0, ctx.reproposals), init=ctx.reproposals,
          doc="new-LAI reproposals the model still allows (a bound of the model)")
    if ctx.mutated("ReproposeKeepsClosed"):
        m.var("wrep", Array(Bool(), W), init=False, doc="the proposal is a reproposal")
    untracked = ctx.mutated("ReproposeWithoutTracking")
    never_gives_up = ctx.mutated("ReproposeBelowClosed")

    def repropose(s: Any, g: int, x: int, e: Any, rejected: Any) -> None:
        """Node x's replica of range g, proposal e's proposer, rejected e's current
        attempt for its LAI (`rejected`): re-track e at its write ts and buffer it
        again, or give up when that ts is at or below the tracker's minimum (assigned
        closed ts + 1)."""
        min_ts = s.assigned_closed[g][x] + 1
        for w in range(W):
            mine = And(rejected, e == w)
            room = s.reproposals_left > 0
            retry = And(mine, room, True if never_gives_up else s.wts[w] > min_ts)
            if not untracked:
                tracker.track(s, g, x, w, s.wts[w], when=retry)
            slot = Min(s.buflen[g][x], ctx.buffer_len - 1)
            s.buf[g][x][slot] = If(retry, w, s.buf[g][x][slot])
            s.buflen[g][x] = If(retry, s.buflen[g][x] + 1, s.buflen[g][x])
            back = WPhase.released if untracked else WPhase.buffered
            s.wphase[w] = If(retry, back, If(mine, WPhase.failed, s.wphase[w]))
            s.appended[w] = If(retry, 0, s.appended[w])
            s.reproposals_left = If(retry, s.reproposals_left - 1, s.reproposals_left)
            if ctx.mutated("ReproposeKeepsClosed"):
                s.wrep[w] = Or(s.wrep[w], retry)

    ctx.hooks["repropose"] = repropose


def segment_keys(ctx: Ctx) -> list[Any]:
    """One key of each timestamp-cache segment (the floor is the same for its keys)."""
    return [next(k for k in ctx.key_type.values if ctx.segment(k) == seg)
            for seg in range(ctx.segments)]


def enqueue(s: Any, ctx: Ctx, g: int, x: Any, w: int) -> None:
    """Proposal w (evaluated on node x's replica of range g) joins that buffer."""
    s.wphase[w] = WPhase.buffered
    enqueue_command(s, ctx, g, x, w)


def enqueue_command(s: Any, ctx: Ctx, g: int, x: Any, command: Any) -> None:
    """A command (a proposal id, or P + j - 2 for lease command j) joins the back of
    node x's buffer of range g."""
    s.buf[g][x][s.buflen[g][x]] = command
    s.buflen[g][x] = s.buflen[g][x] + 1


def shift_buffer(s: Any, ctx: Ctx, g: int, x: Any) -> None:
    """The head of node x's buffer of range g has been flushed."""
    B = ctx.buffer_len
    for i in range(B - 1):
        s.buf[g][x][i] = s.buf[g][x][i + 1]
    s.buf[g][x][B - 1] = NIL
    s.buflen[g][x] = s.buflen[g][x] - 1


def current(s: Any, ctx: Ctx, g: int, x: Any, w: Any) -> Any:
    """Proposal w was evaluated under the lease node x's replica of range g still has
    (its sequence; an extension keeps it)."""
    if not ctx.lease_changes:
        return True
    return lease_base(s, ctx, g, s.wseq[w]) == lease_base(s, ctx, g, s.lseq[g][x])


def newest_lease(s: Any, ctx: Ctx, g: int) -> Any:
    """The newest lease of range g some replica applied: accepted leases form a chain,
    numbered in proposal order."""
    out = s.lseq[g][0]
    for n in range(1, ctx.nodes):
        out = Max(out, s.lseq[g][n])
    return out


def current_holder(s: Any, ctx: Ctx, g: int) -> Any:
    """The holder of range g's newest applied lease (n1 without lease changes)."""
    return s.lholder[g][newest_lease(s, ctx, g)] if ctx.lease_changes else 0


def holds_newest_lease(s: Any, ctx: Ctx, g: int, h: Any) -> Any:
    """Node h's replica has applied range g's newest lease (n1's, without changes)."""
    return s.lseq[g][h] == newest_lease(s, ctx, g) if ctx.lease_changes else True


def lease_usable(s: Any, ctx: Ctx, g: int, x: Any) -> Any:
    """Node x's replica of range g applied a lease naming x that is neither expired
    at x's clock nor proscribed (revoked by a transfer, or older than a restart;
    reference §6, `leases.Status`)."""
    if not ctx.lease_changes:
        return True
    expiry = ctx.hooks["lease_expiration"](s, g, s.lseq[g][x])
    return And(owns_applied_lease(s, ctx, g, x), Not(s.proscribed[g][x]),
               clock(s, ctx, x) < expiry)


def may_evaluate(s: Any, ctx: Ctx, g: int, x: Any) -> Any:
    """Node x may evaluate a request on range g: its lease is usable, the range is not
    frozen by a merge, and no split holds the range's latches on x (from its
    evaluation until it applies there; reference §5.1)."""
    conds = [lease_usable(s, ctx, g, x)]
    if ctx.splits and g == 0:
        conds.append(Not(struct_pending(s, ctx, ctx.split_id, x)))
    if ctx.merges and g == 1:
        conds.append(Not(s.frozen[x]))
    return And(*conds)


def struct_pending(s: Any, ctx: Ctx, X: int, x: Any) -> Any:
    """Structural command X (the split or the merge) was evaluated on node x under the
    lease x's replica of r1 still has, and x has not applied it yet (a split's
    latches are held). One evaluated under an earlier lease blocks nothing: it can
    only be rejected below Raft."""
    applied = split_applied(s, ctx, x) if ctx.splits and X == ctx.split_id \
        else merge_applied(s, ctx, x)
    conds = [s.wphase[X] != WPhase.idle, s.wphase[X] != WPhase.failed, Not(applied),
             proposer(s, ctx, X) == x, current(s, ctx, 0, x, X)]
    return And(*conds)


def stamp_lease(s: Any, ctx: Ctx, g: int, x: Any, w: int) -> None:
    """Proposal w is evaluated under the lease node x's replica of range g applied."""
    if ctx.lease_changes:
        s.wseq[w] = s.lseq[g][x]
    if ctx.epochs:  # the lease status the proposal keeps (`p.leaseStatus`)
        s.wexp[w] = ctx.hooks["lease_expiration"](s, g, s.lseq[g][x])


def processed(s: Any, ctx: Ctx, g: int, n: Any, command: Any, lai: Any = None) -> Any:
    """Node n's replica of range g has applied (accepted or rejected) an entry of
    `command` (a proposal id, or P + j - 2 for lease command j); with `lai`, an entry of
    that attempt (with reproposals each attempt has its own LAI)."""
    def at(i: int) -> Any:
        hit = And(i < s.applied[g][n], s.log[g][i] == command)
        return And(hit, s.elai[g][i] == lai) if lai is not None and ctx.reproposals else hit
    return Exists(range(ctx.log_len), at)


def in_flight(s: Any, ctx: Ctx, g: int, x: Any) -> Any:
    """Node x has a proposal of range g in flight: flushed from x's buffer (a write, the
    split or merge, or a lease command), and x's replica has not applied its entry yet
    (§4.3 step 6, ProposalsInFlight: `r.mu.proposals`)."""
    props = [And(s.wphase[w] == WPhase.flushed, proposed_by(s, ctx, w, g, x),
                 Not(processed(s, ctx, g, x, w, s.wlai[w]))) for w in range(ctx.props)]
    leases = [ctx.hooks["lease_in_flight"](s, g, x, j)
              for j in range(2, ctx.lease_changes + 2)] if ctx.lease_changes else []
    return Or(*props, *leases)


def quiet(s: Any, ctx: Ctx, g: int, x: Any) -> Any:
    """No write of range g is evaluating or waiting in node x's proposal buffer."""
    return ForAll(range(ctx.writes), lambda w: Not(And(proposed_by(s, ctx, w, g, x), Or(
        s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered,
        s.wphase[w] == WPhase.released))))

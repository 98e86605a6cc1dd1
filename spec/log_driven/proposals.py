"""Request evaluation and the proposal buffer on each range's leaseholder.

A write evaluates at a timestamp forwarded above the leaseholder's assigned
closed ts (its write floor), is tracked while evaluating, then waits in the
proposal buffer. Flushing takes the buffer's head: it leaves the tracker, is
given the next lease applied index (LAI) and a closed ts, and the floor moves
up to that closed ts (RFC "Closing of timestamps"; reference §2.4-2.5).
Each range has its own buffer, tracker, assigned LAI and assigned closed ts.

A write its proposer's replica rejects for its LAI is proposed again with a new one
(`reproposals`; reference §2.9 `tryReproposeWithNewLeaseIndex`): it is tracked again
at its write ts and re-enters the buffer, so its next flush gives it a fresh LAI and
closed ts; it gives up (the client gets an error) when its ts is at or below the
tracker's new minimum, the assigned closed ts + 1, since it cannot be re-evaluated
higher.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Min, Not, Or, require
from spec.log_driven.parts import (
    NIL,
    Ctx,
    WPhase,
    covers,
    exists,
    in_range,
    lease_base,
    leaseholder,
    merge_applied,
    split_applied,
    tracked_in,
    write_floor,
)
from spec.log_driven.policy import ceiling, closed_target
from spec.log_driven.tracker import Tracker


def add(m: Any, p: Any, ctx: Ctx, tracker: Tracker) -> None:
    W, P, G = ctx.writes, ctx.props, ctx.ranges
    m.var("wphase", Array(WPhase, P), init=WPhase.idle,
          doc="each proposal's lifecycle (writes, then the split or merge command)")
    if G > 1:
        m.var("wrng", Array(Int(0, G - 1), W), init=0, doc="the range each write evaluated on")
    m.var("wkey", Array(ctx.key_type, W), init=ctx.key_type.values[0],
          doc="the key each write writes")
    m.var("wts", Array(Int(0, ctx.ts_hi), W), init=0, doc="each write's timestamp")
    m.var("wlai", Array(Int(0, ctx.max_lai), P), init=0,
          doc="LAI assigned at flush (0: none yet)")
    if ctx.lease_changes:
        m.var("wseq", Array(Int(1, ctx.lease_changes + 1), P), init=1,
              doc="the lease sequence a proposal evaluated under")
    m.var("wcts", Array(Int(NIL, ctx.closed_hi), P), init=NIL,
          doc="closed ts the proposal carries (-1: none yet)")
    if ctx.mutated("ClosedFromEvalTime") or ctx.mutated("SplitClosedAtEval"):
        m.var("wevc", Array(Int(NIL, ctx.closed_hi), P), init=NIL,
              doc="closed ts captured at evaluation (ClosedFromEvalTime, SplitClosedAtEval)")
    m.var("assigned_lai", Array(Int(0, ctx.max_lai), G), init=0,
          doc="each range's leaseholder: its last assigned LAI")
    m.var("assigned_closed", Array(Int(NIL, ctx.closed_hi), G), init=NIL,
          doc="each range's leaseholder: its assigned closed ts, the write floor")
    B = ctx.buffer_len
    m.var("buf", Array(Array(Int(NIL, B - 1), B), G), init=NIL,
          doc="proposal buffers, flush order: a proposal, or P + j - 2 for lease command j "
              "(-1 past buflen)")
    m.var("buflen", Array(Int(0, B), G), init=0, doc="how many commands are buffered")
    tracker.declare(m)
    floor_on_track = not ctx.mutated("NoFloorOnTrack")
    if ctx.reproposals:
        add_reproposals(m, ctx, tracker)
    keeps_closed = ctx.mutated("ReproposeKeepsClosed")

    @m.action(g=range(G), w=range(W), k=ctx.key_type, c=range(1, ctx.max_ts + 1))
    def evaluate(s, g, w, k, c):
        """A write to key k with client ts c starts evaluating on range g's leaseholder."""
        require(s.wphase[w] == WPhase.idle)
        require(may_evaluate(s, ctx, g))
        require(covers(s, ctx, g, k, leaseholder(s, ctx, g)))
        stamp_lease(s, ctx, g, w)
        ts = Max(c, write_floor(s, ctx, g, k)) if floor_on_track else c
        tracker.track(s, g, w, ts)
        if G > 1:
            s.wrng[w] = g
        s.wkey[w] = k
        s.wphase[w] = WPhase.evaluating
        if ctx.mutated("ClosedFromEvalTime"):
            s.wevc[w] = s.assigned_closed[g]

    @m.action(g=range(G), w=range(W))
    def finish(s, g, w):
        """Evaluation is done; the proposal joins the buffer (still tracked)."""
        require(s.wphase[w] == WPhase.evaluating)
        require(in_range(s, ctx, w, g))
        enqueue(s, ctx, g, w)

    @m.action(g=range(G), w=range(B))
    def flush(s, g, w):
        """The buffer's head is flushed: untrack, then LAI and closed ts, in buffer order."""
        require(s.buflen[g] > 0)
        require(s.buf[g][0] == w)
        if w >= P:  # a lease transfer or extension (`leases.py`)
            ctx.hooks["flush_lease"](s, g, w - P + 2, closed_target(s, ctx), ceiling(s, ctx, g))
            shift_buffer(s, ctx, g)
            return
        if keeps_closed and w < W:
            old_cts, old_closed = s.wcts[w], s.assigned_closed[g]
        value = tracker.flush_closed(s, g, w, closed_target(s, ctx), ceiling(s, ctx, g))
        # the implementation never lets the carried closed ts regress (§2.5); the RFC
        # attaches its rules' value as is, and ClosedMonotone checks that it is enough
        carried = value if tracker.kind == "rfc" else Max(s.assigned_closed[g], value)
        s.assigned_lai[g] = s.assigned_lai[g] + 1
        s.wlai[w] = s.assigned_lai[g]
        from_eval = ctx.mutated("ClosedFromEvalTime") and w < W
        s.wcts[w] = s.wevc[w] if from_eval else carried
        s.assigned_closed[g] = Max(s.assigned_closed[g], carried)
        if keeps_closed and w < W:  # only the LAI of the encoded command is patched
            s.wcts[w] = If(s.wrep[w], old_cts, s.wcts[w])
            s.assigned_closed[g] = If(s.wrep[w], old_closed, s.assigned_closed[g])
        s.wphase[w] = WPhase.flushed
        shift_buffer(s, ctx, g)

    def TrackedAboveFloor(s):  # noqa: N802 - property names are CamelCase
        """Every tracked write is above its range leaseholder's write floor (reference
        A7: `assignedClosed < min trackedTs`)."""
        return ForAll([(g, q) for g in range(G) for q in range(W)], lambda gq: Implies(
            tracked_in(s, ctx, gq[1], gq[0]), s.wts[gq[1]] > s.assigned_closed[gq[0]]))

    def FloorAboveClaims(s):  # noqa: N802
        """Each range's leaseholder writes above every closed ts claimed for its keys: its
        write floor is above them (A7), or, after a non-cooperative lease request, its
        lease starts above them (A9); after a merge, the right-hand keys' timestamp cache
        is above the right-hand side's claims (A15): r1's timestamp cache over them, or,
        after a lease request, the new lease's start. "The leaseholder" is the node whose
        buffer serves the range, when it has applied a lease naming it and has a replica
        of the range: the only one that can evaluate."""
        checks = []
        for g in range(G):
            lh = leaseholder(s, ctx, g)
            serving = And(exists(s, ctx, g, lh),
                          holds_applied_lease(s, ctx, g) if ctx.lease_changes else True)
            checks.append(Implies(serving, write_floor(s, ctx, g) > s.claim_hi[g]))
        if ctx.merges:  # r2's keys, on r1's leaseholder after the merge
            lh = leaseholder(s, ctx, 0)
            serving = And(merge_applied(s, ctx, lh),
                          holds_applied_lease(s, ctx, 0) if ctx.lease_changes else True)
            checks.append(Implies(serving, write_floor(s, ctx, 0, ctx.rhs_keys[0])
                                  > s.claim_hi[1]))
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

    def repropose(s: Any, g: int, e: Any, rejected: Any) -> None:
        """The proposer's replica of range g rejected proposal e's current attempt for
        its LAI (`rejected`): re-track e at its write ts and buffer it again, or give up
        when that ts is at or below the tracker's minimum (assigned closed ts + 1)."""
        min_ts = s.assigned_closed[g] + 1
        for w in range(W):
            mine = And(rejected, e == w)
            room = s.reproposals_left > 0
            retry = And(mine, room, True if never_gives_up else s.wts[w] > min_ts)
            if not untracked:
                tracker.track(s, g, w, s.wts[w], when=retry)
            slot = Min(s.buflen[g], ctx.buffer_len - 1)
            s.buf[g][slot] = If(retry, w, s.buf[g][slot])
            s.buflen[g] = If(retry, s.buflen[g] + 1, s.buflen[g])
            back = WPhase.released if untracked else WPhase.buffered
            s.wphase[w] = If(retry, back, If(mine, WPhase.failed, s.wphase[w]))
            s.appended[w] = If(retry, 0, s.appended[w])
            s.reproposals_left = If(retry, s.reproposals_left - 1, s.reproposals_left)
            if ctx.mutated("ReproposeKeepsClosed"):
                s.wrep[w] = Or(s.wrep[w], retry)

    ctx.hooks["repropose"] = repropose


def enqueue(s: Any, ctx: Ctx, g: int, w: int) -> None:
    """Proposal w (evaluated on range g) joins g's proposal buffer."""
    s.wphase[w] = WPhase.buffered
    enqueue_command(s, ctx, g, w)


def enqueue_command(s: Any, ctx: Ctx, g: int, command: Any) -> None:
    """A command (a proposal id, or P + j - 2 for lease command j) joins the back of
    range g's proposal buffer."""
    s.buf[g][s.buflen[g]] = command
    s.buflen[g] = s.buflen[g] + 1


def shift_buffer(s: Any, ctx: Ctx, g: int) -> None:
    """The head of range g's buffer has been flushed."""
    B = ctx.buffer_len
    for i in range(B - 1):
        s.buf[g][i] = s.buf[g][i + 1]
    s.buf[g][B - 1] = NIL
    s.buflen[g] = s.buflen[g] - 1


def holds_applied_lease(s: Any, ctx: Ctx, g: int) -> Any:
    """Range g's leaseholder has applied a lease that names it."""
    lh = s.lh[g]
    return s.lholder[g][s.lseq[g][lh]] == lh


def lease_usable(s: Any, ctx: Ctx, g: int) -> Any:
    """Range g's leaseholder has applied a lease naming it, valid now and not revoked."""
    return And(holds_applied_lease(s, ctx, g), Not(s.revoked[g]),
               s.now < s.lexp[g][s.lseq[g][s.lh[g]]])


def may_evaluate(s: Any, ctx: Ctx, g: int) -> Any:
    """Range g's leaseholder may evaluate a request: its lease is usable, the range is
    not frozen by a merge, and no split holds the range's latches (from its evaluation
    until it applies on the leaseholder; reference §5.1)."""
    conds = []
    if ctx.lease_changes:
        conds.append(lease_usable(s, ctx, g))
    if ctx.splits and g == 0:
        conds.append(Not(struct_pending(s, ctx, ctx.split_id)))
    if ctx.merges and g == 1:
        conds.append(Not(s.subsumed))
    return And(*conds)


def struct_pending(s: Any, ctx: Ctx, X: int) -> Any:
    """Structural command X (the split or the merge) has been evaluated under r1's
    current lease and its leaseholder has not applied it yet (a split's latches are
    held). One evaluated under an earlier lease blocks nothing: it can only be rejected
    below Raft."""
    lh = leaseholder(s, ctx, 0)
    applied = split_applied(s, ctx, lh) if ctx.splits and X == ctx.split_id \
        else merge_applied(s, ctx, lh)
    conds = [s.wphase[X] != WPhase.idle, s.wphase[X] != WPhase.failed, Not(applied)]
    if ctx.lease_changes:
        conds.append(s.wseq[X] == lease_base(s, ctx, 0, s.lseq[0][lh]))
    return And(*conds)


def stamp_lease(s: Any, ctx: Ctx, g: int, w: int) -> None:
    """Proposal w is evaluated under the lease range g's leaseholder applied."""
    if ctx.lease_changes:
        s.wseq[w] = lease_base(s, ctx, g, s.lseq[g][leaseholder(s, ctx, g)])


def in_flight(s: Any, ctx: Ctx, g: int, node: Any, known: Any = None) -> Any:
    """Some proposal of range g is in flight: flushed, but not yet applied on `node`
    (§4.3 step 6, ProposalsInFlight); `known` replaces node's applied LAI as the bound
    when the node forgot earlier proposals (a restart)."""
    bound = s.lai[g][node] if known is None else known
    return Or(*[And(s.wphase[w] == WPhase.flushed, in_range(s, ctx, w, g),
                    s.wlai[w] > bound) for w in range(ctx.props)])


def quiet(s: Any, ctx: Ctx, g: int) -> Any:
    """No write of range g is evaluating or waiting in its proposal buffer."""
    return ForAll(range(ctx.writes), lambda w: Not(And(in_range(s, ctx, w, g), Or(
        s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered,
        s.wphase[w] == WPhase.released))))

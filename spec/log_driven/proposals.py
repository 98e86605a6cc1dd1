"""Request evaluation and the proposal buffer on the leaseholder.

A write evaluates at a timestamp forwarded above the leaseholder's assigned
closed ts (its write floor), is tracked while evaluating, then waits in the
proposal buffer. Flushing takes the buffer's head: it leaves the tracker, is
given the next lease applied index (LAI) and a closed ts, and the floor moves
up to that closed ts (RFC "Closing of timestamps"; ground truth §2.4-2.5).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, ForAll, Implies, Int, Max, Not, require
from spec.log_driven.parts import NIL, Ctx, WPhase, tracked
from spec.log_driven.policy import ceiling, closed_target
from spec.log_driven.tracker import Tracker


def add(m: Any, p: Any, ctx: Ctx, tracker: Tracker) -> None:
    W = ctx.writes
    m.var("wphase", Array(WPhase, W), init=WPhase.idle, doc="each write's lifecycle")
    m.var("wkey", Array(ctx.key_type, W), init=ctx.key_type.values[0],
          doc="the key each write writes")
    m.var("wts", Array(Int(0, ctx.ts_hi), W), init=0, doc="each write's timestamp")
    m.var("wlai", Array(Int(0, W + ctx.lease_changes), W), init=0,
          doc="LAI assigned at flush (0: none yet)")
    if ctx.lease_changes:
        m.var("wseq", Array(Int(1, ctx.lease_changes + 1), W), init=1,
              doc="the lease sequence a write evaluated under")
    m.var("wcts", Array(Int(NIL, ctx.closed_hi), W), init=NIL,
          doc="closed ts the write's proposal carries (-1: none yet)")
    if ctx.mutated("ClosedFromEvalTime"):
        m.var("wevc", Array(Int(NIL, ctx.closed_hi), W), init=NIL,
              doc="closed ts captured at evaluation (ClosedFromEvalTime only)")
    m.var("assigned_lai", Int(0, W + ctx.lease_changes), init=0,
          doc="the leaseholder's last assigned LAI")
    m.var("assigned_closed", Int(NIL, ctx.closed_hi), init=NIL,
          doc="the leaseholder's assigned closed ts: its write floor")
    m.var("buf", Array(Int(0, W - 1), W), init=0, doc="proposal buffer, flush order")
    m.var("buflen", Int(0, W), init=0, doc="how many proposals are buffered")
    tracker.declare(m)
    floor_on_track = not ctx.mutated("NoFloorOnTrack")

    @m.action(w=range(W), k=ctx.key_type, c=range(1, ctx.max_ts + 1))
    def evaluate(s, w, k, c):
        """A write to key k with client ts c starts evaluating on the leaseholder."""
        require(s.wphase[w] == WPhase.idle)
        if ctx.lease_changes:  # n-th lease: held, applied by its holder, valid, not revoked
            require(And(s.lholder[s.lcount] == s.lh, s.lseq[s.lh] == s.lcount,
                        Not(s.revoked), s.now < s.lexp[s.lcount]))
            s.wseq[w] = s.lcount
        ts = Max(c, write_floor(s, ctx)) if floor_on_track else c
        tracker.track(s, w, ts)
        s.wkey[w] = k
        s.wphase[w] = WPhase.evaluating
        if ctx.mutated("ClosedFromEvalTime"):
            s.wevc[w] = s.assigned_closed

    @m.action(w=range(W))
    def finish(s, w):
        """Evaluation is done; the proposal joins the buffer (still tracked)."""
        require(s.wphase[w] == WPhase.evaluating)
        s.wphase[w] = WPhase.buffered
        s.buf[s.buflen] = w
        s.buflen = s.buflen + 1

    @m.action(w=range(W))
    def flush(s, w):
        """The buffer's head is flushed: untrack, then LAI and closed ts, in buffer order."""
        require(s.buflen > 0)
        require(s.buf[0] == w)
        value = tracker.flush_closed(s, w, closed_target(s, ctx), ceiling(s, ctx))
        # the implementation never lets the carried closed ts regress (§2.5); the RFC
        # attaches its rules' value as is, and ClosedMonotone checks that it is enough
        carried = value if tracker.kind == "rfc" else Max(s.assigned_closed, value)
        s.assigned_lai = s.assigned_lai + 1
        s.wlai[w] = s.assigned_lai
        s.wcts[w] = s.wevc[w] if ctx.mutated("ClosedFromEvalTime") else carried
        s.assigned_closed = Max(s.assigned_closed, carried)
        s.wphase[w] = WPhase.flushed
        for i in range(W - 1):
            s.buf[i] = s.buf[i + 1]
        s.buf[W - 1] = 0
        s.buflen = s.buflen - 1

    def TrackedAboveFloor(s):  # noqa: N802 - property names are CamelCase
        """Every tracked write is above the leaseholder's write floor (ground truth A7:
        `assignedClosed < min trackedTs`)."""
        return ForAll(range(W), lambda q: Implies(tracked(s, q),
                                                  s.wts[q] > s.assigned_closed))

    def FloorAboveClaims(s):  # noqa: N802
        """The leaseholder's writes are above every closed ts claimed so far: its write
        floor is above them (A7), or, after a non-cooperative lease request, its lease
        starts above them (A9). With lease changes, "the leaseholder" is the node that
        holds the newest lease and has applied it: the only one that can evaluate."""
        above = write_floor(s, ctx) > s.claim_hi
        if not ctx.lease_changes:
            return above
        return Implies(And(s.lholder[s.lcount] == s.lh, s.lseq[s.lh] == s.lcount), above)

    m.invariant(TrackedAboveFloor)
    m.invariant(FloorAboveClaims)
    tracker.add_invariants(m)


def write_floor(s: Any, ctx: Ctx) -> Any:
    """The lowest ts the leaseholder lets a write take: above its assigned closed ts, and
    at or after its lease's start (the timestamp cache's low water for a new lease)."""
    above = s.assigned_closed + 1
    return Max(above, s.lh_low) if ctx.lease_changes else above

"""The evaluation tracker on the leaseholder: three designs behind one interface.

- `impl`: CockroachDB's lock-free tracker (reference §1.2): two buckets keyed
  by the requests' write timestamps, a pointer to b1, and a lower bound read
  from b1 only; a drained b1 is reset and swapped with b2. A proposal's closed
  ts is `max(assigned, min(target, lowerBound - 1, leaseExpiration - 1))`,
  computed after the proposal leaves the tracker (§2.4-2.5).
- `rfc`: the RFC's prev/cur buckets stamped `now - target` ("How the tracker
  will work"), reusing `spec.tracker.TrackerRules`.
- `heap`: the RFC's "optimal" min-heap ("Analysis"): an exact lower bound.

Every design is told which writes are tracked by `parts.tracked`, so none
keeps reference counts of its own. Each range has its own tracker; the RFC's
design is modelled for one range only.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, ForAll, If, Implies, Int, Min, Not, Or
from spec.log_driven.parts import NIL, Ctx, WPhase, in_range, tracked, tracked_in
from spec.tracker import TrackerRules


class Tracker:
    """What the proposal buffer needs from a tracker design."""

    def __init__(self, kind: str, ctx: Ctx, close_before_untrack: bool, keep_cur_ts: bool):
        self.kind = kind
        self.ctx = ctx
        self.close_before_untrack = close_before_untrack
        self.no_swap = ctx.mutated("TrackerNoSwap")
        self.whole_batch = ctx.mutated("UntrackWholeBatchFirst")
        self.rfc = TrackerRules(
            kind="buckets", requests=ctx.writes, target=ctx.target, tracked=tracked,
            keep_cur_ts=keep_cur_ts, close_before_exit=close_before_untrack,
            reset_cur_on_prev_exit=ctx.mutated("ResetCurOnPrevExit")) if kind == "rfc" else None

    # -- state -----------------------------------------------------------------------
    def declare(self, m: Any) -> None:
        ctx = self.ctx
        if self.rfc is not None:
            self.rfc.declare(m, ctx.closed_hi)
        elif self.kind == "impl":
            m.var("tb_ts", Array(Array(Int(NIL, ctx.ts_hi), 2), ctx.ranges), init=NIL,
                  doc="lock-free trackers: the two physical buckets' lower bounds (-1 empty)")
            m.var("tb_first", Array(Int(0, 1), ctx.ranges), init=0,
                  doc="which physical bucket is b1")
            m.var("tok", Array(Int(0, 1), ctx.writes), init=0,
                  doc="the physical bucket each tracked write joined (its token)")

    def _others_empty(self, s: Any, g: int, b: Any, exclude: int) -> Any:
        return ForAll([q for q in range(self.ctx.writes) if q != exclude],
                      lambda q: Not(And(tracked_in(s, self.ctx, q, g), s.tok[q] == b)))

    # -- Track ---------------------------------------------------------------------
    def track(self, s: Any, g: int, w: int, ts: Any, when: Any = True) -> None:
        """Write w starts evaluating on range g at `ts` (already above the floor); sets
        s.wts[w]. With `when` (a condition), only if it holds: a command re-tracked for a
        reproposal (`raft.apply`)."""
        if self.rfc is not None:
            if when is not True:
                raise ValueError("the RFC tracker is not modelled with reproposals")
            self.rfc.enter(s, w, ts, s.now, floor=s.assigned_closed[0])
            return
        def only_when(new: Any, old: Any) -> Any:
            return new if when is True else If(when, new, old)

        s.wts[w] = only_when(ts, s.wts[w])
        if self.kind != "impl":
            return
        b1 = s.tb_first[g]
        t1 = s.tb_ts[g][b1]
        joined = If(Or(t1 == NIL, ts <= t1), b1, 1 - b1)
        old = s.tb_ts[g][joined]
        s.tb_ts[g][joined] = only_when(If(Or(old == NIL, old > ts), ts, old), old)  # extendAndJoin
        s.tok[w] = only_when(joined, s.tok[w])

    def reset(self, s: Any, g: int, when: Any) -> None:
        """Range g's tracker is another node's from now on (when `when`): the writes the
        old holder tracked have failed (`leases.fail_stranded`), so it starts empty."""
        if self.rfc is not None:
            raise ValueError("the RFC tracker is not modelled with lease changes")
        if self.kind != "impl":
            return  # the heap's bound is read from the tracked writes themselves
        for b in range(2):
            s.tb_ts[g][b] = If(when, NIL, s.tb_ts[g][b])
        s.tb_first[g] = If(when, 0, s.tb_first[g])
        for q in range(self.ctx.writes):
            s.tok[q] = If(And(when, in_range(s, self.ctx, q, g)), 0, s.tok[q])

    def _untrack(self, s: Any, g: int, w: int) -> None:
        """Untrack (impl): the last one out resets its bucket; a drained b1 swaps with b2."""
        b = s.tok[w]
        last = self._others_empty(s, g, b, w)
        s.tb_ts[g][b] = If(last, NIL, s.tb_ts[g][b])
        if not self.no_swap:
            s.tb_first[g] = If(And(last, b == s.tb_first[g]), 1 - s.tb_first[g], s.tb_first[g])
        s.tok[w] = 0

    def lower_bound(self, s: Any, g: int, exclude: int | None = None) -> tuple[Any, Any]:
        """(is set, value) of range g's tracker lower bound, ignoring write `exclude`."""
        if self.kind == "impl":
            lb = s.tb_ts[g][s.tb_first[g]]
            return lb != NIL, lb
        lb = None
        for q in range(self.ctx.writes):
            if q == exclude:
                continue
            val = If(tracked_in(s, self.ctx, q, g), s.wts[q], self.ctx.ts_hi + 1)
            lb = val if lb is None else Min(lb, val)
        if lb is None:
            return False, 0
        return lb <= self.ctx.ts_hi, lb

    # -- flush -----------------------------------------------------------------------
    def flush_closed(self, s: Any, g: int, w: int, target: Any, ceiling: Any) -> Any:
        """Proposal w of range g is flushed: a write leaves the tracker (the split or
        merge command is never tracked); returns the closed ts computed for it (before
        forwarding to the assigned closed ts)."""
        write = w < self.ctx.writes
        if self.whole_batch:  # every buffered proposal leaves before any closed ts is chosen
            for q in range(self.ctx.writes):
                if q != w:
                    self._release(s, g, q)
        if self.rfc is not None:
            return Min(self.rfc.flush(s, w, s.now), ceiling)
        if self.close_before_untrack or not write:  # N7: w's own ts still bounds it
            lb_set, lb = self.lower_bound(s, g)
            if write:
                self._untrack_if_impl(s, g, w)
        else:
            self._untrack_if_impl(s, g, w)
            lb_set, lb = self.lower_bound(s, g, exclude=w)
        closed = Min(target, ceiling)
        return If(lb_set, Min(closed, lb - 1), closed) if lb_set is not False else closed

    def _untrack_if_impl(self, s: Any, g: int, w: int) -> None:
        if self.kind == "impl":
            self._untrack(s, g, w)

    def _release(self, s: Any, g: int, q: int) -> None:
        """UntrackWholeBatchFirst: a buffered write of range g leaves the tracker early."""
        buffered = And(s.wphase[q] == WPhase.buffered, in_range(s, self.ctx, q, g))
        if self.kind == "impl":
            b = s.tok[q]
            last = And(buffered, self._others_empty(s, g, b, q))
            s.tb_ts[g][b] = If(last, NIL, s.tb_ts[g][b])
            if not self.no_swap:
                s.tb_first[g] = If(And(last, b == s.tb_first[g]), 1 - s.tb_first[g],
                                   s.tb_first[g])
            s.tok[q] = If(buffered, 0, s.tok[q])
        elif self.rfc is not None:
            raise ValueError("UntrackWholeBatchFirst is a mutation of the impl/heap trackers")
        s.wphase[q] = If(buffered, WPhase.released, s.wphase[q])

    # -- properties --------------------------------------------------------------------
    def add_invariants(self, m: Any) -> None:
        ctx = self.ctx
        if self.rfc is not None:
            self.rfc.add_invariants(m)
            return
        if self.kind != "impl":
            return

        def TrackerLowerBound(s):  # noqa: N802 - property names are CamelCase
            """Each lock-free tracker's lower bound (b1's ts) is set and at most every
            tracked write ts, and each write's own bucket ts is at most its ts (reference
            A12, the contract of `LowerBound`)."""
            def sound(g: int, q: int) -> Any:
                lb = s.tb_ts[g][s.tb_first[g]]
                own = s.tb_ts[g][s.tok[q]]
                return Implies(tracked_in(s, ctx, q, g), And(
                    lb != NIL, lb <= s.wts[q], own != NIL, own <= s.wts[q]))
            return ForAll([(g, q) for g in range(ctx.ranges) for q in range(ctx.writes)],
                          lambda gq: sound(*gq))

        m.invariant(TrackerLowerBound)



"""The evaluation tracker on the leaseholder: three designs behind one interface.

- `impl`: CockroachDB's lock-free tracker (ground truth §1.2): two buckets keyed
  by the requests' write timestamps, a pointer to b1, and a lower bound read
  from b1 only; a drained b1 is reset and swapped with b2. A proposal's closed
  ts is `max(assigned, min(target, lowerBound - 1, leaseExpiration - 1))`,
  computed after the proposal leaves the tracker (§2.4-2.5).
- `rfc`: the RFC's prev/cur buckets stamped `now - target` ("How the tracker
  will work"), reusing `spec.tracker.TrackerRules`.
- `heap`: the RFC's "optimal" min-heap ("Analysis"): an exact lower bound.

Every design is told which writes are tracked by `parts.tracked`, so none
keeps reference counts of its own.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, ForAll, If, Implies, Int, Min, Not, Or
from spec.log_driven.parts import NIL, Ctx, WPhase, tracked
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
            m.var("tb_ts", Array(Int(NIL, ctx.ts_hi), 2), init=NIL,
                  doc="lock-free tracker: the two physical buckets' lower bounds (-1 empty)")
            m.var("tb_first", Int(0, 1), init=0, doc="which physical bucket is b1")
            m.var("tok", Array(Int(0, 1), ctx.writes), init=0,
                  doc="the physical bucket each tracked write joined (its token)")

    def _others_empty(self, s: Any, b: Any, exclude: int) -> Any:
        return ForAll([q for q in range(self.ctx.writes) if q != exclude],
                      lambda q: Not(And(tracked(s, q), s.tok[q] == b)))

    # -- Track ---------------------------------------------------------------------
    def track(self, s: Any, w: int, ts: Any) -> None:
        """Write w starts evaluating at `ts` (already above the floor); sets s.wts[w]."""
        if self.rfc is not None:
            self.rfc.enter(s, w, ts, s.now, floor=s.assigned_closed)
            return
        s.wts[w] = ts
        if self.kind != "impl":
            return
        b1 = s.tb_first
        t1 = s.tb_ts[b1]
        joined = If(Or(t1 == NIL, ts <= t1), b1, 1 - b1)
        old = s.tb_ts[joined]
        s.tb_ts[joined] = If(Or(old == NIL, old > ts), ts, old)  # extendAndJoin
        s.tok[w] = joined

    def _untrack(self, s: Any, w: int) -> None:
        """Untrack (impl): the last one out resets its bucket; a drained b1 swaps with b2."""
        b = s.tok[w]
        last = self._others_empty(s, b, w)
        s.tb_ts[b] = If(last, NIL, s.tb_ts[b])
        if not self.no_swap:
            s.tb_first = If(And(last, b == s.tb_first), 1 - s.tb_first, s.tb_first)
        s.tok[w] = 0

    def _lower_bound(self, s: Any, exclude: int | None) -> tuple[Any, Any]:
        """(is set, value) of the tracker's lower bound, ignoring write `exclude`."""
        if self.kind == "impl":
            lb = s.tb_ts[s.tb_first]
            return lb != NIL, lb
        lb = None
        for q in range(self.ctx.writes):
            if q == exclude:
                continue
            val = If(tracked(s, q), s.wts[q], self.ctx.ts_hi + 1)
            lb = val if lb is None else Min(lb, val)
        if lb is None:
            return False, 0
        return lb <= self.ctx.ts_hi, lb

    # -- flush -----------------------------------------------------------------------
    def flush_closed(self, s: Any, w: int, target: Any, ceiling: Any) -> Any:
        """Write w's proposal is flushed: w leaves the tracker; returns the closed ts
        computed for it (before forwarding to the assigned closed ts)."""
        if self.whole_batch:  # every buffered proposal leaves before any closed ts is chosen
            for q in range(self.ctx.writes):
                if q != w:
                    self._release(s, q)
        if self.rfc is not None:
            return Min(self.rfc.flush(s, w, s.now), ceiling)
        if self.close_before_untrack:  # N7: w's own write ts still bounds its closed ts
            lb_set, lb = self._lower_bound(s, exclude=None)
            self._untrack_if_impl(s, w)
        else:
            self._untrack_if_impl(s, w)
            lb_set, lb = self._lower_bound(s, exclude=w)
        closed = Min(target, ceiling)
        return If(lb_set, Min(closed, lb - 1), closed) if lb_set is not False else closed

    def _untrack_if_impl(self, s: Any, w: int) -> None:
        if self.kind == "impl":
            self._untrack(s, w)

    def _release(self, s: Any, q: int) -> None:
        """UntrackWholeBatchFirst: a buffered write leaves the tracker early."""
        buffered = s.wphase[q] == WPhase.buffered
        if self.kind == "impl":
            b = s.tok[q]
            last = And(buffered, self._others_empty(s, b, q))
            s.tb_ts[b] = If(last, NIL, s.tb_ts[b])
            if not self.no_swap:
                s.tb_first = If(And(last, b == s.tb_first), 1 - s.tb_first, s.tb_first)
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
            """The lock-free tracker's lower bound (b1's ts) is set and at most every tracked
            write ts, and each write's own bucket ts is at most its ts (ground truth A12,
            the contract of `LowerBound`)."""
            lb = s.tb_ts[s.tb_first]
            return ForAll(range(ctx.writes), lambda q: Implies(tracked(s, q), And(
                lb != NIL, lb <= s.wts[q], s.tb_ts[s.tok[q]] != NIL,
                s.tb_ts[s.tok[q]] <= s.wts[q])))

        m.invariant(TrackerLowerBound)



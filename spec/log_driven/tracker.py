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
keeps reference counts of its own. Each replica (range, node) has its own
tracker, in its proposal buffer (§2.1); the RFC's design is modelled for one
range and n1 only.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, ForAll, If, Implies, Int, Min, Not, Or
from spec.log_driven.parts import NIL, Ctx, WPhase, proposed_by, tracked, tracked_in
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
            X = ctx.proposers
            m.var("tb_ts", Array(Array(Array(Int(NIL, ctx.ts_hi), 2), X), ctx.ranges),
                  init=NIL, doc="each replica's lock-free tracker: the two physical buckets' "
                                "lower bounds (-1 empty)")
            m.var("tb_first", Array(Array(Int(0, 1), X), ctx.ranges), init=0,
                  doc="which physical bucket is b1")
            m.var("tok", Array(Int(0, 1), ctx.writes), init=0,
                  doc="the physical bucket each tracked write joined (its token)")

    def _others_empty(self, s: Any, g: int, x: Any, b: Any, exclude: int) -> Any:
        return ForAll([q for q in range(self.ctx.writes) if q != exclude],
                      lambda q: Not(And(tracked_in(s, self.ctx, q, g, x), s.tok[q] == b)))

    # -- Track ---------------------------------------------------------------------
    def track(self, s: Any, g: int, x: Any, w: int, ts: Any, when: Any = True) -> None:
        """Write w starts evaluating on node x's replica of range g at `ts` (already above
        the floor); sets s.wts[w]. With `when` (a condition), only if it holds: a command
        re-tracked for a reproposal (`raft.apply`)."""
        if self.rfc is not None:
            if when is not True:
                raise ValueError("the RFC tracker is not modelled with reproposals")
            self.rfc.enter(s, w, ts, s.now, floor=s.assigned_closed[0][0])
            return
        def only_when(new: Any, old: Any) -> Any:
            return new if when is True else If(when, new, old)

        s.wts[w] = only_when(ts, s.wts[w])
        if self.kind != "impl":
            return
        bts, first = s.tb_ts[g][x], s.tb_first[g][x]
        b1 = first
        t1 = bts[b1]
        joined = If(Or(t1 == NIL, ts <= t1), b1, 1 - b1)
        old = bts[joined]
        bts[joined] = only_when(If(Or(old == NIL, old > ts), ts, old), old)  # extendAndJoin
        s.tok[w] = only_when(joined, s.tok[w])

    def _untrack(self, s: Any, g: int, x: Any, w: int) -> None:
        """Untrack (impl): the last one out resets its bucket; a drained b1 swaps with b2."""
        b = s.tok[w]
        last = self._others_empty(s, g, x, b, w)
        s.tb_ts[g][x][b] = If(last, NIL, s.tb_ts[g][x][b])
        if not self.no_swap:
            first = s.tb_first[g][x]
            s.tb_first[g][x] = If(And(last, b == first), 1 - first, first)
        s.tok[w] = 0

    def lower_bound(self, s: Any, g: int, x: Any,
                    exclude: int | None = None) -> tuple[Any, Any]:
        """(is set, value) of node x's tracker lower bound for range g, ignoring write
        `exclude`."""
        if self.kind == "impl":
            lb = s.tb_ts[g][x][s.tb_first[g][x]]
            return lb != NIL, lb
        lb = None
        for q in range(self.ctx.writes):
            if q == exclude:
                continue
            val = If(tracked_in(s, self.ctx, q, g, x), s.wts[q], self.ctx.ts_hi + 1)
            lb = val if lb is None else Min(lb, val)
        if lb is None:
            return False, 0
        return lb <= self.ctx.ts_hi, lb

    # -- flush -----------------------------------------------------------------------
    def flush_closed(self, s: Any, g: int, x: Any, w: int, target: Any,
                     ceiling: Any) -> Any:
        """Proposal w of range g leaves node x's buffer: a write leaves the tracker (the
        split or merge command and lease commands are never tracked); returns the closed
        ts computed for it (before forwarding to the assigned closed ts)."""
        write = w < self.ctx.writes
        if self.whole_batch:  # every buffered proposal leaves before any closed ts is chosen
            for q in range(self.ctx.writes):
                if q != w:
                    self._release(s, g, x, q)
        if self.rfc is not None:
            return Min(self.rfc.flush(s, w, s.now), ceiling)
        if self.close_before_untrack or not write:  # N7: w's own ts still bounds it
            lb_set, lb = self.lower_bound(s, g, x)
            if write:
                self._untrack_if_impl(s, g, x, w)
        else:
            self._untrack_if_impl(s, g, x, w)
            lb_set, lb = self.lower_bound(s, g, x, exclude=w)
        closed = Min(target, ceiling)
        return If(lb_set, Min(closed, lb - 1), closed) if lb_set is not False else closed

    def _untrack_if_impl(self, s: Any, g: int, x: Any, w: int) -> None:
        if self.kind == "impl":
            self._untrack(s, g, x, w)

    def _release(self, s: Any, g: int, x: Any, q: int) -> None:
        """UntrackWholeBatchFirst: a buffered write of node x's range g leaves the
        tracker early."""
        buffered = And(s.wphase[q] == WPhase.buffered, proposed_by(s, self.ctx, q, g, x))
        if self.kind == "impl":
            b = s.tok[q]
            last = And(buffered, self._others_empty(s, g, x, b, q))
            s.tb_ts[g][x][b] = If(last, NIL, s.tb_ts[g][x][b])
            if not self.no_swap:
                first = s.tb_first[g][x]
                s.tb_first[g][x] = If(And(last, b == first), 1 - first, first)
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
            """Each replica's lock-free tracker's lower bound (b1's ts) is set and at most
            every write it tracks, and each write's own bucket ts is at most its ts
            (reference A12, the contract of `LowerBound`)."""
            def sound(g: int, x: int, q: int) -> Any:
                lb = s.tb_ts[g][x][s.tb_first[g][x]]
                own = s.tb_ts[g][x][s.tok[q]]
                return Implies(tracked_in(s, ctx, q, g, x), And(
                    lb != NIL, lb <= s.wts[q], own != NIL, own <= s.wts[q]))
            return ForAll([(g, x, q) for g in range(ctx.ranges) for x in range(ctx.proposers)
                           for q in range(ctx.writes)], lambda gxq: sound(*gxq))

        m.invariant(TrackerLowerBound)



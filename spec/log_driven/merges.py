"""Merges: range r2 (the right-hand side) merges into r1.

Subsume runs on r2's leaseholder once nothing of r2 is evaluating or in flight:
it freezes r2 (no more writes, side-transport bumps fail with MergeInProgress)
and returns r2's LAI, the freeze time and r2's closed ts. The merge command is
an r1 proposal, evaluated once every r2 replica has applied up to Subsume's LAI
(AdminMerge's waitForApplication); unlike a split it does not latch r1's keys,
so r1's writes go on around it. When r1's leaseholder applies it, r1's
timestamp cache over r2's keys is raised to r2's closed ts, and to the freeze
time when it does not also hold r2's lease; the merged range keeps r1's closed
ts (RFC "Splits and Merges"; reference §5.2 `MergeRange`).

With a split first (`structure = "split_merge"`), r2 is the range the split made:
Subsume needs r2's replica on its leaseholder, and the merge waits until every node
has applied the split (AdminMerge waits on each of r2's replicas, which exist only
then); the merge's flag is then `merged`, as `span_changed` is the split's.

Switch: MergeWithoutTimestampCacheBump skips the raise to r2's closed ts.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.log_driven.follower_reads import effective_closed
from spec.log_driven.parts import NIL, Ctx, WPhase, exists, leaseholder, split_applied
from spec.log_driven.proposals import enqueue, in_flight, may_evaluate, quiet, stamp_lease


def add(m: Any, p: Any, ctx: Ctx) -> None:
    X, N = ctx.merge_id, ctx.nodes
    flag = "merged" if ctx.splits else "span_changed"
    m.var(flag, Array(Bool(), N), init=False,
          doc="node n's r1 replica has applied the merge (its r2 replica is gone)")
    m.var("subsumed", Bool(), init=False, doc="r2 is frozen by Subsume")
    m.var("merge_closed", Int(NIL, ctx.closed_hi), init=NIL, doc="r2's closed ts at Subsume")
    m.var("merge_freeze", Int(0, ctx.max_ts), init=0, doc="the freeze time Subsume returned")
    m.var("merge_lai", Int(0, ctx.max_lai), init=0, doc="r2's LAI at Subsume")
    m.var("rhs_tsc", Int(NIL, ctx.closed_hi), init=NIL,
          doc="r1's timestamp cache over r2's keys (writes there must be above it)")
    no_bump = ctx.mutated("MergeWithoutTimestampCacheBump")

    @m.action()
    def subsume(s):
        """r2's leaseholder freezes r2 and reports its LAI, freeze time and closed ts."""
        lh = leaseholder(s, ctx, 1)
        require(exists(s, ctx, 1, lh))
        require(may_evaluate(s, ctx, 1))
        require(quiet(s, ctx, 1))
        require(Not(in_flight(s, ctx, 1, lh)))
        s.subsumed = True
        s.merge_closed = effective_closed(s, ctx, 1, lh)
        s.merge_freeze = s.now
        s.merge_lai = s.lai[1][lh]

    @m.action()
    def evaluate_merge(s):
        """r1's leaseholder evaluates the merge once every r2 replica caught up to
        Subsume's LAI; the command joins r1's proposal buffer."""
        require(s.subsumed)
        require(s.wphase[X] == WPhase.idle)
        require(may_evaluate(s, ctx, 0))
        require(ForAll(range(N), lambda n: And(split_applied(s, ctx, n),
                                                s.lai[1][n] >= s.merge_lai)))
        stamp_lease(s, ctx, 0, X)
        enqueue(s, ctx, 0, X)

    def apply_merge(s: Any, n: int, ok: Any, first: Any) -> None:
        """Replica (r1, n) accepted the merge (when `ok`); on r1's leaseholder the
        timestamp cache over r2's keys is raised (MergeRange)."""
        applied = getattr(s, flag)
        applied[n] = Or(applied[n], ok)
        on_lh = And(ok, n == leaseholder(s, ctx, 0))
        colocated = s.lholder[1][s.lseq[1][n]] == n if ctx.lease_changes else True
        bump = NIL if no_bump else s.merge_closed
        bump = If(colocated, bump, Max(bump, s.merge_freeze))
        s.rhs_tsc = If(on_lh, Max(s.rhs_tsc, bump), s.rhs_tsc)

    ctx.hooks["apply_struct"][X] = apply_merge

    def NoClaimWhileSubsumed(before, after):  # noqa: N802 - property names are CamelCase
        """Once Subsume froze r2, nothing closes anything new for r2 (reference A15,
        A8(b)): not the side transport, not a lease request."""
        return Implies(before.subsumed, after.claim_hi[1] <= before.claim_hi[1])

    m.step_invariant(NoClaimWhileSubsumed)

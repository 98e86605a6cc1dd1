"""Merges: range r2 (the right-hand side) merges into r1, as a transaction.

AdminMerge runs a transaction (reference §5.3; `replica_command.go`): it first writes
intents on r1's descriptor and a deletion intent on r2's, each evaluated on its range's
leaseholder, so the transaction's timestamp T is pushed above both replicas' assigned
closed ts, and each write is lease-checked at T (`begin_merge`). Then Subsume runs on
r2's leaseholder once nothing of r2 is evaluating or in flight there: it freezes r2 (no
more writes, side-transport bumps fail with MergeInProgress) and returns r2's LAI, the
freeze time and r2's closed ts. A node that takes r2's lease over while the deletion
intent exists freezes r2 on applying it (`leasePostApplyLocked` →
`maybeWatchForMergeLocked`); an extension does not change hands and does not. The
merge commits with the EndTxn, an r1 proposal evaluated at T once every r2 replica has
applied up to Subsume's LAI (AdminMerge's waitForApplication) on a node whose r1 lease
is usable at T (a lease in its stasis must be extended first: `checkLeaseRLocked`);
unlike a split it does not latch r1's keys, so r1's writes go on around it. Nothing
bounds r2's closed ts at Subsume by T or by r1's lease: r2 may close above T between the
intents and Subsume. Every node applying the merge runs `MergeRange`; on the node whose
replica of r1 applied a lease naming it (valid or not), the store's timestamp cache over
r2's keys is raised to r2's closed ts, and to the freeze time when that node's replica
of r2 applied a lease naming another node; the merged range keeps r1's closed ts (RFC
"Splits and Merges"; reference §5.2 `MergeRange`).

With a split first (`structure = "split_merge"`), r2 is the range the split made:
Subsume needs r2's replica on its leaseholder, and the merge waits until every node
has applied the split (AdminMerge waits on each of r2's replicas, which exist only
then); the merge's flag is then `merged`, as `span_changed` is the split's.

Scope: the transaction's intents are on range-local descriptor keys, outside the
modelled keys, so they are not proposals here: they fix T and the intent's existence.
The merge always commits (no abort, no refresh).

Switches: MergeWithoutTimestampCacheBump skips the raise to r2's closed ts;
NewRHSLeaseIgnoresMergeIntent lets a node that takes r2's lease during the merge serve
and close without noticing the intent.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.log_driven.follower_reads import effective_closed
from spec.log_driven.parts import NIL, Ctx, WPhase, exists, owns_applied_lease, split_applied
from spec.log_driven.policy import clock, stasis
from spec.log_driven.proposals import (
    enqueue,
    in_flight,
    lease_usable,
    may_evaluate,
    node_domain,
    quiet,
    stamp_lease,
)


def add(m: Any, p: Any, ctx: Ctx) -> None:
    X, N = ctx.merge_id, ctx.nodes
    flag = "merged" if ctx.splits else "span_changed"
    m.var(flag, Array(Bool(), N), init=False,
          doc="node n's r1 replica has applied the merge (its r2 replica is gone)")
    m.var("merge_ts", Int(0, ctx.ts_hi), init=0,
          doc="the merge transaction's timestamp T (0: no merge transaction yet)")
    m.var("subsumed", Bool(), init=False, doc="Subsume ran")
    m.var("frozen", Array(Bool(), N), init=False,
          doc="node n's replica of r2 is frozen for the merge (mergeInProgress): by "
              "Subsume there, or on taking r2's lease while the deletion intent existed")
    m.var("merge_closed", Int(NIL, ctx.closed_hi), init=NIL, doc="r2's closed ts at Subsume")
    m.var("merge_freeze", Int(0, ctx.max_ts), init=0, doc="the freeze time Subsume returned")
    m.var("merge_lai", Int(0, ctx.max_lai), init=0, doc="r2's LAI at Subsume")
    no_bump = ctx.mutated("MergeWithoutTimestampCacheBump")
    ignores_intent = ctx.mutated("NewRHSLeaseIgnoresMergeIntent")

    nodes = node_domain(ctx)
    pairs = {"x": range(ctx.proposers), "y": range(ctx.proposers)} if ctx.proposers > 1 \
        else {}
    rhs = ctx.segment(ctx.rhs_keys[0])

    def usable_at(s: Any, g: int, x: Any, ts: Any) -> Any:
        """Node x's lease of range g serves a request at ts (below its stasis)."""
        return ts < stasis(s, ctx, g, x) if ctx.lease_changes else True

    @m.action(**pairs)
    def begin_merge(s, x=0, y=0):
        """Node x, holding r1's lease, starts the merge transaction: its intents on r1's
        descriptor and (on y, holding r2's lease) a deletion intent on r2's, at a
        timestamp T above both replicas' assigned closed ts, each lease-checked at T."""
        require(s.merge_ts == 0)
        require(And(may_evaluate(s, ctx, 0, x), may_evaluate(s, ctx, 1, y),
                    exists(s, ctx, 1, y)))
        if ctx.splits:
            require(ForAll(range(N), lambda n: split_applied(s, ctx, n)))
        ts = Max(clock(s, ctx, x), s.assigned_closed[0][x] + 1, s.assigned_closed[1][y] + 1)
        require(And(ts <= ctx.ts_hi, usable_at(s, 0, x, ts), usable_at(s, 1, y, ts)))
        s.merge_ts = ts

    @m.action(**nodes)
    def subsume(s, x=0):
        """Node x, holding r2's lease, finds the deletion intent, freezes r2 and reports
        its LAI, freeze time and closed ts (Raft or side transport)."""
        require(And(s.merge_ts > 0, Not(s.subsumed)))
        require(exists(s, ctx, 1, x))
        require(lease_usable(s, ctx, 1, x))
        require(quiet(s, ctx, 1, x))
        require(Not(in_flight(s, ctx, 1, x)))
        s.subsumed = True
        s.frozen[x] = True
        s.merge_closed = effective_closed(s, ctx, 1, x)
        s.merge_freeze = clock(s, ctx, x)
        s.merge_lai = s.lai[1][x]

    @m.action(**nodes)
    def evaluate_merge(s, x=0):
        """Node x, holding r1's lease usable at T, evaluates the EndTxn with the merge
        trigger once every r2 replica caught up to Subsume's LAI; the command joins x's
        proposal buffer."""
        require(s.subsumed)
        require(s.wphase[X] == WPhase.idle)
        require(may_evaluate(s, ctx, 0, x))
        require(usable_at(s, 0, x, s.merge_ts))
        require(ForAll(range(N), lambda n: And(split_applied(s, ctx, n),
                                                s.lai[1][n] >= s.merge_lai)))
        stamp_lease(s, ctx, 0, x, X)
        if ctx.proposers > 1:
            s.wnode[X] = x
        enqueue(s, ctx, 0, x, X)

    def apply_merge(s: Any, n: int, ok: Any, first: Any) -> None:
        """Replica (r1, n) accepted the merge (when `ok`); if n's replica of r1 applied
        a lease naming n, its store's timestamp cache over r2's keys is raised
        (MergeRange)."""
        applied = getattr(s, flag)
        applied[n] = Or(applied[n], ok)
        on_lh = And(ok, owns_applied_lease(s, ctx, 0, n))
        colocated = owns_applied_lease(s, ctx, 1, n)
        bump = NIL if no_bump else s.merge_closed
        bump = If(colocated, bump, Max(bump, s.merge_freeze))
        s.tsc[n][rhs] = If(on_lh, Max(s.tsc[n][rhs], bump), s.tsc[n][rhs])
        if "observe_clock" in ctx.hooks:  # Clock.Update(freezeStart) when not colocated
            ctx.hooks["observe_clock"](s, n, s.merge_freeze, And(on_lh, Not(colocated)))

    def watch_for_merge(s: Any, g: int, n: int, taken: Any) -> None:
        """A node taking r2's lease over while the deletion intent exists freezes r2
        (`maybeWatchForMergeLocked`)."""
        if g == 1 and not ignores_intent:
            s.frozen[n] = Or(s.frozen[n], And(taken, s.merge_ts > 0))

    if ctx.lease_changes:
        ctx.hooks["lease_taken"].append(watch_for_merge)
    ctx.hooks["apply_struct"][X] = apply_merge

    def NoClaimWhileSubsumed(before, after):  # noqa: N802 - property names are CamelCase
        """Once Subsume froze r2, nothing closes anything new for r2 (reference A15,
        A8(b)): not the side transport, not a lease request, not a new leaseholder."""
        return Implies(before.subsumed, after.claim_hi[1] <= before.claim_hi[1])

    m.step_invariant(NoClaimWhileSubsumed)

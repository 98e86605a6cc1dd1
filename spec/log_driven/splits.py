"""Splits: range r1 splits at `split_key`, creating r2 from its right-hand keys.

The split is a command of r1 like any write (an EndTxn with a SplitTrigger): it
is evaluated under latches that block every write to r1 until it applies on
the leaseholder, goes through the proposal buffer, and carries the closed ts
assigned at flush (reference §5.1). When a replica applies it, that node's
r2 replica is created with the closed ts the split command carried, forwarded
to the r1 replica's own closed ts, and on the leaseholder r2's proposal buffer
starts from it (RFC "Splits and Merges"; `splitPreApply`, `leasePostApplyLocked`).

r2 starts with a copy of the lease r1's replica on the evaluating node applied (the
split trigger copies the left-hand lease); each node's r2 replica runs the lease hook on
it when it applies the split (`splitPostApply`: `leasePostApplyLocked(lease, lease)`,
which seeds the r2 proposal buffer of the node the copy names and, as the lease does not
change hands, touches no timestamp cache: r2's keys keep the store's). From then on
each range's lease changes on its own, so r2 may move to another node.

Switches: SplitClosedAtEval, the RFC's rejected alternative, starts r2 at the
closed ts known when the split was evaluated; SplitRHSZero starts it at nothing
and leaves r2's buffer unseeded.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Min, Not, Or, require
from spec.log_driven.follower_reads import effective_closed
from spec.log_driven.parts import NIL, Ctx, WPhase
from spec.log_driven.policy import ceiling, closed_target
from spec.log_driven.proposals import (
    enqueue,
    in_flight,
    may_evaluate,
    node_domain,
    quiet,
    stamp_lease,
)


def add(m: Any, p: Any, ctx: Ctx) -> None:
    X, N = ctx.split_id, ctx.nodes
    m.var("span_changed", Array(Bool(), N), init=False,
          doc="node n's r1 replica has applied the split (its r2 replica exists)")
    m.var("split_base", Int(NIL, ctx.closed_hi), init=NIL, ghost=True,
          doc="the highest claim on r1 when the split was first accepted")
    at_eval, zero = ctx.mutated("SplitClosedAtEval"), ctx.mutated("SplitRHSZero")

    @m.action(**node_domain(ctx))
    def evaluate_split(s, x=0):
        """Node x, holding r1's lease, evaluates the split once every earlier write has
        applied on it (latches); the command joins x's proposal buffer."""
        require(s.wphase[X] == WPhase.idle)
        require(may_evaluate(s, ctx, 0, x))
        require(quiet(s, ctx, 0, x))
        require(Not(in_flight(s, ctx, 0, x)))
        if ctx.lease_changes:  # the trigger carries a copy of x's lease of r1 for r2
            lease = s.lseq[0][x]
            s.lholder[1][1], s.lstart[1][1], s.lexp[1][1] = x, s.lstart[0][lease], \
                s.lexp[0][lease]
        if at_eval:  # the closed ts a proposal flushed now would carry, put in the trigger
            s.wevc[X] = Max(s.assigned_closed[0][x],
                            Min(closed_target(s, ctx, x), ceiling(s, ctx, 0, x)))
        stamp_lease(s, ctx, 0, x, X)
        if ctx.proposers > 1:
            s.wnode[X] = x
        enqueue(s, ctx, 0, x, X)

    def apply_split(s: Any, n: int, ok: Any, first: Any) -> None:
        """Replica (r1, n) accepted the split (when `ok`): n's r2 replica starts."""
        if zero:
            start = NIL
        elif at_eval:
            start = s.wevc[X]
        else:  # the carried closed ts, forwarded to the r1 replica's (§5.1 splitPreApply)
            start = Max(s.wcts[X], effective_closed(s, ctx, 0, n))
        s.span_changed[n] = Or(s.span_changed[n], ok)
        s.closed[1][n] = If(ok, start, s.closed[1][n])
        # every claim on r1 so far covered r2's keys: r2 inherits them (ghost)
        s.split_base = If(first, s.claim_hi[0], s.split_base)
        s.claim_hi[1] = If(first, Max(s.claim_hi[1], s.claim_hi[0]), s.claim_hi[1])
        # the lease hook on n's new r2 replica seeds its proposal buffer if the lease
        # copy names n (OnLeaseChangeLocked with the r2 replica's closed ts)
        if n < ctx.proposers:
            named = s.lholder[1][1] == n if ctx.lease_changes else n == 0
            seeded = And(ok, named)
            s.assigned_closed[1][n] = If(seeded, NIL if zero else s.closed[1][n],
                                         s.assigned_closed[1][n])

    ctx.hooks["apply_struct"][X] = apply_split

    def SplitRHSAboveClaims(before, after):  # noqa: N802 - property names are CamelCase
        """A replica's r2 starts at or above every closed ts claimed on r1 before the
        split (reference A14, A6)."""
        return ForAll(range(N), lambda n: Implies(
            And(Not(before.span_changed[n]), after.span_changed[n]),
            after.closed[1][n] >= after.split_base))

    m.step_invariant(SplitRHSAboveClaims)

"""Splits and merges in the 2018 design (RFC "Splits/Merges"; reference §5, V5, V6).

Both reuse the log-driven vocabulary: the structural command is proposal
`ctx.struct_ids[0]` of range r1, `span_changed[n]` says whether node n's r1 replica
applied it, and the shared Raft component calls its `apply_struct` hook.

**Split.** r1 (leaseholder n1) splits at `split_key`. The split is an r1 proposal
through n1's MPT (no r1 write evaluates while it is pending: latches) and n1 also feeds
its MPT an MLAI for r2 ("an update for the RHS is added to the next round"). When a
replica applies it, its r2 replica starts with `initialMaxClosed`: the closed ts its r1
replica serves just below the split's LAI (the LHS's closed state). Every update that
lets r1 serve at that LAI was sent before the split was released into the MPT, so
before any r2 write. SplitInitAtSplitLAI computes it at the split's LAI instead, as
`splitPostApply` does once the split applied: an update sent after r2 took writes can
then set r2's start (reference §5.1, V6).

**Merge.** r2 (leaseholder n1, the origin) merges into r1 (leaseholder `init_holder`,
another store whose closed ts is not modelled). `Subsume` freezes r2 and returns the
closed ts n1 has committed to: `next`, since the MPT forces every new proposal above
it (returning the last closed ts would miss an update already underway). The merged
range forwards writes to r2's keys above it ("the merging replica takes it into
account"). While subsumed, r2 publishes only an MLAI it can never reach, LAI + 1,
which Subsume itself feeds into the MPT (#50265); SubsumedKeepsEmitting publishes the
real LAI and feeds nothing (#44878).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.follower_reads_2018 import mpt, reads
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1, holds_lease, rng
from spec.log_driven.parts import Ctx, WPhase


def _settled(s: Any, ctx: Ctx, g: int) -> Any:
    """No write of range g holds its latches: none is evaluating, or proposed and not
    yet applied on n1. Without reproposals an entry at or below n1's LAI is decided;
    with them, one n1 rejected may come back (reproposals.py), so a write is settled
    only once n1 accepted it or it gave up."""
    def done(w: int) -> Any:
        if ctx.reproposals:
            return Or(s.wphase[w] == WPhase.failed,
                      And(s.wphase[w] == WPhase.flushed, s.has[ORIGIN][w]))
        return And(s.wphase[w] == WPhase.flushed, s.wlai[w] <= s.lai[g][ORIGIN])

    return ForAll(range(ctx.writes), lambda w: Implies(rng(s, ctx, w) == g, Or(
        s.wphase[w] == WPhase.idle, done(w))))


def _propose_struct(s: Any, ctx: Ctx, v: V1) -> None:
    X = ctx.struct_ids[0]
    s.assigned_lai[0] = s.assigned_lai[0] + 1
    s.wlai[X] = s.assigned_lai[0]
    s.wseq[X] = s.lcount[0]
    s.wphase[X] = WPhase.flushed


def add_split(m: Any, ctx: Ctx, v: V1) -> None:
    N, X = v.nodes, ctx.struct_ids[0]
    ts_hi = v.max_ts + 1
    m.var("span_changed", Array(Bool(), N), init=False,
          doc="node n's r1 replica applied the split (its r2 replica exists)")
    m.var("init_closed", Array(Int(NONE, ts_hi), N), init=NONE,
          doc="r2 replica's initialMaxClosed, from its r1 replica at the split")
    v.initial_closed.append(lambda s, g, n: s.init_closed[n] if g == 1 else NONE)
    at_split = v.mutated("SplitInitAtSplitLAI")
    v.may_write.append(lambda s, g: s.wphase[X] == WPhase.idle if g == 0 else True)

    @m.action()
    def split(s):
        """n1 evaluates the split of r1 under latches and proposes it through the MPT;
        it also feeds the MPT r2's LAI, so r2 is in the next round of updates."""
        require(s.wphase[X] == WPhase.idle)
        require(holds_lease(s, 0, ORIGIN))
        require(_settled(s, ctx, 0))
        require(s.assigned_lai[0] < v.lai_hi)
        _propose_struct(s, ctx, v)
        mpt.track_and_release(s, v, s.epoch[ORIGIN], 0, s.wlai[X])
        mpt.track_and_release(s, v, s.epoch[ORIGIN], 1, s.assigned_lai[1])

    def apply_split(s: Any, n: int, ok: Any, first: Any) -> None:
        """Replica (r1, n) accepted the split (when `ok`): n's r2 replica starts from the
        closed ts its r1 replica serves just below the split's LAI."""
        below = None if at_split else s.wlai[X] - 1
        lhs = reads.served_closed(s, v, 0, n, lai=below) if n != ORIGIN else NONE
        s.init_closed[n] = If(And(ok, Not(s.span_changed[n])), lhs, s.init_closed[n])
        s.span_changed[n] = Or(s.span_changed[n], ok)

    ctx.hooks["apply_struct"][X] = apply_split

    def SplitRHSStartsFromLHS(before, after):  # noqa: N802 - property names are CamelCase
        """V6: a replica's r2 starts from r1's closed state: at least the closed ts its
        r1 replica served before it applied the split."""
        return ForAll(range(1, N), lambda n: Implies(
            And(Not(before.span_changed[n]), after.span_changed[n]),
            after.init_closed[n] >= reads.served_closed(before, v, 0, n)))

    m.step_invariant(SplitRHSStartsFromLHS)


def add_merge(m: Any, ctx: Ctx, v: V1) -> None:
    N, X = v.nodes, ctx.struct_ids[0]
    ts_hi = v.max_ts + 1
    m.var("span_changed", Array(Bool(), N), init=False,
          doc="node n's r1 replica applied the merge (its r2 replica is gone)")
    m.var("subsumed", Bool(), init=False, doc="r2 is frozen by Subsume")
    m.var("merge_closed", Int(NONE, ts_hi), init=NONE, doc="the closed ts Subsume returned")
    m.var("merge_lai", Int(0, v.lai_hi), init=0, doc="r2's LAI at Subsume")
    m.var("rhs_floor", Int(NONE, ts_hi), init=NONE,
          doc="r1's leaseholder: writes to r2's keys must be above it")
    keeps_emitting = v.mutated("SubsumedKeepsEmitting")
    v.may_write.append(lambda s, g: Not(s.subsumed) if g == 1 else True)
    v.write_floor.append(lambda s, g, k: s.rhs_floor + 1 if g == 0 and ctx.rhs(k) else 0)
    if not keeps_emitting:
        v.publish.append(lambda s, g, lai: If(s.subsumed, lai + 1, lai) if g == 1 else lai)

    @m.action()
    def subsume(s):
        """n1 freezes r2 and returns its LAI and the closed ts n1 has committed to."""
        require(Not(s.subsumed))
        require(holds_lease(s, 1, ORIGIN))
        require(_settled(s, ctx, 1))
        s.subsumed = True
        s.merge_closed = s.mpt_next
        s.merge_lai = s.lai[1][ORIGIN]
        if not keeps_emitting:  # r2's unreachable MLAI goes out with the next updates
            mpt.track_and_release(s, v, s.epoch[ORIGIN], 1, s.merge_lai + 1)

    @m.action(h=range(1, N))
    def merge(s, h):
        """r1's leaseholder h evaluates the merge once every r2 replica caught up to
        Subsume's LAI (AdminMerge's waitForApplication) and proposes it."""
        require(And(s.subsumed, s.wphase[X] == WPhase.idle, holds_lease(s, 0, h)))
        require(ForAll(range(N), lambda n: s.lai[1][n] >= s.merge_lai))
        require(s.assigned_lai[0] < v.lai_hi)
        _propose_struct(s, ctx, v)

    def apply_merge(s: Any, n: int, ok: Any, first: Any) -> None:
        """Replica (r1, n) accepted the merge (when `ok`); on r1's leaseholder, writes to
        r2's keys are forwarded above Subsume's closed ts."""
        s.span_changed[n] = Or(s.span_changed[n], ok)
        on_lh = And(ok, s.lholder[0][s.lcount[0]] == n)
        s.rhs_floor = If(on_lh, Max(s.rhs_floor, s.merge_closed), s.rhs_floor)

    ctx.hooks["apply_struct"][X] = apply_merge

    def SubsumedPublishesUnreachable(s):  # noqa: N802 - property names are CamelCase
        """V5: once r2 is subsumed, a receiver with a closed ts of n1 past the one Subsume
        returned knows only an MLAI for r2 that r2 can never reach."""
        return ForAll(range(1, N), lambda n: Implies(
            And(s.subsumed, s.rc_closed[n] > s.merge_closed, s.rc_mlai[n][1] != NONE),
            s.rc_mlai[n][1] > s.merge_lai))

    m.invariant(SubsumedPublishesUnreachable)

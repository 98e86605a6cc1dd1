"""The follower-read rule (RFC "Reference-level explanation": the four steps).

To serve a read at ts T, a replica looks up its *applied* lease's node and epoch,
then the closed-timestamp state it has for that node and epoch; it serves if T is at
or below the closed ts and its LAI has reached the range's MLAI (no MLAI: refuse).
This becomes the log-driven spec's `effective_closed` hook, so its `read` action and
its `NoStaleRead` invariant are shared unchanged. Only n1's updates are modelled, so
reads under another node's lease are refused. IgnoreEpoch skips the epoch match.
With `keep_previous` (the RFC's "Lagging followers" fix), a replica that has not
reached the current MLAI may use the previous closed ts if it reached that one's.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, ForAll, If, Implies, Max
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1
from spec.log_driven.parts import Ctx


def served_closed(s: Any, v: V1, g: int, n: Any, check_epoch: bool = True,
                  lai: Any = None) -> Any:
    """The closed ts replica (g, n) may serve follower reads at (-1: none); `lai`
    replaces the replica's applied LAI."""
    lai = s.lai[g][n] if lai is None else lai
    j = s.lseq[g][n]
    view = And(s.lholder[g][j] == ORIGIN, s.rc_epoch[n] != 0)
    if check_epoch:
        view = And(view, s.rc_epoch[n] == s.lepoch[g][j])
    mlai = s.rc_mlai[n][g]
    current = If(And(view, mlai != NONE, lai >= mlai), s.rc_closed[n], NONE)
    if v.keep_previous:
        prev = s.rc_prev_mlai[n][g]
        previous = If(And(view, prev != NONE, lai >= prev), s.rc_prev_closed[n], NONE)
        current = If(current != NONE, current, previous)
    for hook in v.initial_closed:  # a split's right-hand side starts from the left's
        current = Max(current, hook(s, g, n))
    return current


def add(m: Any, ctx: Ctx, v: V1) -> None:
    check_epoch = not v.mutated("IgnoreEpoch")
    ctx.hooks["effective_closed"] = lambda s, g, n: NONE if n == ORIGIN else served_closed(
        s, v, g, n, check_epoch)

    def ReadsUseAppliedLease(s):  # noqa: N802 - property names are CamelCase
        """V3: a replica serves follower reads from n1's closed ts only under an applied
        lease of n1's, in the epoch of n1's state it has."""
        return ForAll([(g, n) for g in range(ctx.ranges) for n in range(1, v.nodes)],
                      lambda gn: Implies(
                          served_closed(s, v, gn[0], gn[1], check_epoch) > _initial(
                              s, v, gn[0], gn[1]),
                          And(s.lholder[gn[0]][s.lseq[gn[0]][gn[1]]] == ORIGIN,
                              s.rc_epoch[gn[1]] == s.lepoch[gn[0]][s.lseq[gn[0]][gn[1]]])))

    m.invariant(ReadsUseAppliedLease)


def _initial(s: Any, v: V1, g: int, n: int) -> Any:
    out = NONE
    for hook in v.initial_closed:
        out = Max(out, hook(s, g, n))
    return out

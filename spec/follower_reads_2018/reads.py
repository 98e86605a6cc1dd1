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

from checker.lang import And, ForAll, If, Implies
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1
from spec.log_driven.parts import Ctx


def served_closed(s: Any, v: V1, n: int, check_epoch: bool = True) -> Any:
    """The closed ts replica n may serve follower reads at (-1: none)."""
    j = s.lseq[n]
    view = s.lholder[j] == ORIGIN
    if check_epoch:
        view = And(view, s.rc_epoch[n] == s.lepoch[j])
    view = And(view, s.rc_epoch[n] != 0)
    mlai = s.rc_mlai[n][0]
    current = If(And(view, mlai != NONE, s.lai[n] >= mlai), s.rc_closed[n], NONE)
    if not v.keep_previous:
        return current
    prev = s.rc_prev_mlai[n][0]
    previous = If(And(view, prev != NONE, s.lai[n] >= prev), s.rc_prev_closed[n], NONE)
    return If(current != NONE, current, previous)


def add(m: Any, ctx: Ctx, v: V1) -> None:
    check_epoch = not v.mutated("IgnoreEpoch")
    ctx.hooks["effective_closed"] = lambda s, n: NONE if n == ORIGIN else served_closed(
        s, v, n, check_epoch)

    def ReadsUseAppliedLease(s):  # noqa: N802 - property names are CamelCase
        """V3: a replica serves follower reads only from the state of its applied
        lease's node and epoch."""
        return ForAll(range(1, v.nodes), lambda n: Implies(
            served_closed(s, v, n, check_epoch) != NONE,
            And(s.lholder[s.lseq[n]] == ORIGIN, s.rc_epoch[n] == s.lepoch[s.lseq[n]])))

    m.invariant(ReadsUseAppliedLease)

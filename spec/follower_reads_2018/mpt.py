"""The min proposal tracker (MPT) of the origin store (RFC "Constructing outgoing
updates"; reference §1.6).

`closed` is the last closed timestamp, `next` (always above it) the prospective next
one; new proposals are forced above `next`. Two sides, left (below `next`) and right
(at or above), each keep a reference count, an MLAI per range and an epoch. `Track`
adds a reference on the right; `release(epoch, range, lai)` drops a side's reference
and records the LAI on that side; `Close(newNext, epoch)` closes `next` only when the
left side has drained, emits the left side's MLAIs, and moves the right side left.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Not
from spec.follower_reads_2018.parts import NONE, V1


def declare(m: Any, v: V1) -> None:
    R, W, E = v.ranges, v.writes, v.epochs
    ts_hi = v.max_ts + 1
    m.var("mpt_closed", Int(0, ts_hi), init=0, doc="MPT: the last closed timestamp")
    m.var("mpt_next", Int(0, ts_hi), init=1, doc="MPT: the prospective next closed ts")
    m.var("left_ref", Int(0, W + 1), init=0, doc="MPT: proposals tracked below next")
    m.var("right_ref", Int(0, W + 1), init=0, doc="MPT: proposals tracked at or above next")
    m.var("left_mlai", Array(Int(NONE, v.lai_hi + 1), R), init=NONE, doc="MPT: left MLAIs")
    m.var("right_mlai", Array(Int(NONE, v.lai_hi + 1), R), init=NONE, doc="MPT: right MLAIs")
    m.var("left_epoch", Int(1, E), init=1, doc="MPT: epoch of the left side")
    m.var("right_epoch", Int(1, E), init=1, doc="MPT: epoch of the right side")
    m.var("wmpt", Array(Bool(), W), init=False, doc="the write is tracked by n1's MPT")
    m.var("wleft", Array(Bool(), W), init=False, doc="a tracked write is on the left side")
    v.register("ts", lambda s: s.mpt_closed, lambda s, x: setattr(s, "mpt_closed", x))
    v.register("ts", lambda s: s.mpt_next, lambda s, x: setattr(s, "mpt_next", x))
    for r in range(R):
        for side in ("left_mlai", "right_mlai"):
            v.register("lai", lambda s, side=side, r=r: getattr(s, side)[r],
                       lambda s, x, side=side, r=r: getattr(s, side).__setitem__(r, x),
                       lambda s, side=side, r=r: getattr(s, side)[r] != NONE)


def track(s: Any, w: int) -> Any:
    """`Track()`: a reference on the right; returns the lowest ts the proposal may
    take (`next.Next()`: "new commands are forced above next")."""
    s.right_ref = s.right_ref + 1
    s.wmpt[w] = True
    s.wleft[w] = False
    return s.mpt_next + 1


def release(s: Any, v: V1, left: Any, epoch: Any, r: int, lai: Any, when: Any = True) -> None:
    """`release(epoch, rangeID, lai)` on the side the proposal was tracked on (§1.6), if
    `when`: a newer epoch resets a side's MLAIs; an older one records nothing."""
    renew_left = And(when, left, epoch > s.left_epoch)
    renew_right = And(when, epoch > s.right_epoch)
    for q in range(v.ranges):
        s.left_mlai[q] = If(renew_left, NONE, s.left_mlai[q])
        s.right_mlai[q] = If(renew_right, NONE, s.right_mlai[q])
    s.left_epoch = If(renew_left, epoch, s.left_epoch)
    s.right_epoch = If(renew_right, epoch, s.right_epoch)
    s.left_ref = If(And(when, left), s.left_ref - 1, s.left_ref)
    s.right_ref = If(And(when, Not(left)), s.right_ref - 1, s.right_ref)
    record_left = And(when, left, epoch >= s.left_epoch)
    record_right = And(when, Not(left), epoch >= s.right_epoch)
    s.left_mlai[r] = If(record_left, Max(s.left_mlai[r], lai), s.left_mlai[r])
    s.right_mlai[r] = If(record_right, Max(s.right_mlai[r], lai), s.right_mlai[r])


def track_and_release(s: Any, v: V1, epoch: Any, r: int, lai: Any) -> None:
    """A proposal tracked and given its LAI at once (a lease transfer, an MLAI
    refresh): it lands on the right side."""
    s.right_ref = s.right_ref + 1
    release(s, v, False, epoch, r, lai)


def close(s: Any, v: V1, new_next: Any, epoch: Any, W: int) -> tuple[Any, list[Any]]:
    """`Close(newNext, expEpoch)`; returns (ok, the emitted MLAIs). Closing needs the
    left side drained and `next < newNext`; then the right side moves left."""
    can = And(s.left_ref == 0, s.mpt_next < new_next)
    closes = And(can, s.left_epoch <= epoch)
    ok = And(closes, s.left_epoch == epoch)
    emitted = [s.left_mlai[r] for r in range(v.ranges)]
    s.mpt_closed = If(closes, s.mpt_next, s.mpt_closed)
    stale_right = s.right_epoch < epoch
    for r in range(v.ranges):
        right = If(stale_right, NONE, s.right_mlai[r])
        s.left_mlai[r] = If(can, right, s.left_mlai[r])
        s.right_mlai[r] = If(can, NONE, s.right_mlai[r])
    right_epoch = If(stale_right, epoch, s.right_epoch)
    s.left_epoch = If(can, right_epoch, s.left_epoch)
    s.right_epoch = If(can, right_epoch, s.right_epoch)
    s.left_ref = If(can, s.right_ref, s.left_ref)
    s.right_ref = If(can, 0, s.right_ref)
    s.mpt_next = If(can, new_next, s.mpt_next)
    for w in range(W):
        s.wleft[w] = If(And(can, s.wmpt[w]), True, s.wleft[w])
    return ok, emitted


def add_invariants(m: Any, v: V1, tracked: Any) -> None:
    W = v.writes

    def MPTRefCounts(s):  # noqa: N802 - property names are CamelCase
        """Each side's reference count is the number of proposals tracked on it."""
        def count(left: bool) -> Any:
            total = 0
            for w in range(W):
                total = total + If(And(tracked(s, w), s.wleft[w] == left), 1, 0)
            return total
        return And(s.left_ref == count(True), s.right_ref == count(False))

    def TrackedAboveClosed(s):  # noqa: N802
        """A proposal tracked on the right is above `next`, one on the left above
        `closed`: the MPT never closes a timestamp with a proposal at or below it."""
        return ForAll(range(W), lambda w: Implies(
            tracked(s, w), s.wts[w] > If(s.wleft[w], s.mpt_closed, s.mpt_next)))

    m.invariant(MPTRefCounts)
    m.invariant(TrackedAboveClosed)

"""The side transport: closed timestamps for inactive ranges, off the Raft log.

Sender (n1, the leaseholder; RFC "Side-transport for inactive ranges", ground
truth §4.1, §4.3): each `publish` tries to bump the range's closed ts to the
target. The bump needs a valid lease with the target below its expiration,
nothing in flight (flushed but not applied on n1), nothing evaluating at or
below the target (the tracker's lower bound), and a target above the assigned
closed ts, which it then raises. A range whose bump succeeds is tracked with
n1's applied LAI; one whose bump fails is removed. Every publish is a message
with a sequence number on a stream to each other node; the first message on a
stream is a full snapshot, later ones are deltas. A stream may break, losing
its queue and the receiver's state; the next message is a snapshot again.

Receiver (§4.2, §3.4): a message applies in order (removal first, with the
previous closed ts). Its (closed, LAI) is usable by the replica only once the
replica has applied that LAI: the RFC ignores an update for an unapplied LAI,
the implementation stashes it and promotes it when the LAI applies
(`side_unapplied` switch).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, Enum, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.log_driven.parts import NIL, Ctx, WPhase, tracked
from spec.log_driven.policy import ceiling, closed_target, lease_ok

Entry = Enum("Entry", "none upsert remove")


def add(m: Any, p: Any, ctx: Ctx) -> None:
    N, W, P = ctx.nodes, ctx.writes, p.publishes
    ts = Int(NIL, ctx.closed_hi)
    lai = Int(0, W)
    stash = p.side_unapplied == "stash"
    m.var("pub_seq", Int(0, P), init=0, doc="side transport: the sender's last sequence number")
    m.var("pub_tracked", Bool(), init=False, doc="the range is in the sender's tracked set")
    m.var("pub_lai", lai, init=0, doc="the LAI the sender tracks the range at")
    m.var("pub_closed", ts, init=NIL, doc="the sender's last group closed ts")
    m.var("hist_closed", Array(ts, P + 1), init=NIL, ghost=True,
          doc="the sender's closed ts after each publish (A13)")
    m.var("hist_tracked", Array(Bool(), P + 1), init=False, ghost=True, doc="tracked after each")
    m.var("hist_lai", Array(lai, P + 1), init=0, ghost=True, doc="tracked LAI after each")
    # one stream per receiving node; node 0 (the sender) keeps its own slot unused
    m.var("q_len", Array(Int(0, P), N), init=0, doc="messages queued on the stream to each node")
    m.var("q_seq", Array(Array(Int(0, P), P), N), init=0, doc="queued messages: sequence number")
    m.var("q_snap", Array(Array(Bool(), P), N), init=False, doc="queued: is a full snapshot")
    m.var("q_closed", Array(Array(ts, P), N), init=NIL, doc="queued: group closed ts")
    m.var("q_entry", Array(Array(Entry, P), N), init=Entry.none, doc="queued: the range's entry")
    m.var("q_lai", Array(Array(lai, P), N), init=0, doc="queued: the range's LAI")
    m.var("fresh", Array(Bool(), N), init=True, doc="the stream's next message is a snapshot")
    m.var("rv_ok", Array(Bool(), N), init=False, doc="receiver has state for the stream")
    m.var("rv_seq", Array(Int(0, P), N), init=0, doc="receiver: last sequence applied")
    m.var("rv_closed", Array(ts, N), init=NIL, doc="receiver: group closed ts")
    m.var("rv_tracked", Array(Bool(), N), init=False, doc="receiver: range tracked")
    m.var("rv_lai", Array(lai, N), init=0, doc="receiver: the range's LAI")
    m.var("side_ts", Array(ts, N), init=NIL, doc="replica's usable side closed ts (cur)")
    m.var("side_lai", Array(lai, N), init=0, doc="the LAI side_ts refers to")
    if stash:
        m.var("next_ts", Array(ts, N), init=NIL, doc="stashed side closed ts (next)")
        m.var("next_lai", Array(lai, N), init=0, doc="the not-yet-applied LAI it refers to")

    no_inflight_check = ctx.mutated("SideCloseWithInflight")
    no_floor = ctx.mutated("SideCloseNoFloorRaise")
    keep_failed = ctx.mutated("SenderKeepsFailedRange")
    gaps_ok = ctx.mutated("DeltaAfterGap")
    ignore_lai = ctx.mutated("SideIgnoresAppliedLAI")

    def offer(s: Any, n: int, closed: Any, at: Any, usable: Any) -> None:
        """Replica n learns side closed ts `closed` for LAI `at` (§3.4 forward)."""
        applied = Or(at <= s.lai[n], ignore_lai)
        take = And(usable, applied, closed > s.side_ts[n])
        s.side_ts[n] = If(take, closed, s.side_ts[n])
        s.side_lai[n] = If(take, at, s.side_lai[n])
        if stash:
            later = And(usable, Not(applied), closed > s.next_ts[n])
            s.next_ts[n] = If(later, closed, s.next_ts[n])
            s.next_lai[n] = If(later, at, s.next_lai[n])

    def promote(s: Any, n: int) -> None:
        """A stashed update becomes usable once its LAI has applied."""
        if stash:
            ready = And(s.next_ts[n] != NIL, s.next_lai[n] <= s.lai[n])
            s.side_ts[n] = If(ready, Max(s.side_ts[n], s.next_ts[n]), s.side_ts[n])
            s.side_lai[n] = If(ready, s.next_lai[n], s.side_lai[n])
            s.next_ts[n] = If(ready, NIL, s.next_ts[n])
            s.next_lai[n] = If(ready, 0, s.next_lai[n])

    ctx.hooks["after_apply"].append(promote)
    def effective_closed(s: Any, n: Any) -> Any:
        """Replica n serves reads at its Raft closed ts or n1's side closed ts, the latter
        only while its applied lease is n1's: only that stream is consulted (§3.3)."""
        side = s.side_ts[n]
        if ctx.lease_changes:
            side = If(s.lholder[s.lseq[n]] == 0, side, NIL)
        return Max(s.closed[n], side)

    ctx.hooks["effective_closed"] = effective_closed
    ctx.hooks["extra_claims"] = True

    @m.action()
    def publish(s):
        """n1 tries to bump the range's closed ts and publishes the result (§4.1, §4.3)."""
        require(s.pub_seq < P)
        target = closed_target(s, ctx)
        inflight = in_flight(s, W)
        if ctx.lease_changes:  # a transfer is a proposal too, in flight until n1 applies it
            inflight = Or(inflight, *[And(j <= s.lcount, s.llai[j] > s.lai[0])
                                      for j in range(2, ctx.lease_changes + 2)])
        lb_ok = ForAll(range(W), lambda q: Implies(tracked(s, q), s.wts[q] > target))
        ok = And(target <= ceiling(s, ctx, node=0), lb_ok, target > s.assigned_closed,
                 lease_ok(s, ctx, node=0),
                 True if no_inflight_check else Not(inflight))
        here = s.lai[0]
        if not no_floor:
            raise_floor = And(ok, s.lh == 0) if ctx.lease_changes else ok  # n1's own buffer
            s.assigned_closed = If(raise_floor, target, s.assigned_closed)
        s.claim_hi = If(ok, Max(s.claim_hi, target), s.claim_hi)
        s.side_ts[0] = If(ok, Max(s.side_ts[0], target), s.side_ts[0])
        s.side_lai[0] = If(ok, here, s.side_lai[0])
        removed = And(Not(ok), s.pub_tracked, not keep_failed)
        upsert = And(ok, Or(Not(s.pub_tracked), s.pub_lai != here))
        s.pub_tracked = If(ok, True, If(removed, False, s.pub_tracked))
        s.pub_lai = If(ok, here, s.pub_lai)
        s.pub_closed = target
        s.pub_seq = s.pub_seq + 1
        seq = s.pub_seq
        s.hist_closed[seq] = s.pub_closed
        s.hist_tracked[seq] = s.pub_tracked
        s.hist_lai[seq] = s.pub_lai
        entry = If(removed, Entry.remove, If(upsert, Entry.upsert, Entry.none))
        for n in range(1, N):
            k = s.q_len[n]
            snap = s.fresh[n]
            s.q_seq[n][k] = seq
            s.q_snap[n][k] = snap
            s.q_closed[n][k] = s.pub_closed
            s.q_entry[n][k] = If(snap, If(s.pub_tracked, Entry.upsert, Entry.none), entry)
            s.q_lai[n][k] = s.pub_lai
            s.q_len[n] = k + 1
            s.fresh[n] = False

    @m.action(n=range(1, N))
    def deliver(s, n):
        """Node n's receiver applies the next message of n1's stream (§4.2)."""
        require(s.q_len[n] > 0)
        snap, seq = s.q_snap[n][0], s.q_seq[n][0]
        closed, entry, at = s.q_closed[n][0], s.q_entry[n][0], s.q_lai[n][0]
        in_order = And(s.rv_ok[n], seq == s.rv_seq[n] + 1)
        require(Or(snap, in_order, gaps_ok))  # a gap cannot happen on one stream
        # a removal first hands the previous closed ts over, for the previous LAI
        offer(s, n, s.rv_closed[n], s.rv_lai[n],
              And(s.rv_ok[n], s.rv_tracked[n], entry == Entry.remove))
        tracked_now = If(snap, entry == Entry.upsert,
                         If(entry == Entry.upsert, True,
                            If(entry == Entry.remove, False, s.rv_tracked[n])))
        s.rv_lai[n] = If(tracked_now, If(entry == Entry.upsert, at, s.rv_lai[n]), 0)
        s.rv_tracked[n] = tracked_now
        s.rv_closed[n] = closed
        s.rv_seq[n] = seq
        s.rv_ok[n] = True
        offer(s, n, closed, s.rv_lai[n], tracked_now)
        for i in range(P - 1):
            s.q_seq[n][i] = s.q_seq[n][i + 1]
            s.q_snap[n][i] = s.q_snap[n][i + 1]
            s.q_closed[n][i] = s.q_closed[n][i + 1]
            s.q_entry[n][i] = s.q_entry[n][i + 1]
            s.q_lai[n][i] = s.q_lai[n][i + 1]
        last = P - 1
        s.q_seq[n][last], s.q_snap[n][last], s.q_closed[n][last] = 0, False, NIL
        s.q_entry[n][last], s.q_lai[n][last] = Entry.none, 0
        s.q_len[n] = s.q_len[n] - 1

    if p.stream_breaks:
        @m.action(n=range(1, N))
        def break_stream(s, n):
            """The stream to node n breaks: its queued messages are lost, and so is the
            receiver's state; the next message, on a new stream, is a snapshot. Under
            DeltaAfterGap the receiver keeps its state and takes the next delta."""
            require(s.q_len[n] > 0)
            for i in range(P):
                s.q_seq[n][i], s.q_snap[n][i], s.q_closed[n][i] = 0, False, NIL
                s.q_entry[n][i], s.q_lai[n][i] = Entry.none, 0
            s.q_len[n] = 0
            if not gaps_ok:
                s.rv_ok[n], s.rv_seq[n], s.rv_closed[n] = False, 0, NIL
                s.rv_tracked[n], s.rv_lai[n] = False, 0
                s.fresh[n] = True

    def SideClaimUsedOnlyOnceApplied(s):  # noqa: N802 - property names are CamelCase
        """A replica uses a side-transport closed ts only for an LAI it has applied (A5)."""
        return ForAll(range(N), lambda n: s.side_lai[n] <= s.lai[n])

    def ReceiverMatchesSender(s):  # noqa: N802
        """After each delivered message, the receiver's state equals the sender's state
        after the publish that produced it (A13)."""
        return ForAll(range(1, N), lambda n: Implies(s.rv_ok[n], And(
            s.rv_closed[n] == s.hist_closed[s.rv_seq[n]],
            s.rv_tracked[n] == s.hist_tracked[s.rv_seq[n]],
            Implies(s.rv_tracked[n], s.rv_lai[n] == s.hist_lai[s.rv_seq[n]]))))

    m.invariant(SideClaimUsedOnlyOnceApplied)
    m.invariant(ReceiverMatchesSender)


def in_flight(s: Any, writes: int) -> Any:
    """Some proposal is in flight: flushed, but not yet applied on n1 (§4.3 step 6)."""
    return Or(*[And(s.wphase[w] == WPhase.flushed, s.wlai[w] > s.lai[0]) for w in range(writes)])

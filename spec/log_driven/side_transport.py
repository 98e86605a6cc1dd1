"""The side transport: closed timestamps for inactive ranges, off the Raft log.

Sender (n1; RFC "Side-transport for inactive ranges", reference §4.1,
§4.3): each `publish` tries to bump the closed ts of every range n1 leads to
the target. A bump needs a valid lease with the target below its expiration,
nothing in flight (flushed but not applied on n1), nothing evaluating at or
below the target (the tracker's lower bound), a range not frozen by a merge,
and a target above the assigned closed ts, which it then raises. A range whose
bump succeeds is tracked with n1's applied LAI; one whose bump fails is
removed. All ranges share one policy group, so one message carries them all.
Every publish is a message with a sequence number on a stream to each other
node; the first message on a stream is a full snapshot, later ones are deltas.
A stream may break, losing its queue and the receiver's state; the next
message is a snapshot again.

Receiver (§4.2, §3.4): a message applies in order (removal first, with the
previous closed ts). Its (closed, LAI) is usable by the replica only once the
replica has applied that LAI: the RFC ignores an update for an unapplied LAI,
the implementation stashes it and promotes it when the LAI applies
(`side_unapplied` switch). An update for a replica its node does not have yet
(a split's right-hand side not applied there) is dropped: a replica created
later waits for the next message (the implementation would look it up then).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, Enum, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.log_driven.parts import NIL, Ctx, exists, tracked_in
from spec.log_driven.policy import ceiling, closed_target, lease_ok
from spec.log_driven.proposals import in_flight

Entry = Enum("Entry", "none upsert remove")


def add(m: Any, p: Any, ctx: Ctx) -> None:
    N, W, P, G = ctx.nodes, ctx.writes, p.publishes, ctx.ranges
    ts = Int(NIL, ctx.closed_hi)
    lai = Int(0, ctx.max_lai)
    stash = p.side_unapplied == "stash"
    m.var("pub_seq", Int(0, P), init=0, doc="side transport: the sender's last sequence number")
    m.var("pub_tracked", Array(Bool(), G), init=False, doc="each range in the sender's set")
    m.var("pub_lai", Array(lai, G), init=0, doc="the LAI the sender tracks each range at")
    m.var("pub_closed", ts, init=NIL, doc="the sender's last group closed ts")
    m.var("hist_closed", Array(ts, P + 1), init=NIL, ghost=True,
          doc="the sender's closed ts after each publish (A13)")
    m.var("hist_tracked", Array(Array(Bool(), G), P + 1), init=False, ghost=True,
          doc="tracked after each")
    m.var("hist_lai", Array(Array(lai, G), P + 1), init=0, ghost=True,
          doc="tracked LAI after each")
    # one stream per receiving node; node 0 (the sender) keeps its own slot unused
    m.var("q_len", Array(Int(0, P), N), init=0, doc="messages queued on the stream to each node")
    m.var("q_seq", Array(Array(Int(0, P), P), N), init=0, doc="queued messages: sequence number")
    m.var("q_snap", Array(Array(Bool(), P), N), init=False, doc="queued: is a full snapshot")
    m.var("q_closed", Array(Array(ts, P), N), init=NIL, doc="queued: group closed ts")
    m.var("q_entry", Array(Array(Array(Entry, G), P), N), init=Entry.none,
          doc="queued: each range's entry")
    m.var("q_lai", Array(Array(Array(lai, G), P), N), init=0, doc="queued: each range's LAI")
    m.var("fresh", Array(Bool(), N), init=True, doc="the stream's next message is a snapshot")
    m.var("rv_ok", Array(Bool(), N), init=False, doc="receiver has state for the stream")
    m.var("rv_seq", Array(Int(0, P), N), init=0, doc="receiver: last sequence applied")
    m.var("rv_closed", Array(ts, N), init=NIL, doc="receiver: group closed ts")
    m.var("rv_tracked", Array(Array(Bool(), G), N), init=False, doc="receiver: range tracked")
    m.var("rv_lai", Array(Array(lai, G), N), init=0, doc="receiver: each range's LAI")
    m.var("side_ts", Array(Array(ts, N), G), init=NIL,
          doc="each replica's usable side closed ts (cur)")
    m.var("side_lai", Array(Array(lai, N), G), init=0, doc="the LAI side_ts refers to")
    if stash:
        m.var("next_ts", Array(Array(ts, N), G), init=NIL, doc="stashed side closed ts (next)")
        m.var("next_lai", Array(Array(lai, N), G), init=0,
              doc="the not-yet-applied LAI it refers to")

    no_inflight_check = ctx.mutated("SideCloseWithInflight")
    no_floor = ctx.mutated("SideCloseNoFloorRaise")
    keep_failed = ctx.mutated("SenderKeepsFailedRange")
    gaps_ok = ctx.mutated("DeltaAfterGap")
    ignore_lai = ctx.mutated("SideIgnoresAppliedLAI")

    def offer(s: Any, g: int, n: int, closed: Any, at: Any, usable: Any) -> None:
        """Replica (g, n) learns side closed ts `closed` for LAI `at` (§3.4 forward)."""
        usable = And(usable, exists(s, ctx, g, n))
        applied = Or(at <= s.lai[g][n], ignore_lai)
        take = And(usable, applied, closed > s.side_ts[g][n])
        s.side_ts[g][n] = If(take, closed, s.side_ts[g][n])
        s.side_lai[g][n] = If(take, at, s.side_lai[g][n])
        if stash:
            later = And(usable, Not(applied), closed > s.next_ts[g][n])
            s.next_ts[g][n] = If(later, closed, s.next_ts[g][n])
            s.next_lai[g][n] = If(later, at, s.next_lai[g][n])

    def promote(s: Any, g: int, n: int) -> None:
        """A stashed update becomes usable once its LAI has applied."""
        if stash:
            ready = And(s.next_ts[g][n] != NIL, s.next_lai[g][n] <= s.lai[g][n])
            s.side_ts[g][n] = If(ready, Max(s.side_ts[g][n], s.next_ts[g][n]), s.side_ts[g][n])
            s.side_lai[g][n] = If(ready, s.next_lai[g][n], s.side_lai[g][n])
            s.next_ts[g][n] = If(ready, NIL, s.next_ts[g][n])
            s.next_lai[g][n] = If(ready, 0, s.next_lai[g][n])

    ctx.hooks["after_apply"].append(promote)

    def effective_closed(s: Any, g: int, n: Any) -> Any:
        """Replica (g, n) serves reads at its Raft closed ts or n1's side closed ts, the
        latter only while its applied lease is n1's: only that stream is consulted (§3.3)."""
        side = s.side_ts[g][n]
        if ctx.lease_changes:
            side = If(s.lholder[g][s.lseq[g][n]] == 0, side, NIL)
        return Max(s.closed[g][n], side)

    ctx.hooks["effective_closed"] = effective_closed

    def bump(s: Any, g: int, target: Any) -> Any:
        """Whether n1's BumpSideTransportClosed succeeds for range g (§4.3)."""
        known = Max(s.lai[g][0], s.forgot[g]) if p.restarts else s.lai[g][0]
        inflight = in_flight(s, ctx, g, 0, known)
        if ctx.lease_changes:  # a transfer is a proposal too, in flight until n1 applies it
            inflight = Or(inflight, *[And(j <= s.lcount[g], s.llai[g][j] > known)
                                      for j in range(2, ctx.lease_changes + 2)])
        lb_ok = ForAll(range(W), lambda q: Implies(tracked_in(s, ctx, q, g), s.wts[q] > target))
        conds = [exists(s, ctx, g, 0), target <= ceiling(s, ctx, g, node=0), lb_ok,
                 target > s.assigned_closed[g], lease_ok(s, ctx, g, node=0),
                 True if no_inflight_check else Not(inflight)]
        if ctx.structure == "merge" and g == 1:
            conds.append(Not(s.subsumed))  # MergeInProgress
        return And(*conds)

    @m.action()
    def publish(s):
        """n1 tries to bump each range's closed ts and publishes the result (§4.1, §4.3)."""
        require(s.pub_seq < P)
        target = closed_target(s, ctx)
        entries = []
        for g in range(G):
            ok = bump(s, g, target)
            here = s.lai[g][0]
            if not no_floor:  # n1's own buffer, if n1 is the range's leaseholder
                raise_floor = And(ok, s.lh[g] == 0) if ctx.lease_changes else ok
                s.assigned_closed[g] = If(raise_floor, target, s.assigned_closed[g])
            s.claim_hi[g] = If(ok, Max(s.claim_hi[g], target), s.claim_hi[g])
            s.side_ts[g][0] = If(ok, Max(s.side_ts[g][0], target), s.side_ts[g][0])
            s.side_lai[g][0] = If(ok, here, s.side_lai[g][0])
            removed = And(Not(ok), s.pub_tracked[g], not keep_failed)
            upsert = And(ok, Or(Not(s.pub_tracked[g]), s.pub_lai[g] != here))
            s.pub_tracked[g] = If(ok, True, If(removed, False, s.pub_tracked[g]))
            s.pub_lai[g] = If(ok, here, s.pub_lai[g])
            entries.append(If(removed, Entry.remove, If(upsert, Entry.upsert, Entry.none)))
        s.pub_closed = target
        s.pub_seq = s.pub_seq + 1
        seq = s.pub_seq
        s.hist_closed[seq] = s.pub_closed
        for g in range(G):
            s.hist_tracked[seq][g] = s.pub_tracked[g]
            s.hist_lai[seq][g] = s.pub_lai[g]
        for n in range(1, N):
            k = s.q_len[n]
            snap = s.fresh[n]
            s.q_seq[n][k] = seq
            s.q_snap[n][k] = snap
            s.q_closed[n][k] = s.pub_closed
            for g in range(G):
                s.q_entry[n][k][g] = If(snap, If(s.pub_tracked[g], Entry.upsert, Entry.none),
                                        entries[g])
                s.q_lai[n][k][g] = s.pub_lai[g]
            s.q_len[n] = k + 1
            s.fresh[n] = False

    @m.action(n=range(1, N))
    def deliver(s, n):
        """Node n's receiver applies the next message of n1's stream (§4.2)."""
        require(s.q_len[n] > 0)
        snap, seq, closed = s.q_snap[n][0], s.q_seq[n][0], s.q_closed[n][0]
        in_order = And(s.rv_ok[n], seq == s.rv_seq[n] + 1)
        require(Or(snap, in_order, gaps_ok))  # a gap cannot happen on one stream
        previous = s.rv_closed[n]
        for g in range(G):
            entry, at = s.q_entry[n][0][g], s.q_lai[n][0][g]
            # a removal first hands the previous closed ts over, for the previous LAI
            offer(s, g, n, previous, s.rv_lai[n][g],
                  And(s.rv_ok[n], s.rv_tracked[n][g], entry == Entry.remove))
            tracked_now = If(snap, entry == Entry.upsert,
                             If(entry == Entry.upsert, True,
                                If(entry == Entry.remove, False, s.rv_tracked[n][g])))
            s.rv_lai[n][g] = If(tracked_now, If(entry == Entry.upsert, at, s.rv_lai[n][g]), 0)
            s.rv_tracked[n][g] = tracked_now
            offer(s, g, n, closed, s.rv_lai[n][g], tracked_now)
        s.rv_closed[n] = closed
        s.rv_seq[n] = seq
        s.rv_ok[n] = True
        for i in range(P - 1):
            s.q_seq[n][i] = s.q_seq[n][i + 1]
            s.q_snap[n][i] = s.q_snap[n][i + 1]
            s.q_closed[n][i] = s.q_closed[n][i + 1]
            for g in range(G):
                s.q_entry[n][i][g] = s.q_entry[n][i + 1][g]
                s.q_lai[n][i][g] = s.q_lai[n][i + 1][g]
        clear_slot(s, n, P - 1, G)
        s.q_len[n] = s.q_len[n] - 1

    if p.stream_breaks:
        @m.action(n=range(1, N))
        def break_stream(s, n):
            """The stream to node n breaks: its queued messages are lost, and so is the
            receiver's state; the next message, on a new stream, is a snapshot. Under
            DeltaAfterGap the receiver keeps its state and takes the next delta."""
            require(s.q_len[n] > 0)
            drop_stream(s, n, P, G, keep_receiver=gaps_ok)

    def SideClaimUsedOnlyOnceApplied(s):  # noqa: N802 - property names are CamelCase
        """A replica uses a side-transport closed ts only for an LAI it has applied (A5)."""
        return ForAll([(g, n) for g in range(G) for n in range(N)],
                      lambda gn: s.side_lai[gn[0]][gn[1]] <= s.lai[gn[0]][gn[1]])

    def ReceiverMatchesSender(s):  # noqa: N802
        """After each delivered message, the receiver's state equals the sender's state
        after the publish that produced it (A13)."""
        def matches(n: int) -> Any:
            seq = s.rv_seq[n]
            return And(s.rv_closed[n] == s.hist_closed[seq], *[And(
                s.rv_tracked[n][g] == s.hist_tracked[seq][g],
                Implies(s.rv_tracked[n][g], s.rv_lai[n][g] == s.hist_lai[seq][g]))
                for g in range(G)])
        return ForAll(range(1, N), lambda n: Implies(s.rv_ok[n], matches(n)))

    m.invariant(SideClaimUsedOnlyOnceApplied)
    m.invariant(ReceiverMatchesSender)


def drop_stream(s: Any, n: int, publishes: int, ranges: int, keep_receiver: bool = False) -> None:
    """The stream to node n is gone: its queue is lost and, unless `keep_receiver`
    (DeltaAfterGap), so is the receiver's state; the next stream starts with a snapshot."""
    for i in range(publishes):
        clear_slot(s, n, i, ranges)
    s.q_len[n] = 0
    if keep_receiver:
        return
    s.rv_ok[n], s.rv_seq[n], s.rv_closed[n] = False, 0, NIL
    for g in range(ranges):
        s.rv_tracked[n][g], s.rv_lai[n][g] = False, 0
    s.fresh[n] = True


def clear_slot(s: Any, n: int, i: int, ranges: int) -> None:
    """Empty queue slot i of the stream to node n."""
    s.q_seq[n][i], s.q_snap[n][i], s.q_closed[n][i] = 0, False, NIL
    for g in range(ranges):
        s.q_entry[n][i][g], s.q_lai[n][i][g] = Entry.none, 0

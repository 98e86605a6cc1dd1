"""The side transport: closed timestamps for inactive ranges, off the Raft log.

Senders (RFC "Side-transport for inactive ranges", reference §4.1, §4.3): nodes
n1..n`senders` each run one. Sender x bumps, at each `publish`, the ranges whose lease
it has applied and owns (its registered leaseholders) to its policy group's target. A
bump asks the replica for a valid lease with the target below its expiration, nothing in
flight (flushed but not applied on x), a tracker lower bound above the target
(`MaybeForwardClosedLocked`: it fails if the bound is set and at or below the target,
§2.8), a range not frozen by a merge, and a target above the assigned closed ts, which it
then raises. A range whose bump succeeds is tracked with x's applied LAI and its policy
group; one whose bump fails, or whose lease x no longer holds, is removed. So the
side-transport responsibility moves with the lease: the new holder starts tracking the
range at its next publish, the old one removes it. A message carries one closed ts per
policy group (LAG, and LEAD when the spec has a LEAD policy, `lead > 0`); a tracked range
gets its group's. Each sender has its own sequence numbers and its own stream to every
other node; the first message on a stream is a full snapshot, later ones are deltas. A
stream may break, losing its queue and the receiver's state for that sender; the next
message on it is a snapshot again.

Receivers (§4.2): a node keeps one state per sending node. A message applies in
order: removals first (each replica of a removed range on the receiving node is
forwarded the previous message's closed ts of the range's group, for its tracked LAI,
whatever lease it applied), then the new tracked set and closed ts. What a replica
serves reads at is its own side-transport state (`side_access.py`, one per replica
whichever sender fed it): `get` asks the node's receiver for the stream of the node
its applied lease names only when something asks for the replica's closed ts (the
`pull` action: a follower read, say). A (closed, LAI) is usable only once the replica
has applied that LAI: the RFC ignores an update for an unapplied LAI, the
implementation stashes it and promotes it when the LAI applies (`side_unapplied`
switch). An update for a replica its node does not have yet (a split's right-hand side
not applied there) is dropped: a replica created later asks again.

Scope: a node other than n1 publishes only while it is a registered leaseholder of some
range or still tracks one (n1 held the first leases, so its streams exist from the
start); a sender that lost all its leases keeps its streams (the implementation closes
them, which a receiver sees as a break).
"""

from __future__ import annotations

from typing import Any

from checker.errors import ModelError
from checker.lang import And, Array, Bool, Enum, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.log_driven.parts import NIL, Ctx, exists, owns_applied_lease, pick
from spec.log_driven.policy import ceiling, closed_target, expiration, lease_ok
from spec.log_driven.proposals import in_flight
from spec.log_driven.side_access import SideAccess

Entry = Enum("Entry", "none upsert remove")
GROUPS = ("LAG", "LEAD")  # policy groups: index 0 and 1

MECHANISM_5 = ("SideReceiverSharedAcrossSenders", "SenderKeepsMovedRange")


def validate(p: Any) -> None:
    """The side transport's parameters and mutations fit the model (called by `_build`)."""
    if p.senders > 1:
        if not p.side_transport:
            raise ModelError("senders > 1 needs side_transport = true")
        if not p.lease_changes:
            raise ModelError("senders > 1 needs lease_changes >= 1: only n1 holds a lease "
                             "otherwise")
        if p.senders > p.nodes:
            raise ModelError(f"senders={p.senders} must be <= nodes={p.nodes}")
    muts = p.mutations
    if "SideReceiverSharedAcrossSenders" in muts and p.senders < 2:
        raise ModelError("SideReceiverSharedAcrossSenders needs senders >= 2")
    if "SenderKeepsMovedRange" in muts and not p.lease_changes:
        raise ModelError("SenderKeepsMovedRange needs lease_changes >= 1")
    if "SideRangeGetsOtherGroup" in muts and not p.lead:
        raise ModelError("SideRangeGetsOtherGroup needs a LEAD policy group (lead > 0)")
    if "SideBumpReadsUpperBucket" in muts and p.tracker != "impl":
        raise ModelError("SideBumpReadsUpperBucket applies to tracker=impl")


def add(m: Any, p: Any, ctx: Ctx, tracker: Any) -> None:
    N, P, G, S = ctx.nodes, p.publishes, ctx.ranges, p.senders
    K = 2 if ctx.lead else 1  # policy groups
    ts = Int(NIL, ctx.closed_hi)
    lai = Int(0, ctx.max_lai)
    grp_t = Int(0, K - 1)
    stash = p.side_unapplied == "stash"
    m.var("pub_seq", Array(Int(0, P), S), init=0,
          doc="side transport: each sender's last sequence number")
    m.var("pub_tracked", Array(Array(Bool(), G), S), init=False,
          doc="each range in each sender's tracked set")
    m.var("pub_lai", Array(Array(lai, G), S), init=0, doc="the LAI a sender tracks a range at")
    if K > 1:
        m.var("pub_grp", Array(Array(grp_t, G), S), init=0,
              doc="the policy group a sender tracks a range in (0 LAG, 1 LEAD)")
    m.var("pub_closed", Array(Array(ts, K), S), init=NIL,
          doc="each sender's last closed ts per policy group")
    m.var("hist_closed", Array(Array(Array(ts, K), P + 1), S), init=NIL, ghost=True,
          doc="each sender's group closed ts after each publish (A13)")
    m.var("hist_tracked", Array(Array(Array(Bool(), G), P + 1), S), init=False, ghost=True,
          doc="tracked after each")
    m.var("hist_lai", Array(Array(Array(lai, G), P + 1), S), init=0, ghost=True,
          doc="tracked LAI after each")
    if K > 1:
        m.var("hist_grp", Array(Array(Array(grp_t, G), P + 1), S), init=0, ghost=True,
              doc="tracked group after each")
    m.var("hist_bump", Array(Array(Array(Int(NIL, ctx.max_lai), G), P + 1), S), init=NIL,
          ghost=True, doc="the sender's applied LAI at each publish's successful bump (-1: "
                          "no bump, or it failed)")
    if ctx.lease_changes:
        m.var("hist_lease", Array(Array(Array(Int(0, ctx.lease_changes + 1), G), P + 1), S),
              init=0, ghost=True, doc="the lease the sender had applied at each publish's "
                                      "successful bump (0: none), for the proofs")
    # one stream per (sender, receiving node); a sender's slot for itself stays unused
    m.var("q_len", Array(Array(Int(0, P), N), S), init=0,
          doc="messages queued on each stream")
    m.var("q_seq", Array(Array(Array(Int(0, P), P), N), S), init=0,
          doc="queued messages: sequence number")
    m.var("q_snap", Array(Array(Array(Bool(), P), N), S), init=False,
          doc="queued: is a full snapshot")
    m.var("q_closed", Array(Array(Array(Array(ts, K), P), N), S), init=NIL,
          doc="queued: closed ts per group")
    m.var("q_entry", Array(Array(Array(Array(Entry, G), P), N), S), init=Entry.none,
          doc="queued: each range's entry")
    m.var("q_lai", Array(Array(Array(Array(lai, G), P), N), S), init=0,
          doc="queued: each range's LAI")
    if K > 1:
        m.var("q_grp", Array(Array(Array(Array(grp_t, G), P), N), S), init=0,
              doc="queued: each range's group")
    m.var("fresh", Array(Array(Bool(), N), S), init=True,
          doc="the stream's next message is a snapshot")
    m.var("rv_ok", Array(Array(Bool(), N), S), init=False,
          doc="the receiver has state for the stream")
    m.var("rv_seq", Array(Array(Int(0, P), N), S), init=0, doc="receiver: last sequence applied")
    m.var("rv_closed", Array(Array(Array(ts, K), N), S), init=NIL,
          doc="receiver: closed ts per group")
    m.var("rv_tracked", Array(Array(Array(Bool(), G), N), S), init=False,
          doc="receiver: range tracked")
    m.var("rv_lai", Array(Array(Array(lai, G), N), S), init=0, doc="receiver: each range's LAI")
    if K > 1:
        m.var("rv_grp", Array(Array(Array(grp_t, G), N), S), init=0,
              doc="receiver: each range's group")
    access = SideAccess(ctx, stash)
    access.declare(m)

    no_inflight_check = ctx.mutated("SideCloseWithInflight")
    no_floor = ctx.mutated("SideCloseNoFloorRaise")
    keep_failed = ctx.mutated("SenderKeepsFailedRange")
    gaps_ok = ctx.mutated("DeltaAfterGap")
    shared = ctx.mutated("SideReceiverSharedAcrossSenders")
    keep_moved = ctx.mutated("SenderKeepsMovedRange")
    break_forgets = ctx.mutated("SideBreakForgetsCopies")
    other_group = ctx.mutated("SideRangeGetsOtherGroup")
    upper_bucket = ctx.mutated("SideBumpReadsUpperBucket")
    equal_ok = ctx.mutated("SideBumpAtLowerBound")
    removal_new = ctx.mutated("SideRemovalWithNewClosed")

    def view(x: int) -> int:
        """The receiver-state slot that holds sender x's stream (all in one under
        SideReceiverSharedAcrossSenders)."""
        return 0 if shared else x

    def group_of(grp: Any) -> Any:
        """The group a receiver looks up for a range in `grp` (SideRangeGetsOtherGroup:
        always the last group of the message, LEAD)."""
        return K - 1 if other_group else grp

    def rv_range_closed(s: Any, r: int, n: int, g: int) -> Any:
        """The closed ts node n's state for stream slot r gives range g."""
        if K == 1:
            return s.rv_closed[r][n][0]
        return pick([s.rv_closed[r][n][c] for c in range(K)], group_of(s.rv_grp[r][n][g]))

    def registered(s: Any, g: int, x: int) -> Any:
        """Sender x has range g as a leaseholder: the lease x applied names x."""
        return owns_applied_lease(s, ctx, g, x)

    def effective_closed(s: Any, g: int, n: Any) -> Any:
        """Replica (g, n) serves reads at its Raft closed ts or its side-transport closed
        ts (§3.3)."""
        return Max(s.closed[g][n], s.side_ts[g][n])

    ctx.hooks["effective_closed"] = effective_closed

    def holder_stream(g: int, n: int) -> Any:
        """What node n's receiver knows of range g on the stream of the node replica
        (g, n)'s applied lease names: (set, closed ts, LAI); the leaseholder has no
        stream from itself."""
        def read(s: Any) -> tuple[Any, Any, Any]:
            holder = s.lholder[g][s.lseq[g][n]] if ctx.lease_changes else 0
            has, ts, lai = False, NIL, 0
            for x in range(S - 1, -1, -1):
                if x == n:
                    continue
                r = view(x)
                mine = And(holder == x, s.rv_ok[r][n], s.rv_tracked[r][n][g])
                has = Or(mine, has)
                ts = If(mine, rv_range_closed(s, r, n, g), ts)
                lai = If(mine, s.rv_lai[r][n][g], lai)
            return has, ts, lai
        return read

    @m.action(g=range(G), n=range(N))
    def pull(s, g, n):
        """Something asks replica (g, n) for its closed ts (a follower read, say): its
        side-transport state promotes a stashed update whose LAI has applied and asks
        the receiver for the stream of its applied lease's node (§3.4 get)."""
        require(exists(s, ctx, g, n))
        access.get(s, g, n, holder_stream(g, n))

    def bump(s: Any, x: int, g: int, target: Any) -> Any:
        """Whether sender x's BumpSideTransportClosed succeeds for range g (§4.3)."""
        inflight = in_flight(s, ctx, g, x)
        if upper_bucket:  # reads b2's ts, not b1's
            lb = s.tb_ts[g][x][1 - s.tb_first[g][x]]
            lb_set: Any = lb != NIL
        else:
            lb_set, lb = tracker.lower_bound(s, g, x)
        # MaybeForwardClosedLocked: fails if the bound is set and at or below the target
        blocked = (lb < target if equal_ok else lb <= target)
        lb_ok = True if lb_set is False else Not(And(lb_set, blocked))
        conds = [exists(s, ctx, g, x), target <= ceiling(s, ctx, g, x), lb_ok,
                 target > s.assigned_closed[g][x], lease_ok(s, ctx, g, node=x),
                 True if no_inflight_check else Not(inflight)]
        if ctx.merges and g == 1:
            conds.append(Not(s.frozen[x]))  # MergeInProgress
        return And(*conds)

    @m.action(x=range(S))
    def publish(s, x):
        """Sender x tries to bump each range it leads and publishes the result (§4.1,
        §4.3)."""
        require(s.pub_seq[x] < P)
        if x > 0:  # n1's streams exist from the start; another node's once it leads
            require(Or(*[Or(registered(s, g, x), s.pub_tracked[x][g]) for g in range(G)]))
        target = closed_target(s, ctx, x)
        grp = If(s.lead_policy, 1, 0) if K > 1 else 0
        now = ctx.hooks["clock"](s, x) if "clock" in ctx.hooks else s.now
        group_closed = [now - ctx.target] + ([now + ctx.lead] if K > 1 else [])
        entries, bumps = [], []
        for g in range(G):
            reg = registered(s, g, x)
            ok = And(reg, bump(s, x, g, target))
            here = s.lai[g][x]
            if not no_floor:  # x's replica's own buffer (MaybeForwardClosedLocked)
                s.assigned_closed[g][x] = If(ok, target, s.assigned_closed[g][x])
            s.claim_hi[g] = If(ok, Max(s.claim_hi[g], target), s.claim_hi[g])
            access.forward(s, g, x, target, here, True, when=ok)
            tracked = s.pub_tracked[x][g]
            # a failed bump removes the range; so does a lease x no longer holds
            removed = And(tracked, Not(ok), not keep_failed, Or(reg, not keep_moved))
            changed = Or(Not(tracked), s.pub_lai[x][g] != here)
            if K > 1:
                changed = Or(changed, s.pub_grp[x][g] != grp)
            upsert = And(ok, changed)
            s.pub_tracked[x][g] = If(ok, True, If(removed, False, tracked))
            s.pub_lai[x][g] = If(ok, here, s.pub_lai[x][g])
            if K > 1:
                s.pub_grp[x][g] = If(ok, grp, s.pub_grp[x][g])
            entries.append(If(removed, Entry.remove, If(upsert, Entry.upsert, Entry.none)))
            bumps.append(If(ok, here, NIL))
        for c in range(K):
            s.pub_closed[x][c] = group_closed[c]
        s.pub_seq[x] = s.pub_seq[x] + 1
        seq = s.pub_seq[x]
        for c in range(K):
            s.hist_closed[x][seq][c] = s.pub_closed[x][c]
        for g in range(G):
            s.hist_tracked[x][seq][g] = s.pub_tracked[x][g]
            s.hist_lai[x][seq][g] = s.pub_lai[x][g]
            s.hist_bump[x][seq][g] = bumps[g]
            if ctx.lease_changes:
                s.hist_lease[x][seq][g] = If(bumps[g] != NIL, s.lseq[g][x], 0)
            if K > 1:
                s.hist_grp[x][seq][g] = s.pub_grp[x][g]
        for n in range(N):
            if n == x:
                continue
            k = s.q_len[x][n]
            snap = s.fresh[x][n]
            s.q_seq[x][n][k] = seq
            s.q_snap[x][n][k] = snap
            for c in range(K):
                s.q_closed[x][n][k][c] = s.pub_closed[x][c]
            for g in range(G):
                s.q_entry[x][n][k][g] = If(
                    snap, If(s.pub_tracked[x][g], Entry.upsert, Entry.none), entries[g])
                s.q_lai[x][n][k][g] = s.pub_lai[x][g]
                if K > 1:
                    s.q_grp[x][n][k][g] = s.pub_grp[x][g]
            s.q_len[x][n] = k + 1
            s.fresh[x][n] = False

    streams = [(x, n) for x in range(S) for n in range(N) if n != x]

    @m.action(x=range(S), n=range(N))
    def deliver(s, x, n):
        """Node n's receiver applies the next message of sender x's stream (§4.2)."""
        require(n != x)
        require(s.q_len[x][n] > 0)
        r = view(x)
        snap, seq = s.q_snap[x][n][0], s.q_seq[x][n][0]
        in_order = And(s.rv_ok[r][n], seq == s.rv_seq[r][n] + 1)
        require(Or(snap, in_order, gaps_ok))  # a gap cannot happen on one stream
        ok_before = s.rv_ok[r][n]
        if removal_new:  # lastClosed is set before the removed ranges are handed over
            for c in range(K):
                s.rv_closed[r][n][c] = s.q_closed[x][n][0][c]
        for g in range(G):
            entry, at = s.q_entry[x][n][0][g], s.q_lai[x][n][0][g]
            # a removal first hands the previous closed ts over, for the previous LAI, to
            # the node's replica of the range, whatever lease it applied (§4.2 step 2)
            removal = And(ok_before, s.rv_tracked[r][n][g], entry == Entry.remove,
                          exists(s, ctx, g, n))
            access.forward(s, g, n, rv_range_closed(s, r, n, g), s.rv_lai[r][n][g], False,
                           when=removal)
            tracked_now = If(snap, entry == Entry.upsert,
                             If(entry == Entry.upsert, True,
                                If(entry == Entry.remove, False, s.rv_tracked[r][n][g])))
            s.rv_lai[r][n][g] = If(tracked_now, If(entry == Entry.upsert, at,
                                                   s.rv_lai[r][n][g]), 0)
            if K > 1:
                s.rv_grp[r][n][g] = If(tracked_now, If(entry == Entry.upsert,
                                                       s.q_grp[x][n][0][g],
                                                       s.rv_grp[r][n][g]), 0)
            s.rv_tracked[r][n][g] = tracked_now
        if not removal_new:
            for c in range(K):
                s.rv_closed[r][n][c] = s.q_closed[x][n][0][c]
        s.rv_seq[r][n] = seq
        s.rv_ok[r][n] = True
        for i in range(P - 1):
            s.q_seq[x][n][i] = s.q_seq[x][n][i + 1]
            s.q_snap[x][n][i] = s.q_snap[x][n][i + 1]
            for c in range(K):
                s.q_closed[x][n][i][c] = s.q_closed[x][n][i + 1][c]
            for g in range(G):
                s.q_entry[x][n][i][g] = s.q_entry[x][n][i + 1][g]
                s.q_lai[x][n][i][g] = s.q_lai[x][n][i + 1][g]
                if K > 1:
                    s.q_grp[x][n][i][g] = s.q_grp[x][n][i + 1][g]
        clear_slot(s, x, n, P - 1)
        s.q_len[x][n] = s.q_len[x][n] - 1

    def clear_slot(s: Any, x: int, n: int, i: int) -> None:
        """Empty queue slot i of the stream from x to n."""
        s.q_seq[x][n][i], s.q_snap[x][n][i] = 0, False
        for c in range(K):
            s.q_closed[x][n][i][c] = NIL
        for g in range(G):
            s.q_entry[x][n][i][g], s.q_lai[x][n][i][g] = Entry.none, 0
            if K > 1:
                s.q_grp[x][n][i][g] = 0

    def drop_stream(s: Any, x: int, n: int, keep_receiver: bool = False) -> None:
        """The stream from x to n is gone: its queue is lost and, unless `keep_receiver`
        (DeltaAfterGap), so is the receiver's state for x; the next stream starts with a
        snapshot. Replicas keep their side-transport state (SideBreakForgetsCopies: those
        whose applied lease names x lose it)."""
        for i in range(P):
            clear_slot(s, x, n, i)
        s.q_len[x][n] = 0
        if keep_receiver:
            return
        r = view(x)
        s.rv_ok[r][n], s.rv_seq[r][n] = False, 0
        for c in range(K):
            s.rv_closed[r][n][c] = NIL
        for g in range(G):
            s.rv_tracked[r][n][g], s.rv_lai[r][n][g] = False, 0
            if K > 1:
                s.rv_grp[r][n][g] = 0
            if break_forgets:
                holder = s.lholder[g][s.lseq[g][n]] if ctx.lease_changes else 0
                access.clear(s, g, n, when=holder == x)
        s.fresh[x][n] = True

    def restart(s: Any, senders: int) -> None:
        """n1 restarts: its sender's state, its streams both ways and its replicas'
        side-transport state are gone (`restarts.py`)."""
        for g in range(G):
            s.pub_tracked[0][g] = False
            s.pub_lai[0][g] = 0
            if K > 1:
                s.pub_grp[0][g] = 0
            access.clear(s, g, 0)
        for n in range(1, N):  # n1's outgoing streams
            drop_stream(s, 0, n)
        for x in range(1, senders):  # other senders' streams to n1
            drop_stream(s, x, 0)

    ctx.hooks["side_restart"] = restart

    if p.stream_breaks:
        @m.action(x=range(S), n=range(N))
        def break_stream(s, x, n):
            """The stream from x to node n breaks: its queued messages are lost, and so is
            the receiver's state for x; the next message, on a new stream, is a snapshot.
            Under DeltaAfterGap the receiver keeps its state and takes the next delta."""
            require(n != x)
            require(s.q_len[x][n] > 0)
            drop_stream(s, x, n, keep_receiver=gaps_ok)

    def ReceiverMatchesSender(s):  # noqa: N802
        """After each delivered message of sender x, node n's state for x's stream equals
        x's state after the publish that produced it: the group closed ts, the tracked
        set, and each tracked range's LAI and closed ts; and each tracked range's bump
        succeeded in that publish at that LAI, x's applied LAI (A13)."""
        def matches(x: int, n: int) -> Any:
            r = view(x)
            seq = s.rv_seq[r][n]
            conds = [s.rv_closed[r][n][c] == s.hist_closed[x][seq][c] for c in range(K)]
            for g in range(G):
                sent = s.hist_closed[x][seq][0] if K == 1 else pick(
                    [s.hist_closed[x][seq][c] for c in range(K)], s.hist_grp[x][seq][g])
                conds.append(s.rv_tracked[r][n][g] == s.hist_tracked[x][seq][g])
                conds.append(Implies(s.rv_tracked[r][n][g], And(
                    s.rv_lai[r][n][g] == s.hist_lai[x][seq][g],
                    s.rv_lai[r][n][g] == s.hist_bump[x][seq][g],
                    rv_range_closed(s, r, n, g) == sent)))
            return Implies(s.rv_ok[r][n], And(*conds))
        return ForAll(streams, lambda xn: matches(*xn))

    def delivered(before: Any, after: Any, x: int, n: int) -> Any:
        """This step delivered the head of x's stream to n."""
        r = view(x)
        return And(before.q_len[x][n] > 0, after.q_len[x][n] == before.q_len[x][n] - 1,
                   after.rv_ok[r][n], after.rv_seq[r][n] == before.q_seq[x][n][0])

    def RemovalKeepsPreviousClosed(before, after):  # noqa: N802
        """A range a delivered message removes gets only the previous message's closed ts
        of its group, for its tracked LAI: the new message's closed ts does not cover it
        (A13; §4.2 step 2)."""
        def kept(x: int, n: int, g: int) -> Any:
            r = view(x)
            prev = rv_range_closed(before, r, n, g)
            removal = And(delivered(before, after, x, n), before.rv_ok[r][n],
                          before.rv_tracked[r][n][g],
                          before.q_entry[x][n][0][g] == Entry.remove)
            # what the replica holds after the removal comes from what it held or from
            # the previous message's closed ts, never from the new one
            bound = Max(before.side_ts[g][n], prev,
                        before.next_ts[g][n] if stash else NIL)
            conds = [after.side_ts[g][n] <= bound]
            if stash:
                conds.append(after.next_ts[g][n] <= bound)
            return Implies(removal, And(*conds))
        return ForAll([(x, n, g) for x, n in streams for g in range(G)],
                      lambda xng: kept(*xng))

    def SideLAINeverRegresses(before, after):  # noqa: N802
        """A receiver never lowers the LAI of a range it keeps tracking on a stream (§4.2:
        a sender sends a tracked range's LAI again only when it grew; A4)."""
        def stream_ok(x: int, n: int, g: int) -> Any:
            r = view(x)
            return Implies(And(before.rv_ok[r][n], before.rv_tracked[r][n][g],
                               after.rv_ok[r][n], after.rv_tracked[r][n][g]),
                           after.rv_lai[r][n][g] >= before.rv_lai[r][n][g])
        return ForAll([(x, n, g) for x, n in streams for g in range(G)],
                      lambda xng: stream_ok(*xng))

    def SideClaimsBelowLeaseExpiration(before, after):  # noqa: N802
        """A closed ts a sender's bump claims is below the expiration of the lease the
        sender has applied (A17; §6 ClosedTimestampUpperBound, TargetOverLeaseExpiration
        in the sender)."""
        def below(x: int, g: int) -> Any:
            seq = after.pub_seq[x]
            claimed = after.hist_closed[x][seq][after.hist_grp[x][seq][g] if K > 1 else 0]
            limit = expiration(before, ctx, g, before.lseq[g][x]) if ctx.lease_changes \
                else ctx.lease_exp
            return Implies(And(seq != before.pub_seq[x], after.hist_bump[x][seq][g] != NIL),
                           claimed < limit)
        return ForAll([(x, g) for x in range(S) for g in range(G)], lambda xg: below(*xg))

    access.add_invariants(m)
    m.invariant(ReceiverMatchesSender)
    m.step_invariant(SideClaimsBelowLeaseExpiration)
    m.step_invariant(RemovalKeepsPreviousClosed)
    m.step_invariant(SideLAINeverRegresses)

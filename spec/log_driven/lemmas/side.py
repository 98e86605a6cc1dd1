"""Lemmas of the side transport: over the core's (one range, n1 its only sender), or over
the lease lemmas' (every sender, each range; `add_moving`).

A *bump* is a publish whose BumpSideTransportClosed succeeded for a range: the
sender's ghost history keeps, per publish k, the closed ts it sent per group
(`hist_closed`), the tracked set and LAIs, and the applied LAI of a successful bump
(`hist_bump`). Everything the side transport hands a replica is some bump's pair
(T, L): the sender's own forward, a receiver's copy of the message that carried it,
the previous closed ts a removal hands over. So the whole mechanism reduces to facts
about bumps:

- a bump's T is at or below the sender's assigned closed ts and the range's claim,
  and its L at or below the sender's applied LAI; later bumps have higher T and no
  lower L (`target > assigned_closed`, which the bump then raises; §4.3);
- every write attempt flushed with an LAI above L is above T: nothing was in flight
  when the bump succeeded, so every attempt then had an LAI at most L, and every
  later one was tracked above the raised assigned closed ts (§4.3 step 6, A7);
- the streams carry the sender's history in order: each queued message is what the
  publish with its sequence number produced, from the history before and after it,
  and the receiver sits right before the queue's head (§4.1, §4.2);
- each replica's `cur` and `next` are a bump's pair (merging two pairs keeps one of
  them: the same LAI keeps the higher T, which is the later bump's).

With these, a follower read served at a side closed ts T for an LAI L the replica has
applied sees every accepted write at or below T (its LAI is at most L), and a write
accepted later is above the claim; and no forward can see a regression, since any two
bumps are ordered the same way in T and L. With a split, a replica of range 0 hands its
new range 1 the higher of the split's closed ts and its own side-transport one, and with a
merge Subsume reports the higher of range 1's two: LaterFlushesCarryBumps,
SplitCarriesEarlierBumps, SendersKeepTheirBumps and SubsumeCoversBumps say why the first
is never above what the split carried and the second covers its own sequence's bumps.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, ForAll, If, Implies, Max, Not, Or
from spec.log_driven.leases import LeaseKind
from spec.log_driven.lemmas import core, leases
from spec.log_driven.parts import NIL, Ctx, WPhase, in_range, lease_base, pick
from spec.log_driven.policy import clock
from spec.log_driven.side_transport import Entry


def applies(p: Any, ctx: Ctx) -> bool:
    """The side transport over the core's configuration on one range (n1 the only sender,
    since the lease never moves), or over the lease lemmas' on each range (`leases.py`:
    every sender, each bumping under the lease it applied)."""
    if not p.side_transport:
        return False
    return (core.applies(p, ctx) and p.senders == 1 and ctx.ranges == 1) \
        or leases.applies(p, ctx)


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not applies(p, ctx):
        return
    N, P, W = ctx.nodes, p.publishes, ctx.writes
    K = 2 if ctx.lead else 1
    stash = p.side_unapplied == "stash"
    moving = bool(ctx.lease_changes)  # leases change: bumps are any sender's
    senders = range(p.senders)
    ranges = range(ctx.ranges)

    def grp(s: Any, g: int, x: int, k: int) -> Any:
        return s.hist_grp[x][k][g] if K > 1 else 0

    def bump_ts(s: Any, g: int, x: int, k: int) -> Any:
        """T of sender x's publish k: the closed ts it sent for range g's group."""
        return pick([s.hist_closed[x][k][c] for c in range(K)], grp(s, g, x, k))

    def bump_lai(s: Any, g: int, x: int, k: int) -> Any:
        return s.hist_bump[x][k][g]

    def is_bump(s: Any, g: int, x: int, k: int) -> Any:
        return And(k <= s.pub_seq[x], bump_lai(s, g, x, k) != NIL)

    def bumps(s: Any) -> list[tuple[int, int]]:
        return [(x, k) for x in senders for k in range(1, P + 1)]

    def some_bump(s: Any, g: int, ts: Any, lai: Any) -> Any:
        return Or(*[And(is_bump(s, g, x, k), ts == bump_ts(s, g, x, k),
                        lai == bump_lai(s, g, x, k))
                    for x, k in bumps(s)])

    # the claim may also come from a bump (the core's ClaimIsAccepted and the lease
    # lemmas' AcceptedByReplay ask the sources)
    ctx.hooks.setdefault("claim_sources", []).append(
        lambda s, g: Or(*[And(is_bump(s, g, x, k), s.claim_hi[g] == bump_ts(s, g, x, k))
                          for x, k in bumps(s)]))
    ctx.hooks.setdefault("claim_floors", []).append(
        lambda s, g: [If(is_bump(s, g, x, k), bump_ts(s, g, x, k), NIL) for x, k in bumps(s)])

    @m.lemma
    def SenderHistory(s):  # noqa: N802 - property names are CamelCase
        """Each sender's state is its last publish's, and publishes not made yet (and
        publish 0) hold nothing; a range tracked after publish k was bumped in it, at
        the LAI it is tracked at (`publish` removes a range whose bump failed), in the
        group of the range's policy when it never flips. A restarted sender has forgotten
        its tracked set until its next publish."""
        def sender(x: int) -> Any:
            def unset(k: int) -> Any:
                conds = [s.hist_closed[x][k][c] == NIL for c in range(K)]
                for g in ranges:
                    conds += [s.hist_bump[x][k][g] == NIL, Not(s.hist_tracked[x][k][g]),
                              s.hist_lai[x][k][g] == 0]
                    if K > 1:
                        conds.append(s.hist_grp[x][k][g] == 0)
                    if moving:
                        conds.append(s.hist_lease[x][k][g] == 0)
                return And(*conds)

            def made(k: int) -> Any:
                conds = []
                for g in ranges:
                    tracked, bumped = s.hist_tracked[x][k][g], s.hist_bump[x][k][g]
                    conds.append(Implies(tracked, bumped == s.hist_lai[x][k][g]))
                    if K > 1 and not p.policy_flip:  # the one policy's group
                        conds.append(Implies(tracked, s.hist_grp[x][k][g]
                                             == If(s.lead_policy, 1, 0)))
                    if moving:
                        conds += [(bumped == NIL) == (s.hist_lease[x][k][g] == 0),
                                  (bumped == NIL) == Not(tracked)]
                return And(*conds)

            history = ForAll(range(P + 1), lambda k: If(
                Or(k == 0, k > s.pub_seq[x]), unset(k), made(k)))

            def last(k: int) -> Any:
                conds = [s.pub_closed[x][c] == s.hist_closed[x][k][c] for c in range(K)]
                for g in ranges:
                    conds += [s.pub_tracked[x][g] == s.hist_tracked[x][k][g],
                              s.pub_lai[x][g] == s.hist_lai[x][k][g]]
                    if K > 1:
                        conds.append(s.pub_grp[x][g] == s.hist_grp[x][k][g])
                return Implies(s.pub_seq[x] == k, And(*conds))
            state = ForAll(range(P + 1), last)
            if ctx.restarts and x == 0:  # a restart forgets the tracked set, until the next
                # publish (every stream of n1's then starts with a snapshot; one range)
                forgot = [Not(s.pub_tracked[x][0]), s.pub_lai[x][0] == 0,
                          *[s.fresh[x][n] for n in range(N) if n != x]]
                if K > 1:
                    forgot.append(s.pub_grp[x][0] == 0)
                state = Or(state, And(s.restarted, *forgot))
            return And(history, state)
        return And(*[sender(x) for x in senders])

    if not moving:
        X, g = 0, 0  # n1 sends for the one range

        @m.lemma
        def BumpsBelowSender(s):  # noqa: N802
            """A bump's T is at or above 0, at or below the sender's assigned closed ts and
            the range's claim, and its L at or below the sender's applied LAI (both only
            grow); a later bump has a higher T and no lower L (the bump needs `target >
            assigned_closed`, and raises it to the target; §4.3)."""
            def bounded(k: int) -> Any:
                return Implies(is_bump(s, g, X, k), And(
                    bump_ts(s, g, X, k) >= 0, bump_ts(s, g, X, k) <= s.assigned_closed[g][X],
                    bump_ts(s, g, X, k) <= s.claim_hi[g], bump_lai(s, g, X, k) <= s.lai[g][X]))

            def ordered(a: int, b: int) -> Any:
                return Implies(And(is_bump(s, g, X, a), is_bump(s, g, X, b)), And(
                    bump_ts(s, g, X, a) < bump_ts(s, g, X, b),
                    bump_lai(s, g, X, a) <= bump_lai(s, g, X, b)))
            return And(ForAll(range(1, P + 1), bounded),
                       ForAll([(a, b) for a in range(1, P + 1) for b in range(a + 1, P + 1)],
                              lambda ab: ordered(*ab)))

        @m.lemma
        def BumpsBelowLaterWrites(s):  # noqa: N802
            """Every write attempt with an LAI above a bump's L is above its T, and so is
            every write evaluating or waiting in the buffer: nothing was in flight when the
            bump succeeded, and the tracker's lower bound was above T (§4.3 step 6,
            MaybeForwardClosedLocked); later writes are tracked above the raised assigned
            closed ts (A7)."""
            attempts = core.Log(s, ctx).attempts()

            def above(k: int) -> Any:
                later = [Implies(And(a[0], a[1] < W, a[2] > bump_lai(s, g, X, k)),
                                 s.wts[a[1]] > bump_ts(s, g, X, k)) for a in attempts]
                pending = [Implies(Or(s.wphase[w] == WPhase.evaluating,
                                      s.wphase[w] == WPhase.buffered),
                                   s.wts[w] > bump_ts(s, g, X, k)) for w in range(W)]
                return Implies(is_bump(s, g, X, k), And(*later, *pending))
            return ForAll(range(1, P + 1), above)
    else:
        add_moving(m, p, ctx, is_bump, bump_ts, bump_lai, bumps)

    if ctx.splits:
        S = ctx.split_id

        @m.lemma
        def SplitCarriesEarlierBumps(s):  # noqa: N802
            """An accepted split carries a closed ts at or above every bump of range 0 at
            an LAI below the split's. A replica of range 0 applying the split starts its
            range 1 at the higher of that closed ts and its side-transport one (§5.1
            splitPreApply), a bump it has applied, so below the split's LAI: range 1
            starts at the split's closed ts on every node. (In the bump's lease sequence
            the split was flushed after the bump, above the assigned closed ts it
            raised; a later sequence started once the bump's lease expired or was
            revoked, and closes at or above what its clock then allows:
            LaterFlushesCarryBumps.)"""
            return Implies(s.accepted[S], And(*[
                Implies(And(is_bump(s, 0, x, k), bump_lai(s, 0, x, k) < s.wlai[S]),
                        bump_ts(s, 0, x, k) <= s.wcts[S]) for x, k in bumps(s)]))

    def delta(s: Any, g: int, x: int, j: Any) -> Any:
        """The entry sender x's publish j (a delta) sent for range g, from the history
        before and after it."""
        before = [s.hist_tracked[x][i][g] for i in range(P + 1)]
        was = pick(before[:-1], j - 1) if P > 0 else False
        now = pick(before, j)
        changed = Or(Not(was), pick([s.hist_lai[x][i][g] for i in range(P)], j - 1)
                     != pick([s.hist_lai[x][i][g] for i in range(P + 1)], j))
        if K > 1:
            changed = Or(changed, pick([s.hist_grp[x][i][g] for i in range(P)], j - 1)
                         != pick([s.hist_grp[x][i][g] for i in range(P + 1)], j))
        return If(And(was, Not(now)), Entry.remove,
                  If(And(now, changed), Entry.upsert, Entry.none))

    @m.lemma
    def StreamsCarryHistory(s):  # noqa: N802
        """Each stream's queue holds its sender's publishes in order, up to its last,
        each as that publish produced it (a snapshot of the tracked set, or the delta
        from the publish before); only the head may be a snapshot, and then the
        receiver has no state for the stream; otherwise the receiver sits right before
        the head, or, with nothing queued, at the sender's last publish, and tracks a
        range in the group that publish gave it (§4.1, §4.2; a break empties both and
        the next publish is a snapshot)."""
        def stream(x: int, n: int) -> Any:
            ln = s.q_len[x][n]

            def message(i: int) -> Any:
                seq = s.q_seq[x][n][i]
                conds = [seq >= 1, seq <= s.pub_seq[x],
                         Implies(i == ln - 1, seq == s.pub_seq[x])]
                conds += [s.q_closed[x][n][i][c] == pick(
                    [s.hist_closed[x][k][c] for k in range(P + 1)], seq) for c in range(K)]
                for g in ranges:
                    hist = [s.hist_tracked[x][k][g] for k in range(P + 1)]
                    conds += [s.q_lai[x][n][i][g] == pick(
                                  [s.hist_lai[x][k][g] for k in range(P + 1)], seq),
                              s.q_entry[x][n][i][g] == If(
                                  s.q_snap[x][n][i], If(pick(hist, seq), Entry.upsert,
                                                        Entry.none), delta(s, g, x, seq))]
                    if K > 1:
                        conds.append(s.q_grp[x][n][i][g] == pick(
                            [s.hist_grp[x][k][g] for k in range(P + 1)], seq))
                if i > 0:
                    conds += [Not(s.q_snap[x][n][i]), seq == s.q_seq[x][n][i - 1] + 1]
                return Implies(i < ln, And(*conds))
            ok, rseq = s.rv_ok[x][n], s.rv_seq[x][n]
            head = If(ln == 0,
                      Or(s.fresh[x][n], And(ok, rseq == s.pub_seq[x])),
                      If(s.q_snap[x][n][0], Not(ok),
                         And(ok, s.q_seq[x][n][0] == rseq + 1)))
            fresh = Implies(s.fresh[x][n], And(ln == 0, Not(ok)))
            received = Implies(ok, And(rseq >= 1, rseq <= s.pub_seq[x]))
            if K > 1:  # ReceiverMatchesSender compares closed ts, which may coincide
                received = And(received, *[Implies(And(ok, s.rv_tracked[x][n][g]), (
                    s.rv_grp[x][n][g] == pick([s.hist_grp[x][k][g] for k in range(P + 1)],
                                              rseq))) for g in ranges])
            return And(ForAll(range(P), message), head, fresh, received)
        return And(*[stream(x, n) for x in senders for n in range(N) if n != x])

    def side_pairs(s: Any, g: int, n: int) -> list[tuple[Any, Any]]:
        out = [(s.side_ts[g][n], s.side_lai[g][n])]
        if stash:
            out.append((s.next_ts[g][n], s.next_lai[g][n]))
        return out

    @m.lemma
    def ReplicasHoldBumps(s):  # noqa: N802
        """Each replica's side-transport state (`cur`, and the stashed `next`) is unset or
        some bump's (T, L): the sender forwards its bump, a receiver the copy of the
        message that carried it, a removal the previous one; merging two pairs keeps
        one of them (`sidetransportAccess.forward`)."""
        return And(*[Or(And(ts == NIL, lai == 0), some_bump(s, g, ts, lai))
                     for g in ranges for n in range(N) for ts, lai in side_pairs(s, g, n)])


def add_moving(m: Any, p: Any, ctx: Ctx, is_bump: Any, bump_ts: Any, bump_lai: Any,
               bumps: Any) -> None:
    """The bumps' lemmas when leases change: a bump (T, L, J) of range g is sender x's,
    made under the lease J of range g its replica had applied; it binds that lease's
    sequence through x's counters, and every later sequence through the lease chain."""
    N, W = ctx.nodes, ctx.writes
    P = p.publishes
    senders = range(p.senders)
    ranges = range(ctx.ranges)

    def bump_lease(s: Any, g: int, x: int, k: int) -> Any:
        return s.hist_lease[x][k][g]

    def base(s: Any, g: int, j: Any) -> Any:
        return lease_base(s, ctx, g, j)

    @m.lemma
    def BumpsBelowSender(s):  # noqa: N802
        """A bump (T, L, J) of sender x: J is a lease naming x, and x's replica was at J
        and LAI L after some prefix of what it has applied (the bump read both); the
        publish's clock (its LAG closed ts plus the target) is at or below x's clock and
        below J's expiration (§4.3: the lease was valid); T is at or above 0 and at or
        below the claim; while x's replica is in J's sequence and x holds it (and did not
        restart in it), T is at or below x's assigned closed ts (the bump raised it). x's
        later bumps are under the same lease or a later one; two in one sequence are in T
        and L order, and so are two bumps under leases in chain order: a later lease
        starts once the earlier expired (a takeover) or was revoked (a transfer), so its
        bumps come later, at a later target."""
        def per(g: int) -> Any:
            log = leases.Replay(s, ctx, g)

            def bounded(x: int, k: int) -> Any:
                T, L, J = bump_ts(s, g, x, k), bump_lai(s, g, x, k), bump_lease(s, g, x, k)
                seq = s.lseq[g][x]
                live = And(base(s, g, J) == base(s, g, seq), s.lholder[g][seq] == x,
                           Not(leases.wiped(s, ctx, x, g)))
                # the publish's clock: LAG closes it minus the target, LEAD plus the lead
                then = s.hist_closed[x][k][0] + ctx.target
                same_clock = [s.hist_closed[x][k][1] == then + ctx.lead] if ctx.lead else []
                return Implies(is_bump(s, g, x, k), And(
                    then <= clock(s, ctx, x), then < s.lexp[g][J], *same_clock,
                    J >= 1, J <= seq, s.lholder[g][J] == x, T >= 0, T <= s.claim_hi[g],
                    T < s.lexp[g][J], L <= s.lai[g][x], log.passes(J, L, s.applied[g][x]),
                    Implies(live, T <= s.assigned_closed[g][x])))

            def ordered(x: int, a: int, b: int) -> Any:
                both = And(is_bump(s, g, x, a), is_bump(s, g, x, b))
                same = base(s, g, bump_lease(s, g, x, a)) == base(s, g, bump_lease(s, g, x, b))
                return And(Implies(both, bump_lease(s, g, x, a) <= bump_lease(s, g, x, b)),
                           Implies(And(both, same), And(
                               bump_ts(s, g, x, a) < bump_ts(s, g, x, b),
                               bump_lai(s, g, x, a) <= bump_lai(s, g, x, b))))

            def chain(a: tuple[int, int], b: tuple[int, int]) -> Any:
                return Implies(And(is_bump(s, g, *a), is_bump(s, g, *b),
                                   bump_lease(s, g, *a) < bump_lease(s, g, *b)),
                               And(bump_ts(s, g, *a) <= bump_ts(s, g, *b),
                                   bump_lai(s, g, *a) <= bump_lai(s, g, *b)))
            return And(*[bounded(x, k) for x, k in bumps(s)],
                       *[ordered(x, a, b) for x in senders for a in range(1, P + 1)
                         for b in range(a + 1, P + 1)],
                       *[chain(a, b) for a in bumps(s) for b in bumps(s) if a != b])
        return And(*[per(g) for g in ranges])

    @m.lemma
    def FloorAboveBumps(s):  # noqa: N802
        """A node that holds the lease its replica applied, at or after a bump's lease in
        the chain, has a write floor (assigned closed ts, or its timestamp cache over each
        key segment the range holds there) at or above the bump's T: in the bump's
        sequence the bump raised the assigned closed ts; a later sequence starts above it
        (a request at or after the expiration T stayed below, a transfer with a read
        summary and a closed ts at or above the sender's floor)."""
        def node(g: int, h: int, x: int, k: int) -> Any:
            seq = s.lseq[g][h]
            T = bump_ts(s, g, x, k)
            floor = [Implies(own, Max(s.assigned_closed[g][h], s.tsc[h][seg]) >= T)
                     for seg, own in enumerate(leases.own_segments(s, ctx, g, h))]
            return Implies(And(is_bump(s, g, x, k), s.lholder[g][seq] == h,
                               seq >= bump_lease(s, g, x, k)), And(*floor))
        return And(*[node(g, h, x, k) for g in ranges for h in range(N) for x, k in bumps(s)])

    @m.lemma
    def SequencesStartAboveBumps(s):  # noqa: N802
        """A lease command that starts a new sequence on a lease at or after a bump's, in
        the chain, starts above the bump's T: a request by another node at the expiration
        of the lease it builds on (the bump stayed below it), a transfer with a read
        summary, or a closed ts, at or above its proposer's floor; a transfer out of the
        bump's own sequence carries a closed ts at or above T. Each starts at or above
        the bump's clock: a takeover at an expiration the bump's clock was below, a
        transfer (which revoked the bump's lease) or a holder's request for a new
        sequence (after a transfer or a restart) at its proposer's clock, later."""
        def command(g: int, j: int, x: int, k: int) -> Any:
            prev = s.lprev[g][j]
            T = bump_ts(s, g, x, k)
            kind = s.lkind[g][j]
            y = s.lholder[g][prev]
            request = And(kind == LeaseKind.request, s.lholder[g][j] != y)
            transfer = kind == LeaseKind.transfer
            carried = If(s.lready[g][j], s.lcts[g][j], s.assigned_closed[g][y])
            J = bump_lease(s, g, x, k)
            # a transfer out of the bump's own sequence comes after the bump (it revoked the
            # lease the bump needed valid), so its closed ts is at or above the bump's
            own = And(transfer, base(s, g, prev) == base(s, g, J), s.lready[g][j])
            then = s.hist_closed[x][k][0] + ctx.target  # the publish's clock
            return Implies(And(is_bump(s, g, x, k), j <= s.lcount[g], prev >= J,
                               base(s, g, j) == j),
                           And(Implies(request, s.lstart[g][j] > T),
                               Implies(Or(kind == LeaseKind.request, transfer),
                                       s.lstart[g][j] >= then),
                               Implies(transfer, Or(s.lsum[g][j] >= T, carried >= T)),
                               Implies(own, s.lcts[g][j] >= T)))
        commands = range(2, ctx.lease_changes + 2)
        return And(*[command(g, j, x, k) for g in ranges for j in commands
                     for x, k in bumps(s)])

    @m.lemma
    def LaterFlushesCarryBumps(s):  # noqa: N802
        """A proposal of a bump's range and lease sequence (a write, the split or the
        merge) with an LAI above the bump's L carries a closed ts at or above its T, if
        it is flushed while the log is still in that sequence, or accepted: it was
        flushed after the bump (before, it would have been in flight, or applied at an
        LAI at most L) by the holder, above the assigned closed ts the bump raised
        (§4.3). (One flushed after its holder left the sequence carries less, and the
        log rejects it.) So does one of a later sequence: that sequence started at or
        after the bump's clock (SequencesStartAboveBumps), its writes are tracked above
        T, and it closes the target below a later clock."""
        def per(g: int) -> Any:
            log = leases.Replay(s, ctx, g)
            end = log.at_end()[2]

            def carries(w: Any, x: int, k: int, live: Any) -> Any:
                J = bump_lease(s, g, x, k)
                same = And(base(s, g, s.wseq[w]) == base(s, g, J),
                           s.wlai[w] > bump_lai(s, g, x, k))
                # (not under restarts: with them this clause is not inductive with the
                # other lemmas at two writes, and no split, on one range, needs it)
                later = And(base(s, g, s.wseq[w]) != base(s, g, J), s.wseq[w] > J) \
                    if not ctx.restarts else False
                return Implies(And(is_bump(s, g, x, k), live, Or(same, later)),
                               s.wcts[w] >= bump_ts(s, g, x, k))
            pending = [carries(w, x, k, And(in_range(s, ctx, w, g), leases.sent(s, ctx, w),
                                             base(s, g, s.wseq[w]) == base(s, g, end)))
                       for w in range(ctx.props) for x, k in bumps(s)]
            logged = [carries(log.prop(i), x, k, And(log.present(i), log.is_prop(i),
                                                      log.oks[i]))
                      for i in range(ctx.log_len) for x, k in bumps(s)]
            return And(*pending, *logged)
        return And(*[per(g) for g in ranges])

    @m.lemma
    def SendersKeepTheirBumps(s):  # noqa: N802
        """A sender's own replica's side-transport closed ts is at or above each of its
        bumps' T: the bump forwards its own (T, L) there, and a later update never takes
        it below (a lower LAI with a higher closed ts would be the fatal regression, and
        nothing resets it but a restart)."""
        def kept(g: int, x: int, k: int) -> Any:
            wiped = And(s.restarted, x == 0) if ctx.restarts else False
            return Implies(And(is_bump(s, g, x, k), Not(wiped)),
                           s.side_ts[g][x] >= bump_ts(s, g, x, k))
        return And(*[kept(g, x, k) for g in ranges for x, k in bumps(s)])

    if ctx.merges:
        @m.lemma
        def SubsumeCoversBumps(s):  # noqa: N802
            """After Subsume, every bump of range 1 made in the lease sequence Subsume ran
            in (the one in force at the end of range 1's log, its holder's) is at or
            below the closed ts Subsume reported, which takes the side-transport one;
            a bump of an earlier sequence is below the freeze time, Subsume's clock,
            which is at or above that sequence's start (a request starts above the bump,
            a transfer at or after it)."""
            end = leases.Replay(s, ctx, 1).at_end()[2]

            def covered(x: int, k: int) -> Any:
                J, T = bump_lease(s, 1, x, k), bump_ts(s, 1, x, k)
                return Implies(And(s.subsumed, is_bump(s, 1, x, k)),
                               If(base(s, 1, J) == base(s, 1, end), T <= s.merge_closed,
                                  T < s.merge_freeze))
            return And(*[covered(x, k) for x, k in bumps(s)])

    @m.lemma
    def BumpsBelowLaterWrites(s):  # noqa: N802
        """A write of a bump's range and sequence that is not flushed, or flushed with an
        LAI above the bump's L, is above its T (nothing was in flight when the bump
        succeeded, the tracker's lower bound was above T, later writes are tracked above
        the raised assigned closed ts); so is every write of a later sequence
        (FloorAboveBumps)."""
        def write(g: int, w: int, x: int, k: int) -> Any:
            J = bump_lease(s, g, x, k)
            same = base(s, g, s.wseq[w]) == base(s, g, J)
            pending = Or(Not(leases.sent(s, ctx, w)), s.wlai[w] > bump_lai(s, g, x, k))
            later = And(s.wseq[w] > J, Not(same))
            return Implies(And(is_bump(s, g, x, k), s.wphase[w] != WPhase.idle,
                               in_range(s, ctx, w, g), Or(And(same, pending), later)),
                           s.wts[w] > bump_ts(s, g, x, k))
        return And(*[write(g, w, x, k) for g in ranges for w in range(W)
                     for x, k in bumps(s)])

"""Lemmas of the side transport, on top of the core's: one range, n1 its only sender.

A *bump* is a publish whose BumpSideTransportClosed succeeded for the range: the
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
bumps are ordered the same way in T and L.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Exists, ForAll, If, Implies, Not, Or
from spec.log_driven.lemmas import core
from spec.log_driven.parts import NIL, Ctx, WPhase
from spec.log_driven.side_transport import Entry

G = 0  # one range
X = 0  # n1 holds its lease and is the only sender


def applies(p: Any, ctx: Ctx) -> bool:
    """The core's configuration with the side transport (n1 its only sender, since the
    lease never moves)."""
    return core.applies(p, ctx) and ctx.ranges == 1 and p.side_transport and p.senders == 1


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not applies(p, ctx):
        return
    N, P, W = ctx.nodes, p.publishes, ctx.writes
    K = 2 if ctx.lead else 1
    stash = p.side_unapplied == "stash"
    streams = [n for n in range(N) if n != X]

    def pick(values: list[Any], i: Any) -> Any:
        out = values[-1]
        for j in range(len(values) - 2, -1, -1):
            out = If(i == j, values[j], out)
        return out

    def grp(s: Any, k: int) -> Any:
        return s.hist_grp[X][k][G] if K > 1 else 0

    def bump_ts(s: Any, k: int) -> Any:
        """T of publish k: the closed ts it sent for the range's group."""
        return pick([s.hist_closed[X][k][c] for c in range(K)], grp(s, k))

    def bump_lai(s: Any, k: int) -> Any:
        return s.hist_bump[X][k][G]

    def is_bump(s: Any, k: int) -> Any:
        return And(k <= s.pub_seq[X], bump_lai(s, k) != NIL)

    def some_bump(s: Any, ts: Any, lai: Any) -> Any:
        return Exists(range(1, P + 1), lambda k: And(is_bump(s, k), ts == bump_ts(s, k),
                                                     lai == bump_lai(s, k)))

    # the claim may also come from a bump (the core's ClaimIsAccepted asks the sources)
    ctx.hooks.setdefault("claim_sources", []).append(
        lambda s, g: Exists(range(1, P + 1), lambda k: And(is_bump(s, k),
                                                           s.claim_hi[g] == bump_ts(s, k))))

    @m.lemma
    def SenderHistory(s):  # noqa: N802 - property names are CamelCase
        """The sender's state is its last publish's, and publishes not made yet (and
        publish 0) hold nothing; a range tracked after publish k was bumped in it, at
        the LAI it is tracked at (`publish` removes a range whose bump failed)."""
        def unset(k: int) -> Any:
            conds = [s.hist_bump[X][k][G] == NIL, Not(s.hist_tracked[X][k][G]),
                     s.hist_lai[X][k][G] == 0]
            conds += [s.hist_closed[X][k][c] == NIL for c in range(K)]
            if K > 1:
                conds.append(s.hist_grp[X][k][G] == 0)
            return And(*conds)

        def made(k: int) -> Any:
            return Implies(s.hist_tracked[X][k][G],
                           s.hist_bump[X][k][G] == s.hist_lai[X][k][G])

        history = ForAll(range(P + 1), lambda k: If(
            Or(k == 0, k > s.pub_seq[X]), unset(k), made(k)))

        def last(k: int) -> Any:
            conds = [s.pub_tracked[X][G] == s.hist_tracked[X][k][G],
                     s.pub_lai[X][G] == s.hist_lai[X][k][G]]
            conds += [s.pub_closed[X][c] == s.hist_closed[X][k][c] for c in range(K)]
            if K > 1:
                conds.append(s.pub_grp[X][G] == s.hist_grp[X][k][G])
            return Implies(s.pub_seq[X] == k, And(*conds))
        return And(history, ForAll(range(P + 1), last))

    @m.lemma
    def BumpsBelowSender(s):  # noqa: N802
        """A bump's T is at or above 0, at or below the sender's assigned closed ts and the
        range's claim, and its L at or below the sender's applied LAI (both only grow);
        a later bump has a higher T and no lower L (the bump needs `target >
        assigned_closed`, and raises it to the target; §4.3)."""
        def bounded(k: int) -> Any:
            return Implies(is_bump(s, k), And(
                bump_ts(s, k) >= 0, bump_ts(s, k) <= s.assigned_closed[G][X],
                bump_ts(s, k) <= s.claim_hi[G], bump_lai(s, k) <= s.lai[G][X]))

        def ordered(a: int, b: int) -> Any:
            return Implies(And(is_bump(s, a), is_bump(s, b)), And(
                bump_ts(s, a) < bump_ts(s, b), bump_lai(s, a) <= bump_lai(s, b)))
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
            later = [Implies(And(a[0], a[1] < W, a[2] > bump_lai(s, k)),
                             s.wts[a[1]] > bump_ts(s, k)) for a in attempts]
            pending = [Implies(Or(s.wphase[w] == WPhase.evaluating,
                                  s.wphase[w] == WPhase.buffered),
                               s.wts[w] > bump_ts(s, k)) for w in range(W)]
            return Implies(is_bump(s, k), And(*later, *pending))
        return ForAll(range(1, P + 1), above)

    def delta(s: Any, j: Any) -> Any:
        """The entry publish j (a delta) sent for the range, from the history before and
        after it."""
        before = [s.hist_tracked[X][i][G] for i in range(P + 1)]
        was = pick(before[:-1], j - 1) if P > 0 else False
        now = pick(before, j)
        changed = Or(Not(was), pick([s.hist_lai[X][i][G] for i in range(P)], j - 1)
                     != pick([s.hist_lai[X][i][G] for i in range(P + 1)], j))
        if K > 1:
            changed = Or(changed, pick([s.hist_grp[X][i][G] for i in range(P)], j - 1)
                         != pick([s.hist_grp[X][i][G] for i in range(P + 1)], j))
        return If(And(was, Not(now)), Entry.remove,
                  If(And(now, changed), Entry.upsert, Entry.none))

    @m.lemma
    def StreamsCarryHistory(s):  # noqa: N802
        """Each stream's queue holds the sender's publishes in order, up to its last,
        each as that publish produced it (a snapshot of the tracked set, or the delta
        from the publish before); only the head may be a snapshot, and then the
        receiver has no state for the stream; otherwise the receiver sits right before
        the head, or, with nothing queued, at the sender's last publish, and tracks a
        range in the group that publish gave it (§4.1, §4.2; a break empties both and
        the next publish is a snapshot)."""
        def stream(n: int) -> Any:
            ln = s.q_len[X][n]

            def message(i: int) -> Any:
                seq = s.q_seq[X][n][i]
                hist = [s.hist_tracked[X][k][G] for k in range(P + 1)]
                conds = [seq >= 1, seq <= s.pub_seq[X],
                         Implies(i == ln - 1, seq == s.pub_seq[X]),
                         s.q_lai[X][n][i][G] == pick(
                             [s.hist_lai[X][k][G] for k in range(P + 1)], seq),
                         s.q_entry[X][n][i][G] == If(
                             s.q_snap[X][n][i],
                             If(pick(hist, seq), Entry.upsert, Entry.none), delta(s, seq))]
                conds += [s.q_closed[X][n][i][c] == pick(
                    [s.hist_closed[X][k][c] for k in range(P + 1)], seq) for c in range(K)]
                if K > 1:
                    conds.append(s.q_grp[X][n][i][G] == pick(
                        [s.hist_grp[X][k][G] for k in range(P + 1)], seq))
                if i > 0:
                    conds += [Not(s.q_snap[X][n][i]), seq == s.q_seq[X][n][i - 1] + 1]
                return Implies(i < ln, And(*conds))
            ok, rseq = s.rv_ok[X][n], s.rv_seq[X][n]
            head = If(ln == 0,
                      Or(s.fresh[X][n], And(ok, rseq == s.pub_seq[X])),
                      If(s.q_snap[X][n][0], Not(ok),
                         And(ok, s.q_seq[X][n][0] == rseq + 1)))
            fresh = Implies(s.fresh[X][n], And(ln == 0, Not(ok)))
            received = Implies(ok, And(rseq >= 1, rseq <= s.pub_seq[X]))
            if K > 1:  # ReceiverMatchesSender compares closed ts, which may coincide
                received = And(received, Implies(And(ok, s.rv_tracked[X][n][G]), (
                    s.rv_grp[X][n][G] == pick([s.hist_grp[X][k][G] for k in range(P + 1)],
                                              rseq))))
            return And(ForAll(range(P), message), head, fresh, received)
        return ForAll(streams, stream)

    def side_pairs(s: Any, n: int) -> list[tuple[Any, Any]]:
        out = [(s.side_ts[G][n], s.side_lai[G][n])]
        if stash:
            out.append((s.next_ts[G][n], s.next_lai[G][n]))
        return out

    @m.lemma
    def ReplicasHoldBumps(s):  # noqa: N802
        """Each replica's side-transport state (`cur`, and the stashed `next`) is unset or
        some bump's (T, L): the sender forwards its bump, a receiver the copy of the
        message that carried it, a removal the previous one; merging two pairs keeps
        one of them (`sidetransportAccess.forward`)."""
        return ForAll(range(N), lambda n: And(*[
            Or(And(ts == NIL, lai == 0), some_bump(s, ts, lai)) for ts, lai in side_pairs(s, n)]))

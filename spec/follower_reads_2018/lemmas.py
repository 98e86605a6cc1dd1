"""Lemmas that make the 2018 design's properties inductive, for `ctmc prove`.

They are about the single-range design (`applies`): one range whose lease n1 holds for
good (no transfer, takeover, split or merge), no reproposals, Raft appending in LAI
order without duplicates; n1's liveness may lapse and n1 may restart in a new epoch,
updates may be lost, receivers may see gaps and ask for MLAIs. Each lemma is a fact
about how the state was built, preserved by every action given the others; the
docstring names the rule or reference section (`closedts-ground-truth.md`; RFC
sections by name) that makes it true. By mechanism:

- writes and LAIs (`writes.py`): a write's phase says what it holds, LAIs are handed
  out once each;
- the MPT (`mpt.py`, §1.6): `closed < next`, epochs ordered, and where a proposal's LAI
  is until n1 sends it: on the left, on the right (then above `next`), or already in
  what n1 sent each peer since its last full update (`cum`);
- the updates and the receivers (`transport.py`, §C.1, V1, V2): the update on its way
  is n1's last; a receiver is never ahead of n1's numbering; the update after the one
  it applied carries exactly the accumulation; its MLAI map is that accumulation;
  every closed ts n1 sent is covered by the accumulated MLAIs;
- the shared Raft log (`log_driven/raft.py`, read here, not changed): in order, every
  entry accepted, a replica's LAI is the length of the prefix it applied;
- follower reads (`reads.py`, `log_driven/follower_reads.py`): a read saw every write
  at or below its timestamp that existed, and later writes are above it.

BFS checks them as invariants on every holds model that selects them (`v1_tiny`,
`v1_core`): a false lemma fails those models, not only a proof. They are registered
whatever the mutations, as in the log-driven core; mutation models select their
end-to-end invariant, so they prove without them (and do not prove).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, ForAll, If, Implies, Max, Not, Or
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1
from spec.log_driven.parts import Ctx, WPhase

G = 0  # one range


def applies(p: Any, v: V1) -> bool:
    """The lemmas are about one range leased to n1 for good, without reproposals, with
    Raft appending in LAI order once (and not the liveness models' window)."""
    return (v.ranges == 1 and not v.lease_changes and p.init_holder == 0
            and not p.reproposals and not p.reorder and not p.duplicate
            and not v.window and not v.keep_previous)


def add(m: Any, p: Any, ctx: Ctx, v: V1) -> None:
    if not applies(p, v):
        return
    W, N = v.writes, v.nodes
    peers = range(1, N)

    def idle(s: Any, w: int) -> Any:
        return s.wphase[w] == WPhase.idle

    def evaluating(s: Any, w: int) -> Any:
        return s.wphase[w] == WPhase.evaluating

    def flushed(s: Any, w: int) -> Any:
        return s.wphase[w] == WPhase.flushed

    def lease_epoch(s: Any) -> Any:
        """The epoch of n1's only lease: the one its writes are evaluated in."""
        return s.lepoch[G][1]

    # --- the lease (epochs.py) ---------------------------------------------------------

    @m.lemma
    def LeaseStaysWithN1(s):  # noqa: N802
        """r1's only lease is n1's, in an epoch n1 has reached: n1 holds it from the
        start and nothing changes it (`lease_changes = 0`); a restart or takeover only
        raises n1's epoch (RFC "Implied guarantees")."""
        return And(s.lholder[G][1] == ORIGIN, lease_epoch(s) <= s.epoch[ORIGIN])

    # --- writes and LAIs (writes.py) -------------------------------------------------

    @m.lemma
    def WritePhases(s):  # noqa: N802 - property names are CamelCase
        """A write's phase says what it holds: an idle slot nothing; an evaluating write
        is n1's, tracked by the MPT, at ts >= 1, without an LAI; a flushed one has an
        LAI and is out of the MPT. Either is in the epoch of n1's lease, which
        `evaluate` requires n1 to hold (RFC "Implied guarantees": epoch-based
        leases), and is not in the log before it is flushed."""
        def one(w: int) -> Any:
            nothing = And(s.wlai[w] == 0, s.appended[w] == 0, Not(s.accepted[w]),
                          *[Not(s.has[n][w]) for n in range(N)])
            return And(
                Implies(idle(s, w), And(nothing, Not(s.wmpt[w]), Not(s.worigin[w]))),
                Implies(evaluating(s, w), And(nothing, s.wmpt[w], s.worigin[w],
                                              s.wts[w] >= 1,
                                              s.wepoch[w] == lease_epoch(s))),
                Implies(flushed(s, w), And(Not(s.wmpt[w]), s.worigin[w], s.wts[w] >= 1,
                                           s.wlai[w] >= 1,
                                           s.wlai[w] <= s.assigned_lai[G],
                                           s.wepoch[w] == lease_epoch(s))),
                Or(idle(s, w), evaluating(s, w), flushed(s, w)))
        return ForAll(range(W), one)

    @m.lemma
    def LAIsAssignedOnce(s):  # noqa: N802
        """Flushed writes hold distinct LAIs, exactly 1..assigned_lai: `propose` hands
        out the range's next LAI (RFC "Constructing outgoing updates")."""
        distinct = ForAll([(a, b) for a in range(W) for b in range(a + 1, W)],
                          lambda ab: Implies(And(flushed(s, ab[0]), flushed(s, ab[1])),
                                             s.wlai[ab[0]] != s.wlai[ab[1]]))
        count = s.assigned_lai[G] == sum(If(flushed(s, w), 1, 0) for w in range(W))
        return And(distinct, count)

    # --- the MPT (mpt.py, reference §1.6) --------------------------------------------

    @m.lemma
    def MPTOrdered(s):  # noqa: N802
        """`closed < next <= now - target` (§1.6: next is always above closed; `close`
        moves next to now - target only upward), and the MPT's epochs never pass n1's:
        left <= right <= n1's epoch (a left release with a newer epoch renews the right
        too; `Close` gives both sides the same one)."""
        return And(s.mpt_closed < s.mpt_next, s.mpt_next <= s.now - v.target,
                   s.left_epoch <= s.right_epoch, s.right_epoch <= s.epoch[ORIGIN])

    @m.lemma
    def TrackedIsEvaluating(s):  # noqa: N802
        """The MPT tracks exactly the evaluating writes: `Track` at evaluation,
        `release` at `propose` (RFC: Track, then done(LAI))."""
        return ForAll(range(W), lambda w: s.wmpt[w] == evaluating(s, w))

    def cum_covers(s: Any, n: int, e: Any, lai: Any) -> Any:
        """n1's accumulation for peer n in epoch e has an MLAI at or above `lai`."""
        return And(s.ct_epoch == e, s.cum[n][G] >= lai)

    @m.lemma
    def MPTHoldsReleasedLAIs(s):  # noqa: N802
        """Where a flushed write's LAI is until n1 has sent it to a peer, while n1 is
        in the write's epoch: on the left (sent by the next successful close), on the
        right with the write above `next` (it was tracked after the last close; the
        close after next sends it), or in what n1 sent that peer since its last full
        update (`cum`), unless the next update to that peer is a full one, which
        carries n1's assigned LAI (§1.6 release and Close; RFC "Recovering from missed
        updates")."""
        def one(w: int, n: int) -> Any:
            e, lai = s.wepoch[w], s.wlai[w]
            return Implies(And(flushed(s, w), e == s.epoch[ORIGIN]), Or(
                s.full_next[n], cum_covers(s, n, e, lai),
                And(s.left_epoch == e, s.left_mlai[G] >= lai),
                And(s.wts[w] > s.mpt_next, s.right_epoch == e, s.right_mlai[G] >= lai)))
        return ForAll([(w, n) for w in range(W) for n in peers], lambda wn: one(*wn))

    # --- n1's updates and the receivers (transport.py, reference §C.1) ---------------

    @m.lemma
    def SenderState(s):  # noqa: N802
        """n1's last update went out in an epoch no later than its own, at or below the
        MPT's closed ts; unless a full update to a peer is due, n1 has sent that peer an
        update in its current epoch (a restart asks for full updates to every peer)."""
        per_peer = ForAll(peers, lambda n: And(
            Implies(Not(s.full_next[n]), And(s.ct_epoch == s.epoch[ORIGIN], s.ct_seq[n] >= 0)),
            # a gap empties the channel and asks for a full update; the next close sends it
            Implies(And(s.full_next[n], s.ct_epoch == s.epoch[ORIGIN]), Not(s.msg[n]))))
        return And(s.ct_epoch <= s.epoch[ORIGIN], s.ct_closed <= s.mpt_closed, per_peer)

    @m.lemma
    def MessageIsLastSent(s):  # noqa: N802
        """The update on its way to a peer (and the last one it could have had) is the
        last one n1 sent it: `close` writes every peer's message, and delivery and
        loss only take it off the channel (one message per peer, in order). A full
        update starts the accumulation afresh: it is the update's own MLAIs."""
        return ForAll(peers, lambda n: And(
            s.msg_epoch[n] == s.ct_epoch, s.msg_seq[n] == s.ct_seq[n],
            s.msg_closed[n] == s.ct_closed, s.msg_cum[n][G] == s.cum[n][G],
            Implies(s.msg[n], And(s.ct_epoch >= 1, s.ct_seq[n] >= 0)),
            Implies(s.ct_seq[n] == 0, s.msg_mlai[n][G] == s.cum[n][G])))

    @m.lemma
    def ReceiverBehindSender(s):  # noqa: N802
        """A receiver's state is one n1 sent: an epoch no later than n1's last update's,
        a closed ts no later than it, and, in that epoch, a sequence number n1 has
        reached in its current run for this peer; while the full update it asked for
        (after a gap) is due, it has none (§C.1 step 2; the receiver waits for seq 0)."""
        def one(n: int) -> Any:
            same = s.rc_epoch[n] == s.ct_epoch
            return And(s.rc_epoch[n] <= s.ct_epoch, s.rc_closed[n] <= s.ct_closed,
                       Implies(And(same, s.rc_seq[n] != NONE), s.rc_seq[n] <= s.ct_seq[n]),
                       Implies(And(s.full_next[n], s.rc_epoch[n] == s.epoch[ORIGIN]),
                               s.rc_seq[n] == NONE),
                       Implies(s.rc_epoch[n] == 0, s.rc_seq[n] == NONE))
        return ForAll(peers, one)

    @m.lemma
    def ReceiverInStep(s):  # noqa: N802
        """A receiver at n1's last sequence number for it, in n1's current run (no full
        update due), has n1's accumulation: it applied that very update. The update
        on its way, if it is the next number, carries its accumulation as the
        receiver's accumulation merged with its MLAIs ("the client tracks the maximum
        seen"; §C.1 step 3)."""
        def one(n: int) -> Any:
            same = And(s.rc_epoch[n] == s.ct_epoch, Not(s.full_next[n]))
            at = Implies(And(same, s.rc_seq[n] == s.ct_seq[n]),
                         s.rc_cum[n][G] == s.cum[n][G])
            nxt = Implies(And(s.msg[n], s.rc_epoch[n] == s.ct_epoch, s.ct_seq[n] != 0,
                              s.ct_seq[n] == s.rc_seq[n] + 1),
                          s.cum[n][G] == Max(s.rc_cum[n][G], s.msg_mlai[n][G]))
            return And(at, nxt)
        return ForAll(peers, one)

    @m.lemma
    def ReceiverMapIsAccumulation(s):  # noqa: N802
        """A receiver's MLAI map is n1's accumulation carried by the last update it
        applied, absent or not (V1 with its absent case: a gap clears both)."""
        return ForAll(peers, lambda n: s.rc_mlai[n][G] == s.rc_cum[n][G])

    @m.lemma
    def SentClosedCoversWrites(s):  # noqa: N802
        """Every write of the epoch of n1's last update at or below its closed ts is
        flushed, with an LAI in n1's accumulation for every peer (V2 for the sender:
        the MPT closed `next` only once its left side drained, and emitted its MLAIs;
        a full update carries the assigned LAI)."""
        def one(w: int, n: int) -> Any:
            return Implies(And(Not(idle(s, w)), s.wepoch[w] == s.ct_epoch,
                               s.wts[w] <= s.ct_closed),
                           And(flushed(s, w), s.cum[n][G] >= s.wlai[w]))
        return ForAll([(w, n) for w in range(W) for n in peers], lambda wn: one(*wn))

    # --- the shared Raft log (log_driven/raft.py) ------------------------------------

    @m.lemma
    def LogInLAIOrder(s):  # noqa: N802
        """Raft appends flushed writes in LAI order, once each (`append` without
        `reorder` or `duplicate`): entry i has LAI i + 1, and a flushed write is in the
        log iff its LAI is within it; no replica has applied past the end."""
        entries = ForAll(range(ctx.log_len), lambda i: Implies(
            i < s.loglen[G], And(flushed(s, s.log[G][i]), s.wlai[s.log[G][i]] == i + 1)))
        appended = ForAll(range(W), lambda w: s.appended[w] == If(
            And(flushed(s, w), s.wlai[w] <= s.loglen[G]), 1, 0))
        return And(entries, appended, s.loglen[G] <= s.assigned_lai[G])

    @m.lemma
    def ReplicasApplyPrefix(s):  # noqa: N802
        """Every entry is accepted (its LAI is above the one before it: §3.1), so a
        replica's LAI is the length of the prefix it applied; a node holds the writes
        with an LAI up to it, and a write is accepted once some replica applied it.
        2018 commands carry no closed ts, so the replicas' own closed ts stay unset."""
        def replica(n: int) -> Any:
            return And(s.lai[G][n] == s.applied[G][n], s.applied[G][n] <= s.loglen[G],
                       s.closed[G][n] == NONE,
                       ForAll(range(W), lambda w: s.has[n][w] == And(
                           flushed(s, w), s.wlai[w] <= s.lai[G][n])))
        accepted = ForAll(range(W), lambda w: s.accepted[w] == And(flushed(s, w), Or(
            *[s.wlai[w] <= s.lai[G][n] for n in range(N)])))
        return And(ForAll(range(N), replica), accepted)

    # --- follower reads (reads.py, log_driven/follower_reads.py) ---------------------

    @m.lemma
    def ReadsSawLowerWrites(s):  # noqa: N802
        """A follower read is at or below a closed ts n1 sent, so below the MPT's
        `next`, above which every later write is forced (§1.6 Track); and it saw every
        write at or below its ts that existed then (V2: flushed, at an LAI up to the
        MLAI, which the replica had reached: RFC "Reference-level explanation", the
        four steps)."""
        def one(i: int) -> Any:
            return Implies(s.rdone[i], And(
                s.rts[i] <= s.mpt_closed, s.rnode[i] != ORIGIN,
                ForAll(range(W), lambda w: Implies(
                    And(Not(idle(s, w)), s.wts[w] <= s.rts[i]),
                    And(flushed(s, w), s.robs[i][w])))))
        return ForAll(range(ctx.reads), one)

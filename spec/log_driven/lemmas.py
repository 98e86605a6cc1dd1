"""Lemmas that make the single-range core's properties inductive, for `ctmc prove`.

The core is one range with n1's lease for good: the tracker (`impl` or `heap`), the
proposal buffer, a Raft log that may reorder and duplicate, application with the LAI
check, claims and follower reads. Without these lemmas Z3 finds states no run
reaches (two proposals with one LAI, a replica whose LAI matches no entry it
applied, a read above every claim). Each lemma is a fact about how the state was
built, written so that it is preserved by every action given the others:

- the buffer lists the buffered proposals, and LAIs are handed out once each, in
  flush order, with closed ts that never go down (RFC "Rules for assigning a
  proposal's closed ts"; reference §2.4-2.5);
- every closed ts carried is below every write flushed after it (the RFC's promise
  "all further applying commands perform writes at timestamps > ts1"), and below
  every write still tracked (A7);
- acceptance is a function of the log: the entry at position i is accepted once
  some replica has applied it, if its LAI is above every LAI before it (§3.1
  CheckForcedErr); a replica's LAI and closed ts are those of the highest-LAI entry
  of the prefix it applied (§3.2), and a node holds exactly the accepted writes up
  to its LAI;
- the ghost claim is the closed ts of an accepted command, and every replica's and
  every read's timestamp is at or below it.

BFS checks them as invariants on every model that registers them (all core models
with no selected invariants), so a lemma that is false fails a holds model, not
only a proof. They hold for the protocol as specified; a mutation breaks some of
them, which is why mutation models select their invariant and prove without them.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Exists, ForAll, If, Implies, Not, Or
from spec.log_driven.parts import NIL, Ctx, WPhase, tracked
from spec.tracker import buffer_lists

G = 0  # the core has one range
X = 0  # and n1 proposes for it


def applies(p: Any, ctx: Ctx) -> bool:
    """The lemmas are about the single-range core with a lock-free or heap tracker."""
    return (ctx.ranges == 1 and not ctx.lease_changes and not p.side_transport
            and not ctx.restarts and not ctx.reproposals and not p.lai_errors
            and p.tracker in ("impl", "heap"))


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not applies(p, ctx):
        return
    P, W, L, N = ctx.props, ctx.writes, ctx.log_len, ctx.nodes

    def flushed(s: Any, w: int) -> Any:
        return s.wphase[w] == WPhase.flushed

    @m.lemma
    def BufferListsBuffered(s):  # noqa: N802 - property names are CamelCase
        """buf[0..buflen) lists each buffered proposal once and nothing else: finish
        never writes past the buffer, and flush takes a buffered proposal."""
        return buffer_lists(s.buf[G][X], s.buflen[G][X],
                            lambda w: s.wphase[w] == WPhase.buffered, P)

    @m.lemma
    def LAIsAssignedOnce(s):  # noqa: N802
        """A proposal has an LAI and a closed ts exactly when it is flushed; the flushed
        ones hold distinct LAIs 1..assigned_lai, and carry closed ts at or below the
        assigned closed ts: a new flush gets a fresh, highest LAI."""
        per = ForAll(range(P), lambda w: If(
            flushed(s, w),
            And(s.wlai[w] >= 1, s.wlai[w] <= s.assigned_lai[G][X], s.wcts[w] >= 0,
                s.wcts[w] <= s.assigned_closed[G][X]),
            And(s.wlai[w] == 0, s.wcts[w] == NIL)))
        distinct = ForAll([(a, b) for a in range(P) for b in range(a + 1, P)],
                          lambda ab: Implies(And(flushed(s, ab[0]), flushed(s, ab[1])),
                                             s.wlai[ab[0]] != s.wlai[ab[1]]))
        count = s.assigned_lai[G][X] == sum(If(flushed(s, w), 1, 0) for w in range(P))
        return And(per, distinct, count)

    @m.lemma
    def WritesStamped(s):  # noqa: N802
        """A write that has started evaluating has a ts of at least 1 (client ts start at
        1), so a closed ts computed below it is at least 0."""
        return ForAll(range(W), lambda w: Implies(s.wphase[w] != WPhase.idle, s.wts[w] >= 1))

    @m.lemma
    def ClosedFollowsLAI(s):  # noqa: N802
        """Flushed proposals' closed ts follow their LAIs (the flushed half of A4)."""
        return ForAll([(a, b) for a in range(P) for b in range(P) if a != b],
                      lambda ab: Implies(
                          And(flushed(s, ab[0]), flushed(s, ab[1]),
                              s.wlai[ab[0]] < s.wlai[ab[1]]),
                          s.wcts[ab[0]] <= s.wcts[ab[1]]))

    @m.lemma
    def ClaimsBelowLaterWrites(s):  # noqa: N802
        """Every closed ts carried is below every write flushed with a higher LAI: the
        write was tracked, or evaluated above the floor, when the claim was chosen."""
        return ForAll([(a, b) for a in range(P) for b in range(W) if a != b],
                      lambda ab: Implies(
                          And(flushed(s, ab[0]), flushed(s, ab[1]),
                              s.wlai[ab[0]] < s.wlai[ab[1]]),
                          s.wcts[ab[0]] < s.wts[ab[1]]))

    if p.tracker == "impl":
        @m.lemma
        def BucketsWellFormed(s):  # noqa: N802
            """A bucket holding no tracked write is unset, and when both are set b1's
            ts is at most b2's: a write joining b2 is then above the lower bound, and
            a drained b1 swapped for b2 keeps the bound sound (reference §1.2). A set bucket
            holds a write's ts, so it is at least 1."""
            b1 = s.tb_first[G][X]

            def empty(b: Any) -> Any:
                return ForAll(range(W), lambda q: Not(And(tracked(s, q), s.tok[q] == b)))
            unset = ForAll(range(2), lambda b: And(
                Implies(empty(b), s.tb_ts[G][X][b] == NIL),
                Or(s.tb_ts[G][X][b] == NIL, s.tb_ts[G][X][b] >= 1)))
            lo, hi = s.tb_ts[G][X][b1], s.tb_ts[G][X][1 - b1]
            return And(unset, Implies(And(lo != NIL, hi != NIL), lo <= hi))

    def at(s: Any, i: int) -> Any:
        """The proposal at log position i."""
        return s.log[G][i]

    def first_of_its_lai(s: Any, i: int) -> Any:
        """The entry at position i has an LAI above every entry before it, so the LAI
        check accepts it wherever it is applied."""
        return ForAll(range(i), lambda j: s.wlai[at(s, j)] < s.wlai[at(s, i)])

    @m.lemma
    def LogHoldsFlushed(s):  # noqa: N802
        """The log holds flushed proposals only, each as often as `appended` says, and
        no replica has applied past its end."""
        entries = ForAll(range(L), lambda i: Implies(i < s.loglen[G], flushed(s, at(s, i))))
        counts = ForAll(range(P), lambda w: s.appended[w] == sum(
            If(And(i < s.loglen[G], at(s, i) == w), 1, 0) for i in range(L)))
        bounded = ForAll(range(N), lambda n: s.applied[G][n] <= s.loglen[G])
        return And(entries, counts, bounded)

    @m.lemma
    def AcceptedByLog(s):  # noqa: N802
        """A proposal is accepted exactly when it sits at a log position some replica
        has applied, with an LAI above every entry before it: the LAI check decides
        the same everywhere (reference §3.1)."""
        return ForAll(range(P), lambda w: s.accepted[w] == Exists(range(L), lambda i: And(
            i < s.loglen[G], at(s, i) == w, first_of_its_lai(s, i),
            Exists(range(N), lambda n: s.applied[G][n] > i))))

    @m.lemma
    def ReplicaFollowsLog(s):  # noqa: N802
        """Each replica's LAI is the highest LAI in the prefix it applied, and its closed
        ts is the closed ts of the entry with that LAI (none before the first)."""
        def replica(n: int) -> Any:
            below = ForAll(range(L), lambda j: Implies(
                j < s.applied[G][n], s.wlai[at(s, j)] <= s.lai[G][n]))
            source = Exists(range(L), lambda j: And(
                j < s.applied[G][n], s.wlai[at(s, j)] == s.lai[G][n],
                s.closed[G][n] == s.wcts[at(s, j)]))
            none = And(s.applied[G][n] == 0, s.lai[G][n] == 0, s.closed[G][n] == NIL)
            return And(below, Or(none, source))
        return ForAll(range(N), replica)

    @m.lemma
    def NodesHoldAcceptedUpToLAI(s):  # noqa: N802
        """A node holds exactly the accepted writes whose LAI its replica has reached:
        a read served at the replica's closed ts misses only writes with a higher
        LAI, which are above that closed ts (ClaimsBelowLaterWrites)."""
        return ForAll([(n, w) for n in range(N) for w in range(W)], lambda nw: s.has[nw[0]][
            nw[1]] == And(s.accepted[nw[1]], s.wlai[nw[1]] <= s.lai[G][nw[0]]))

    @m.lemma
    def ClaimIsAccepted(s):  # noqa: N802
        """The ghost claim is the closed ts of an accepted command (or unset), at or
        above every replica's closed ts and every follower read's ts."""
        source = Or(s.claim_hi[G] == NIL, Exists(range(P), lambda w: And(
            s.accepted[w], s.wcts[w] == s.claim_hi[G])))
        replicas = ForAll(range(N), lambda n: s.closed[G][n] <= s.claim_hi[G])
        reads = ForAll(range(ctx.reads), lambda i: Implies(s.rdone[i], s.rts[i] <= s.claim_hi[G]))
        return And(source, replicas, reads)

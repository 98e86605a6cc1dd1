"""Lemmas of the single-range core: one range, n1 proposing for good.

The core is the tracker (`impl` or `heap`), n1's proposal buffer, a Raft log that may
reorder and duplicate, application with the LAI check, claims and follower reads, and
new-LAI reproposals (`reproposals`). Without these lemmas Z3 finds states no run reaches
(two attempts with one LAI, a replica whose LAI matches no entry it applied, a read above
every claim). Each lemma is a fact about how the state was built, written so that it is
preserved by every action given the others.

An *attempt* is one flush of a proposal: it gets an LAI and a closed ts. Without
reproposals a proposal is flushed once, and its log entries (one, or two when Raft
duplicates it) are that attempt. With reproposals a write rejected for its LAI is flushed
again: each log entry then carries its own attempt's LAI and closed ts (`elai`, `ects`),
and the proposal's own `wlai`/`wcts` are its newest attempt's. The attempts are the log's
entries plus the flushed proposals not yet appended.

- the buffer lists the buffered proposals, and LAIs are handed out once per attempt, in
  flush order, with closed ts that never go down (RFC "Rules for assigning a proposal's
  closed ts"; reference §2.4-2.5);
- every closed ts carried is below every write whose attempt was flushed after it (the
  RFC's promise "all further applying commands perform writes at timestamps > ts1"): the
  write was tracked, or evaluated above the floor, when the claim was chosen, and a
  reproposal is tracked again only above the assigned closed ts (§2.9);
- acceptance is a function of the log: the entry at position i is accepted once some
  replica has applied it, if its LAI is above every LAI before it (§3.1 CheckForcedErr);
  a replica's LAI and closed ts are those of the highest-LAI entry of the prefix it
  applied (§3.2), and a node holds exactly the accepted writes up to its LAI;
- the ghost claim is the closed ts of an accepted command, and every replica's and every
  read's timestamp is at or below it.

BFS checks them as invariants on every model that registers them, so a lemma that is
false fails a holds model, not only a proof. They hold for the protocol as specified; a
mutation breaks some of them, which is why mutation models select their invariant and
prove without them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from checker.lang import And, Exists, ForAll, If, Implies, Not, Or
from spec.log_driven.parts import NIL, Ctx, WPhase, tracked
from spec.tracker import buffer_lists

G = 0  # the core has one range
X = 0  # and n1 proposes for it


def applies(p: Any, ctx: Ctx) -> bool:
    """The core lemmas: one range, no lease changes, no side transport, no restart, no
    injected LAI errors, a lock-free or heap tracker."""
    return (ctx.ranges == 1 and not ctx.lease_changes and not p.side_transport
            and not ctx.restarts and not p.lai_errors and p.tracker in ("impl", "heap"))


class Log:
    """The log's entries and the attempts, in the state `s` (symbolic or concrete)."""

    def __init__(self, s: Any, ctx: Ctx):
        self.s, self.ctx = s, ctx
        self.P, self.L = ctx.props, ctx.log_len

    def at(self, i: int) -> Any:
        """The proposal at log position i."""
        return self.s.log[G][i]

    def lai(self, i: int) -> Any:
        """The LAI the entry at position i carries."""
        return self.s.elai[G][i] if self.ctx.reproposals else self.s.wlai[self.at(i)]

    def cts(self, i: int) -> Any:
        """The closed ts the entry at position i carries."""
        return self.s.ects[G][i] if self.ctx.reproposals else self.s.wcts[self.at(i)]

    def present(self, i: int) -> Any:
        return i < self.s.loglen[G]

    def current(self, i: int) -> Any:
        """The entry at position i is its proposal's newest attempt, flushed (or given up
        on after it was rejected): always, without reproposals."""
        if not self.ctx.reproposals:
            return True
        w = self.at(i)
        done = Or(self.s.wphase[w] == WPhase.flushed, self.s.wphase[w] == WPhase.failed)
        return And(done, self.lai(i) == self.s.wlai[w])

    def first_of_its_lai(self, i: int) -> Any:
        """The entry at position i has an LAI above every entry before it, so the LAI
        check accepts it wherever it is applied."""
        return ForAll(range(i), lambda j: self.lai(j) < self.lai(i))

    def attempts(self) -> list[tuple[Any, Any, Any, Any]]:
        """(exists, proposal, LAI, closed ts) of every attempt: each flushed proposal's
        newest one and, with reproposals, each log position's (which may repeat a
        newest one: the same attempt twice, which every fact below allows). Without
        reproposals every entry is its flushed proposal's only attempt."""
        s = self.s
        out = [(s.wphase[w] == WPhase.flushed, w, s.wlai[w], s.wcts[w])
               for w in range(self.P)]
        if self.ctx.reproposals:
            out += [(self.present(i), self.at(i), self.lai(i), self.cts(i))
                    for i in range(self.L)]
        return out


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not applies(p, ctx):
        return
    P, W, N = ctx.props, ctx.writes, ctx.nodes

    def flushed(s: Any, w: Any) -> Any:
        return s.wphase[w] == WPhase.flushed

    def pairs(s: Any, body: Callable[[tuple, tuple], Any]) -> Any:
        """body(a, b) for every ordered pair of attempts that exist."""
        att = Log(s, ctx).attempts()
        return And(*[Implies(And(a[0], b[0]), body(a, b))
                     for ia, a in enumerate(att) for ib, b in enumerate(att) if ia != ib])

    @m.lemma
    def BufferListsBuffered(s):  # noqa: N802 - property names are CamelCase
        """buf[0..buflen) lists each buffered proposal once and nothing else: finish and a
        reproposal never write past the buffer, and flush takes a buffered proposal."""
        return buffer_lists(s.buf[G][X], s.buflen[G][X],
                            lambda w: s.wphase[w] == WPhase.buffered, P)

    @m.lemma
    def LAIsAssignedOnce(s):  # noqa: N802
        """Every attempt has an LAI in 1..assigned_lai and a closed ts in
        0..assigned_closed; two different attempts never share an LAI (a flush takes the
        next LAI); a proposal never flushed has neither."""
        log = Log(s, ctx)

        def bounded(a: tuple) -> Any:
            return Implies(a[0], And(a[2] >= 1, a[2] <= s.assigned_lai[G][X], a[3] >= 0,
                                     a[3] <= s.assigned_closed[G][X]))
        fresh = ForAll(range(P), lambda w: Implies(
            Or(s.wphase[w] == WPhase.idle, s.wphase[w] == WPhase.evaluating),
            And(s.wlai[w] == 0, s.wcts[w] == NIL)))
        reflushed = ForAll(range(P), lambda w: s.wlai[w] <= s.assigned_lai[G][X])

        def distinct(a: tuple, b: tuple) -> Any:
            return Or(a[2] != b[2], And(a[1] == b[1], a[3] == b[3]))
        # one LAI per flush: a first flush, or the re-flush a reproposal spent its budget on
        first = sum(If(And(s.wlai[w] > 0, s.wphase[w] != WPhase.buffered), 1, 0)
                    for w in range(P))
        spent = ctx.reproposals - s.reproposals_left if ctx.reproposals else 0
        count = s.assigned_lai[G][X] == first + spent
        return And(*[bounded(a) for a in log.attempts()], fresh, reflushed, count,
                   pairs(s, distinct))

    @m.lemma
    def NothingReleasedUntracked(s):  # noqa: N802
        """No proposal waits in the buffer out of the tracker: a buffered proposal leaves
        the tracker only when it is flushed (§2.4 step e; `released` is reached only under
        UntrackWholeBatchFirst and ReproposeWithoutTracking), and none is orphaned
        without a restart."""
        return ForAll(range(P), lambda w: And(s.wphase[w] != WPhase.released,
                                              s.wphase[w] != WPhase.orphaned))

    @m.lemma
    def WritesStamped(s):  # noqa: N802
        """A write that has started evaluating has a ts of at least 1 (client ts start at
        1), so a closed ts computed below it is at least 0."""
        return ForAll(range(W), lambda w: Implies(s.wphase[w] != WPhase.idle, s.wts[w] >= 1))

    @m.lemma
    def ClosedFollowsLAI(s):  # noqa: N802
        """Attempts' closed ts follow their LAIs (the flushed half of A4): both are handed
        out in flush order, and the assigned closed ts never goes down."""
        return pairs(s, lambda a, b: Implies(a[2] < b[2], a[3] <= b[3]))

    @m.lemma
    def ClaimsBelowLaterWrites(s):  # noqa: N802
        """Every closed ts carried is below every write attempt flushed with a higher LAI:
        the write was tracked, or evaluated above the floor, when the claim was chosen;
        a reproposal is tracked again only above the assigned closed ts."""
        return pairs(s, lambda a, b: Implies(
            And(b[1] < W, a[2] < b[2]), a[3] < s.wts[b[1]]))

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

    @m.lemma
    def LogHoldsFlushed(s):  # noqa: N802
        """The log holds flushed proposals' attempts; a proposal's newest attempt sits
        there as often as `appended` says (an older one was rejected and replaced); no
        replica has applied past the log's end."""
        log = Log(s, ctx)
        L = ctx.log_len
        if ctx.reproposals:
            def entry(i: int) -> Any:  # an attempt of a proposal flushed at least once
                w = log.at(i)
                return And(log.lai(i) <= s.wlai[w], s.wphase[w] != WPhase.idle,
                           s.wphase[w] != WPhase.evaluating)
            entries = ForAll(range(L), lambda i: Implies(log.present(i), entry(i)))
        else:
            entries = ForAll(range(L), lambda i: Implies(log.present(i),
                                                         flushed(s, log.at(i))))
        counts = ForAll(range(P), lambda w: s.appended[w] == sum(
            If(And(log.present(i), log.at(i) == w, log.current(i)), 1, 0) for i in range(L)))
        bounded = ForAll(range(N), lambda n: s.applied[G][n] <= s.loglen[G])
        return And(entries, counts, bounded)

    if ctx.reproposals:
        @m.lemma
        def RetiredAttemptsRejected(s):  # noqa: N802
            """An attempt its proposal no longer stands on (an older one, or the one whose
            rejection made the write re-propose or give up) is rejected for its LAI, in
            every copy Raft appended: some entry before it has an LAI at least as high, so
            every replica rejects it (§2.9: the proposer re-proposes only on its own
            replica's rejection; §3.1: the LAI check decides the same everywhere)."""
            log = Log(s, ctx)

            def retired(i: int) -> Any:
                w = log.at(i)
                return Or(log.lai(i) < s.wlai[w], s.wphase[w] == WPhase.buffered,
                          s.wphase[w] == WPhase.failed)
            return ForAll(range(ctx.log_len), lambda i: Implies(
                And(log.present(i), retired(i)),
                Not(log.first_of_its_lai(i))))

    @m.lemma
    def AcceptedByLog(s):  # noqa: N802
        """A proposal is accepted exactly when one of its entries sits at a log position
        some replica has applied, with an LAI above every entry before it: the LAI check
        decides the same everywhere (reference §3.1)."""
        log = Log(s, ctx)
        return ForAll(range(P), lambda w: s.accepted[w] == Exists(range(ctx.log_len),
            lambda i: And(log.present(i), log.at(i) == w, log.first_of_its_lai(i),
                          Exists(range(N), lambda n: s.applied[G][n] > i))))

    @m.lemma
    def ReplicaFollowsLog(s):  # noqa: N802
        """Each replica's LAI is the highest LAI in the prefix it applied, and its closed
        ts is the closed ts of the entry with that LAI (none before the first)."""
        log = Log(s, ctx)

        def replica(n: int) -> Any:
            below = ForAll(range(ctx.log_len), lambda j: Implies(
                j < s.applied[G][n], log.lai(j) <= s.lai[G][n]))
            source = Exists(range(ctx.log_len), lambda j: And(
                j < s.applied[G][n], log.lai(j) == s.lai[G][n],
                s.closed[G][n] == log.cts(j)))
            none = And(s.applied[G][n] == 0, s.lai[G][n] == 0, s.closed[G][n] == NIL)
            return And(below, Or(none, source))
        return ForAll(range(N), replica)

    @m.lemma
    def NodesHoldAcceptedUpToLAI(s):  # noqa: N802
        """A node holds exactly the accepted writes whose LAI its replica has reached: a
        read served at the replica's closed ts misses only writes with a higher LAI,
        which are above that closed ts (ClaimsBelowLaterWrites). An accepted write is
        never re-proposed, so its LAI is its accepted attempt's."""
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

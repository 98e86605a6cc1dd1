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

from checker.lang import And, Exists, ForAll, If, Implies, Min, Not, Or
from spec.log_driven.parts import NIL, Ctx, WPhase, in_range, tracked
from spec.tracker import buffer_lists

X = 0  # n1 proposes for every range


def applies(p: Any, ctx: Ctx) -> bool:
    """The core lemmas: one range (or two with a split, a merge or both, each range's
    lemmas over its own log, without the side transport or reproposals: `splits.py` and
    `merges.py` in this package add what the structural commands link), no lease changes,
    no restart, no injected LAI errors, a lock-free or heap tracker (the side transport
    adds its own, `side.py`)."""
    shape = ctx.ranges == 1 or (not ctx.reproposals and not p.side_transport)
    return (shape and not ctx.lease_changes and not ctx.restarts
            and not p.lai_errors and p.tracker in ("impl", "heap"))


def flushed(s: Any, w: Any) -> Any:
    """Proposal w is flushed: its newest attempt carries an LAI and a closed ts."""
    return s.wphase[w] == WPhase.flushed


def right_hand(ctx: Ctx, key: Any) -> Any:
    """`key` (a write's or a read's, symbolic) is on the right of the split or merge."""
    return Or(*[key == k for k in ctx.rhs_keys])


def read_range(s: Any, ctx: Ctx, i: int) -> Any:
    """The range read i was served by (range 0 when there is one)."""
    return s.rrng[i] if ctx.ranges > 1 else 0


def never_failed(s: Any, c: int) -> Any:
    """Structural command c is idle, buffered or flushed: nothing rejects it for good."""
    return Or(s.wphase[c] == WPhase.idle, s.wphase[c] == WPhase.buffered, flushed(s, c))


def of_range(s: Any, ctx: Ctx, w: Any, g: int) -> Any:
    """Proposal w, which may be symbolic (a buffer slot's, a log entry's), belongs to
    range g: a write to the range it evaluated on, the split to range 0."""
    if ctx.ranges == 1:
        return True
    if isinstance(w, int):
        return in_range(s, ctx, w, g)
    W = ctx.writes
    return Or(And(w < W, s.wrng[Min(w, W - 1)] == g), And(w >= W, g == 0))


class Log:
    """Range g's log entries and attempts, in the state `s` (symbolic or concrete)."""

    def __init__(self, s: Any, ctx: Ctx, g: int = 0):
        self.s, self.ctx, self.g = s, ctx, g
        self.P, self.L = ctx.props, ctx.log_len

    def at(self, i: int) -> Any:
        """The proposal at log position i."""
        return self.s.log[self.g][i]

    def lai(self, i: int) -> Any:
        """The LAI the entry at position i carries."""
        return self.s.elai[self.g][i] if self.ctx.reproposals else self.s.wlai[self.at(i)]

    def cts(self, i: int) -> Any:
        """The closed ts the entry at position i carries."""
        return self.s.ects[self.g][i] if self.ctx.reproposals else self.s.wcts[self.at(i)]

    def present(self, i: int) -> Any:
        return i < self.s.loglen[self.g]

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
        out = [(And(s.wphase[w] == WPhase.flushed, in_range(s, self.ctx, w, self.g)), w,
                s.wlai[w], s.wcts[w]) for w in range(self.P)]
        if self.ctx.reproposals:
            out += [(self.present(i), self.at(i), self.lai(i), self.cts(i))
                    for i in range(self.L)]
        return out


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not applies(p, ctx):
        return
    P, W, N = ctx.props, ctx.writes, ctx.nodes
    ranges = range(ctx.ranges)

    def pairs(s: Any, body: Callable[[tuple, tuple], Any]) -> Any:
        """body(a, b) for every ordered pair of attempts of one range that exist."""
        out = []
        for g in ranges:
            att = Log(s, ctx, g).attempts()
            out += [Implies(And(a[0], b[0]), body(a, b))
                    for ia, a in enumerate(att) for ib, b in enumerate(att) if ia != ib]
        return And(*out)

    @m.lemma
    def BufferListsBuffered(s):  # noqa: N802 - property names are CamelCase
        """buf[0..buflen) lists each buffered proposal once and nothing else: finish and a
        reproposal never write past the buffer, and flush takes a buffered proposal."""
        return And(*[buffer_lists(s.buf[g][X], s.buflen[g][X], lambda w, g=g: And(
            s.wphase[w] == WPhase.buffered, of_range(s, ctx, w, g)), P) for g in ranges])

    @m.lemma
    def LAIsAssignedOnce(s):  # noqa: N802
        """Every attempt has an LAI in 1..assigned_lai and a closed ts in
        0..assigned_closed of its range; two different attempts never share an LAI (a
        flush takes the next LAI); a proposal never flushed has neither."""
        def bounded(a: tuple, g: int) -> Any:
            return Implies(a[0], And(a[2] >= 1, a[2] <= s.assigned_lai[g][X], a[3] >= 0,
                                     a[3] <= s.assigned_closed[g][X]))
        fresh = ForAll(range(P), lambda w: Implies(
            Or(s.wphase[w] == WPhase.idle, s.wphase[w] == WPhase.evaluating),
            And(s.wlai[w] == 0, s.wcts[w] == NIL)))
        reflushed = ForAll([(g, w) for g in ranges for w in range(P)], lambda gw: Implies(
            in_range(s, ctx, gw[1], gw[0]), s.wlai[gw[1]] <= s.assigned_lai[gw[0]][X]))

        def distinct(a: tuple, b: tuple) -> Any:
            return Or(a[2] != b[2], And(a[1] == b[1], a[3] == b[3]))
        # one LAI per flush: a first flush, or the re-flush a reproposal spent its budget on
        counts = []
        for g in ranges:
            first = sum(If(And(s.wlai[w] > 0, s.wphase[w] != WPhase.buffered,
                               in_range(s, ctx, w, g)), 1, 0) for w in range(P))
            spent = ctx.reproposals - s.reproposals_left if ctx.reproposals else 0
            counts.append(s.assigned_lai[g][X] == first + spent)
        return And(*[bounded(a, g) for g in ranges for a in Log(s, ctx, g).attempts()],
                   fresh, reflushed, *counts, pairs(s, distinct))

    @m.lemma
    def NothingReleasedUntracked(s):  # noqa: N802
        """No proposal waits in the buffer out of the tracker: a buffered proposal leaves
        the tracker only when it is flushed (§2.4 step e; `released` is reached only under
        UntrackWholeBatchFirst and ReproposeWithoutTracking), none is orphaned without a
        restart, and none fails without reproposals (only a rejected attempt's proposer
        gives up on it)."""
        failed = [] if ctx.reproposals else [s.wphase[w] != WPhase.failed for w in range(P)]
        return And(ForAll(range(P), lambda w: And(s.wphase[w] != WPhase.released,
                                                  s.wphase[w] != WPhase.orphaned)), *failed)

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
        def below(a: tuple, b: tuple) -> Any:
            if isinstance(b[1], int) and b[1] >= W:  # the split: a command, not a write
                return True
            return Implies(And(b[1] < W, a[2] < b[2]), a[3] < s.wts[b[1]])
        return pairs(s, below)

    if p.tracker == "impl":
        @m.lemma
        def BucketsWellFormed(s):  # noqa: N802
            """A bucket holding no tracked write is unset, and when both are set b1's
            ts is at most b2's: a write joining b2 is then above the lower bound, and
            a drained b1 swapped for b2 keeps the bound sound (reference §1.2). A set bucket
            holds a write's ts, so it is at least 1."""
            def range_buckets(g: int) -> Any:
                b1 = s.tb_first[g][X]

                def empty(b: Any) -> Any:
                    return ForAll(range(W), lambda q: Not(And(
                        tracked(s, q), in_range(s, ctx, q, g), s.tok[q] == b)))
                unset = ForAll(range(2), lambda b: And(
                    Implies(empty(b), s.tb_ts[g][X][b] == NIL),
                    Or(s.tb_ts[g][X][b] == NIL, s.tb_ts[g][X][b] >= 1)))
                lo, hi = s.tb_ts[g][X][b1], s.tb_ts[g][X][1 - b1]
                return And(unset, Implies(And(lo != NIL, hi != NIL), lo <= hi))
            return And(*[range_buckets(g) for g in ranges])

    @m.lemma
    def LogHoldsFlushed(s):  # noqa: N802
        """The log holds flushed proposals' attempts; a proposal's newest attempt sits
        there as often as `appended` says (an older one was rejected and replaced); no
        replica has applied past the log's end."""
        L = ctx.log_len
        out = []
        for g in ranges:
            log = Log(s, ctx, g)
            if ctx.reproposals:
                def entry(i: int, log: Log = log) -> Any:  # of a proposal flushed at least once
                    w = log.at(i)
                    return And(log.lai(i) <= s.wlai[w], s.wphase[w] != WPhase.idle,
                               s.wphase[w] != WPhase.evaluating)
            else:
                def entry(i: int, log: Log = log, g: int = g) -> Any:
                    return And(flushed(s, log.at(i)), of_range(s, ctx, log.at(i), g))
            out.append(ForAll(range(L), lambda i, log=log, entry=entry: Implies(
                log.present(i), entry(i))))
            out.append(ForAll(range(N), lambda n, g=g: s.applied[g][n] <= s.loglen[g]))

        def copies(w: int) -> Any:
            return sum(If(And(log.present(i), log.at(i) == w, log.current(i)), 1, 0)
                       for log in (Log(s, ctx, g) for g in ranges) for i in range(L))
        out.append(ForAll(range(P), lambda w: s.appended[w] == copies(w)))
        return And(*out)

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
        """A proposal is accepted exactly when one of its entries sits at a position of
        its range's log some replica has applied, with an LAI above every entry before it:
        the LAI check decides the same everywhere (reference §3.1)."""
        def accepted_in(g: int, w: int) -> Any:
            log = Log(s, ctx, g)
            return Exists(range(ctx.log_len), lambda i: And(
                log.present(i), log.at(i) == w, log.first_of_its_lai(i),
                Exists(range(N), lambda n: s.applied[g][n] > i)))
        return ForAll(range(P), lambda w: s.accepted[w] == Or(*[
            And(in_range(s, ctx, w, g), accepted_in(g, w)) for g in ranges]))

    @m.lemma
    def ReplicaFollowsLog(s):  # noqa: N802
        """Each replica's LAI is the highest LAI in the prefix it applied, and its closed
        ts is the closed ts of the entry with that LAI (none before the first, or, on a
        range a split created, the closed ts it started with: `start_closed`)."""
        start = ctx.hooks.get("start_closed")

        def replica(g: int, n: int) -> Any:
            log = Log(s, ctx, g)
            below = ForAll(range(ctx.log_len), lambda j: Implies(
                j < s.applied[g][n], log.lai(j) <= s.lai[g][n]))
            source = Exists(range(ctx.log_len), lambda j: And(
                j < s.applied[g][n], log.lai(j) == s.lai[g][n],
                s.closed[g][n] == log.cts(j)))
            initial = start(s, g, n) if start else NIL
            none = And(s.applied[g][n] == 0, s.lai[g][n] == 0, s.closed[g][n] == initial)
            return And(below, Or(none, source))
        return ForAll([(g, n) for g in ranges for n in range(N)], lambda gn: replica(*gn))

    @m.lemma
    def NodesHoldAcceptedUpToLAI(s):  # noqa: N802
        """A node holds exactly the accepted writes whose LAI its replica of the write's
        range has reached: a read served at the replica's closed ts misses only writes
        with a higher LAI, which are above that closed ts (ClaimsBelowLaterWrites). An
        accepted write is never re-proposed, so its LAI is its accepted attempt's."""
        def held(n: int, w: int) -> Any:
            reached = Or(*[And(in_range(s, ctx, w, g), s.wlai[w] <= s.lai[g][n])
                           for g in ranges])
            return s.has[n][w] == And(s.accepted[w], reached)
        return ForAll([(n, w) for n in range(N) for w in range(W)], lambda nw: held(*nw))

    @m.lemma
    def ClaimIsAccepted(s):  # noqa: N802
        """Each range's ghost claim is the closed ts of an accepted command of the range
        (or unset, or what another mechanism claimed: `claim_sources`), at or above every
        replica's closed ts and every follower read's ts."""
        def claim(g: int) -> Any:
            others = [source(s, g) for source in ctx.hooks.get("claim_sources", [])]
            source = Or(s.claim_hi[g] == NIL, Exists(range(P), lambda w: And(
                s.accepted[w], in_range(s, ctx, w, g), s.wcts[w] == s.claim_hi[g])), *others)
            replicas = ForAll(range(N), lambda n: s.closed[g][n] <= s.claim_hi[g])
            reads = ForAll(range(ctx.reads), lambda i: Implies(
                And(s.rdone[i], read_range(s, ctx, i) == g), s.rts[i] <= s.claim_hi[g]))
            return And(source, replicas, reads)
        return And(*[claim(g) for g in ranges])

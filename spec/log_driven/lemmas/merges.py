"""Lemmas of a merge: what links range 1 (the right-hand side) to range 0 that absorbs it.

With them the core's lemmas, stated per range (`core.py`), prove the merge models where
n1 holds both leases for good. The merge is a transaction (`spec/log_driven/merges.py`):
its timestamp T, then Subsume on n1's replica of range 1, then the EndTxn, a command of
range 0 (`ctx.merge_id`), evaluated once every replica of range 1 caught up. So:

- the phases come in order: no Subsume before T, no EndTxn before Subsume, and a node's
  range 1 is gone exactly when its replica of range 0 accepted the EndTxn;
- Subsume froze range 1 with nothing pending on n1: every write range 1 ever took was
  flushed with an LAI at or below Subsume's, n1 had applied them all, and range 1's
  claim is the closed ts Subsume reported, for good (NoClaimWhileSubsumed);
- every replica of range 1 reached Subsume's LAI before the EndTxn was evaluated, so a
  node serving range 1's keys from range 0 holds every write range 1 accepted;
- the timestamp cache n1 raised over range 1's keys on applying the merge is at or above
  that claim, so range 0's writes to those keys, which come after, are above every read
  range 1 served.

BFS checks these on every merge model that registers them (`applies`).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Exists, ForAll, If, Implies, Max, Not, Or
from spec.log_driven.leases import LeaseKind
from spec.log_driven.lemmas import core, leases
from spec.log_driven.lemmas.core import flushed, never_failed, right_hand
from spec.log_driven.parts import NIL, Ctx, WPhase, lease_base, merge_applied

R1, R2 = 0, 1  # the range that absorbs, and the one merged into it
X = 0  # n1 proposes for both


def applies(p: Any, ctx: Ctx) -> bool:
    """The core's configuration with a merge (after a split, with `splits.py`)."""
    return core.applies(p, ctx) and ctx.merges


def covered(ctx: Ctx) -> bool:
    """Range 0's holder after a merge writes range 1's keys above range 1's claim (under
    LAG with one clock: nothing closes above the clock; under LEAD it may not, the
    finding in `docs/findings/merge-takeover-below-rhs-closed.md`)."""
    return not ctx.lead and not ctx.max_offset


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if ctx.merges and leases.applies(p, ctx):
        add_with_leases(m, p, ctx)
    if not applies(p, ctx):
        return
    M, W, N, L = ctx.merge_id, ctx.writes, ctx.nodes, ctx.log_len
    rhs_segment = ctx.segment(ctx.rhs_keys[0])

    def merged(s: Any, n: Any) -> Any:
        """Node n's replica of range 0 applied the merge (`merged` after a split)."""
        return s.merged[n] if ctx.splits else s.span_changed[n]

    def rhs(s: Any, w: int) -> Any:
        return right_hand(ctx, s.wkey[w])

    @m.lemma
    def MergePhasesInOrder(s):  # noqa: N802 - property names are CamelCase
        """T comes first (after a split, once every node applied it), then Subsume (which
        freezes n1's replica of range 1, and no other), then the EndTxn; a node's range
        1 is gone exactly when its replica of range 0 applied the EndTxn's entry, which
        it accepted (the EndTxn never fails)."""
        log = core.Log(s, ctx, R1)

        def gone(n: int) -> Any:
            return merged(s, n) == Exists(range(L), lambda i: And(
                i < s.applied[R1][n], log.at(i) == M, log.first_of_its_lai(i)))
        frozen = ForAll(range(N), lambda n: s.frozen[n] == And(s.subsumed, n == X))
        phase = never_failed(s, M)
        split_first = [Implies(s.merge_ts > 0, ForAll(range(N), lambda n: s.span_changed[n]))
                       ] if ctx.splits else []  # AdminMerge waits on every r2 replica
        return And(*split_first, Implies(s.subsumed, s.merge_ts > 0),
                   Implies(s.wphase[M] != WPhase.idle, s.subsumed),
                   frozen, phase, ForAll(range(N), gone))

    @m.lemma
    def SubsumeFrozeRHS(s):  # noqa: N802
        """After Subsume, range 1 takes nothing more: every write it took is flushed with an
        LAI at or below Subsume's, n1 applied up to that LAI (the highest handed out) and
        holds range 1's claim as its closed ts, which is what Subsume reported; range 1
        evaluates no write and its buffer is empty."""
        writes = ForAll(range(W), lambda w: Implies(
            And(s.wphase[w] != WPhase.idle, s.wrng[w] == R2),
            And(flushed(s, w), s.wlai[w] <= s.merge_lai)))
        return Implies(s.subsumed, And(
            writes, s.assigned_lai[R2][X] == s.merge_lai, s.lai[R2][X] == s.merge_lai,
            s.buflen[R2][X] == 0, s.merge_closed == s.claim_hi[R2],
            s.closed[R2][X] == s.claim_hi[R2]))

    @m.lemma
    def MergeWaitedForRHS(s):  # noqa: N802
        """The EndTxn was evaluated once every replica of range 1 had applied up to
        Subsume's LAI (AdminMerge's waitForApplication), and replicas only move on."""
        return Implies(s.wphase[M] != WPhase.idle,
                       ForAll(range(N), lambda n: s.lai[R2][n] >= s.merge_lai))

    @m.lemma
    def R1WritesOfRHSAboveRHSClaims(s):  # noqa: N802
        """Range 0 takes a right-hand write only once n1 applied the merge, which raised
        n1's timestamp cache over those keys to range 1's claim (nothing else raises a
        timestamp cache here): the write is above it (after a split, or one that came
        before the split: `splits.py`)."""
        def raised(n: int, seg: int) -> Any:  # only the merge raises it, on n1, over r2's keys
            value = If(merged(s, X), Max(0, s.merge_closed), 0) \
                if n == X and seg == rhs_segment else 0
            return s.tsc[n][seg] == value
        cache = And(Implies(merged(s, X), s.subsumed),
                    *[raised(n, seg) for n in range(N) for seg in range(ctx.segments)])
        def after_merge(w: int) -> Any:
            later = And(merged(s, X), s.wts[w] > s.merge_closed)
            # after a split, range 0's right-hand writes before it (`splits.py`)
            if not ctx.splits:
                return later
            split = ctx.split_id  # before the split: flushed first, with a lower LAI
            before = Or(s.wphase[split] == WPhase.idle, And(flushed(s, w), Or(
                Not(flushed(s, split)), s.wlai[w] < s.wlai[split])))
            return Or(later, before)
        writes = ForAll(range(W), lambda w: Implies(
            And(s.wphase[w] != WPhase.idle, s.wrng[w] == R1, rhs(s, w)), after_merge(w)))
        unset = Implies(Not(s.subsumed), s.merge_closed == NIL)
        return And(cache, writes, unset)

    @m.lemma
    def KeysOfTheirRange(s):  # noqa: N802
        """Range 1 writes and serves only right-hand keys; range 0 serves them only once
        the node applied the merge (after a split, `splits.py` says when else)."""
        def read(i: int) -> Any:
            right = right_hand(ctx, s.rkey[i])
            on_r2 = Implies(And(s.rdone[i], s.rrng[i] == R2), right)
            if ctx.splits:  # range 0 also served them before the split (`splits.py`)
                return on_r2
            return And(on_r2, ForAll(range(N), lambda n: Implies(
                And(s.rdone[i], s.rrng[i] == R1, right, s.rnode[i] == n), merged(s, n))))
        writes = ForAll(range(W), lambda w: Implies(
            And(s.wphase[w] != WPhase.idle, s.wrng[w] == R2), rhs(s, w)))
        return And(ForAll(range(ctx.reads), read), writes)


def add_with_leases(m: Any, p: Any, ctx: Ctx) -> None:
    """A merge while both ranges' leases move (`leases.py` replays each range's log).

    Subsume runs on range 1's leaseholder once nothing of the range is evaluating or in
    flight there, and freezes its replica; a node that takes range 1's lease over while
    the merge transaction exists freezes its own on applying the lease. So once Subsume
    ran, every node that could still propose for range 1 under the lease sequence in
    force at the log's end is frozen and proposes nothing: the log's end keeps the LAI
    and closed ts Subsume reported, and range 1's claim stays there.
    """
    M, N, W = ctx.merge_id, ctx.nodes, ctx.writes

    def base(s: Any, g: int, j: Any) -> Any:
        return lease_base(s, ctx, g, j)

    @m.lemma
    def MergePhasesInOrderUnderLeases(s):  # noqa: N802
        """T comes first (after a split, once every node applied it), then Subsume, then
        the EndTxn, which never fails; only a merge
        under way freezes a replica of range 1; a node's range 1 is gone exactly when the
        replay of range 0's log accepted the EndTxn's entry within the prefix its replica
        applied. Until Subsume, nothing it reports is set."""
        log = leases.Replay(s, ctx, R1)

        def gone(n: int) -> Any:
            return merge_applied(s, ctx, n) == log.accepts(M, s.applied[R1][n])
        frozen = ForAll(range(N), lambda n: Implies(s.frozen[n], s.merge_ts > 0))
        unset = Implies(Not(s.subsumed), And(s.merge_closed == NIL, s.merge_lai == 0))
        split_first = [Implies(s.merge_ts > 0, ForAll(range(N), lambda n: s.span_changed[n]))
                       ] if ctx.splits else []  # AdminMerge waits on every r2 replica
        return And(*split_first, Implies(s.subsumed, s.merge_ts > 0),
                   Implies(s.wphase[M] != WPhase.idle, s.subsumed), never_failed(s, M),
                   frozen, unset, ForAll(range(N), gone))

    @m.lemma
    def SubsumeFrozeRHSUnderLeases(s):  # noqa: N802
        """After Subsume, the end of range 1's log is at the LAI and closed ts Subsume
        reported, which is range 1's claim; no attempt of range 1 would be accepted there
        (its lease sequence has moved on, or its LAI is not above), no write of range 1
        waits under that sequence, and every node whose replica applied a lease naming it
        in that sequence is frozen."""
        log = leases.Replay(s, ctx, R2)
        lai, closed, seq = log.at_end()

        def write(w: int) -> Any:
            waiting = Or(s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered)
            return Implies(And(s.wrng[w] == R2, s.wphase[w] != WPhase.idle),
                           Or(base(s, R2, s.wseq[w]) != base(s, R2, seq),
                              And(Not(waiting), s.wlai[w] <= lai)))

        def transfer(j: int) -> Any:
            return Implies(And(j <= s.lcount[R2], s.lkind[R2][j] == LeaseKind.transfer,
                               s.lprev[R2][j] == seq),
                           And(s.lready[R2][j], s.llai[R2][j] <= lai))

        def node(n: int) -> Any:
            return Implies(And(s.lholder[R2][s.lseq[R2][n]] == n,
                               base(s, R2, s.lseq[R2][n]) == base(s, R2, seq)), s.frozen[n])
        commands = range(2, ctx.lease_changes + 2)
        # with the side transport, Subsume reports the higher of the replica's closed ts
        # and its side-transport one (a bump's), and the claim may be another holder's
        # bump, below the sequence Subsume's holder started
        reported = [closed <= s.merge_closed, s.claim_hi[R2] >= s.merge_closed] \
            if p.side_transport else [closed == s.merge_closed,
                                      s.claim_hi[R2] == s.merge_closed]
        return Implies(s.subsumed, And(
            lai == s.merge_lai, *reported,
            *[write(w) for w in range(W)], *[transfer(j) for j in commands],
            *[node(n) for n in range(N)]))

    @m.lemma
    def KeysOfTheirRangeUnderLeases(s):  # noqa: N802
        """Range 1 writes and serves only right-hand keys; range 0 writes and serves them
        only on a node whose replica applied the merge (or, after a split, before it),
        and under LAG writes them above range 1's claim (MergedHoldersCoverRHS)."""
        def write(w: int) -> Any:
            started = s.wphase[w] != WPhase.idle
            on_r2 = Implies(And(started, s.wrng[w] == R2), right_hand(ctx, s.wkey[w]))
            if ctx.splits:  # range 0 also wrote them before the split
                return on_r2
            # (above range 1's claim under LAG: MergedHoldersCoverRHS)
            above = s.wts[w] > s.claim_hi[R2] if covered(ctx) else True
            on_r1 = Implies(And(started, s.wrng[w] == R1, right_hand(ctx, s.wkey[w])),
                            And(above, Or(*[And(s.wnode[w] == n, merge_applied(s, ctx, n))
                                            for n in range(N)])))
            return And(on_r2, on_r1)

        def read(i: int) -> Any:
            right = right_hand(ctx, s.rkey[i])
            on_r2 = Implies(And(s.rdone[i], s.rrng[i] == R2), right)
            if ctx.splits:  # range 0 also served them before the split (`splits.py`)
                return on_r2
            return And(on_r2, Implies(And(s.rdone[i], s.rrng[i] == R1, right), Or(*[
                And(s.rnode[i] == n, merge_applied(s, ctx, n)) for n in range(N)])))
        return And(*[write(w) for w in range(W)], *[read(i) for i in range(ctx.reads)])

    if covered(ctx):
        @m.lemma
        def LeasesAfterMergeStartAboveIt(s):  # noqa: N802
            """Subsume's closed ts is at or below its freeze time (under LAG nothing closes
            above the clock), which the one clock has reached since. The EndTxn was
            evaluated under a lease of range 0 still valid then, after Subsume: it
            expires after the freeze time; so a sequence of range 0 started on that lease
            or a later one starts at or above the freeze time (a takeover at an
            expiration at or after that lease's, a transfer at its proposer's clock), and
            the timestamp cache of whoever holds it covers range 1's keys above
            Subsume's closed ts (§5.3)."""
            freeze = s.merge_freeze
            evaluated = s.wphase[M] != WPhase.idle
            J = s.wseq[M]

            def command(j: int) -> Any:
                return Implies(And(evaluated, j <= s.lcount[R1], base(s, R1, j) == j,
                                   s.lprev[R1][j] >= J), s.lstart[R1][j] >= freeze)
            return And(Implies(s.subsumed, And(s.merge_closed <= freeze, s.now >= freeze)),
                       Implies(evaluated, s.lexp[R1][J] > freeze),
                       *[command(j) for j in range(2, ctx.lease_changes + 2)])

        rhs_segment = ctx.segment(ctx.rhs_keys[0])

        @m.lemma
        def MergedHoldersCoverRHS(s):  # noqa: N802
            """A node whose replica of range 0 applied the merge and a lease naming it has
            its timestamp cache over range 1's keys at or above range 1's claim: the
            merge raised it to Subsume's closed ts on the node holding range 0's lease as
            it applied it (MergeRange), and a node that took range 0's lease after that
            raised it to the new lease's start, over the merged span (§5.3). Under LEAD
            range 1 may close above that start: the finding in
            `docs/findings/merge-takeover-below-rhs-closed.md`."""
            return And(*[Implies(And(merge_applied(s, ctx, n),
                                     s.lholder[R1][s.lseq[R1][n]] == n),
                                 s.tsc[n][rhs_segment] >= s.claim_hi[R2])
                         for n in range(N)])

    @m.lemma
    def MergeWaitedForRHSUnderLeases(s):  # noqa: N802
        """The EndTxn was evaluated once every replica of range 1 had applied up to
        Subsume's LAI (AdminMerge's waitForApplication), and replicas only move on."""
        return Implies(s.wphase[M] != WPhase.idle,
                       ForAll(range(N), lambda n: s.lai[R2][n] >= s.merge_lai))

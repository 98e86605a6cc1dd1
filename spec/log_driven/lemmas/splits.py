"""Lemmas of a split: what links range 1 (the right-hand side) to range 0 it split from.

With them the core's lemmas, stated per range (`core.py`), prove the split models. The
split is a command of range 0 (`ctx.split_id`); n1, which holds both ranges' leases for
good, evaluates it once nothing else of range 0 is pending on it, and proposes nothing
more to range 0 until it has applied it (latches, reference §5.1). So:

- the split is the last of range 0's commands until n1 applies it, and Raft can only put
  later ones after it: every replica accepts it, and a replica that has not applied it has
  applied only commands with a lower LAI and closed ts;
- every write of range 0 to a right-hand key was flushed before the split, with a lower
  LAI: a node whose range 1 exists holds them all;
- range 1 starts, on every node, at the split's closed ts (the closed ts it carried,
  forwarded to the replica's own, which is that same closed ts: the split is the highest
  command the replica applied); n1's buffer for range 1 starts there, so every write of
  range 1 is above it, and every read of range 0 of a right-hand key below it.

BFS checks these on every split model that registers them (`applies`).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Exists, ForAll, If, Implies, Not, Or
from spec.log_driven.lemmas import core, leases, merges
from spec.log_driven.lemmas.core import flushed, never_failed, right_hand
from spec.log_driven.parts import NIL, Ctx, WPhase, lease_base

R1, R2 = 0, 1  # the range that splits, and the one the split creates
X = 0  # n1 proposes for both


def applies(p: Any, ctx: Ctx) -> bool:
    """The core's configuration with a split (and a merge after it, with `merges.py`)."""
    return core.applies(p, ctx) and ctx.splits


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if ctx.splits and leases.applies(p, ctx):
        add_with_leases(m, p, ctx)
    if not applies(p, ctx):
        return
    S, W, N, L = ctx.split_id, ctx.writes, ctx.nodes, ctx.log_len

    def rhs(s: Any, w: int) -> Any:
        return right_hand(ctx, s.wkey[w])

    def not_merged(s: Any, n: Any) -> Any:
        """Range 0 on node n does not hold the right-hand keys again (`merges.py`)."""
        return Not(s.merged[n]) if ctx.merges else True

    def start(s: Any, g: int, n: int) -> Any:
        """The closed ts node n's replica of range g holds before applying anything."""
        return If(s.span_changed[n], s.wcts[S], NIL) if g == R2 else NIL

    ctx.hooks["start_closed"] = start
    # range 1's claim starts as the split's: what range 0 had claimed for its keys
    ctx.hooks.setdefault("claim_sources", []).append(
        lambda s, g: And(g == R2, s.split_base != NIL, s.claim_hi[R2] == s.split_base))

    @m.lemma
    def SplitLastUntilApplied(s):  # noqa: N802 - property names are CamelCase
        """Until n1 applies the split, no command of range 0 has a higher LAI (n1 holds
        the range's latches and proposes nothing else); after, Raft appends each such
        command after the split's entry. So the split's entry is accepted wherever it is
        applied (and the split, once flushed, stays so: nothing rejects it)."""
        log = core.Log(s, ctx, R1)
        pending = And(flushed(s, S), Not(s.span_changed[X]))
        none_after = ForAll(range(ctx.props), lambda w: Implies(
            pending, s.wlai[w] <= s.wlai[S]))
        later_follow = ForAll(range(L), lambda i: Implies(
            And(log.present(i), flushed(s, S), log.lai(i) > s.wlai[S]),
            Exists(range(i), lambda j: log.at(j) == S)))
        first = ForAll(range(L), lambda i: Implies(
            And(log.present(i), log.at(i) == S), log.first_of_its_lai(i)))
        latched = ForAll(range(W), lambda w: Implies(
            And(s.wphase[S] != WPhase.idle, Not(s.span_changed[X]), s.wrng[w] == R1),
            And(s.wphase[w] != WPhase.evaluating, s.wphase[w] != WPhase.buffered)))
        phase = never_failed(s, S)
        return And(phase, latched, none_after, later_follow, first)

    @m.lemma
    def SplitAppliedWhereRHSExists(s):  # noqa: N802
        """Node n's range 1 exists exactly when n's replica of range 0 has applied the
        split's entry; before, its replica of range 1 is empty, and before n1's exists,
        range 1 has no log, no buffer, no write and no claim."""
        log = core.Log(s, ctx, R1)

        def node(n: int) -> Any:
            applied = Exists(range(L), lambda i: And(i < s.applied[R1][n], log.at(i) == S))
            empty = And(s.applied[R2][n] == 0, s.lai[R2][n] == 0, s.closed[R2][n] == NIL)
            return And(s.span_changed[n] == applied, Implies(Not(s.span_changed[n]), empty))
        before = [s.loglen[R2] == 0, s.buflen[R2][X] == 0, s.assigned_lai[R2][X] == 0,
                  s.assigned_closed[R2][X] == NIL,
                  ForAll(range(W), lambda w: Implies(s.wphase[w] != WPhase.idle,
                                                     s.wrng[w] == R1))]
        if p.tracker == "impl":
            before += [s.tb_ts[R2][X][0] == NIL, s.tb_ts[R2][X][1] == NIL]
        unclaimed = Implies(Not(s.accepted[S]), s.claim_hi[R2] == NIL)  # set by the first
        return And(ForAll(range(N), node), Implies(Not(s.span_changed[X]), And(*before)),
                   unclaimed)

    @m.lemma
    def RHSWritesOfR1BeforeSplit(s):  # noqa: N802
        """Every write range 0 took for a right-hand key was flushed before the split was
        evaluated, so with a lower LAI: the split waits until nothing of the range is
        pending on n1, and afterwards range 0 takes no right-hand write (latches, then
        the narrowed span)."""
        before = ForAll(range(W), lambda w: Implies(
            And(s.wphase[S] != WPhase.idle, s.wphase[w] != WPhase.idle, s.wrng[w] == R1,
                rhs(s, w)),
            Or(And(flushed(s, w), Implies(flushed(s, S), s.wlai[w] < s.wlai[S])),
               Not(not_merged(s, X)))))
        return before

    @m.lemma
    def RHSStartsAtSplitClosed(s):  # noqa: N802
        """Range 1 starts at the split's closed ts, the highest claim on range 0 when it
        was first accepted (`split_base`); n1's buffer for it starts there, so every
        command and write of range 1 is at or above it (a write strictly)."""
        base = s.split_base == If(s.accepted[S], s.wcts[S], NIL)
        seeded = Implies(s.span_changed[X], s.assigned_closed[R2][X] >= s.wcts[S])
        writes = ForAll(range(W), lambda w: Implies(
            And(s.wphase[w] != WPhase.idle, s.wrng[w] == R2),
            And(s.wts[w] > s.wcts[S], rhs(s, w),
                Implies(flushed(s, w), s.wcts[w] >= s.wcts[S]))))
        claim = Implies(s.accepted[S], s.claim_hi[R2] >= s.wcts[S])
        return And(base, seeded, writes, claim, Implies(s.span_changed[X], flushed(s, S)))

    @m.lemma
    def R1ReadsOfRHSBelowSplit(s):  # noqa: N802
        """A follower read range 0 served for a right-hand key is at or below the split's
        closed ts: it was served before the split applied there, under a closed ts of a
        command with a lower LAI (or before the split was flushed, at or below range 0's
        claims, which the split's closed ts is at or above); range 1 serves only
        right-hand keys."""
        def read(i: int) -> Any:
            right = right_hand(ctx, s.rkey[i])
            below = s.rts[i] <= s.wcts[S]
            if ctx.merges:  # or served once range 0 took the keys back, on a merged node
                below = Or(below, *[And(s.rnode[i] == n, s.merged[n]) for n in range(N)])
            return And(Implies(And(s.rdone[i], s.rrng[i] == R1, flushed(s, S), right), below),
                       Implies(And(s.rdone[i], s.rrng[i] == R2), right))
        return ForAll(range(ctx.reads), read)


def add_with_leases(m: Any, p: Any, ctx: Ctx) -> None:
    """A split while both ranges' leases move (`leases.py` replays each range's log).

    The split is a command of range 0 like a write: the replay accepts it or not, and a
    node's range 1 exists once its replica of range 0 accepted it. Until then the node
    has no replica of range 1 and proposes nothing for it; range 1 starts at the closed
    ts the split carried, under a copy of the lease the split was evaluated under.
    """
    S, N, L, W = ctx.split_id, ctx.nodes, ctx.log_len, ctx.writes

    @m.lemma
    def SplitAppliedWhereRHSExistsUnderLeases(s):  # noqa: N802
        """Node n's range 1 exists exactly when the replay of range 0's log accepted the
        split within the prefix n's replica applied; until then n's counters and buffer
        for range 1 are untouched. Until the split is accepted anywhere, range 1 has no
        log, no lease command, no write and no claim; once it is, the claim it inherited
        from range 0 is the split's closed ts (the highest claimed when it was first
        accepted)."""
        log = leases.Replay(s, ctx, R1)

        def node(n: int) -> Any:
            applied = log.accepts(S, s.applied[R1][n])
            untouched = [s.buflen[R2][n] == 0, s.assigned_lai[R2][n] == 0,
                         s.assigned_closed[R2][n] == NIL]
            if p.tracker == "impl":
                untouched += [s.tb_ts[R2][n][0] == NIL, s.tb_ts[R2][n][1] == NIL]
            return And(s.span_changed[n] == applied,
                       Implies(Not(s.span_changed[n]), And(*untouched)))
        before = And(s.loglen[R2] == 0, s.lcount[R2] == 1, s.claim_hi[R2] == NIL,
                     ForAll(range(W), lambda w: Implies(s.wphase[w] != WPhase.idle,
                                                        s.wrng[w] == R1)))
        base = s.split_base == If(s.accepted[S], s.wcts[S], NIL)
        return And(ForAll(range(N), node), Implies(Not(s.accepted[S]), before), base)

    @m.lemma
    def RHSReadsAroundSplitUnderLeases(s):  # noqa: N802
        """Range 1 writes and serves only right-hand keys; range 0 served them, on a node that had
        not applied the split, at or below the closed ts of the split's entry wherever
        the replay accepts it: the node's replica was before that entry, and the replay's
        closed ts never goes down along the log (after a merge a node serves them from
        range 0 again)."""
        log = leases.Replay(s, ctx, R1)

        def read(i: int) -> Any:
            right = right_hand(ctx, s.rkey[i])
            on_r2 = Implies(And(s.rdone[i], s.rrng[i] == R2), right)
            below = s.rts[i] <= s.wcts[S]
            if ctx.merges:
                below = Or(below, *[And(s.rnode[i] == n, s.merged[n]) for n in range(N)])
            split = log.accepts(S, s.loglen[R1])
            on_r1 = Implies(And(s.rdone[i], s.rrng[i] == R1, right, split), below)
            return And(on_r2, on_r1)
        writes = ForAll(range(W), lambda w: Implies(
            And(s.wphase[w] != WPhase.idle, s.wrng[w] == R2), right_hand(ctx, s.wkey[w])))
        return And(ForAll(range(ctx.reads), read), writes)

    @m.lemma
    def RHSWritesOfR1BeforeSplitUnderLeases(s):  # noqa: N802
        """Where the replay accepts the split, every range-0 write to a right-hand key
        (but one above range 1's claim by a node that applied a merge since) is accepted
        before it or never:
        the split's evaluator had none pending (latches) and takes none after; another
        node took them under an older lease sequence, which the log left before the split
        and never re-enters. So none would be accepted at the log's end either."""
        log = leases.Replay(s, ctx, R1)
        lai, _, seq = log.at_end()

        def write(w: int, i: int) -> Any:
            split_at = And(log.present(i), log.at(i) == S, log.oks[i])
            mine = And(s.wphase[w] != WPhase.idle, s.wrng[w] == R1, right_hand(ctx, s.wkey[w]))
            if ctx.merges:  # one a node evaluated after the merge is above range 1's claim
                # where `merges.covered` (MergedHoldersCoverRHS); elsewhere it may not be
                mine = And(mine, *[Implies(And(s.wnode[w] == n, s.merged[n]),
                                           s.wts[w] <= s.claim_hi[R2] if merges.covered(ctx)
                                           else False) for n in range(N)])
            later = And(*[Not(And(log.present(j), log.at(j) == w, log.oks[j]))
                          for j in range(i + 1, L)])
            end = Or(lease_base(s, ctx, R1, s.wseq[w]) != lease_base(s, ctx, R1, seq),
                     And(leases.sent(s, ctx, w), s.wlai[w] <= lai))
            return Implies(And(split_at, mine), And(later, end))
        return And(*[write(w, i) for w in range(W) for i in range(L)])

    @m.lemma
    def SplitLatchedUnderLeases(s):  # noqa: N802
        """While the split waits to apply on the node that evaluated it, under the lease
        sequence it was evaluated in, that node has no write of range 0 of that sequence
        evaluating or buffered, and every one it flushed has a lower LAI than the split:
        it evaluated the split with nothing pending, and its latches block range 0's
        writes until it applies it (reference §5.1)."""
        def node(n: int, w: int) -> Any:
            base = lease_base(s, ctx, R1, s.wseq[S])
            pending = And(s.wphase[S] != WPhase.idle, s.wnode[S] == n,
                          Not(s.span_changed[n]),
                          lease_base(s, ctx, R1, s.lseq[R1][n]) == base)
            mine = And(s.wnode[w] == n, s.wrng[w] == R1, s.wphase[w] != WPhase.idle,
                       lease_base(s, ctx, R1, s.wseq[w]) == base)
            return Implies(And(pending, mine), And(
                leases.sent(s, ctx, w), Implies(flushed(s, S), s.wlai[w] < s.wlai[S])))
        return And(*[node(n, w) for n in range(N) for w in range(W)])

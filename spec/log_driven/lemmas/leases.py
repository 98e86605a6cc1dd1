"""Lemmas of lease changes: ranges whose leases move between nodes.

With lease changes every node has its own proposal buffer, LAI and closed ts counters,
and acceptance is no longer "an LAI above every entry before it": a command is also
rejected when its lease sequence is not the one in force where it sits in the log, and
a lease command when it does not build on that lease (`CheckForcedErr`, reference §3.1).
Every replica applies the same log in order and decides each entry from what the prefix
before it left, so what a replica holds is a function of the prefix it applied: the
*replay* of the log (`Replay`) folds the apply rules over it, and the lemmas state that
each replica is the replay of its prefix. The facts that make the safety properties
inductive are then about the log's end (what an attempt appended next would find) and
about each node's counters:

- the lease chain: each lease command builds on an older one, and a lease sequence
  (`lbase`) once left is never in force again, so a node whose replica still applies
  a sequence is the only one that proposes under it (§6, `leases.go`);
- a write is evaluated by the holder of the lease it names, after its replica applied
  it; its ts is above that lease's start (the timestamp cache, `leasePostApplyLocked`);
- the holder's counters dominate the log: while the log's replay is in the sequence the
  holder applied, its assigned LAI and closed ts are at or above the replay's
  (`OnLeaseChangeLocked` forwards them when the lease applies; its own flushes raise
  them after);
- an attempt that the end of the log would accept is above the replay's closed ts and
  carries one at least as high: a holder's attempts in one sequence are handed out in
  LAI order with closed ts that never go down and lie below its later writes (the RFC's
  promise), and a new sequence starts from the replay's closed ts (forwarded into the
  new holder's assigned closed ts).

So leftovers in a node that lost the lease, flushed with zeroed counters, are never
accepted: the replay's lease sequence has moved on where they land.

Every fact is stated per range, over that range's log, lease chain and counters; a
range made by a split starts at the split's closed ts under a copy of the lease the
split was evaluated under, and exists on a node once its replica of range 0 accepted
the split.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, ForAll, If, Implies, Max, Min, Not, Or
from spec.log_driven.leases import LeaseKind
from spec.log_driven.lemmas.core import flushed, of_range, read_range, right_hand
from spec.log_driven.parts import (
    NIL,
    Ctx,
    WPhase,
    in_range,
    lease_base,
    pick,
    split_applied,
    tracked_in,
)
from spec.log_driven.policy import clock
from spec.tracker import buffer_lists


def applies(p: Any, ctx: Ctx) -> bool:
    """Ranges whose leases change (requests, transfers, extensions; expiration- or
    epoch-based; clocks up to `max_offset` apart): one range, with or without the side
    transport and n1's restart (a restart under LAG only: under LEAD it loses a follower
    read, `log_driven_finding_restart_under_lead`), or two with a split, a merge or both
    (`splits.py` and `merges.py` add what links them), with or without the side
    transport, without a restart; without reproposals or injected LAI errors, with a
    lock-free or heap tracker; not under a mutation, whose rules the replay does not
    fold (a mutation model is checked against the property it breaks, not against these
    lemmas)."""
    shape = ctx.ranges == 1 or not ctx.restarts
    return bool(ctx.lease_changes and not ctx.muts and shape and not ctx.reproposals
                and not (ctx.restarts and ctx.lead) and not p.lai_errors
                and p.tracker in ("impl", "heap"))


def sent(s: Any, ctx: Ctx, w: Any) -> Any:
    """Proposal w left its proposer's buffer: flushed, or forgotten in a restart after
    that (it may still reach the log)."""
    if not ctx.restarts:
        return flushed(s, w)
    return Or(flushed(s, w), s.wphase[w] == WPhase.orphaned)


def wiped(s: Any, ctx: Ctx, x: Any, g: int = 0) -> Any:
    """Node x restarted in a lease sequence of range g it held, and its replica is still
    in it: its counters were zeroed there, and it proposes nothing more in it."""
    if not ctx.restarts:
        return False
    return And(s.restarted, x == 0, s.lholder[g][s.rbase[g]] == 0,
               lease_base(s, ctx, g, s.lseq[g][0]) == s.rbase[g])


def own_segments(s: Any, ctx: Ctx, g: int, x: int) -> list[Any]:
    """Whether node x's timestamp cache over each key segment rose with range g's leases:
    with two ranges, r1 holds the left and r2 the right, and r1 holds the right too before
    the split applied on x (after a merge, the merge's bump guards it: `merges.py`)."""
    if ctx.ranges == 1:
        return [True] * ctx.segments
    if ctx.splits and g == 0:
        return [True, Not(s.span_changed[x])]
    return [g == 0, g == 1]


class Replay:
    """The log of range g, replayed: what a replica holds after applying each prefix.

    `state(k)` is (LAI, closed ts, lease) after the first k entries; `ok(i)` says the
    entry at position i is accepted by whoever applies it (after the prefix before it).
    """

    def __init__(self, s: Any, ctx: Ctx, g: int = 0):
        self.s, self.ctx, self.g = s, ctx, g
        self.P, self.L, self.S = ctx.props, ctx.log_len, ctx.lease_changes + 1
        # range 1 made by a split starts at the closed ts the split carried (the replica
        # of range 0 forwards it to its own, which is that same one: `splits.py`)
        start = If(s.accepted[ctx.split_id], s.wcts[ctx.split_id], NIL) \
            if g == 1 and ctx.splits else NIL
        self.states: list[tuple[Any, Any, Any]] = [(0, start, 1)]
        self.oks: list[Any] = []
        for i in range(self.L):
            lai, closed, seq = self.states[-1]
            ok_w = And(self.is_prop(i), self.wlai(i) > lai,
                       self.base(s.wseq[self.prop(i)]) == self.base(seq))
            j = self.lease(i)
            transfer = s.lkind[self.g][j] == LeaseKind.transfer
            ok_l = And(self.is_lease(i), seq == s.lprev[self.g][j],
                       Or(Not(transfer), s.llai[self.g][j] > lai))
            carried = And(ok_l, s.lcts[self.g][j] != NIL)
            self.states.append((
                If(ok_w, self.wlai(i), If(And(ok_l, transfer), s.llai[self.g][j], lai)),
                If(ok_w, s.wcts[self.prop(i)], If(carried, s.lcts[self.g][j], closed)),
                If(ok_l, j, seq)))
            self.oks.append(Or(ok_w, ok_l))

    def base(self, j: Any) -> Any:
        return lease_base(self.s, self.ctx, self.g, j)

    def at(self, i: int) -> Any:
        return self.s.log[self.g][i]

    def is_prop(self, i: int) -> Any:
        return And(self.at(i) >= 0, self.at(i) < self.P)

    def is_lease(self, i: int) -> Any:
        return self.at(i) >= self.P

    def prop(self, i: int) -> Any:
        """The proposal at position i, if it holds one."""
        return Max(Min(self.at(i), self.P - 1), 0)

    def lease(self, i: int) -> Any:
        """The lease command at position i, if it holds one."""
        return Max(Min(self.at(i) - self.P + 2, self.S), 2)

    def wlai(self, i: int) -> Any:
        return self.s.wlai[self.prop(i)]

    def present(self, i: int) -> Any:
        return i < self.s.loglen[self.g]

    def pick(self, k: Any, part: int) -> Any:
        """Part `part` (0 LAI, 1 closed ts, 2 lease) of the state after k entries, k
        symbolic in 0..L."""
        return pick([state[part] for state in self.states], k)

    def at_end(self) -> tuple[Any, Any, Any]:
        """The state after the whole log: what an entry appended next would find."""
        return self.pick(self.s.loglen[self.g], 0), self.pick(self.s.loglen[self.g], 1), \
            self.pick(self.s.loglen[self.g], 2)

    def accepted_lease(self, j: Any, upto: Any) -> Any:
        """Lease j is the initial one, or the replay accepts an entry of it before
        position `upto`."""
        return Or(j == 1, *[And(i < upto, self.at(i) == self.P + j - 2, self.oks[i])
                            for i in range(self.L)])

    def passes(self, j: Any, lai: Any, upto: Any) -> Any:
        """The replay of some prefix of at most `upto` entries is at lease j and LAI
        `lai`: a replica that applied that prefix had them."""
        return Or(*[And(k <= upto, self.states[k][2] == j, self.states[k][0] == lai)
                    for k in range(self.L + 1)])

    def accepts(self, command: Any, upto: Any) -> Any:
        """The replay accepts an entry of `command` before position `upto`."""
        return Or(*[And(i < upto, self.at(i) == command, self.oks[i]) for i in range(self.L)])

    def holds_entry(self, command: Any, upto: Any) -> Any:
        """Some entry before position `upto` is `command`."""
        return Or(*[And(i < upto, self.at(i) == command) for i in range(self.L)])

    def furthest(self) -> Any:
        """How far the replica furthest along has applied."""
        out = self.s.applied[self.g][0]
        for n in range(1, self.ctx.nodes):
            out = Max(out, self.s.applied[self.g][n])
        return out


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not applies(p, ctx):
        return
    P, W, N, S, L = ctx.props, ctx.writes, ctx.nodes, ctx.lease_changes + 1, ctx.log_len
    commands = list(range(2, S + 1))
    ranges = range(ctx.ranges)
    duplicate = p.duplicate

    def base(s: Any, g: int, j: Any) -> Any:
        return lease_base(s, ctx, g, j)

    def made(s: Any, g: int, j: int) -> Any:
        return j <= s.lcount[g]

    def initial_lease(s: Any, g: int) -> Any:
        """Lease 1 of each range is n1's, from 0; range 1 made by a split starts with a
        copy of the lease of range 0 the split was evaluated under, on its holder."""
        start = And(s.lholder[g][1] == 0, s.lstart[g][1] == 0,
                    s.lexp[g][1] == (0 if ctx.epochs else ctx.lease_exp))
        if g == 0 or not ctx.splits:
            return start
        S, j = ctx.split_id, s.wseq[ctx.split_id]
        copy = And(s.lholder[1][1] == s.lholder[0][j], s.lstart[1][1] == s.lstart[0][j],
                   s.lexp[1][1] == s.lexp[0][j])
        return If(s.wphase[S] != WPhase.idle, copy, start)

    def exists_on(s: Any, g: int, x: int) -> Any:
        """Node x has, or had, a replica of range g: range 1 made by a split once x
        applied it (after a merge its replica stays as it was, so the facts still hold)."""
        return split_applied(s, ctx, x) if g == 1 else True

    def lease_proposer(s: Any, g: int, j: Any) -> Any:
        return If(s.lkind[g][j] == LeaseKind.transfer, s.lholder[g][s.lprev[g][j]],
                  s.lholder[g][j])

    @m.lemma
    def LeaseChain(s):  # noqa: N802 - property names are CamelCase
        """Each lease command builds on an older one (`PrevLeaseProposal`, the proposer's
        applied lease, and its replica only moves forward); a request or transfer starts a
        new sequence, an extension or a
        renewal keeps the one it extends, with its holder and start, and an expiration that
        only moves forward, so sequences only grow along the chain. A lease expires after
        it starts; every lease has
        the holder and start of the one that began its sequence. A sequence starts at or
        below its proposer's clock; a request by another node starts at the expiration of
        the lease it builds on; a transfer hands the
        lease to another node, with a read summary at or above its start, and its
        proposer's lease stays revoked while its replica is still in that sequence. Lease
        1 is the initial one; a holder's own request renews its lease unless it gave the
        lease away (a transfer, a restart); commands not yet proposed are untouched. A node proposes
        one lease command at a time: a later one of the same proposer comes after its
        replica applied the earlier."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)

            def gave_away(n: Any, before: Any) -> Any:
                """Node n gave range g's lease away before lease command `before`: a
                transfer out of a lease of n's, or n's restart."""
                out = [And(t < before, s.lkind[g][t] == LeaseKind.transfer,
                           s.lholder[g][s.lprev[g][t]] == n) for t in commands]
                if ctx.restarts:
                    out.append(And(s.restarted, n == 0))
                return Or(*out)

            def one_at_a_time(j: int, k: int) -> Any:
                x = lease_proposer(s, g, j)
                return Implies(And(made(s, g, k), lease_proposer(s, g, k) == x),
                               log.holds_entry(P + j - 2, s.applied[g][x]))
            def command(j: int) -> Any:
                prev = s.lprev[g][j]
                kept = And(base(s, g, j) == base(s, g, prev), s.lholder[g][j] == s.lholder[g][prev],
                           s.lstart[g][j] == s.lstart[g][prev],
                           # (an epoch renewal carries no minimum; a promotion keeps it)
                           Implies(s.lkind[g][j] == LeaseKind.extension, s.lexp[g][j]
                                   >= s.lexp[g][prev]) if ctx.epochs
                           else s.lexp[g][j] >= s.lexp[g][prev])
                own = Or(base(s, g, j) == j, kept)
                extension = s.lkind[g][j] == LeaseKind.extension
                extends = ctx.lease_extensions or ctx.epochs  # a promotion is an extension too
                own = And(own, Implies(extension, kept) if extends else Not(extension))
                b = base(s, g, j)
                same = And(b >= 1, b <= j, base(s, g, b) == b, s.lstart[g][j] == s.lstart[g][b],
                           s.lholder[g][j] == s.lholder[g][b])
                # a request by another node is backdated to the expiration of the lease it
                # builds on, which had passed at its clock
                takeover = Implies(And(s.lkind[g][j] == LeaseKind.request,
                                       s.lholder[g][j] != s.lholder[g][prev]),
                                   And(Implies(expiration_based(prev),
                                               s.lstart[g][j] == s.lexp[g][prev]),
                                       base(s, g, j) == j))
                y = s.lholder[g][prev]
                # a holder's own request starts a new sequence only to replace a lease it
                # gave away (proscribed by its transfer, or by a restart); else it renews
                renews = Implies(And(s.lkind[g][j] == LeaseKind.request,
                                     s.lholder[g][j] == y, base(s, g, j) == j),
                                 gave_away(y, j))
                transfer = Implies(s.lkind[g][j] == LeaseKind.transfer, And(
                    s.lholder[g][j] != y, base(s, g, j) == j, s.lsum[g][j] >= s.lstart[g][j],
                    Implies(And(s.lseq[g][y] >= prev, base(s, g, s.lseq[g][y]) == base(s, g, prev)),
                            s.proscribed[g][y])))
                x = lease_proposer(s, g, j)
                seen = And(prev <= s.lseq[g][x], log.accepted_lease(prev, s.applied[g][x]))
                started = Implies(base(s, g, j) == j,
                                  s.lstart[g][j] <= clock(s, ctx, lease_proposer(s, g, j)))
                return If(made(s, g, j), And(prev >= 1, prev < j, own, same, transfer, takeover,
                                          renews, started, seen,
                                          Implies(expiration_based(j),
                                                  s.lexp[g][j] > s.lstart[g][j]),
                                          s.lkind[g][j] != LeaseKind.initial),
                          And(Not(s.lready[g][j]), s.lappended[g][j] == 0))
            def expiration_based(j: int) -> Any:
                return s.lepoch[g][j] == 0 if ctx.epochs else True
            first = And(base(s, g, 1) == 1, s.lkind[g][1] == LeaseKind.initial,
                        initial_lease(s, g))
            def proscribed(n: int) -> Any:
                """Only a transfer by n (or n's restart) proscribes n's lease."""
                return Implies(s.proscribed[g][n], gave_away(n, s.lcount[g] + 1))
            return And(s.lcount[g] >= 1, first, *[command(j) for j in commands],
                       *[proscribed(n) for n in range(N)],
                       *[one_at_a_time(j, k) for j in commands for k in commands if j < k],
                       ForAll(range(N), lambda n: s.lseq[g][n] <= s.lcount[g]))
        return And(*[per(g) for g in ranges])

    @m.lemma
    def BuffersListTheirCommands(s):  # noqa: N802
        """Each node's buffer lists once each write it evaluated that waits there, and each
        lease command it proposed that it has not flushed, and nothing else."""
        def per(g: int) -> Any:
            def listed(x: int) -> Any:
                def buffered(r: Any) -> Any:
                    w = Min(r, P - 1)
                    j = Max(Min(r - P + 2, S), 2)
                    write = And(r >= 0, r < P, s.wphase[w] == WPhase.buffered,
                                s.wnode[w] == x, of_range(s, ctx, w, g))
                    lease = And(r >= P, r < P + S - 1, j <= s.lcount[g], Not(s.lready[g][j]),
                                lease_proposer(s, g, j) == x)
                    return Or(write, lease)
                return buffer_lists(s.buf[g][x], s.buflen[g][x], buffered, P + S - 1)
            return And(*[listed(x) for x in range(N)])
        return And(*[per(g) for g in ranges])

    @m.lemma
    def WritesByTheirHolder(s):  # noqa: N802
        """A write (or structural command) that started evaluating did so on the node its
        lease names, after that node's replica applied the lease (its lease only moves
        forward); a write's ts is at least 1 and above the lease's start (the timestamp
        cache the lease raised), and it never fails or is released without restarts or
        reproposals."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)

            def above_start(w: int) -> list[Any]:
                """A write's ts; a structural command has none. A write to a key a merge
                brought into r1 is above the merge's bump instead (`merges.py`): r1's
                lease raised the cache over r1's span as it was when it applied."""
                if w >= W:
                    return []
                above = s.wts[w] > s.lstart[g][s.wseq[w]]
                if ctx.merges and g == 0:
                    above = Implies(Not(right_hand(ctx, s.wkey[w])), above)
                return [s.wts[w] >= 1, above]

            def write(w: int) -> Any:
                x = s.wnode[w]
                started = s.wphase[w] != WPhase.idle
                orphaned = s.wphase[w] == WPhase.orphaned
                return Implies(in_range(s, ctx, w, g), And(
                    s.wphase[w] != WPhase.released, s.wphase[w] != WPhase.failed,
                    Implies(orphaned, And(s.restarted, x == 0,
                                          base(s, g, s.wseq[w]) <= s.rbase[g]))
                    if ctx.restarts else Not(orphaned),
                    Implies(started, And(
                        s.wseq[w] <= s.lseq[g][x], s.wseq[w] <= s.lcount[g],
                        log.accepted_lease(s.wseq[w], s.applied[g][x]),
                        s.lholder[g][s.wseq[w]] == x, *above_start(w))),
                    Implies(Not(sent(s, ctx, w)), And(s.wlai[w] == 0, s.wcts[w] == NIL))))
            return And(*[write(w) for w in range(P)])
        return And(*[per(g) for g in ranges])

    @m.lemma
    def LAIsBoundedByFlushes(s):  # noqa: N802
        """Every LAI handed out, and every node's assigned LAI, is at most the number of
        attempts flushed with one (a flush takes the next LAI of its node's counter, which
        is either its own earlier ones or forwarded to an LAI its replica applied); a
        lease command not flushed, or not a transfer, carries neither an LAI nor a closed
        ts."""
        def per(g: int) -> Any:
            att = attempts(s, g)
            total = sum(If(a[0], 1, 0) for a in att)
            unflushed = And(*[Implies(Or(Not(s.lready[g][j]),
                                         s.lkind[g][j] != LeaseKind.transfer),
                                      And(s.llai[g][j] == 0, s.lcts[g][j] == NIL))
                              for j in commands])
            return And(*[Implies(a[0], a[3] <= total) for a in att], unflushed,
                       ForAll(range(N), lambda x: s.assigned_lai[g][x] <= total))
        return And(*[per(g) for g in ranges])

    @m.lemma
    def CacheAboveLeaseStart(s):  # noqa: N802
        """A node whose replica applied a lease naming it has its timestamp cache at or above
        the start of that lease's sequence, and a transfer's read summary: they were
        raised when the lease changed hands to it (`leasePostApplyLocked`), over the
        replica's span then, which holds the keys the range started with."""
        def per(g: int) -> Any:
            def node(x: int) -> Any:
                b = base(s, g, s.lseq[g][x])
                low = If(s.lkind[g][b] == LeaseKind.transfer, Max(s.lsum[g][b], s.lstart[g][b]),
                         s.lstart[g][b])
                return Implies(And(s.lholder[g][s.lseq[g][x]] == x, exists_on(s, g, x)), And(*[
                    Implies(own, s.tsc[x][seg] >= low)
                    for seg, own in enumerate(own_segments(s, ctx, g, x))]))
            return And(*[node(x) for x in range(N)])
        return And(*[per(g) for g in ranges])

    @m.lemma
    def LogHoldsFlushed(s):  # noqa: N802
        """The log holds flushed proposals and flushed lease commands, as often as their
        `appended` counts say, each after the entry of the lease it was proposed under
        (its proposer had applied that lease); no replica has applied past its end."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)

            def entry(i: int) -> Any:
                e = log.at(i)
                j = log.lease(i)
                w = log.prop(i)
                return Or(And(e >= 0, e < P, sent(s, ctx, w), of_range(s, ctx, w, g),
                              log.accepted_lease(s.wseq[w], i)),
                          And(e >= P, e < P + S - 1, j <= s.lcount[g], s.lready[g][j],
                              log.accepted_lease(s.lprev[g][j], i)))
            entries = ForAll(range(L), lambda i: Implies(log.present(i), entry(i)))
            copies = ForAll(range(P), lambda w: Implies(in_range(s, ctx, w, g), s.appended[
                w] == sum(If(And(log.present(i), log.at(i) == w), 1, 0) for i in range(L))))
            lease_copies = And(*[s.lappended[g][j] == sum(
                If(And(log.present(i), log.at(i) == P + j - 2), 1, 0) for i in range(L))
                for j in commands])
            once = [] if duplicate else [ForAll(range(P), lambda w: s.appended[w] <= 1)]
            applied = ForAll(range(N), lambda n: s.applied[g][n] <= s.loglen[g])
            return And(entries, copies, lease_copies, applied, *once)
        return And(*[per(g) for g in ranges])

    @m.lemma
    def ReplicasReplayTheLog(s):  # noqa: N802
        """Each replica's LAI, closed ts and lease are the replay of the prefix it applied:
        every replica decides each entry from the same prefix (reference §3.1-3.2)."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)
            return ForAll(range(N), lambda n: If(exists_on(s, g, n), And(
                s.lai[g][n] == log.pick(s.applied[g][n], 0),
                s.closed[g][n] == log.pick(s.applied[g][n], 1),
                s.lseq[g][n] == log.pick(s.applied[g][n], 2)), And(
                s.applied[g][n] == 0, s.lai[g][n] == 0, s.closed[g][n] == NIL,
                s.lseq[g][n] == 1)))
        return And(*[per(g) for g in ranges])

    @m.lemma
    def AcceptedByReplay(s):  # noqa: N802
        """A proposal is accepted exactly when the replay accepts one of its entries that
        some replica applied; a node holds the writes its replica accepted; the claim is
        the closed ts of the replica furthest along, at or above every follower read
        (which, with clock offsets, recorded as accepted only writes that were)."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)
            accepted_before = log.accepts
            far = log.furthest()
            accepted = ForAll(range(P), lambda w: Implies(
                in_range(s, ctx, w, g), s.accepted[w] == accepted_before(w, far)))
            held = ForAll([(n, w) for n in range(N) for w in range(W)], lambda nw: Implies(
                in_range(s, ctx, nw[1], g),
                s.has[nw[0]][nw[1]] == accepted_before(nw[1], s.applied[g][nw[0]])))
            highest = log.pick(far, 1)
            for floors in ctx.hooks.get("claim_floors", []):
                for floor in floors(s, g):
                    highest = Max(highest, floor)
            claim = s.claim_hi[g] == highest
            reads = ForAll(range(ctx.reads), lambda i: Implies(
                And(s.rdone[i], read_range(s, ctx, i) == g), s.rts[i] <= s.claim_hi[g]))
            recorded = []
            if ctx.max_offset:  # what a read recorded as accepted was, and it saw only that
                recorded = [ForAll([(i, w) for i in range(ctx.reads) for w in range(W)],
                                   lambda iw: And(Implies(s.racc[iw[0]][iw[1]], s.accepted[iw[1]]),
                                                  Implies(s.robs[iw[0]][iw[1]],
                                                          s.racc[iw[0]][iw[1]])))]
            return And(accepted, held, claim, reads, *recorded)
        return And(*[per(g) for g in ranges])

    @m.lemma
    def ReplayClosedNeverRegresses(s):  # noqa: N802
        """Along the log, an accepted entry carries a closed ts at least the replay's
        before it, and an accepted write is above it (A2, A3)."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)

            def step(i: int) -> Any:
                closed = log.states[i][1]
                write_above = Implies(And(log.is_prop(i), log.oks[i], log.at(i) < W),
                                      s.wts[Min(log.prop(i), W - 1)] > closed)
                return Implies(log.present(i), And(log.states[i + 1][1] >= closed, write_above))
            return And(*[step(i) for i in range(L)])
        return And(*[per(g) for g in ranges])

    def attempts(s: Any, g: int) -> list[tuple[Any, Any, Any, Any, Any, Any, Any]]:
        """(exists, proposer, lease it was proposed under, LAI, closed ts, write ts or
        None, what holds of it once its proposer restarted in its sequence) of every
        flushed attempt of range g that carries an LAI: each flushed write (forgotten by
        the restart) or structural command, and each flushed transfer."""
        orphaned = [s.wphase[w] == WPhase.orphaned if ctx.restarts else False
                    for w in range(P)]
        out = [(And(sent(s, ctx, w), in_range(s, ctx, w, g)), s.wnode[w], s.wseq[w],
                s.wlai[w], s.wcts[w], s.wts[w] if w < W else None, orphaned[w])
               for w in range(P)]
        for j in commands:
            out.append((And(made(s, g, j), s.lready[g][j],
                            s.lkind[g][j] == LeaseKind.transfer),
                        lease_proposer(s, g, j), s.lprev[g][j], s.llai[g][j], s.lcts[g][j],
                        None, True))
        return out

    def live(s: Any, g: int, a: tuple) -> Any:
        """The attempt's proposer still applies the lease sequence it was proposed under
        (its counters were not zeroed since)."""
        return And(a[0], base(s, g, a[2]) == base(s, g, s.lseq[g][a[1]]))

    @m.lemma
    def HolderCountersOrderAttempts(s):  # noqa: N802
        """A live attempt's LAI and closed ts are at most its proposer's assigned ones
        (once it restarted in that sequence, a write is one it forgot); two
        live attempts of one sequence never share an LAI, and the later one carries a
        closed ts at least as high and, a write, is above the earlier's (flush order, the
        tracker, the RFC's promise)."""
        def per(g: int) -> Any:
            def bounded(a: tuple) -> Any:
                x = a[1]
                # (an epoch lease whose epoch ended may leave a flush nothing to close)
                within = And(a[3] >= 1, a[3] <= s.assigned_lai[g][x],
                             True if ctx.epochs else a[4] >= 0,
                             a[4] <= s.assigned_closed[g][x])
                return Implies(live(s, g, a), If(wiped(s, ctx, x, g), a[6], within))

            def one_sequence(a: tuple, b: tuple) -> Any:
                return base(s, g, a[2]) == base(s, g, b[2])

            def ordered(a: tuple, b: tuple) -> Any:
                later = [b[4] >= a[4]]
                if b[5] is not None:
                    later.append(b[5] > a[4])
                return Implies(And(live(s, g, a), live(s, g, b), one_sequence(a, b),
                                   a[3] < b[3]), And(*later))

            def distinct(a: tuple, b: tuple) -> Any:
                return Implies(And(live(s, g, a), live(s, g, b), one_sequence(a, b)),
                               a[3] != b[3])
            att = attempts(s, g)
            pairs = [(a, b) for ia, a in enumerate(att) for ib, b in enumerate(att) if ia != ib]
            return And(*[bounded(a) for a in att], *[ordered(a, b) for a, b in pairs],
                       *[distinct(a, b) for a, b in pairs])
        return And(*[per(g) for g in ranges])

    @m.lemma
    def HolderCountersAboveReplay(s):  # noqa: N802
        """While the replay of a prefix is in the lease sequence node x's replica applied
        and x holds it, x's assigned LAI and closed ts are at or above the replay's: they
        were forwarded when x's lease applied, and only x's own attempts follow in that
        sequence."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)

            def node(x: int, k: int) -> Any:
                lai, closed, seq = log.states[k]
                mine = And(k <= s.loglen[g], s.lholder[g][s.lseq[g][x]] == x,
                           base(s, g, seq) == base(s, g, s.lseq[g][x]),
                           Not(wiped(s, ctx, x, g)), exists_on(s, g, x))
                return Implies(mine, And(lai <= s.assigned_lai[g][x],
                                         closed <= s.assigned_closed[g][x]))
            return And(*[node(x, k) for x in range(N) for k in range(L + 1)])
        return And(*[per(g) for g in ranges])

    @m.lemma
    def EndAcceptsOnlyLiveAttempts(s):  # noqa: N802
        """An attempt the end of the log would accept is above the replay's closed ts there
        and carries one at least as high."""
        def per(g: int) -> Any:
            log = Replay(s, ctx, g)
            lai, closed, seq = log.at_end()

            def fits(a: tuple) -> Any:
                above = [a[4] >= closed]
                if a[5] is not None:
                    above.append(a[5] > closed)
                return Implies(And(a[0], base(s, g, a[2]) == base(s, g, seq), a[3] > lai),
                               And(*above))
            return And(*[fits(a) for a in attempts(s, g)])
        return And(*[per(g) for g in ranges])

    if not ctx.lead:
        @m.lemma
        def ClaimsBelowClock(s):  # noqa: N802
            """Under LAG every closed ts is at least the target below the clock it was
            chosen at, so below the furthest clock now: every attempt's, every assigned
            one and the claim (§2.5: `min(target, ...)`; a bump's is the target itself)."""
            def per(g: int) -> Any:
                now = clock(s, ctx, 0)
                for n in range(1, N):
                    now = Max(now, clock(s, ctx, n))
                lag = ctx.target
                return And(*[Implies(a[0], a[4] + lag <= now) for a in attempts(s, g)],
                           *[s.assigned_closed[g][x] + lag <= now for x in range(N)],
                           s.claim_hi[g] + lag <= now)
            return And(*[per(g) for g in ranges])

    if ctx.restarts:
        @m.lemma
        def RestartForgotItsSequence(s):  # noqa: N802
            """n1's replica is in the sequence it was in when it restarted, or a later one.
            While it is still in that one and n1 held it: its lease there is revoked if it holds
            it, none of its writes, transfers or extensions of that sequence evaluates or
            waits in its buffer (it restarts with none, and its revoked lease proposes
            nothing but a request), and its
            timestamp cache, restarted at its clock (LAG only), is above every closed ts
            claimed in that sequence: its forgotten attempts' and the claim while no
            replica applied a later sequence."""
            def per(g: int) -> Any:
                x = 0
                seq = s.lseq[g][x]
                gone = [Implies(And(s.wnode[w] == x, base(s, g, s.wseq[w]) == s.rbase[g]), And(
                    s.wphase[w] != WPhase.evaluating, s.wphase[w] != WPhase.buffered))
                    for w in range(W)]
                gone += [Implies(And(made(s, g, j), lease_proposer(s, g, j) == x,
                                     s.lkind[g][j] != LeaseKind.request,
                                     base(s, g, s.lprev[g][j]) == s.rbase[g]), s.lready[g][j])
                         for j in commands]
                caches = [s.tsc[x][seg] for seg in range(ctx.segments)]
                newest = And(*[base(s, g, s.lseq[g][n]) <= s.rbase[g] for n in range(N)])
                above = [Implies(And(a[0], a[1] == x, base(s, g, a[2]) == s.rbase[g]),
                                 And(*[c > a[4] for c in caches])) for a in attempts(s, g)]
                above.append(Implies(newest, And(*[c > s.claim_hi[g] for c in caches])))
                when = If(s.restarted, And(s.rbase[g] >= 1, s.rbase[g] <= base(s, g, seq),
                                           base(s, g, s.rbase[g]) == s.rbase[g]),
                          s.rbase[g] == 0)
                return And(when, Implies(wiped(s, ctx, x, g), And(
                    Implies(s.lholder[g][seq] == x, s.proscribed[g][x]), *gone, *above)))
            return And(*[per(g) for g in ranges])

    if p.tracker == "impl":
        @m.lemma
        def BucketsWellFormed(s):  # noqa: N802
            """Each node's lock-free tracker: a bucket holding no tracked write is unset, a
            set bucket holds a write's ts (at least 1), and b1's is at most b2's."""
            def per(g: int) -> Any:
                def node(x: int) -> Any:
                    b1 = s.tb_first[g][x]

                    def empty(b: Any) -> Any:
                        return ForAll(range(W), lambda q: Not(And(
                            tracked_in(s, ctx, q, g, x), s.tok[q] == b)))
                    unset = ForAll(range(2), lambda b: And(
                        Implies(empty(b), s.tb_ts[g][x][b] == NIL),
                        Or(s.tb_ts[g][x][b] == NIL, s.tb_ts[g][x][b] >= 1)))
                    lo, hi = s.tb_ts[g][x][b1], s.tb_ts[g][x][1 - b1]
                    return And(unset, Implies(And(lo != NIL, hi != NIL), lo <= hi))
                return And(*[node(x) for x in range(N)])
            return And(*[per(g) for g in ranges])

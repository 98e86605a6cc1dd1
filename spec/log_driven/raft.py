"""Each range's Raft log and command application on every replica.

Flushed proposals reach their range's log in any order and possibly twice: the
Raft leader need not be the leaseholder, and Raft-level reproposals keep their LAI
and closed ts (RFC "LAIs vs. Raft log indexes"; reference §2.4, §E). Each replica
applies the log at its own pace. A command applies only if its LAI is above the
replica's applied LAI (`CheckForcedErr`, §3.1); a rejected command has no effect
at all, its closed ts included (`toCheckedCmd`). An accepted command's closed ts
becomes the replica's closed ts (§3.2), and is a claim: every later accepted
write to the range's keys must be above it (ghost `claim_hi`, per range).

With `reproposals`, a write rejected for its LAI on the proposer's own replica is
proposed again with a new LAI (§2.9; the spec's write path offers the "repropose" hook:
`proposals.py`, and the 2018 design's `reproposals.py`), so one proposal may have
entries with different LAIs: each log entry then carries its own LAI and closed ts
(`elai`, `ects`).

Node-level data: `has[n][w]` says node n holds write w's value, in whichever of
its replicas covers the key (a split or merge moves data between the replicas of
one node, never between nodes). Follower reads record what they saw from it.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Min, Not, Or, require
from spec.log_driven.parts import NIL, Ctx, WPhase, exists, in_range, lease_base, proposer


def add(m: Any, p: Any, ctx: Ctx) -> None:
    W, P, L, N, C, G = (ctx.writes, ctx.props, ctx.log_len, ctx.nodes, ctx.lease_changes,
                        ctx.ranges)
    m.var("log", Array(Array(Int(NIL, P + C - 1), L), G), init=NIL,
          doc="each range's Raft log: a proposal's id, or P + j - 2 for lease command j "
              "(-1 past loglen)")
    m.var("loglen", Array(Int(0, L), G), init=0, doc="entries in each log")
    m.var("appended", Array(Int(0, 2), P), init=0, doc="how often each proposal was appended")
    m.var("applied", Array(Array(Int(0, L), N), G), init=0,
          doc="log entries each replica has applied")
    m.var("lai", Array(Array(Int(0, ctx.max_lai), N), G), init=0,
          doc="each replica's lease applied index")
    m.var("closed", Array(Array(Int(NIL, ctx.closed_hi), N), G), init=NIL,
          doc="each replica's closed ts from applied commands")
    m.var("accepted", Array(Bool(), P), init=False, ghost=True,
          doc="the proposal's command was accepted (the same decision on every replica)")
    m.var("has", Array(Array(Bool(), W), N), init=False, ghost=True,
          doc="node n holds write w's value (it accepted w's command)")
    m.var("claim_hi", Array(Int(NIL, ctx.closed_hi), G), init=NIL, ghost=True,
          doc="highest closed ts claimed so far for each range's keys")
    R = ctx.reproposals
    if R:
        m.var("elai", Array(Array(Int(0, ctx.max_lai), L), G), init=0,
              doc="the LAI each log entry carries")
        m.var("ects", Array(Array(Int(NIL, ctx.closed_hi), L), G), init=NIL,
              doc="the closed ts each log entry carries")
    reorder, duplicate = p.reorder, p.duplicate
    lai_check = not ctx.mutated("NoLAICheck")
    rejected_keeps_closed = ctx.mutated("RejectedCommandKeepsClosed")

    @m.action(g=range(G), w=range(P))
    def append(s, g, w):
        """Raft appends a flushed proposal: in LAI order unless reordering, at most twice
        (one its proposer forgot in a restart may still get there)."""
        require(Or(s.wphase[w] == WPhase.flushed, s.wphase[w] == WPhase.orphaned)
                if ctx.restarts else s.wphase[w] == WPhase.flushed)
        require(in_range(s, ctx, w, g))
        require(s.loglen[g] < L)
        require(s.appended[w] < (2 if duplicate else 1))
        if not reorder:  # a first append follows LAI order; a duplicate may come any time
            require(Implies(s.appended[w] == 0, ForAll(
                [q for q in range(P) if q != w], lambda q: Implies(
                    And(s.wphase[q] == WPhase.flushed, in_range(s, ctx, q, g),
                        s.appended[q] == 0),
                    s.wlai[q] > s.wlai[w]))))
        s.log[g][s.loglen[g]] = w
        if R:
            s.elai[g][s.loglen[g]] = s.wlai[w]
            s.ects[g][s.loglen[g]] = s.wcts[w]
        s.loglen[g] = s.loglen[g] + 1
        s.appended[w] = s.appended[w] + 1

    @m.action(g=range(G), n=range(N))
    def apply(s, g, n):
        """Replica (g, n) applies its next log entry, accepting it only if its LAI is new."""
        require(exists(s, ctx, g, n))
        require(s.applied[g][n] < s.loglen[g])
        pos = s.applied[g][n]
        entry = s.log[g][pos]
        is_prop = entry < P if C else True
        e = Min(entry, P - 1) if C else entry
        e_lai = s.elai[g][pos] if R else s.wlai[e]
        e_cts = s.ects[g][pos] if R else s.wcts[e]
        same_lease = True if not C or ctx.mutated("NoLeaseSequenceCheck") \
            else lease_base(s, ctx, g, s.wseq[e]) == lease_base(s, ctx, g, s.lseq[g][n])
        ok = And(is_prop, e_lai > s.lai[g][n] if lai_check else True, same_lease)
        if R and n < ctx.proposers:  # the proposer rejects the attempt for its LAI (§2.9)
            ctx.hooks["repropose"](s, g, n, e, And(
                is_prop, Not(ok), same_lease, e_lai == s.wlai[e], Not(s.accepted[e]),
                s.wphase[e] == WPhase.flushed, n == proposer(s, ctx, e)))
        first = And(ok, Not(s.accepted[e]))
        s.accepted[e] = Or(s.accepted[e], ok)
        for w in range(W):
            s.has[n][w] = Or(s.has[n][w], And(ok, e == w))
        s.claim_hi[g] = If(ok, Max(s.claim_hi[g], e_cts), s.claim_hi[g])
        s.lai[g][n] = If(ok, e_lai, s.lai[g][n])
        s.closed[g][n] = If(is_prop, e_cts, s.closed[g][n]) if rejected_keeps_closed \
            else If(ok, e_cts, s.closed[g][n])
        if C:
            ctx.hooks["apply_lease"](s, g, n, Max(entry - P + 2, 2), Not(is_prop), lai_check)
        if g == 0:
            for X, apply_struct in ctx.hooks["apply_struct"].items():
                is_struct = e == X
                apply_struct(s, n, And(ok, is_struct), And(first, is_struct))
        s.applied[g][n] = s.applied[g][n] + 1
        for hook in ctx.hooks["after_apply"]:
            hook(s, g, n)

    def NoWriteBelowClaim(before, after):  # noqa: N802 - property names are CamelCase
        """A write accepted now is above every closed ts claimed for its key by commands
        accepted before it: in its range, those with a lower LAI (reference A2; the
        code's `assertNoWriteBelowClosedTimestamp`); across a split, the old range's
        claims; across a merge, the right-hand side's claims for its keys (A2's per-key
        form)."""
        def above(w: int) -> Any:
            conds = [Implies(in_range(before, ctx, w, g), before.wts[w] > before.claim_hi[g])
                     for g in range(G)]
            if ctx.merges:  # the RHS's claims still bind its keys
                conds.append(Implies(Or(*[before.wkey[w] == k for k in ctx.rhs_keys]),
                                     before.wts[w] > before.claim_hi[1]))
            return And(*conds)
        return ForAll(range(W), lambda w: Implies(
            And(Not(before.accepted[w]), after.accepted[w]), above(w)))

    def AppliedClosedMonotone(before, after):  # noqa: N802
        """The closed ts of each command a replica accepts is at least the replica's
        closed ts before it (A3; `assertNoCmdClosedTimestampRegression`)."""
        return ForAll([(g, n) for g in range(G) for n in range(N)], lambda gn: Implies(
            after.lai[gn[0]][gn[1]] != before.lai[gn[0]][gn[1]],
            after.closed[gn[0]][gn[1]] >= before.closed[gn[0]][gn[1]]))

    def ReplicaClosedNeverRegresses(before, after):  # noqa: N802
        """No replica's closed ts ever decreases, whatever it applies (A3, A6)."""
        return ForAll([(g, n) for g in range(G) for n in range(N)], lambda gn:
                      after.closed[gn[0]][gn[1]] >= before.closed[gn[0]][gn[1]])

    def ClaimsOrderedByLAI(s):  # noqa: N802
        """Accepted commands of one range with a higher LAI carry a closed ts at least as
        high (A4)."""
        def same_range(a: int, b: int) -> Any:
            return Or(*[And(in_range(s, ctx, a, g), in_range(s, ctx, b, g))
                        for g in range(G)])
        return ForAll([(a, b) for a in range(P) for b in range(P) if a != b],
                      lambda ab: Implies(
                          And(s.accepted[ab[0]], s.accepted[ab[1]], same_range(*ab),
                              s.wlai[ab[0]] < s.wlai[ab[1]]),
                          s.wcts[ab[0]] <= s.wcts[ab[1]]))

    m.step_invariant(NoWriteBelowClaim)
    m.step_invariant(AppliedClosedMonotone)
    m.step_invariant(ReplicaClosedNeverRegresses)
    m.invariant(ClaimsOrderedByLAI)

"""The Raft log and command application on every replica.

Flushed proposals reach the log in any order and possibly twice: the Raft
leader need not be the leaseholder, and reproposals keep their LAI and closed
ts (RFC "LAIs vs. Raft log indexes"; ground truth §2.4, §E). Each replica
applies the log at its own pace. A command applies only if its LAI is above
the replica's applied LAI (`CheckForcedErr`, §3.1); a rejected command has no
effect at all, its closed ts included (`toCheckedCmd`). An accepted command's
closed ts becomes the replica's closed ts (§3.2), and is a claim: every later
accepted write must be above it (ghost `claim_hi`).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Min, Not, Or, require
from spec.log_driven.parts import NIL, Ctx, WPhase


def add(m: Any, p: Any, ctx: Ctx) -> None:
    W, L, N, C = ctx.writes, ctx.log_len, ctx.nodes, ctx.lease_changes
    m.var("log", Array(Int(0, W + C - 1), L), init=0,
          doc="the Raft log: a write's id, or W + j - 2 for lease command j")
    m.var("loglen", Int(0, L), init=0, doc="entries in the log")
    m.var("appended", Array(Int(0, 2), W), init=0, doc="how often each write was appended")
    m.var("applied", Array(Int(0, L), N), init=0, doc="log entries each replica has applied")
    m.var("lai", Array(Int(0, W + C), N), init=0, doc="each replica's lease applied index")
    m.var("closed", Array(Int(NIL, ctx.closed_hi), N), init=NIL,
          doc="each replica's closed ts from applied commands")
    m.var("accepted", Array(Bool(), W), init=False, ghost=True,
          doc="the write's command was accepted (the same decision on every replica)")
    m.var("wpos", Array(Int(0, L - 1), W), init=0, ghost=True,
          doc="log index of the entry that was accepted for the write")
    m.var("claim_hi", Int(NIL, ctx.closed_hi), init=NIL, ghost=True,
          doc="highest closed ts claimed so far (by accepted commands)")
    reorder, duplicate = p.reorder, p.duplicate
    lai_check = not ctx.mutated("NoLAICheck")
    rejected_keeps_closed = ctx.mutated("RejectedCommandKeepsClosed")

    @m.action(w=range(W))
    def append(s, w):
        """Raft appends a flushed proposal: in LAI order unless reordering, at most twice."""
        require(s.wphase[w] == WPhase.flushed)
        require(s.loglen < L)
        require(s.appended[w] < (2 if duplicate else 1))
        if not reorder:  # a first append follows LAI order; a duplicate may come any time
            require(Implies(s.appended[w] == 0, ForAll(
                [q for q in range(W) if q != w], lambda q: Implies(
                    And(s.wphase[q] == WPhase.flushed, s.appended[q] == 0),
                    s.wlai[q] > s.wlai[w]))))
        s.log[s.loglen] = w
        s.loglen = s.loglen + 1
        s.appended[w] = s.appended[w] + 1

    @m.action(n=range(N))
    def apply(s, n):
        """Replica n applies its next log entry, accepting it only if its LAI is new."""
        require(s.applied[n] < s.loglen)
        entry = s.log[s.applied[n]]
        is_write = entry < W if C else True
        e = Min(entry, W - 1) if C else entry
        ok = And(is_write, s.wlai[e] > s.lai[n] if lai_check else True,
                 s.wseq[e] == s.lseq[n] if C else True)
        first = And(ok, Not(s.accepted[e]))
        s.wpos[e] = If(first, s.applied[n], s.wpos[e])
        s.accepted[e] = Or(s.accepted[e], ok)
        s.claim_hi = If(ok, Max(s.claim_hi, s.wcts[e]), s.claim_hi)
        s.lai[n] = If(ok, s.wlai[e], s.lai[n])
        s.closed[n] = If(is_write, s.wcts[e], s.closed[n]) if rejected_keeps_closed \
            else If(ok, s.wcts[e], s.closed[n])
        if C:
            ctx.hooks["apply_lease"](s, n, Max(entry - W + 2, 2), Not(is_write), lai_check)
        s.applied[n] = s.applied[n] + 1
        for hook in ctx.hooks["after_apply"]:
            hook(s, n)

    def NoWriteBelowClaim(before, after):  # noqa: N802 - property names are CamelCase
        """A write accepted now is above every closed ts claimed by commands accepted
        before it, i.e. with a lower LAI (ground truth A2; the code's
        `assertNoWriteBelowClosedTimestamp`)."""
        return ForAll(range(W), lambda w: Implies(
            And(Not(before.accepted[w]), after.accepted[w]),
            before.wts[w] > before.claim_hi))

    def AppliedClosedMonotone(before, after):  # noqa: N802
        """The closed ts of each command a replica accepts is at least the replica's
        closed ts before it (A3; `assertNoCmdClosedTimestampRegression`)."""
        return ForAll(range(N), lambda n: Implies(
            after.lai[n] != before.lai[n],
            after.closed[n] >= before.closed[n]))

    def ReplicaClosedNeverRegresses(before, after):  # noqa: N802
        """No replica's closed ts ever decreases, whatever it applies (A3, A6)."""
        return ForAll(range(N), lambda n: after.closed[n] >= before.closed[n])

    def ClaimsOrderedByLAI(s):  # noqa: N802
        """Accepted commands with a higher LAI carry a closed ts at least as high (A4)."""
        return ForAll([(a, b) for a in range(W) for b in range(W) if a != b],
                      lambda ab: Implies(
                          And(s.accepted[ab[0]], s.accepted[ab[1]],
                              s.wlai[ab[0]] < s.wlai[ab[1]]),
                          s.wcts[ab[0]] <= s.wcts[ab[1]]))

    m.step_invariant(NoWriteBelowClaim)
    m.step_invariant(AppliedClosedMonotone)
    m.step_invariant(ReplicaClosedNeverRegresses)
    m.invariant(ClaimsOrderedByLAI)

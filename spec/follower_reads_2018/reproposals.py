"""New-LAI reproposals and the MPT (reference §2.9, §8 row 2: bug #42821, fix #42939).

A write its proposer's replica rejects for its LAI (Raft appended a command with a
higher LAI first) is proposed again with a new LAI: `prepareLocalResult` calls
`tryReproposeWithNewLeaseIndex` for a forced error of kind proposalIllegalLeaseIndex,
unless the proposal already applied or was already reproposed at a higher LAI (the
shared log's "repropose" hook checks both: the entry's LAI is the write's newest).

MLAIs n1 published for the old LAI no longer cover the write. Before #42939 the
reproposal went straight to `propose` (issue #42821): a closed ts covering the write
could already be out with an MLAI below its new LAI. The fix puts the reproposal
through the MPT again, as the write path does (`executeWriteBatch`): `Track()` (a
reference on the right; the least timestamp a proposal may take is `next.Next()`),
then, if the write's timestamp is below that minimum, it gives up ("reproposal failed
due to closed timestamp": a closed ts at or above it may be out, and the write cannot
move without re-evaluating) and releases with zeros; otherwise `propose` gives it a
new LAI and the release records that LAI under the lease's epoch. Here the reproposal
re-enters the write path: tracked on the right and `evaluating` again, it waits for the
`propose` action (writes.py), which assigns the LAI and releases it with the epoch it
was tracked in (the lease the entry passed the lease check under: the same epoch). A
close may come in between, as in the code (the MPT's closer runs on its own).

The 2019-20 check is `Less(minTS)` with `minTS = next.Next()` (quoted in the review of
#59502), so a write at `next + 1` is still re-proposed; #59502 (2021) compared the
write's timestamp rather than the batch's (the model's writes have one) and made it
`LessEq`, which here only gives up more often. Unverified (the 2020 version of the
function was not available to read): that the success path then releases with the new
LAI and the lease's epoch. It follows `executeWriteBatch` (`untrack(ctx, epoch,
rangeID, maxLeaseIndex)` after `propose`, `defer untrack(ctx, 0, 0, 0)` for the error
paths), and without it the fix would not close #42821 (see ReproposeWithoutMLAI).

Mutations: ReproposeBypassesMPT is the code before #42939 (no Track, no release,
never gives up); ReproposeBelowClosed tracks but never gives up; ReproposeWithoutMLAI
tracks, protecting the timestamp (the rationale the 2021+ code's comment gives, enough
in the log-driven design, where the closed ts rides in the command), but releases with
zeros, so the new LAI never reaches an MLAI map.

Only n1's MPT is modelled, so models with reproposals keep every lease on n1
(`lease_changes = 0`, `init_holder = 0`, no merge): every write is n1's, and n1's
replica, where the shared log fires the hook, is the proposer's.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, ForAll, If, Implies, Int
from spec.follower_reads_2018.parts import V1
from spec.log_driven.parts import Ctx, WPhase


def add(m: Any, ctx: Ctx, v: V1) -> None:
    W, R = v.writes, ctx.reproposals
    m.var("reproposals_left", Int(0, R), init=R,
          doc="new-LAI reproposals the model still allows (a bound of the model)")
    bypass = v.mutated("ReproposeBypassesMPT")
    never_gives_up = bypass or v.mutated("ReproposeBelowClosed")

    def repropose(s: Any, g: int, n: int, e: Any, rejected: Any) -> None:
        """n1's replica (n) of range g rejected proposal e's newest entry for its LAI
        (`rejected`): Track() it again and send it back to `propose`, or give up when
        its ts is below Track's minimum, `next + 1` (`tryReproposeWithNewLeaseIndex`)."""
        for w in range(W):
            mine = And(rejected, e == w, s.worigin[w])
            room = s.reproposals_left > 0
            min_prop = s.mpt_next + 1
            retry = And(mine, room) if never_gives_up else And(mine, room, s.wts[w] >= min_prop)
            if not bypass:  # Track(): a reference on the right (a give-up releases it at once)
                s.right_ref = If(retry, s.right_ref + 1, s.right_ref)
                s.wleft[w] = If(retry, False, s.wleft[w])
            s.wmpt[w] = If(retry, not bypass, s.wmpt[w])
            s.wphase[w] = If(retry, WPhase.evaluating, If(mine, WPhase.failed, s.wphase[w]))
            s.appended[w] = If(retry, 0, s.appended[w])
            s.reproposals_left = If(retry, s.reproposals_left - 1, s.reproposals_left)

    ctx.hooks["repropose"] = repropose

    def ReproposalAboveClosed(before, after):  # noqa: N802 - property names are CamelCase
        """A write n1 re-proposes is above every closed ts n1 sent in the write's epoch:
        the new LAI may be missing from MLAIs sent so far, so no closed ts sent so far
        may cover the write (#42821; what `Track()`'s minimum guarantees)."""
        return ForAll(range(W), lambda w: Implies(
            And(before.wphase[w] == WPhase.flushed, after.wphase[w] == WPhase.evaluating),
            after.wts[w] > after.emitted_hi[after.wepoch[w]]))

    m.step_invariant(ReproposalAboveClosed)

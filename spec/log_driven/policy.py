"""What a leaseholder may close: the policy's target and the lease's ceiling.

LAG_BY_CLUSTER_SETTING closes `now - target`; LEAD_FOR_GLOBAL_READS closes
`now + lead` (RFC "Flexibility"; reference §9 `target(pol, now)`), and a
range may flip between them. Either way nothing is closed at or above the
lease's expiration (`ClosedTimestampUpperBound`, §6; A17).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Bool, If, Not
from spec.log_driven.parts import Ctx


def closed_target(s: Any, ctx: Ctx) -> Any:
    if not ctx.lead:
        return s.now - ctx.target
    return If(s.lead_policy, s.now + ctx.lead, s.now - ctx.target)


def ceiling(s: Any, ctx: Ctx, g: int, node: Any = None) -> Any:
    """One below the expiration of the lease `node` has applied for range g (default:
    the leaseholder): what it relies on is what it applied, not what it proposed."""
    if ctx.mutated("NoLeaseExpirationBound"):
        return ctx.closed_hi
    if not ctx.lease_changes:
        return ctx.lease_exp - 1
    if node is None:  # the leaseholder's applied lease, or (mutation) its newest proposal
        trusts_proposed = ctx.mutated("ExtensionTrustsProposedExpiration")
        seq = s.lcount[g] if trusts_proposed else s.lseq[g][s.lh[g]]
    else:
        seq = s.lseq[g][node]
    return s.lexp[g][seq] - 1


def lease_ok(s: Any, ctx: Ctx, g: int, node: int) -> Any:
    """`node` holds range g's lease it has applied, unexpired, not revoked by a transfer
    and not proscribed by a restart (§4.3 step 3; SideCloseUnderRevokedLease ignores
    both)."""
    if not ctx.lease_changes:
        return node == 0
    seq = s.lseq[g][node]
    mine = And(s.lholder[g][seq] == node, s.now < s.lexp[g][seq])
    if ctx.mutated("SideCloseUnderRevokedLease"):
        return mine
    usable = And(mine, Not(And(s.revoked[g], s.lh[g] == node)))
    return And(usable, Not(s.proscribed[g])) if ctx.restarts and node == 0 else usable


def add(m: Any, p: Any, ctx: Ctx) -> None:
    """The range's policy, and its flip (only when a LEAD policy exists)."""
    if not ctx.lead:
        return
    m.var("lead_policy", Bool(), init=p.policy == "lead", doc="LEAD (true) or LAG policy")
    if p.policy_flip:
        @m.action()
        def flip_policy(s):
            """The range's closed ts policy flips between LAG and LEAD."""
            s.lead_policy = Not(s.lead_policy)

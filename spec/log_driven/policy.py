"""What a replica may close: the policy's target and the lease's ceiling, by its clock.

LAG_BY_CLUSTER_SETTING closes `now - target`; LEAD_FOR_GLOBAL_READS closes
`now + lead` (RFC "Flexibility"; reference §9 `target(pol, now)`), and a
range may flip between them. Either way nothing is closed at or above the
expiration of the lease the closing rests on (`ClosedTimestampUpperBound`, §6;
A17): for a proposal, the lease it was evaluated under (`p.leaseStatus`); for the
side transport, the lease the sender's replica applied. Each node reads its own
clock (`clocks.py`); a lease is unusable for a request at or past its stasis
(expiration minus the maximum clock offset).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Bool, If, Not
from spec.log_driven.parts import Ctx


def clock(s: Any, ctx: Ctx, x: Any) -> Any:
    """Node x's clock: its own when clocks may drift apart (`max_offset > 0`), else the
    one clock."""
    hook = ctx.hooks.get("clock")
    return hook(s, x) if hook else s.now


def closed_target(s: Any, ctx: Ctx, x: Any) -> Any:
    """The target node x's policy closes now."""
    now = clock(s, ctx, x)
    if not ctx.lead:
        return now - ctx.target
    return If(s.lead_policy, now + ctx.lead, now - ctx.target)


def expiration(s: Any, ctx: Ctx, g: int, j: Any) -> Any:
    """When range g's lease j expires (an epoch lease: its holder's liveness)."""
    if not ctx.lease_changes:
        return ctx.lease_exp
    return ctx.hooks["lease_expiration"](s, g, j)


def proposal_ceiling(s: Any, ctx: Ctx, g: int, w: Any) -> Any:
    """One below the expiration of the lease proposal w was evaluated under (§2.5
    `p.leaseStatus.ClosedTimestampUpperBound()`); ExtensionTrustsProposedExpiration:
    of the newest lease command proposed, applied or not."""
    if ctx.mutated("NoLeaseExpirationBound"):
        return ctx.closed_hi
    if not ctx.lease_changes:
        return ctx.lease_exp - 1
    if ctx.mutated("ExtensionTrustsProposedExpiration"):
        return s.lexp[g][s.lcount[g]] - 1
    return ctx.hooks["evaluated_expiration"](s, g, w) - 1


def ceiling(s: Any, ctx: Ctx, g: int, node: Any) -> Any:
    """One below the expiration of the lease `node`'s replica of range g applied."""
    if ctx.mutated("NoLeaseExpirationBound"):
        return ctx.closed_hi
    if not ctx.lease_changes:
        return ctx.lease_exp - 1
    return expiration(s, ctx, g, s.lseq[g][node]) - 1


def stasis(s: Any, ctx: Ctx, g: int, x: Any) -> Any:
    """The first timestamp node x's applied lease of range g cannot serve: its
    expiration minus the maximum clock offset (UNUSABLE from there; §6, `leases.Status`)."""
    return expiration(s, ctx, g, s.lseq[g][x]) - ctx.max_offset


def lease_ok(s: Any, ctx: Ctx, g: int, node: int) -> Any:
    """`node`'s replica of range g holds the lease it applied, not expired at its clock
    and not proscribed (revoked by a transfer, or from before a restart): VALID or
    UNUSABLE, as BumpSideTransportClosed asks (§4.3 step 3; SideCloseUnderRevokedLease
    ignores the proscription, bug #102407)."""
    if not ctx.lease_changes:
        return node == 0
    seq = s.lseq[g][node]
    mine = And(s.lholder[g][seq] == node, clock(s, ctx, node) < expiration(s, ctx, g, seq))
    if ctx.mutated("SideCloseUnderRevokedLease"):
        return mine
    return And(mine, Not(s.proscribed[g][node]))


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

"""A restart of n1, the side-transport sender: what it forgets and what it keeps.

A restarted node loses its in-memory state: its replicas' proposal buffers (their
assigned LAI and closed ts), the proposals it had in flight (`r.mu.proposals`: they
may still reach the log and apply, but n1 no longer counts them), its sender's
tracked set and its outgoing side-transport streams (their receivers drop n1's state
and the next message on each new stream is a snapshot), its receiver's state for the
streams other senders send it (those senders reconnect with a snapshot), its
replicas' side-transport closed ts (new Replica objects), and its timestamp cache,
whose low water starts again at its clock plus the maximum clock offset (`tscache`:
"initialized to the current system time plus the maximum clock offset"). Its durable
state survives: the Raft log, what its replicas applied, and the leases. A lease n1
held before the restart is *proscribed* (`minLeaseProposedTS`; reference §6): it may
not be used to serve or to close timestamps until n1 acquires a new one, which it may
do at once. SideCloseUnderRevokedLease lets the side transport close under such a
lease (bug #102407).

Scope: n1 restarts only with nothing evaluating or buffered (what it would lose
there is not represented).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, If, Int, Min, require
from spec.log_driven.parts import (
    NIL,
    Ctx,
    WPhase,
    lease_base,
    owns_applied_lease,
    proposed_by,
)
from spec.log_driven.policy import clock
from spec.log_driven.proposals import quiet


def add(m: Any, p: Any, ctx: Ctx) -> None:
    G, S = ctx.ranges, p.senders
    m.var("restarted", Bool(), init=False, doc="n1 has restarted (at most once)")
    m.var("lorphan", Array(Array(Bool(), ctx.lease_changes + 2), G), init=False,
          doc="a lease command n1 had in flight when it restarted (it forgot it)")
    m.var("rbase", Array(Int(0, ctx.lease_changes + 1), G), init=0, ghost=True,
          doc="the lease sequence n1's replica was in when it restarted (0: not yet), for "
              "the proofs: if n1 held it, its counters mean nothing until it leaves it")

    @m.action()
    def restart(s):
        """n1 restarts: it forgets its proposal buffers, in-flight proposals, streams and
        timestamp cache; its leases are proscribed."""
        require(s.restarted == False)  # noqa: E712 - a symbolic comparison
        s.restarted = True
        for g in range(G):
            require(quiet(s, ctx, g, 0))
            require(s.buflen[g][0] == 0)  # nor a lease command waiting in n1's buffer
            for w in range(ctx.props):
                mine = And(s.wphase[w] == WPhase.flushed, proposed_by(s, ctx, w, g, 0))
                s.wphase[w] = If(mine, WPhase.orphaned, s.wphase[w])
            for j in range(2, ctx.lease_changes + 2):
                forgot = ctx.hooks["lease_in_flight"](s, g, 0, j)
                s.lorphan[g][j] = If(forgot, True, s.lorphan[g][j])
            s.assigned_closed[g][0] = NIL
            s.assigned_lai[g][0] = 0
            s.proscribed[g][0] = owns_applied_lease(s, ctx, g, 0)
            s.rbase[g] = lease_base(s, ctx, g, s.lseq[g][0])
        for seg in range(ctx.segments):
            s.tsc[0][seg] = Min(clock(s, ctx, 0) + ctx.max_offset, ctx.exp_hi)
        ctx.hooks["side_restart"](s, S)

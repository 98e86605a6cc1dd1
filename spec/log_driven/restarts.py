"""A restart of n1, the side-transport sender: what it forgets and what it keeps.

A restarted node loses its in-memory state: the proposals it had in flight
(`r.mu.proposals`), its sender's tracked set and its outgoing side-transport
streams (their receivers drop n1's state and the next message on each new
stream is a snapshot), and its receiver's state for the streams other senders
send it (those senders reconnect with a snapshot). Other senders' streams to
other nodes are untouched. Its durable state survives: the Raft log, what its replicas applied, and
the leases. A lease n1 held before the restart is *proscribed*: it may not be
used to serve or to close timestamps until n1 acquires a new one
(`minLeaseProposedTS`; reference §6): `proscribed`. SideCloseUnderRevokedLease lets
the side transport close under such a lease (bug #102407): with the transfer
that revoked it forgotten by the restart, nothing else stops the close.
"""

from __future__ import annotations

from typing import Any

from checker.lang import Array, Bool, Int, Or, require
from spec.log_driven.parts import Ctx
from spec.log_driven.proposals import quiet


def add(m: Any, p: Any, ctx: Ctx) -> None:
    G, N, S = ctx.ranges, ctx.nodes, p.senders
    drop_stream = ctx.hooks["side_drop_stream"]
    m.var("restarted", Bool(), init=False, doc="n1 has restarted (at most once)")
    m.var("proscribed", Array(Bool(), G), init=False,
          doc="n1's current lease of each range predates its restart")
    m.var("forgot", Array(Int(0, ctx.max_lai), G), init=0,
          doc="n1 forgot its proposals up to this LAI when it restarted")

    @m.action()
    def restart(s):
        """n1 restarts: its in-flight proposals and streams are gone, its leases proscribed."""
        require(s.restarted == False)  # noqa: E712 - a symbolic comparison
        s.restarted = True
        for g in range(G):
            require(quiet(s, ctx, g))
            if ctx.lease_changes:  # nor a lease command waiting in n1's buffer (it would
                require(Or(s.lh[g] != 0, s.buflen[g] == 0))  # be lost; not modelled)
            s.forgot[g] = s.assigned_lai[g]
            s.proscribed[g] = s.lholder[g][s.lseq[g][0]] == 0
            s.revoked[g] = Or(s.revoked[g], s.lh[g] == 0)  # n1 evaluates nothing more
            s.pub_tracked[0][g] = False
            s.pub_lai[0][g] = 0
            if ctx.lead:
                s.pub_grp[0][g] = 0
        for n in range(1, N):  # n1's outgoing streams
            drop_stream(s, 0, n)
        for x in range(1, S):  # other senders' streams to n1
            drop_stream(s, x, 0)

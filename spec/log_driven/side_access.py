"""Each replica's side-transport closed timestamp: the implementation's
`sidetransportAccess` (reference §3.4; `replica_closedts.go`).

One per replica, whichever sender fed it, and never reset when the replica's lease
changes hands: `cur` is the highest (closed ts, LAI) pair known to be applied there,
`next` the highest one received for an LAI that may not be applied yet (the
implementation stashes it; the RFC ignores such an update: `side_unapplied`).
`forward(closed, lai, knownApplied)` first asserts that the update is no regression
against either (a higher LAI with a lower closed ts, or a lower LAI with a higher
one: the fatal "side-transport update saw closed timestamp regression"), then merges
it into `cur` (folding `next` in when it is covered) or into `next`. Three things
forward: the leaseholder's own successful bump, a delivered message that removes a
range (its previous closed ts, for every replica of the range on the receiving node,
whatever lease it applied), and `get`, which a read (or anything asking for the
replica's closed ts) runs: it promotes `next` once its LAI has applied, then asks the
node's receiver for the stream of the node its applied lease names.

In the model an LAI of 0 is a real one (the range's first, before any command
applied), so `cur` and `next` are "set" when their closed ts is, where the code
tests a non-zero LAI.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, If, Int, Not, Or
from spec.log_driven.parts import NIL, Ctx


class SideAccess:
    """The replicas' side-transport closed ts: state, forward and get."""

    def __init__(self, ctx: Ctx, stash: bool):
        self.ctx = ctx
        self.stash = stash
        self.always_applied = ctx.mutated("SideIgnoresAppliedLAI")

    def declare(self, m: Any) -> None:
        ctx = self.ctx
        G, N = ctx.ranges, ctx.nodes
        ts, lai = Int(NIL, ctx.closed_hi), Int(0, ctx.max_lai)
        m.var("side_ts", Array(Array(ts, N), G), init=NIL,
              doc="each replica's side-transport closed ts known applied (cur)")
        m.var("side_lai", Array(Array(lai, N), G), init=0, doc="the LAI side_ts is for")
        if self.stash:
            m.var("next_ts", Array(Array(ts, N), G), init=NIL,
                  doc="each replica's stashed side-transport closed ts (next)")
            m.var("next_lai", Array(Array(lai, N), G), init=0,
                  doc="the not-yet-applied LAI next_ts is for")
        m.var("side_fatal", Bool(), init=False, ghost=True,
              doc="some forward saw a (LAI, closed ts) regression: the implementation's "
                  "fatal error")

    @staticmethod
    def _regression(a_ts: Any, a_lai: Any, b_ts: Any, b_lai: Any) -> Any:
        """`closedTimestamp.regression`: a higher LAI with a lower closed ts, or a lower
        LAI with a higher one (equal LAIs never regress)."""
        return Or(And(a_lai < b_lai, b_ts < a_ts), And(a_lai > b_lai, a_ts < b_ts))

    @staticmethod
    def _merge(a_ts: Any, a_lai: Any, b_ts: Any, b_lai: Any) -> tuple[Any, Any]:
        """`closedTimestamp.merge` of b into a (a may be unset): the same LAI forwards the
        closed ts, a higher one replaces it, a lower one is ignored."""
        take = Or(a_ts == NIL, b_lai > a_lai)
        same = And(a_ts != NIL, b_lai == a_lai)
        ts = If(take, b_ts, If(And(same, b_ts > a_ts), b_ts, a_ts))
        return ts, If(take, b_lai, a_lai)

    def forward(self, s: Any, g: int, n: Any, ts: Any, lai: Any, known: Any,
                when: Any = True) -> None:
        """`sidetransportAccess.forward(ts, lai, knownApplied)` on replica (g, n), if
        `when`."""
        cur_ts, cur_lai = s.side_ts[g][n], s.side_lai[g][n]
        bad = And(cur_ts != NIL, self._regression(cur_ts, cur_lai, ts, lai))
        known = Or(known, lai <= cur_lai, self.always_applied)  # an unset cur is at LAI 0
        if self.stash:
            nxt_ts, nxt_lai = s.next_ts[g][n], s.next_lai[g][n]
            bad = Or(bad, And(nxt_ts != NIL, self._regression(nxt_ts, nxt_lai, ts, lai)))
            fold = And(known, nxt_ts != NIL, lai >= nxt_lai)
            up_ts, up_lai = self._merge(ts, lai, nxt_ts, nxt_lai)
            up_ts, up_lai = If(fold, up_ts, ts), If(fold, up_lai, lai)
            new_ts, new_lai = self._merge(cur_ts, cur_lai, up_ts, up_lai)
            stash_ts, stash_lai = self._merge(nxt_ts, nxt_lai, ts, lai)
            into_cur = And(when, known)
            s.side_ts[g][n] = If(into_cur, new_ts, cur_ts)
            s.side_lai[g][n] = If(into_cur, new_lai, cur_lai)
            s.next_ts[g][n] = If(And(into_cur, fold), NIL,
                                 If(And(when, Not(known)), stash_ts, nxt_ts))
            s.next_lai[g][n] = If(And(into_cur, fold), 0,
                                  If(And(when, Not(known)), stash_lai, nxt_lai))
        else:  # the RFC: an update for an LAI not applied here is ignored
            new_ts, new_lai = self._merge(cur_ts, cur_lai, ts, lai)
            s.side_ts[g][n] = If(And(when, known), new_ts, cur_ts)
            s.side_lai[g][n] = If(And(when, known), new_lai, cur_lai)
        s.side_fatal = Or(s.side_fatal, And(when, bad))

    def get(self, s: Any, g: int, n: int, stream: Any) -> None:
        """`sidetransportAccess.get` on replica (g, n): promote `next` once its LAI has
        applied (else stop: the receiver can only know a higher LAI), then forward what
        `stream(s)` says, the receiver's (set, closed ts, LAI) for the stream of the node
        the replica's applied lease names."""
        applied = s.lai[g][n]
        go_on: Any = True
        if self.stash:
            nxt_ts, nxt_lai = s.next_ts[g][n], s.next_lai[g][n]
            pending = nxt_ts != NIL
            go_on = Or(Not(pending), nxt_lai <= applied)
            self.forward(s, g, n, nxt_ts, nxt_lai, True, when=And(pending, go_on))
        has, ts, lai = stream(s)
        fresh = And(go_on, has, ts > s.side_ts[g][n])
        self.forward(s, g, n, ts, lai, lai <= applied, when=fresh)

    def clear(self, s: Any, g: int, n: Any, when: Any = True) -> None:
        """Replica (g, n) loses its side-transport closed ts (a restart's new Replica
        object; SideBreakForgetsCopies)."""
        s.side_ts[g][n] = If(when, NIL, s.side_ts[g][n])
        s.side_lai[g][n] = If(when, 0, s.side_lai[g][n])
        if self.stash:
            s.next_ts[g][n] = If(when, NIL, s.next_ts[g][n])
            s.next_lai[g][n] = If(when, 0, s.next_lai[g][n])

    def add_invariants(self, m: Any) -> None:
        ctx = self.ctx
        replicas = [(g, n) for g in range(ctx.ranges) for n in range(ctx.nodes)]

        def SideClaimUsedOnlyOnceApplied(s):  # noqa: N802 - property names are CamelCase
            """A replica uses a side-transport closed ts only for an LAI it has applied
            (A5)."""
            return And(*[s.side_lai[g][n] <= s.lai[g][n] for g, n in replicas])

        def SideTransportNoRegression(s):  # noqa: N802
            """No replica's side-transport state ever saw an update regress against it: a
            higher LAI with a lower closed ts or a lower LAI with a higher one (the
            implementation's fatal "side-transport update saw closed timestamp
            regression", whichever leaseholders the two came from; A4, bug #102407)."""
            return Not(s.side_fatal)

        def SideClosedNeverRegresses(before, after):  # noqa: N802
            """A replica's side-transport closed ts never goes down, across stream breaks,
            reconnects and lease changes (A6, #68313); only a restart of its node starts
            it from nothing."""
            restarted = after.restarted != before.restarted if ctx.restarts else False
            return And(*[Or(after.side_ts[g][n] >= before.side_ts[g][n],
                            And(restarted, n == 0) if ctx.restarts else False)
                         for g, n in replicas])

        m.invariant(SideClaimUsedOnlyOnceApplied)
        m.invariant(SideTransportNoRegression)
        m.step_invariant(SideClosedNeverRegresses)

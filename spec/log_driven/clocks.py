"""Clocks: one clock, or a clock per node within the maximum clock offset.

With `max_offset = 0` every node reads one clock, `now`. Otherwise each node has its
own (`clk`), and no two differ by more than `max_offset` (CockroachDB's nodes stop
serving when their offset from the others exceeds its bound). A node's clock moves on
its own (`tick(x)`), never past the others' slowest by more than the offset, and jumps
forward on what the code feeds its hybrid logical clock: a lease's start when the
lease changes hands to it (`leasePostApplyLocked`: `Clock.Update(newLease.Start)`) and
the freeze time when a merge applies on r1's leaseholder without r2's lease
(`MergeRange`). Each node evaluates, closes, requests leases and judges them by its own
clock (`policy.clock`); a lease is unusable for a request at or past its stasis,
expiration minus the maximum offset (`leases.Status`).
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, If, Int, Max, Min, require
from spec.log_driven.parts import Ctx


def add(m: Any, p: Any, ctx: Ctx) -> None:
    if not ctx.max_offset:
        m.var("now", Int(p.target, p.max_ts), init=p.target, doc="the (single) clock")

        @m.action()
        def tick(s):
            """The clock moves on."""
            require(s.now < p.max_ts)
            s.now = s.now + 1
        return
    N, D = ctx.nodes, ctx.max_offset
    m.var("clk", Array(Int(p.target, p.max_ts), N), init=p.target,
          doc="each node's clock (within max_offset of every other)")
    ctx.hooks["clock"] = lambda s, x: s.clk[x]

    @m.action(x=range(N))
    def tick(s, x):
        """Node x's clock moves on, no more than the offset ahead of the slowest."""
        slowest = s.clk[0]
        for n in range(1, N):
            slowest = Min(slowest, s.clk[n])
        require(And(s.clk[x] < p.max_ts, s.clk[x] + 1 - slowest <= D))
        s.clk[x] = s.clk[x] + 1

    def observe(s: Any, n: Any, ts: Any, when: Any) -> None:
        """Node n's clock is updated with a timestamp another node's clock read (never
        above the fastest clock, so the offset bound holds)."""
        s.clk[n] = If(when, Max(s.clk[n], Min(ts, p.max_ts)), s.clk[n])

    ctx.hooks["observe_clock"] = observe

"""Two processes taking two locks in opposite orders: a deadlock at a known depth.

A warm-up counter `w` must first count from 0 to `warmup` (W). Then process 0 takes
lock A then lock B, process 1 takes B then A, and each releases both at once and may
start again. The program counters are pc0 in {idle, hasA, hasAB} and pc1 in
{idle, hasB, hasBA}; lock ownership is implied by them (A is held iff pc0 != idle or
pc1 = hasBA; B iff pc1 != idle or pc0 = hasAB).

Derivation: before the warm-up ends, the states are w = 0..W-1 with both processes
idle: W states at depths 0..W-1. With w = W, the pairs (pc0, pc1) where no lock is
held twice are (idle, idle), (hasA, idle), (hasAB, idle), (idle, hasB), (idle, hasBA)
and (hasA, hasB), six in all, and all are reached: (idle, idle) at depth W;
(hasA, idle) and (idle, hasB) at W + 1; (hasAB, idle), (idle, hasBA) and (hasA, hasB)
at W + 2. Total W + 6 states, diameter W + 2. In (hasA, hasB) each process waits for
the lock the other holds and no release is possible: the only deadlock, at depth W + 2.
For W = 3: 9 states, diameter 5, shortest deadlock trace 5 steps. `MutualExclusion`
always holds.
"""

from __future__ import annotations

from checker.lang import And, Enum, Int, Not, Or, Spec, require

P0 = Enum("P0", "idle hasA hasAB")
P1 = Enum("P1", "idle hasB hasBA")

LOCK_ORDER = Spec("lock_order", "two processes, two locks, opposite orders")
LOCK_ORDER.param("warmup", 3, "steps before the processes start", min=0)


@LOCK_ORDER.build
def _build(m, p):
    m.var("w", Int(0, p.warmup), init=0)
    m.var("pc0", P0, init=P0.idle)
    m.var("pc1", P1, init=P1.idle)

    def a_free(s):
        return And(s.pc0 == P0.idle, s.pc1 != P1.hasBA)

    def b_free(s):
        return And(s.pc1 == P1.idle, s.pc0 != P0.hasAB)

    @m.action()
    def warm(s):
        require(s.w < p.warmup)
        s.w = s.w + 1

    @m.action()
    def take_a0(s):
        require(s.w == p.warmup)
        require(a_free(s))
        s.pc0 = P0.hasA

    @m.action()
    def take_b0(s):
        require(s.pc0 == P0.hasA)
        require(b_free(s))
        s.pc0 = P0.hasAB

    @m.action()
    def release0(s):
        require(s.pc0 == P0.hasAB)
        s.pc0 = P0.idle

    @m.action()
    def take_b1(s):
        require(s.w == p.warmup)
        require(b_free(s))
        s.pc1 = P1.hasB

    @m.action()
    def take_a1(s):
        require(s.pc1 == P1.hasB)
        require(a_free(s))
        s.pc1 = P1.hasBA

    @m.action()
    def release1(s):
        require(s.pc1 == P1.hasBA)
        s.pc1 = P1.idle

    @m.invariant
    def MutualExclusion(s):  # noqa: N802
        """No lock is held by both processes."""
        a_twice = And(s.pc0 != P0.idle, s.pc1 == P1.hasBA)
        b_twice = And(s.pc1 != P1.idle, s.pc0 == P0.hasAB)
        return Not(Or(a_twice, b_twice))


EXPECTED = {
    "lock_order": {"params": {"warmup": 3}, "states": 9, "diameter": 5, "deadlock": 5},
}

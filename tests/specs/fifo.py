"""A FIFO queue of distinct items drawn from a pool of k: a permutation count.

`q[0..k-1]` holds the queue front first and `size` its length; slots at and past
`size` are kept at 0, so each queue content has exactly one representation.
`enqueue(v)` appends item v (0 <= v < k) if it is not already queued (so the queue never
overflows), and `dequeue` drops the front.

Derivation: the reachable states are exactly the sequences of distinct items of length
0..k (enqueues alone build any of them; a dequeue keeps the items distinct). There are
k!/(k-j)! sequences of length j, so sum_{j=0..k} k!/(k-j)! states: for k = 4,
1 + 4 + 12 + 24 + 24 = 65. Each step changes the length by one, so a sequence of length
j needs at least j steps, and j enqueues suffice: the diameter is k. An empty queue can
enqueue and a non-empty one can dequeue: no deadlock. The invariants `Distinct` and
`TailZero` always hold.
"""

from __future__ import annotations

from checker.lang import Array, ForAll, Implies, Int, Spec, require

FIFO = Spec("fifo", "a FIFO queue of distinct items from a pool of k")
FIFO.param("k", 4, "pool size, also the queue's capacity", min=1)


@FIFO.build
def _build(m, p):
    k = p.k
    m.var("q", Array(Int(0, k - 1), k), init=0)
    m.var("size", Int(0, k), init=0)

    @m.action(v=range(k))
    def enqueue(s, v):
        require(ForAll(range(k), lambda j: Implies(j < s.size, s.q[j] != v)))
        require(s.size < k)
        s.q[s.size] = v
        s.size = s.size + 1

    @m.action()
    def dequeue(s):
        require(s.size > 0)
        for j in range(k - 1):
            s.q[j] = s.q[j + 1]
        s.q[k - 1] = 0
        s.size = s.size - 1

    @m.invariant
    def Distinct(s):  # noqa: N802
        """No item is queued twice."""
        return ForAll([(i, j) for i in range(k) for j in range(i + 1, k)],
                      lambda ij: Implies(ij[1] < s.size, s.q[ij[0]] != s.q[ij[1]]))

    @m.invariant
    def TailZero(s):  # noqa: N802
        """Slots past the queue's end hold 0."""
        return ForAll(range(k), lambda j: Implies(j >= s.size, s.q[j] == 0))


EXPECTED = {
    "fifo": {"params": {"k": 4}, "states": 65, "diameter": 4, "deadlock": None},
}

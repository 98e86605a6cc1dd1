"""A two-process lock: the smallest spec worth checking, written outside ctmc's tree.

Each process is idle, trying or critical. With an atomic test-and-set a process
takes the lock only if it is free, in one step, so at most one process is ever
critical. The mutation CheckThenSet is the classic broken lock: a process sees
the lock free in one step and takes it in the next, so both can see it free
before either takes it.

Run it from this folder: `ctmc check mutex.toml` and `ctmc check mutex_check_then_set.toml`.
"""

from checker.lang import And, Array, Enum, Int, Not, Spec, require

# An enum is a finite set of named values. Declare it once, at module level: its
# members are attributes (Pc.idle), usable as initial values, in comparisons and in
# assignments; traces show them by name.
Pc = Enum("Pc", "idle trying critical")
FREE = 2  # the lock's value when no process holds it

MUTEX = Spec("mutex", "two processes, one lock taken by test-and-set")
MUTEX.param("rounds", 2, "how many times each process may enter", min=1, max=5)
MUTEX.mutation("CheckThenSet", "test the lock and set it in two steps, not atomically")


@MUTEX.build
def build(m, p):
    m.var("pc", Array(Pc, 2), init=Pc.idle, doc="each process's place")
    m.var("lock", Int(0, FREE), init=FREE, doc="the holder, or FREE")
    m.var("entries", Array(Int(0, p.rounds), 2), init=0, doc="times each process entered")

    @m.action(i=range(2))
    def want(s, i):
        """Process i starts trying to enter (a bounded number of times)."""
        require(s.pc[i] == Pc.idle)
        require(s.entries[i] < p.rounds)
        s.pc[i] = Pc.trying

    if m.mutated("CheckThenSet"):
        m.var("saw_free", Array(Int(0, 1), 2), init=0, doc="the lock looked free")

        @m.action(i=range(2))
        def test(s, i):
            """CheckThenSet: process i sees the lock free..."""
            require(And(s.pc[i] == Pc.trying, s.lock == FREE, s.saw_free[i] == 0))
            s.saw_free[i] = 1

        @m.action(i=range(2))
        def enter(s, i):
            """...and takes it in a later step, whatever happened in between."""
            require(And(s.pc[i] == Pc.trying, s.saw_free[i] == 1))
            s.lock = i
            s.saw_free[i] = 0
            s.pc[i] = Pc.critical
            s.entries[i] = s.entries[i] + 1
    else:
        @m.action(i=range(2))
        def enter(s, i):
            """Process i takes the free lock and enters, in one atomic step."""
            require(And(s.pc[i] == Pc.trying, s.lock == FREE))
            s.lock = i
            s.pc[i] = Pc.critical
            s.entries[i] = s.entries[i] + 1

    @m.action(i=range(2))
    def leave(s, i):
        """Process i leaves and frees the lock."""
        require(s.pc[i] == Pc.critical)
        s.lock = FREE
        s.pc[i] = Pc.idle

    @m.invariant
    def MutualExclusion(s):  # noqa: N802 - property names read like TLA+
        """At most one process is critical."""
        return Not(And(s.pc[0] == Pc.critical, s.pc[1] == Pc.critical))

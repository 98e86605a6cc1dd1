"""Two-phase commit, after Lamport's TwoPhase TLA+ spec: a transaction manager (TM)
and resource managers (RMs) that must agree to commit or to abort.

Each RM is working, then prepared (it voted yes) or aborted (it chose to). The TM
commits only once every RM told it it is prepared, and aborts otherwise; RMs follow
what the TM decided. The mutation CommitOnAnyPrepared commits as soon as one RM is
prepared, so an RM that chose to abort disagrees with one that committed.

This module is loaded by name (`spec = "tpc:TPC"`): ctmc looks for it in the model
file's folder first.
"""

from checker.lang import (
    And,
    Array,
    Bool,
    Enum,
    Exists,
    ForAll,
    If,
    Implies,
    Not,
    Or,
    Spec,
    require,
)

Rm = Enum("Rm", "working prepared committed aborted")
Tm = Enum("Tm", "init committed aborted")

TPC = Spec("two_phase_commit", "a transaction manager and resource managers")
TPC.param("rms", 2, "resource managers", min=2, max=4)
TPC.mutation("CommitOnAnyPrepared", "the TM commits once any RM is prepared, not all")


@TPC.build
def build(m, p):
    rms = range(p.rms)
    m.var("rm", Array(Rm, p.rms), init=Rm.working, doc="each RM's state")
    m.var("tm", Tm, init=Tm.init, doc="the TM's decision")
    m.var("told", Array(Bool(), p.rms), init=False, doc="the TM heard RM r is prepared")
    m.var("sent", Array(Bool(), p.rms), init=False, doc="RM r sent 'prepared'")

    @m.action(r=rms)
    def prepare(s, r):
        """RM r votes yes: it is prepared, and says so to the TM."""
        require(s.rm[r] == Rm.working)
        s.rm[r] = Rm.prepared
        s.sent[r] = True

    @m.action(r=rms)
    def choose_abort(s, r):
        """RM r, still working, decides to abort on its own."""
        require(s.rm[r] == Rm.working)
        s.rm[r] = Rm.aborted

    @m.action(r=rms)
    def hear_prepared(s, r):
        """The TM receives RM r's 'prepared'."""
        require(And(s.tm == Tm.init, s.sent[r], Not(s.told[r])))
        s.told[r] = True

    @m.action()
    def commit(s):
        """The TM commits: every RM is prepared (under the mutation: any one is)."""
        require(s.tm == Tm.init)
        ready = Exists(rms, lambda r: s.told[r]) if m.mutated("CommitOnAnyPrepared") \
            else ForAll(rms, lambda r: s.told[r])
        require(ready)
        s.tm = Tm.committed

    @m.action()
    def abort(s):
        """The TM aborts the transaction."""
        require(s.tm == Tm.init)
        s.tm = Tm.aborted

    @m.action(r=rms)
    def learn(s, r):
        """RM r, not yet decided, learns the TM's decision and follows it."""
        require(s.tm != Tm.init)
        require(Or(s.rm[r] == Rm.working, s.rm[r] == Rm.prepared))
        s.rm[r] = If(s.tm == Tm.committed, Rm.committed, Rm.aborted)

    @m.invariant
    def Consistent(s):  # noqa: N802 - property names read like TLA+
        """No RM has committed while another has aborted."""
        return ForAll([(a, b) for a in rms for b in rms], lambda ab: Not(
            And(s.rm[ab[0]] == Rm.committed, s.rm[ab[1]] == Rm.aborted)))

    @m.invariant
    def CommitOnlyIfAllPrepared(s):  # noqa: N802
        """A commit decision means every RM voted yes."""
        return Implies(s.tm == Tm.committed, ForAll(rms, lambda r: s.sent[r]))

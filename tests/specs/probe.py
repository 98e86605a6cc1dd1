"""An out-of-range read at depth 3, placed in a constraint, an invariant or a guard.

`i` counts 0..3 and the property reads `flags[i]`, an array of 3: it is defined in
the states at depths 0-2 and reads out of range at depth 3. Engines must report
an EvalError there, with a trace of 3 steps (i = 0, 1, 2, 3).
"""

from checker.lang import Array, Bool, Int, Spec, require

PROBE = Spec("probe", "an evaluation error in a constraint, invariant or guard, at depth 3")
PROBE.param("where", "invariant", choices=["constraint", "invariant", "guard"])


@PROBE.build
def _probe(m, p):
    m.var("i", Int(0, 3), init=0)
    m.var("flags", Array(Bool(), 3), init=False)

    @m.action()
    def advance(s):
        require(s.i < 3)
        s.i = s.i + 1

    def first_flag_unset(s):
        return ~s.flags[s.i]  # reads out of range once i reaches 3

    if p.where == "constraint":
        m.constraint(first_flag_unset)
    elif p.where == "invariant":
        m.invariant(first_flag_unset)
    else:
        @m.action()
        def flip(s):
            require(first_flag_unset(s))
            s.flags[0] = True

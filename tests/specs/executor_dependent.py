"""A spec whose build differs in a Spark task from the driver's: what a spec that
iterates a set does by accident, each process having its own hash seed."""

from checker.lang import Int, Spec, require

EXECUTOR_DEPENDENT = Spec("executor_dependent")


@EXECUTOR_DEPENDENT.build
def _(m, p):
    from pyspark import TaskContext

    bound = 2 if TaskContext.get() is None else 3  # in the driver, or in a task
    m.var("c", Int(0, 3), init=0)

    @m.action()
    def inc(s):
        require(s.c < bound)
        s.c = s.c + 1

    @m.invariant
    def Ok(s):
        return s.c < 3

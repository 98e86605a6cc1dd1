"""Running a model: one function from a built machine and engine options to a verdict.

Every front end goes through `run`: the command line, the CI gate, the bench
scripts and the Python API. The options' type chooses the engine; the engine
checks every property the machine names (invariants, lemmas, step invariants,
liveness, deadlock when asked) or refuses the machine with one line before any
work (`checker.engines.scope`), so no caller can get "holds" for a property
that was never looked at.

    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run
    result = run(build_machine(load_model("tracker_small", models_dir)), BfsOptions())

Engines are imported when used, so a broken Spark or Z3 install only breaks them.
"""

from __future__ import annotations

from checker.engines.explicit.bfs import BfsOptions
from checker.engines.explicit.bfs import reduces_by_symmetry as bfs_reduces
from checker.engines.explicit.simulation import SimulationOptions
from checker.engines.result import CheckResult
from checker.engines.scope import refuse_unchecked
from checker.engines.spark.options import SparkOptions
from checker.engines.spark.options import reduces_by_symmetry as spark_reduces
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.lang.machine import Machine

EngineOptions = BfsOptions | SparkOptions | SimulationOptions | BmcOptions
_NAMES = {BfsOptions: "bfs", SparkOptions: "spark", SimulationOptions: "simulate",
          BmcOptions: "bmc", ProveOptions: "prove"}

__all__ = ["BfsOptions", "BmcOptions", "EngineOptions", "ProveOptions", "SimulationOptions",
           "SparkOptions", "preflight", "reduces_by_symmetry", "run"]


def reduces_by_symmetry(machine: Machine, options: EngineOptions) -> bool:
    """Whether the engine `options` select stores one state per orbit of the spec's
    scalarsets (the local BFS and Spark can; the others explore every state)."""
    if isinstance(options, BfsOptions):
        return bfs_reduces(machine, options)
    if isinstance(options, SparkOptions):
        return spark_reduces(machine, options)
    return False


def preflight(machine: Machine, options: EngineOptions | ProveOptions) -> None:
    """Refuse bad input before anything is printed or started: a property the engine
    does not check, a checkpoint folder or run directory that cannot be used (read from
    its marker only), and for Spark a bad master or partition count. `run` refuses the
    same input and verifies every saved file; this only lets a front end refuse first."""
    if isinstance(options, SparkOptions):
        from checker.engines.spark.search import preflight as spark_preflight

        spark_preflight(machine, options)
        return
    if isinstance(options, BfsOptions):
        from checker.engines.explicit.bfs import preflight as bfs_preflight

        bfs_preflight(machine, options)
        return
    refuse_unchecked(machine, _NAMES[type(options)], getattr(options, "max_depth", None))


def run(machine: Machine, options: EngineOptions) -> CheckResult:
    """Check `machine` with the engine `options` select; see the module docstring."""
    if isinstance(options, BfsOptions):
        from checker.engines.explicit.bfs import check

        return check(machine, options)
    if isinstance(options, SparkOptions):
        from checker.engines.spark.search import check as spark_check

        return spark_check(machine, options)
    if isinstance(options, SimulationOptions):
        from checker.engines.explicit.simulation import simulate

        return simulate(machine, options)
    if isinstance(options, BmcOptions):
        from checker.engines.symbolic.bmc import bmc

        return bmc(machine, options)
    raise TypeError(f"no engine takes {type(options).__name__}")

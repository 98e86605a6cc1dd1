"""Liveness on Spark: the explored graph rebuilt from the run directory, then the local
engine's search for a fair lasso over it.

After the safety search holds and is complete, every level is in the run
directory. One job reads all levels, a bucket a task (`graph_bucket`): it expands
each state again with the same kernel (so executors recompute the transitions,
which were never stored), labels each transition with the step goals it meets,
and each state with the triggers and state goals it meets.

The driver numbers the states as every engine does (`liveness.StateGraph`: by
level, then fingerprint; parents and actions from the levels' columns), maps
the transitions onto those numbers, and runs `liveness.check_graph`, the same code
as the local engine, so the verdict and the lasso are identical. The driver holds
the graph (about 40 bytes per transition); liveness models are small, and this is
the limit to know before checking liveness on a model of hundreds of millions of
transitions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from checker.engines.explicit.liveness import (
    Labels,
    StateGraph,
    check_graph,
    evaluate_batch,
    transition_order,
)
from checker.engines.result import CheckResult
from checker.engines.spark.levels import MachineRef, kernel_for, read_level
from checker.engines.spark.run_dir import level_file
from checker.errors import CheckerError
from checker.lang.machine import LivenessProperty
from checker.packing import U64
from checker.progress import Heartbeat

if TYPE_CHECKING:
    from checker.engines.spark.search import _Run

MAX_PROPERTIES = 63  # one bit each in an int64 column


@dataclass(frozen=True)
class LivenessTask:
    """What executors need to label the graph (pickled with the job)."""

    ref: MachineRef
    root: str
    levels: int
    batch_size: int = 1 << 16


@dataclass
class BucketGraph:
    """One bucket's share of the graph: its states (with their level and generator),
    each state's trigger and state-goal bits, and every transition out of them."""

    fps: np.ndarray
    level: np.ndarray
    parents: np.ndarray
    parent_actions: np.ndarray
    trigger: np.ndarray  # bit i: property i's trigger holds
    goal: np.ndarray  # bit i: property i's state goal holds
    src: np.ndarray
    action: np.ndarray
    dst: np.ndarray
    step_goal: np.ndarray  # bit i: the transition is a goal step of property i


# --- executors -------------------------------------------------------------------------

def graph_bucket(task: LivenessTask, bucket: int) -> BucketGraph:
    """Bucket `bucket`'s states of every level, their labels and their transitions."""
    kernel = kernel_for(task.ref)
    A = kernel.n_actions
    props = kernel.machine.liveness
    step_goals = [(i, p) for i, p in enumerate(props) if p.goal_is_step]
    parts: dict[str, list[np.ndarray]] = {k: [] for k in BucketGraph.__dataclass_fields__}
    for k in range(task.levels):
        states = read_level(level_file(Path(task.root), k, bucket), kernel)
        n = len(states.fps)
        parts["fps"].append(states.fps)
        parts["level"].append(np.full(n, k, dtype=np.int64))
        parts["parents"].append(states.parents)
        parts["parent_actions"].append(states.actions)
        for lo in range(0, n, task.batch_size):
            chunk = [w[lo:lo + task.batch_size] for w in states.words]
            trigger = np.zeros(len(chunk[0]), dtype=np.int64)
            goal = np.zeros(len(chunk[0]), dtype=np.int64)
            for i, prop in enumerate(props):
                trigger |= evaluate_batch(kernel, prop.trigger, chunk).astype(np.int64) << i
                if not prop.goal_is_step:
                    goal |= evaluate_batch(kernel, prop.goal, chunk).astype(np.int64) << i
            parts["trigger"].append(trigger)
            parts["goal"].append(goal)
            exp = kernel.expand(chunk, 0, False)
            source = exp.gen // A
            step_goal = np.zeros(len(exp.gen), dtype=np.int64)
            for i, prop in step_goals:
                before = [w[source] for w in chunk]
                step_goal |= evaluate_batch(kernel, prop.goal, before,
                                            exp.words).astype(np.int64) << i
            parts["src"].append(states.fps[lo:lo + task.batch_size][source])
            parts["action"].append((exp.gen % A).astype(np.int64))
            parts["dst"].append(kernel.layout.fingerprints(exp.words))
            parts["step_goal"].append(step_goal)
    unsigned = {"fps", "parents", "src", "dst"}
    return BucketGraph(**{k: np.concatenate(v) if v else
                          np.empty(0, dtype=U64 if k in unsigned else np.int64)
                          for k, v in parts.items()})


# --- the driver ---------------------------------------------------------------------------

def check_liveness(run: _Run, result: CheckResult) -> CheckResult:
    """The liveness verdict for a complete Spark run that holds; see the module docstring."""
    machine = run.machine
    if len(machine.liveness) > MAX_PROPERTIES:
        raise CheckerError(f"the Spark engine checks at most {MAX_PROPERTIES} liveness "
                           f"properties in one run; the model names {len(machine.liveness)}")
    started = time.perf_counter()
    n = run.run_dir.partitions
    task = LivenessTask(run.ref, str(run.run_dir.path), run.depth + 1, run.options.batch_size)
    _say(run, f"liveness: recomputing the transitions of {sum(run.progress.sizes):,} states "
              "in executors")
    context = run.spark.sparkContext
    context.setJobDescription("ctmc: liveness graph")
    with Heartbeat(run.options.progress, "liveness: transitions and labels"):
        shares = context.parallelize(range(n), n).map(partial(graph_bucket, task)).collect()
    part = BucketGraph(**{k: np.concatenate([getattr(s, k) for s in shares])
                          for k in BucketGraph.__dataclass_fields__})
    fp, level = part.fps, part.level
    order = np.lexsort((fp, level))  # states numbered by level, then fingerprint
    fp, level = fp[order], level[order]
    number = _Numbering(fp, run)
    parent = np.full(len(fp), -1, dtype=np.int64)
    later = level > 0
    parent[later] = number.of(part.parents[order][later], "parent")
    parent_action = part.parent_actions[order]
    trigger, goal = part.trigger[order], part.goal[order]
    src = number.of(part.src, "source")
    dst = number.of(part.dst, "target")
    by = transition_order(src, part.action)
    graph = StateGraph(level, parent, parent_action, src[by], dst[by], part.action[by],
                       run.init_states)
    step_goal = part.step_goal[by]
    _say(run, f"liveness: {len(src):,} transitions")
    index = {p.name: i for i, p in enumerate(machine.liveness)}

    def labels_of(prop: LivenessProperty) -> Labels:
        bit = np.int64(1) << index[prop.name]
        if prop.goal_is_step:
            return Labels((trigger & bit) != 0, np.zeros(len(fp), dtype=bool),
                          (step_goal & bit) != 0)
        goal_state = (goal & bit) != 0
        return Labels((trigger & bit) != 0, goal_state, goal_state[graph.dst])

    return check_graph(machine, graph, labels_of, result, started)


class _Numbering:
    """State numbers (by level, then fingerprint) looked up by fingerprint."""

    def __init__(self, ordered_fps: np.ndarray, run: _Run):
        self.by_fp = np.argsort(ordered_fps)
        self.sorted = ordered_fps[self.by_fp]
        self.run = run

    def of(self, fps: np.ndarray, what: str) -> np.ndarray:
        pos = np.minimum(np.searchsorted(self.sorted, fps), len(self.sorted) - 1)
        missing = self.sorted[pos] != fps
        if missing.any():
            raise CheckerError(f"run directory {self.run.run_dir.path}: a {what} state "
                               f"{int(fps[missing][0]):#018x} is in no level")
        return self.by_fp[pos]


def _say(run: _Run, line: str) -> None:
    if run.options.progress:
        run.options.progress(line)


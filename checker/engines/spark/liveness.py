"""Liveness on Spark: the explored graph rebuilt from the run directory, then the local
engine's search for a fair lasso over it.

After the safety search holds and is complete, every level is in the run
directory. Two jobs read all levels, bucket by bucket:

- `edges_partition` expands each state again with the same kernel (so executors
  recompute the transitions, which were never stored) and labels each transition
  with the step goals it meets;
- `labels_partition` labels each state with the triggers and state goals it meets.

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
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from checker.engines.explicit.liveness import (
    Labels,
    StateGraph,
    check_graph,
    evaluate_batch,
    transition_order,
)
from checker.engines.result import CheckResult
from checker.engines.spark.levels import (
    MachineRef,
    kernel_for,
    read_partition,
    unsigned,
    word_columns,
)
from checker.engines.spark.session import no_pandas_warning
from checker.errors import CheckerError
from checker.lang.machine import LivenessProperty
from checker.progress import Heartbeat

if TYPE_CHECKING:
    from checker.engines.spark.search import _Run

MAX_PROPERTIES = 63  # one bit each in an int64 column


@dataclass(frozen=True)
class LivenessTask:
    """What executors need to label the graph (pickled with the function)."""

    ref: MachineRef
    batch_size: int = 1 << 16


# --- executors -------------------------------------------------------------------------

def edges_partition(task: LivenessTask, batches: Iterator[pa.RecordBatch]
                    ) -> Iterator[pa.RecordBatch]:
    """Every transition out of the partition's states: (source fp, action, target fp,
    bit i set when it is a goal step of liveness property i)."""
    kernel = kernel_for(task.ref)
    fps, words, _, _ = read_partition(batches, kernel)
    A = kernel.n_actions
    step_goals = [(i, p) for i, p in enumerate(kernel.machine.liveness) if p.goal_is_step]
    for lo in range(0, len(fps), task.batch_size):
        chunk = [w[lo:lo + task.batch_size] for w in words]
        exp = kernel.expand(chunk, 0, False)
        source = exp.gen // A
        goal = np.zeros(len(exp.gen), dtype=np.int64)
        for i, prop in step_goals:
            before = [w[source] for w in chunk]
            goal |= evaluate_batch(kernel, prop.goal, before, exp.words).astype(np.int64) << i
        yield pa.RecordBatch.from_arrays(
            [pa.array(fps[lo:lo + task.batch_size][source].view(np.int64)),
             pa.array((exp.gen % A).astype(np.int32)),
             pa.array(kernel.layout.fingerprints(exp.words).view(np.int64)),
             pa.array(goal)], names=["src", "action", "dst", "goal"])


def labels_partition(task: LivenessTask, batches: Iterator[pa.RecordBatch]
                     ) -> Iterator[pa.RecordBatch]:
    """Each state's fp, with bit i of `trigger` (of `goal`) set when property i's
    trigger (state goal) holds there."""
    kernel = kernel_for(task.ref)
    fps, words, _, _ = read_partition(batches, kernel)
    for lo in range(0, len(fps), task.batch_size):
        chunk = [w[lo:lo + task.batch_size] for w in words]
        trigger = np.zeros(len(chunk[0]), dtype=np.int64)
        goal = np.zeros(len(chunk[0]), dtype=np.int64)
        for i, prop in enumerate(kernel.machine.liveness):
            trigger |= evaluate_batch(kernel, prop.trigger, chunk).astype(np.int64) << i
            if not prop.goal_is_step:
                goal |= evaluate_batch(kernel, prop.goal, chunk).astype(np.int64) << i
        yield pa.RecordBatch.from_arrays(
            [pa.array(fps[lo:lo + task.batch_size].view(np.int64)), pa.array(trigger),
             pa.array(goal)], names=["fp", "trigger", "goal"])


# --- the driver ---------------------------------------------------------------------------

def check_liveness(run: _Run, result: CheckResult) -> CheckResult:
    """The liveness verdict for a complete Spark run that holds; see the module docstring."""
    machine = run.machine
    if len(machine.liveness) > MAX_PROPERTIES:
        raise CheckerError(f"the Spark engine checks at most {MAX_PROPERTIES} liveness "
                           f"properties in one run; the model names {len(machine.liveness)}")
    started = time.perf_counter()
    layout = run.kernel.layout
    columns = ["fp", *word_columns(layout.n_words, layout.exact), "parent", "action"]
    task = LivenessTask(run.ref, run.options.batch_size)
    levels = run.spark.table(run.table)
    _say(run, "liveness: numbering the explored states")
    states = levels.select("fp", "level", "parent", "action").toArrow()
    fp, level = unsigned(states, "fp"), states.column("level").to_numpy()
    order = np.lexsort((fp, level))
    fp, level = fp[order], level[order].astype(np.int64)
    number = _Numbering(fp, run)
    parent = np.full(len(fp), -1, dtype=np.int64)
    later = level > 0
    parent[later] = number.of(unsigned(states, "parent")[order][later], "parent")
    parent_action = states.column("action").to_numpy()[order].astype(np.int64)
    _say(run, f"liveness: recomputing the transitions of {len(fp):,} states in executors")
    frontier = levels.select(*columns)
    with no_pandas_warning(), Heartbeat(run.options.progress, "liveness: transitions"):
        edges = frontier.mapInArrow(partial(edges_partition, task),
                                    "src long, action int, dst long, goal long").toArrow()
    src = number.of(unsigned(edges, "src"), "source")
    dst = number.of(unsigned(edges, "dst"), "target")
    action = edges.column("action").to_numpy().astype(np.int64)
    by = transition_order(src, action)
    graph = StateGraph(level, parent, parent_action, src[by], dst[by], action[by],
                       run.init_states)
    step_goal = edges.column("goal").to_numpy()[by]
    _say(run, f"liveness: labelling states; {len(src):,} transitions")
    with no_pandas_warning(), Heartbeat(run.options.progress, "liveness: labels"):
        labels = frontier.mapInArrow(partial(labels_partition, task),
                                     "fp long, trigger long, goal long").toArrow()
    at = number.of(unsigned(labels, "fp"), "labelled")
    trigger = np.zeros(len(fp), dtype=np.int64)
    goal = np.zeros(len(fp), dtype=np.int64)
    trigger[at] = labels.column("trigger").to_numpy()
    goal[at] = labels.column("goal").to_numpy()
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


"""What a Spark level sends through its exchange, and why: rows per new state.

Expands `bench/scale.py`'s model (the tracker with 6 requests, clock up to 5, client
timestamps up to 4) level by level in this process, as the Spark engine's map side
does: the frontier split among T tasks by bucket, each task's successors made
distinct within the task. Prints, per level: successors generated, rows sent (summed
over the tasks), distinct successors of the whole level, and new states, with rows
and distinct successors per new state. Distinct equal to new means no successor was
visited before; the rows beyond that are the same states reached from parents in
different tasks.

    python bench/exchange_rows.py                  # levels 1-9, 128 tasks (about a minute)
    python bench/exchange_rows.py --depth 7 --tasks 8
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.engines.explicit.successors import Kernel  # noqa: E402
from checker.engines.spark.visited_runs import bucket_of  # noqa: E402
from checker.models import build_machine, load_model  # noqa: E402

SIZES = {"requests": "6", "max_now": "5", "max_ts": "4"}  # bench/scale.py's model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=9)
    parser.add_argument("--tasks", type=int, default=128)
    args = parser.parse_args()
    machine = build_machine(load_model("tracker_bench_large", ROOT / "bench" / "models"), SIZES)
    kernel = Kernel(machine)
    layout = kernel.layout
    words = layout.pack_states(machine.init_states)
    fps = layout.fingerprints(words)
    visited = np.unique(fps)
    print(f"{'level':>5} {'generated':>12} {'rows sent':>12} {'distinct':>12} {'new':>12} "
          f"{'rows/new':>8} {'distinct/new':>12}")
    for level in range(1, args.depth + 1):
        task = bucket_of(fps, args.tasks, layout.exact)
        generated = sent = 0
        kept_fps, kept_words = [], []
        for t in range(args.tasks):
            mine = task == t
            if not mine.any():
                continue
            exp = kernel.expand([w[mine] for w in words], 0, False)
            generated += len(exp.gen)
            if not len(exp.gen):
                continue
            distinct, rows = np.unique(layout.fingerprints(exp.words), return_index=True)
            sent += len(distinct)
            kept_fps.append(distinct)
            kept_words.append([w[rows] for w in exp.words])
        if not kept_fps:
            break
        every = np.concatenate(kept_fps)
        distinct, rows = np.unique(every, return_index=True)
        new = ~np.isin(distinct, visited)
        count = int(new.sum())
        print(f"{level:>5} {generated:>12,} {sent:>12,} {len(distinct):>12,} {count:>12,} "
              f"{sent / max(count, 1):>8.2f} {len(distinct) / max(count, 1):>12.2f}", flush=True)
        fps = distinct[new]
        words = [np.concatenate([k[i] for k in kept_words])[rows][new]
                 for i in range(layout.n_words)]
        visited = np.union1d(visited, fps)


if __name__ == "__main__":
    main()

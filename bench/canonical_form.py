"""What choosing one state per orbit costs, by method and scalarset size.

For the RFC tracker with k interchangeable requests (k! permutations), times
both canonical-form methods on the same batch of random in-type states and
prints nanoseconds per state, and checks that both methods pick
representatives of the same orbits (equal counts of distinct ones). The engine
sorts from `SORT_FROM` members up, where sorting starts to win.

Then the refinement, for scalarsets that cannot be sorted past 720 permutations:
the test spec of clients locking servers (`tests/specs/locks.py`), searched with one
state per orbit and, where it fits, every state, each timed once.

    python bench/canonical_form.py             # k = 2..5, 200,000 states; locks
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.engines.explicit.bfs import BfsOptions, check  # noqa: E402
from checker.models import build_machine, load_model  # noqa: E402
from checker.packing import Layout  # noqa: E402
from checker.symmetry.canonical import Canonicalizer  # noqa: E402
from checker.symmetry.group import SymmetryGroup  # noqa: E402
from tests.specs.locks import LOCKS  # noqa: E402

LOCKS_SIZES = ((6, 2, True), (8, 3, True), (10, 3, False), (12, 2, False), (12, 4, False))


def seconds(fn, *args) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=200_000)
    args = parser.parse_args()
    n = args.states
    print(f"{'k':>2} {'perms':>5} {'signature sort':>15} {'smallest image':>15}  "
          "(ns per state; distinct representatives)")
    for k in (2, 3, 4, 5):
        machine = build_machine(load_model("tracker_bench_small", ROOT / "bench" / "models"),
                                {"requests": str(k)})
        layout, group = Layout(machine), SymmetryGroup(machine)
        rng = np.random.default_rng(k)
        cols = np.stack([rng.integers(s.lo, s.hi + 1, size=n) for s in machine.slots], axis=1)
        words = layout.pack_batch(cols)
        sort, search = Canonicalizer(group, layout, "sort"), Canonicalizer(group, layout, "search")
        distinct = [len(np.unique(layout.fingerprints(c.canonical(words))))
                    for c in (sort, search)]
        assert distinct[0] == distinct[1], distinct
        ns = [seconds(c.canonical, words) / n * 1e9 for c in (sort, search)]
        print(f"{k:>2} {group.size:>5} {ns[0]:>15.0f} {ns[1]:>15.0f}  "
              f"({distinct[0]:,} of {n:,})")
    print(f"\n{'clients x servers':>17} {'permutations':>13} {'orbits':>7} {'seconds':>8} "
          f"{'states':>10} {'seconds':>8}  (refined; full search)")
    for clients, servers, full in LOCKS_SIZES:
        machine = LOCKS.instantiate({"clients": clients, "servers": servers})
        started = time.perf_counter()
        reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
        took = time.perf_counter() - started
        line = (f"{f'{clients} x {servers}':>17} {SymmetryGroup(machine).size:>13,} "
                f"{reduced.stats['distinct_states']:>7,} {took:>8.2f}")
        if full:
            started = time.perf_counter()
            every = check(machine, BfsOptions(deadlock=False))
            line += (f" {every.stats['distinct_states']:>10,} "
                     f"{time.perf_counter() - started:>8.2f}")
        print(line, flush=True)


if __name__ == "__main__":
    main()

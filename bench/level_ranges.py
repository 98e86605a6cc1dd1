"""Where an exact model's levels fall in fingerprint order, for decision 0014.

Two workers own states by a spread (hashed) fingerprint. Owning contiguous ranges
instead, with the cut moved each level to follow the states, would spare the rekeying
and the places; this prints what it would cost on one model's levels: the share of
each level the lower range would own if the cut were the previous level's median,
and how many visited states would change owner if each level were cut at its own
median. One search in this process (the local engine, one worker).

    python bench/level_ranges.py                         # tracker_bench_large, 17.7M states
    python bench/level_ranges.py --model tracker_bench_medium
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def level_fingerprints(model_name: str) -> list[np.ndarray]:
    """Each level's fingerprints, sorted (the frontier each level hands on)."""
    sys.path.insert(0, str(ROOT))
    from checker.engines.explicit.successors import Kernel
    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run

    machine = build_machine(load_model(model_name, ROOT / "bench" / "models"))
    layout = Kernel(machine, None).layout
    levels: list[np.ndarray] = []

    def keep(read: Callable[[int], np.ndarray], count: int) -> None:
        values = np.stack([read(j).astype(np.int64) for j in range(len(layout.fields))],
                          axis=1) if count else np.empty((0, len(layout.fields)), np.int64)
        levels.append(np.sort(layout.fingerprints(layout.pack_batch(values))))

    run(machine, BfsOptions(deadlock=False, workers=1, on_level=keep))
    if not layout.exact:
        print(f"note: {model_name}'s fingerprints are hashed ({layout.bits} bits of state): "
              "its levels spread over the whole range anyway")
    return levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tracker_bench_large")
    args = parser.parse_args()
    levels = level_fingerprints(args.model)
    print(f"{'level':>5} {'states':>11} {'visited before':>15} "
          f"{'lower share, previous median':>29} {'changing owner, own medians':>28}")
    visited = np.empty(0, dtype=np.uint64)
    previous: np.uint64 | None = None
    moved = 0
    for depth, level in enumerate(levels):
        if not len(level):
            continue
        median = level[len(level) // 2]
        share = np.searchsorted(level, previous) / len(level) if previous is not None else 0.5
        move = 0 if previous is None else abs(int(np.searchsorted(visited, median))
                                              - int(np.searchsorted(visited, previous)))
        moved += move
        print(f"{depth:>5} {len(level):>11,} {len(visited):>15,} {share:>29.2f} {move:>28,}")
        visited = np.sort(np.concatenate([visited, level]))
        previous = median
    print(f"{len(visited):,} states; {moved:,} would change owner ({moved / len(visited):.0%})")


if __name__ == "__main__":
    main()

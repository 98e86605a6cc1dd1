"""Explicit-state BFS throughput and memory on the RFC tracker at several sizes.

Each size runs in its own process, so peak RSS belongs to that run alone.
Prints, per model: distinct states, transitions, diameter, seconds, distinct
states per second, bytes per visited state kept by the search (fingerprint,
parent index, action id), peak RSS, peak RSS above the interpreter's baseline
per visited state, and that as a multiple of the bytes kept.

`large-hashed` searches `large` again with its one-word states hashed instead
of used as their own fingerprints: the same states, levels and transitions, so
its rate over `large`'s (printed last) is the cost of the hashed mode alone.
`xlarge` is a bigger model whose 75-bit states need hashing anyway.

    python bench/bfs_tracker.py                  # every size
    python bench/bfs_tracker.py --only large --only large-hashed
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "bench" / "models"
SIZES = {  # size: model, overrides, hash one-word states
    "small": ("tracker_bench_small", {}, False),
    "medium": ("tracker_bench_medium", {}, False),
    "large": ("tracker_bench_large", {}, False),  # 64-bit states: exact fingerprints
    "large-hashed": ("tracker_bench_large", {}, True),
    "xlarge": ("tracker_bench_large", {"max_now": "4"}, False),  # 75-bit states: hashed
}


def run_one(model_name: str, overrides: dict[str, str], hashed: bool) -> dict:
    """Run in this process and return the figures (called in a child process)."""
    sys.path.insert(0, str(ROOT))
    from checker.models import build_machine, load_model
    from checker.packing import Layout
    from checker.run import BfsOptions, run

    if hashed:  # what a state of two words gets: fingerprints by splitmix, not the word
        Layout.exact = property(lambda self: False)  # type: ignore[method-assign,assignment]

    machine = build_machine(load_model(model_name, MODELS), overrides)
    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = run(machine, BfsOptions(deadlock=False))
    stats = dict(result.stats)
    stats["baseline_rss_mb"] = round(baseline_mb, 1)
    above = (stats["peak_rss_mb"] - baseline_mb) * 2**20
    stats["peak_bytes_per_state"] = round(above / stats["distinct_states"], 1)
    stats["peak_over_kept"] = round(stats["peak_bytes_per_state"] / stats["bytes_per_state"], 2)
    stats["outcome"] = result.outcome
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(SIZES), action="append")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(*SIZES[args.child])))
        return
    header = (f"{'size':<12} {'states':>12} {'transitions':>12} {'diam':>4} {'bits':>4} "
              f"{'fp':>6} {'seconds':>8} {'states/s':>11} {'B/state':>7} "
              f"{'peak RSS MB':>11} {'peak B/state':>12} {'peak/kept':>9}")
    print(header)
    print("-" * len(header))
    rates = {}
    for size in args.only or list(SIZES):
        out = subprocess.run([sys.executable, __file__, "--child", size],
                             capture_output=True, text=True, check=True)
        s = json.loads(out.stdout.strip().splitlines()[-1])
        rates[size] = s["states_per_second"]
        print(f"{size:<12} {s['distinct_states']:>12,} {s['generated']:>12,} "
              f"{s['diameter']:>4} {s['state_bits']:>4} {s['fingerprint']:>6} "
              f"{s['seconds']:>8.2f} {s['states_per_second']:>11,} "
              f"{s['bytes_per_state']:>7} {s['peak_rss_mb']:>11,.0f} "
              f"{s['peak_bytes_per_state']:>12} {s['peak_over_kept']:>9}", flush=True)
    if "large" in rates and "large-hashed" in rates:
        print(f"\nhashed over exact states/s on the same model: "
              f"{rates['large-hashed'] / rates['large']:.2f}")


if __name__ == "__main__":
    main()

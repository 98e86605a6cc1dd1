"""Reach: what symmetry reduction and a second worker buy on the protocol models.

For every log-driven and 2018 model in `models/` that expects `holds` (or the
ones named), runs the BFS three ways, each in its own process: every state on
one worker, one state per orbit on one worker, and one state per orbit on two
workers. Prints states and seconds of each, bytes per state the search keeps,
the reduction factor (states / orbits) and the two-worker speed-up (orbits per
second, two workers over one). Verdicts must agree; a disagreement stops the
bench. A model out of reach without symmetry (`engine.full_search = false`) is
not searched in full: its first columns say "-".

    python bench/reach.py                          # every holds model (over 15 minutes on 2 cores)
    python bench/reach.py log_driven_core v1_core  # just these
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
SPECS = ("log_driven", "follower_reads_2018")
WAYS = (("full", False, 1), ("orbits", True, 1), ("orbits, 2 workers", True, 2))


def run_one(name: str, symmetry: bool, workers: int) -> dict:
    """Run one model one way in this process and return its figures (a child process)."""
    sys.path.insert(0, str(ROOT))
    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run

    model = load_model(name, MODELS)
    machine = build_machine(model)
    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = run(machine, BfsOptions(deadlock=model.engine["deadlock"],
                                     max_depth=model.engine["max_depth"] or None,
                                     symmetry=symmetry, workers=workers))
    stats = result.stats
    return {"expectation": result.expectation, "states": stats["distinct_states"],
            "seconds": stats["seconds"], "bytes_per_state": stats["bytes_per_state"],
            "symmetry": bool(machine.scalarsets), "peak_above_baseline_mb":
            round(stats["peak_rss_mb"] - baseline_mb, 1)}


def full_search(name: str) -> bool:
    sys.path.insert(0, str(ROOT))
    from checker.models import load_model

    return bool(load_model(name, MODELS).engine["full_search"])


def holds_models() -> list[str]:
    sys.path.insert(0, str(ROOT))
    from checker.models import list_models, load_model

    return [p.stem for p in list_models(MODELS)
            if (m := load_model(p, MODELS)).spec_name in SPECS and m.expect_outcome == "holds"]


def child(name: str, symmetry: bool, workers: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", name, str(int(symmetry)),
                          str(workers)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, symmetry, workers = args.child
        print(json.dumps(run_one(name, symmetry == "1", int(workers))))
        return
    print(f"{'model':<46} {'states':>11} {'s':>7} {'orbits':>11} {'s':>7} {'s (2w)':>7} "
          f"{'B/state':>7} {'reduction':>9} {'2w/1w':>6}")
    for name in args.models or holds_models():
        ways = WAYS if full_search(name) else WAYS[1:]
        runs = [child(name, sym, w) for _, sym, w in ways]
        full = runs[0] if len(runs) == 3 else None
        reduced, parallel = runs[-2:]
        if len({r["expectation"] for r in runs}) != 1 or reduced["states"] != parallel["states"]:
            sys.exit(f"{name}: the runs disagree: {runs}")
        speedup = reduced["seconds"] / parallel["seconds"] if parallel["seconds"] else 0.0
        first = (f"{full['states']:>11,} {full['seconds']:>7.1f}" if full
                 else f"{'-':>11} {'-':>7}")
        factor = f"{full['states'] / reduced['states']:>8.2f}x" if full else f"{'-':>9}"
        print(f"{name:<46} {first} {reduced['states']:>11,} {reduced['seconds']:>7.1f} "
              f"{parallel['seconds']:>7.1f} {reduced['bytes_per_state']:>7.1f} "
              f"{factor} {speedup:>5.2f}x", flush=True)


if __name__ == "__main__":
    main()

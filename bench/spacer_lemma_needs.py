"""Which of a model's lemmas Spacer cannot find by itself.

PDR seeded with the spec's lemmas (`--with-spec-lemmas`) at the model's proof sizes:
with all of them, then with each one left out in turn, then with none. Where leaving
a lemma out leaves Spacer without an answer in the time given, that lemma is one it
does not rediscover: the facts a lemma-free proof of the model is missing, and the
ones worth writing by hand (the others Spacer finds around them).

Each run is a process of its own, one after the other; printed per run: what was
left out, the outcome, wall seconds, peak resident memory, the seeds Houdini kept
and the clauses Spacer added.

    python bench/spacer_lemma_needs.py                       # tracker_small, 120 s a run
    python bench/spacer_lemma_needs.py log_driven_tiny --timeout 300
    python bench/spacer_lemma_needs.py tracker_small --set requests=4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALL, NONE = "nothing", "every lemma"


def run_one(model: str, left_out: str, timeout: float, sets: dict[str, str]) -> dict:
    """In this process: PDR seeded with the model's lemmas but `left_out` (ALL keeps
    every one, NONE leaves every one out)."""
    sys.path.insert(0, str(ROOT))
    from checker.engines.symbolic.options import ProveOptions
    from checker.engines.symbolic.pdr import pdr
    from checker.models import build_machine, load_model

    machine = build_machine(load_model(model), sets, proof=True)
    kept = [] if left_out == NONE else [p for p in machine.lemmas if p.name != left_out]
    started = time.perf_counter()
    result = pdr(dataclasses.replace(machine, lemmas=kept),
                 ProveOptions(timeout=timeout, seed=True))
    return {"outcome": result.outcome, "seconds": round(time.perf_counter() - started, 1),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "seeds": len(result.stats.get("seeds", [])),
            "clauses": result.stats.get("invariant_clauses", "-")}


def lemma_names(model: str, sets: dict[str, str]) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from checker.models import build_machine, load_model

    return [p.name for p in build_machine(load_model(model), sets, proof=True).lemmas]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default="tracker_small")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a run")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a proof parameter (repeatable)")
    parser.add_argument("--one", metavar="LEFT_OUT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.set)
    if args.one is not None:
        print(json.dumps(run_one(args.model, args.one, args.timeout, sets)))
        return
    names = lemma_names(args.model, sets)
    sizes = f" with {', '.join(args.set)}" if args.set else ""
    print(f"{args.model} at its proof sizes{sizes}, PDR seeded with its lemmas but one, "
          f"{args.timeout:g} s a run")
    print(f"{'left out':<28} {'outcome':<9} {'seconds':>8} {'peak MB':>8} {'seeds':>6} "
          f"{'clauses':>8}")
    for left_out in [ALL, *names, NONE]:
        done = subprocess.run([sys.executable, __file__, args.model, "--timeout",
                               str(args.timeout), "--one", left_out,
                               *(f"--set={item}" for item in args.set)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{left_out:<28} failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        row = json.loads(done.stdout)
        print(f"{left_out:<28} {row['outcome']:<9} {row['seconds']:>8} {row['peak_mb']:>8} "
              f"{row['seeds']:>6} {row['clauses']:>8}", flush=True)


if __name__ == "__main__":
    main()

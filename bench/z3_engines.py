"""Seconds per BMC depth and per proof, for the tracker and the log-driven core.

    python bench/z3_engines.py            # the figures below
    python bench/z3_engines.py --suite    # also: BMC vs BFS on every model in models/

Prints, for each model: BMC's seconds at each depth (up to its first counterexample
or the given depth), and for proofs the base case, inductive step and lemma-core
seconds with the lemmas the proof used. `--suite` runs BFS on each model, then BMC to
the BFS counterexample length (mutations) or diameter (holds models), and prints
whether the lengths agree. Figures, not assertions: tests never check timings.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker.engines.bfs import BfsOptions, check  # noqa: E402
from checker.engines.bmc import BmcOptions, bmc  # noqa: E402
from checker.engines.induction import ProveOptions, prove  # noqa: E402
from checker.models import build_machine, list_models, load_model  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "models"

BMC_RUNS = [  # (model, overrides, depth)
    ("mutation_reset_cur_on_prev_exit", {}, 7),
    ("tracker_small", {}, 8),
    ("log_driven_mutation_side_close_with_inflight", {}, 8),
    ("log_driven_tiny", {}, 8),
]
PROOFS = [  # (model, overrides, use the model's [proof.params])
    ("tracker_small", {}, False),
    ("tracker_small", {}, True),
    ("tracker_small", {"requests": "8", "max_now": "1000000", "max_ts": "32"}, True),
]


def bench_bmc(name: str, overrides: dict, depth: int) -> None:
    model = load_model(name, MODELS)
    machine = build_machine(model, overrides)
    result = bmc(machine, BmcOptions(depth=depth, deadlock=model.engine["deadlock"]))
    per = ", ".join(f"{d}:{s:.2f}" for d, s in enumerate(result.stats["seconds_per_depth"]))
    found = f"{len(result.violation.trace)}-step {result.violation.name}" \
        if result.violation else "nothing"
    print(f"bmc   {name:<48} depth:seconds {per} | total {result.stats['seconds']:.2f} s | "
          f"found {found}", flush=True)


def bench_proof(name: str, overrides: dict, sized: bool) -> None:
    model = load_model(name, MODELS)
    machine = build_machine(model, overrides, proof=sized)
    t0 = time.perf_counter()
    result = prove(machine, ProveOptions(k=model.proof["k"]))
    seconds = time.perf_counter() - t0
    params = ", ".join(f"{k}={v}" for k, v in machine.params.items()
                       if isinstance(v, int) and not isinstance(v, bool))
    print(f"prove {name:<48} ({params}) {result.outcome} in {seconds:.2f} s "
          f"(base {result.stats.get('base_seconds')}, step {result.stats.get('step_seconds')}, "
          f"cores {result.stats.get('core_seconds')}); lemmas used: "
          f"{', '.join(result.lemmas_used) or 'none'}", flush=True)


def suite() -> None:
    for path in list_models(MODELS):
        model = load_model(path, MODELS)
        machine = build_machine(model)
        deadlock = model.engine["deadlock"]
        t0 = time.perf_counter()
        bfs = check(machine, BfsOptions(deadlock=deadlock))
        bfs_s = time.perf_counter() - t0
        depth = len(bfs.violation.trace) if bfs.violation else bfs.stats["diameter"]
        t0 = time.perf_counter()
        got = bmc(machine, BmcOptions(depth=depth, deadlock=deadlock, timeout=1800))
        bmc_s = time.perf_counter() - t0
        got_len = len(got.violation.trace) if got.violation else None
        agree = (got_len == depth) if bfs.violation else got.violation is None
        print(f"suite {model.name:<48} bfs {bfs.expectation} at {depth} ({bfs_s:.1f} s) | "
              f"bmc {got.expectation} {got_len or ''} ({bmc_s:.1f} s) | "
              f"{'agree' if agree else 'DISAGREE'}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="store_true", help="BMC vs BFS on every model")
    args = parser.parse_args()
    for run in BMC_RUNS:
        bench_bmc(*run)
    for run in PROOFS:
        bench_proof(*run)
    if args.suite:
        suite()


if __name__ == "__main__":
    main()

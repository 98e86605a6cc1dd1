"""Seconds per BMC depth and per proof, for the tracker and the log-driven core.

    python bench/z3_engines.py                    # the figures below
    python bench/z3_engines.py --suite            # also: BMC vs BFS on every model
    python bench/z3_engines.py --suite --only log_driven_mutation --timeout 300

Prints, for each model: BMC's seconds at each depth (up to its first counterexample
or the given depth), for proofs the base case, inductive step and lemma-core
seconds with the lemmas the proof used, and Houdini's rounds and seconds with and
without running the states reachable from each counterexample. `--suite` runs BFS
on each model, then BMC to the BFS counterexample length (mutations) or diameter
(holds models), and prints whether the lengths agree; a BMC run past `--timeout`
is reported as unknown, not as agreement. Each run is a child process, so its peak
resident memory (Z3's included) is its own. Figures, not assertions: tests never check timings.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker.engines.symbolic.induction import prove  # noqa: E402
from checker.engines.symbolic.infer import (  # noqa: E402
    InferOptions,
    as_properties,
    houdini,
    reachable_candidates,
)
from checker.models import build_machine, list_models, load_model  # noqa: E402
from checker.run import BfsOptions, BmcOptions, ProveOptions, run  # noqa: E402

MODELS = Path(__file__).resolve().parent.parent / "models"

BMC_RUNS = [  # (model, overrides, depth)
    ("mutation_reset_cur_on_prev_exit", {}, 7),
    ("tracker_small", {}, 8),
    ("log_driven_mutation_side_close_with_inflight", {}, 8),
    ("log_driven_tiny", {}, 8),
    ("log_driven_mutation_no_floor_on_track", {}, 12),
]
PROOFS = [  # (model, overrides, use the model's [proof.params])
    ("tracker_small", {}, False),
    ("tracker_small", {}, True),
    ("tracker_small", {"requests": "8", "max_now": "1000000", "max_ts": "32"}, True),
    # the single-range log-driven core (spec/log_driven/lemmas/core.py)
    ("log_driven_tiny", {}, False),
    ("log_driven_core", {"writes": "3"}, True),
    ("log_driven_core", {"writes": "3", "duplicate": "true"}, True),
    ("log_driven_core", {}, True),
]

HOUDINI = [  # (model, overrides, candidates kept after the reachable-state filter, expand)
    ("tracker_small", {"requests": "2"}, 0, 0),
    ("tracker_small", {"requests": "2"}, 0, 2000),
    ("log_driven_tiny", {}, 1500, 0),
    ("log_driven_tiny", {}, 1500, 2000),
]


def in_child(run: Callable[..., Any], *args: object) -> Any:
    """Run one measurement in a fresh process and print its line with that process's
    peak resident memory (Linux reports ru_maxrss in KiB). A run may return (line,
    value): the value is passed back, and an empty line is not printed."""
    queue: multiprocessing.Queue = multiprocessing.Queue()

    def body() -> None:
        out = run(*args)
        line, value = out if isinstance(out, tuple) else (out, None)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        queue.put((f"{line} | peak RSS {peak:.0f} MB" if line else "", value))

    child = multiprocessing.get_context("fork").Process(target=body)
    child.start()
    line, value = queue.get()
    if line:
        print(line, flush=True)
    child.join()
    return value


def bench_bmc(name: str, overrides: dict, depth: int) -> str:
    model = load_model(name, MODELS)
    machine = build_machine(model, overrides)
    result = run(machine, BmcOptions(depth=depth, deadlock=model.engine["deadlock"]))
    per = ", ".join(f"{d}:{s:.2f}" for d, s in enumerate(result.stats["seconds_per_depth"]))
    found = f"{len(result.violation.trace)}-step {result.violation.name}" \
        if result.violation else "nothing"
    return (f"bmc   {name:<48} depth:seconds {per} | total {result.stats['seconds']:.2f} s | "
            f"found {found}")


def bench_proof(name: str, overrides: dict, sized: bool) -> str:
    model = load_model(name, MODELS)
    machine = build_machine(model, overrides, proof=sized)
    t0 = time.perf_counter()
    result = prove(machine, ProveOptions(k=model.proof["k"]))
    seconds = time.perf_counter() - t0
    sizes = ", ".join(f"{k}={v}" for k, v in machine.params.items()
                      if isinstance(v, int) and not isinstance(v, bool))
    label = name + (" [proof.params]" if sized else "") + \
        "".join(f" {k}={v}" for k, v in overrides.items())
    goals = result.stats.get("seconds_per_goal", {})
    slowest = max(goals, key=goals.__getitem__) if goals else None
    return (f"prove {label:<48} ({sizes}) {result.outcome} in {seconds:.2f} s "
            f"(base {result.stats.get('base_seconds')}, step {result.stats.get('step_seconds')}, "
            f"slowest goal {slowest} {goals.get(slowest)}); lemmas used: "
            f"{', '.join(result.lemmas_used) or 'none'}")


def bench_houdini(name: str, overrides: dict, limit: int, expand: int) -> str:
    """Houdini alone, on the first `limit` (0: all) candidates that hold in every
    reachable state, with or without running states from each counterexample."""
    model = load_model(name, MODELS)
    machine = dataclasses.replace(build_machine(model, overrides), lemmas=[])
    found = reachable_candidates(machine, InferOptions())
    props = as_properties(found.kept)[:limit or None]
    t0 = time.perf_counter()
    alive, rounds = houdini(machine, props, None, None, expand=expand)
    return (f"houdini {name:<46} {len(props):>6} candidates, expand {expand:>5}: {rounds} rounds, "
            f"{len(alive)} survive, {time.perf_counter() - t0:.1f} s")


def bfs_length(path: Path) -> tuple[str, int]:
    """BFS's counterexample length, or its diameter: how deep BMC must go."""
    model = load_model(path, MODELS)
    bfs = run(build_machine(model), BfsOptions(deadlock=model.engine["deadlock"]))
    return "", len(bfs.violation.trace) if bfs.violation else bfs.stats["diameter"]


def suite_entry(path: Path, timeout: float) -> str:
    """BFS, then BMC to BFS's counterexample length or diameter: do they agree?"""
    model = load_model(path, MODELS)
    machine = build_machine(model)
    if machine.liveness:  # bmc would refuse the model: it checks no liveness
        return (f"suite {model.name:<48} names liveness "
                f"({', '.join(p.name for p in machine.liveness)}): bmc does not check it")
    deadlock = model.engine["deadlock"]
    t0 = time.perf_counter()
    bfs = run(machine, BfsOptions(deadlock=deadlock))
    bfs_s = time.perf_counter() - t0
    depth = len(bfs.violation.trace) if bfs.violation else bfs.stats["diameter"]
    t0 = time.perf_counter()
    got = run(machine, BmcOptions(depth=depth, deadlock=deadlock, timeout=timeout))
    bmc_s = time.perf_counter() - t0
    got_len = len(got.violation.trace) if got.violation else None
    if got.outcome == "unknown":
        verdict = f"unknown (timeout, depth {got.stats['depth']} of {depth} done)"
    elif bfs.violation:
        same = got_len == depth and got.violation.name == bfs.violation.name
        verdict = "agree" if same else "DISAGREE"
    else:
        verdict = "agree" if got.violation is None else "DISAGREE"
    return (f"suite {model.name:<48} bfs {bfs.expectation} at {depth} ({bfs_s:.1f} s) | "
            f"bmc {got.expectation} {got_len or ''} ({bmc_s:.1f} s) | {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="store_true", help="BMC vs BFS on every model")
    parser.add_argument("--only", default="", help="suite: models whose name contains this")
    parser.add_argument("--timeout", type=float, default=1800,
                        help="suite: seconds for each BMC run (default 1800)")
    parser.add_argument("--shortest-first", action="store_true",
                        help="suite: models in order of BFS's depth, so a time budget "
                             "covers the most models")
    parser.add_argument("--skip-figures", action="store_true",
                        help="only the suite, not the BMC and proof figures")
    args = parser.parse_args()
    if not args.skip_figures:
        for entry in BMC_RUNS:
            in_child(bench_bmc, *entry)
        for proof in PROOFS:
            in_child(bench_proof, *proof)
        for entry in HOUDINI:
            in_child(bench_houdini, *entry)
    if args.suite:
        paths = [p for p in list_models(MODELS) if args.only in p.stem]
        if args.shortest_first:
            depth = {p: in_child(bfs_length, p) for p in paths}
            paths.sort(key=lambda p: (depth[p], p.stem))
        for path in paths:
            in_child(suite_entry, path, args.timeout)


if __name__ == "__main__":
    main()

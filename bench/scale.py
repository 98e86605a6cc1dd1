"""A billion states: the Spark engine on `local[2]`, to completion, resumable.

Runs the tracker with 6 requests, clock up to 5 and client timestamps up to 4 (about
1.2 billion distinct states, full search) with Spark on this machine's two cores, and
prints what scale costs: states/s (and per core), bytes per state on disk (the run
directory: levels and visited runs) and in memory (the peak resident memory of the
whole process tree: driver, JVM, Python workers), and the fixed cost of a level (the
wall seconds of the levels whose frontier is tiny, where the work is almost nothing).

    python bench/scale.py --run-dir /work/scale-run     # run; rerun the same to resume
    python bench/scale.py --run-dir DIR --local-depth 11   # and the local engine

The run directory is kept when the run stops for any reason (Ctrl-C, a crash, a
killed machine): the same command resumes it from its last durable level, and the
figures then cover every run that got there. It is deleted after a complete run
unless `--keep`. `--local-depth D` then runs the local engine on the same model up to
depth D, with one worker and with two, each in a child process, and compares the rates
per core over the same levels 0..D (the same states), with an estimate of the memory
the local engine would need for the whole model from its own peak bytes per state.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from spark_vs_local import TreeMemory, level_records  # noqa: E402  (the sibling bench)

from checker.errors import CheckerError  # noqa: E402

MODEL = "bench/models/tracker_bench_large.toml"
SIZES = {"requests": "6", "max_now": "5", "max_ts": "4"}
BILLION = 1_000_000_000
TINY_FRONTIER = 10_000  # a level expanding fewer states than this measures fixed cost
GIB = 1 << 30


class DiskPeak:
    """The largest size the run directory reaches, sampled every 2 s: the levels and
    visited runs stay, but a level's exchange files (every successor, before dedupe)
    are there only while it runs, so the end size understates what the disk needs."""

    def __init__(self, root: Path) -> None:
        self.root, self.peak = root, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak

    def _sample(self) -> None:
        while not self._stop.wait(2.0):
            self.peak = max(self.peak, tree_bytes(self.root))


def tree_bytes(root: Path) -> int:
    """The bytes of the files under `root` (files vanishing meanwhile count 0)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(folder, name)).st_size
    return total


def run_spark(args: argparse.Namespace, overrides: dict[str, str]) -> dict:
    """The Spark run (resumed when the run directory holds one) and its figures."""
    from checker.engines.spark.session import spark_session
    from checker.models import build_machine, load_model
    from checker.run import SparkOptions, run

    run_dir = Path(args.run_dir)
    resume = (run_dir / "run.json").exists()
    memory, disk = TreeMemory(), DiskPeak(run_dir)
    conf = {"spark.executor.pyspark.memory": args.python_memory}
    started = time.perf_counter()
    spark_session(args.master, args.driver_memory, conf)  # `run` reuses it
    startup = time.perf_counter() - started
    model = load_model(str(ROOT.parent / MODEL), ROOT.parent / "models")
    result = run(build_machine(model, overrides),
                 SparkOptions(master=args.master, partitions=None if resume else args.partitions,
                              run_dir=str(run_dir), resume=resume,
                              deadlock=model.engine["deadlock"], label=model.name,
                              progress=lambda line: print(line, flush=True)))
    figures = dict(result.stats)
    figures.update(memory.stop())
    figures["run_dir_peak_bytes"] = disk.stop()
    figures["outcome"] = result.expectation
    figures["complete"] = result.complete
    figures["startup_seconds"] = round(startup, 1)
    figures["resumed"] = resume
    figures["run_dir_bytes"] = tree_bytes(run_dir)
    figures["levels"] = level_records(run_dir)
    return figures


def run_local(overrides: dict[str, str], depth: int, workers: int) -> dict:
    """The local engine's figures up to `depth` (in this process: call it in a child)."""
    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run

    model = load_model(str(ROOT.parent / MODEL), ROOT.parent / "models")
    result = run(build_machine(model, overrides),
                 BfsOptions(deadlock=model.engine["deadlock"], workers=workers, max_depth=depth,
                            progress=lambda line: print(line, file=sys.stderr, flush=True)))
    return result.stats


def fixed_cost(levels: list[dict]) -> tuple[float, int]:
    """Median wall seconds of the levels expanding a frontier under TINY_FRONTIER states
    (the per-level cost that does not grow with the work), and how many there were."""
    tiny = sorted(lv["seconds"] for before, lv in zip(levels, levels[1:], strict=False)
                  if before["states"] < TINY_FRONTIER)
    return (tiny[len(tiny) // 2], len(tiny)) if tiny else (float("nan"), 0)


def rate_up_to(levels: list[dict], depth: int) -> tuple[int, float]:
    """Spark's states in levels 0..depth, and its states/s over them."""
    first = levels[:depth + 1]
    states, seconds = sum(lv["states"] for lv in first), sum(lv["seconds"] for lv in first)
    return states, states / seconds if seconds else float("nan")


def report(spark: dict, locals_: list[dict], cores: int, overrides: dict[str, str]) -> None:
    states, seconds = spark["distinct_states"], spark["seconds"]
    print(f"\nmodel {Path(MODEL).stem} {overrides}: {spark['outcome']}, {states:,} distinct states "
          f"({'at least' if states >= BILLION else 'FEWER THAN'} a billion), "
          f"{spark['generated']:,} transitions, diameter {spark['diameter']}")
    print(f"spark local[{cores}]: {seconds:,.0f} s of search "
          f"over every run that got here (+{spark['startup_seconds']} s Spark startup this "
          f"run{', resumed' if spark['resumed'] else ''}); {states / seconds:,.0f} states/s, "
          f"{states / seconds / cores:,.0f} per core")
    print(f"disk: run directory {spark['run_dir_bytes'] / GIB:.1f} GiB at the end, "
          f"{spark['run_dir_bytes'] / states:.1f} B/state (levels and visited runs); at its "
          f"largest {spark['run_dir_peak_bytes'] / GIB:.1f} GiB (with a level's exchange; "
          f"this run's part only, if resumed)")
    print(f"memory: peak {spark['tree_peak_rss_mb']:,} MB resident for the whole process tree "
          f"(largest Python worker {spark['python_worker_peak_rss_mb']:,} MB), "
          f"{spark['tree_peak_rss_mb'] * 2**20 / states:.2f} B/state")
    cost, n = fixed_cost(spark["levels"])
    print(f"fixed cost per level: {cost:.2f} s (median of the {n} levels expanding fewer than "
          f"{TINY_FRONTIER:,} states); {len(spark['levels'])} levels")
    print(f"\n{'level':>5} {'new states':>14} {'seconds':>9} {'states/s':>11} {'bytes':>15}")
    for lv in spark["levels"]:
        rate = lv["states"] / lv["seconds"] if lv["seconds"] else 0
        print(f"{lv['level']:>5} {lv['states']:>14,} {lv['seconds']:>9.2f} {rate:>11,.0f} "
              f"{lv.get('bytes', 0):>15,}")
    if not locals_:
        return
    depth = locals_[0]["diameter"]
    spark_states, spark_rate = rate_up_to(spark["levels"], depth)
    print(f"\nlevels 0-{depth}, {spark_states:,} states: spark {spark_rate:,.0f} states/s, "
          f"{spark_rate / cores:,.0f} per core")
    for local in locals_:
        n, rate = local["workers"], local["distinct_states"] / local["seconds"]
        per_state = local["peak_rss_mb"] * 2**20 / local["distinct_states"]
        same = "" if local["distinct_states"] == spark_states else " DIFFERENT COUNT"
        print(f"local, {n} worker{'s' if n > 1 else ''}: {local['distinct_states']:,} states"
              f"{same} in {local['seconds']:.0f} s, {rate:,.0f} states/s, {rate / n:,.0f} per "
              f"core; spark per core / this per core = {spark_rate / cores / (rate / n):.2f}; "
              f"peak {local['peak_rss_mb']:,.0f} MB ({per_state:.1f} B/state: "
              f"{per_state * states / GIB:.0f} GiB for the whole model)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True,
                        help="where Spark writes its levels (68 GiB at its largest); rerun "
                             "to resume")
    parser.add_argument("--set", dest="overrides", action="append", metavar="NAME=VALUE",
                        default=[], help=f"change the model's sizes (default: {SIZES})")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=128,
                        help="buckets of a new run, so each task's share fits its worker")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--python-memory", default="4g",
                        help="each Python worker's cap (address space: memory-mapped runs "
                             "count)")
    parser.add_argument("--local-depth", type=int, default=0,
                        help="also run the local engine, one worker then two, to this depth")
    parser.add_argument("--keep", action="store_true", help="keep the run directory")
    parser.add_argument("--child-local", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_local:
        overrides, depth, workers = args.child_local
        print(json.dumps(run_local(json.loads(overrides), int(depth), int(workers))))
        return
    overrides = {**SIZES, **dict(kv.split("=", 1) for kv in args.overrides)}
    try:
        spark = run_spark(args, overrides)
    except KeyboardInterrupt:
        sys.exit(f"interrupted: {args.run_dir} keeps the levels done; rerun the same command "
                 "to resume")
    except CheckerError as exc:
        sys.exit(f"{exc}\n(rerun the same command to resume)")
    locals_ = []
    for workers in (1, 2) if args.local_depth else ():  # after Spark, so a failed run that
        # is resumed does not run them twice
        out = subprocess.run([sys.executable, __file__, "--run-dir", args.run_dir,
                              "--child-local", json.dumps(overrides), str(args.local_depth),
                              str(workers)], stdout=subprocess.PIPE, text=True, check=True)
        locals_.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cores = int(args.master.partition("[")[2].rstrip("]") or 1) \
        if args.master.startswith("local[") else 1
    report(spark, locals_, cores, overrides)
    if spark["complete"] and not args.keep:
        shutil.rmtree(args.run_dir)


if __name__ == "__main__":
    main()

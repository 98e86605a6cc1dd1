"""The Spark engine against the local BFS on the same model, in the same run.

Each engine runs in its own child process, so the Spark driver's memory cap
applies when its JVM starts and each peak RSS belongs to one run. Prints, per
engine, distinct states, diameter, seconds and states/s (also per core); for
Spark also Parquet bytes per state and, per level, wall seconds and the task
seconds spent in expand, dedupe and write (summed over tasks, so with c cores
busy they add up to about c times the wall time). Checks that both engines
report the same states, transitions, diameter and counterexample length.

    python bench/spark_vs_local.py                 # tracker, 26.5M states, local[2], 2 GB driver
    python bench/spark_vs_local.py --model tracker_bench_medium --set max_now=5
    python bench/spark_vs_local.py --suite         # every model in models/, both engines
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAME = ("distinct_states", "generated", "diameter")


def run_local(model_file: str, overrides: dict[str, str]) -> dict:
    """The local engine's figures (in a child process)."""
    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run

    model = load_model(model_file, ROOT / "models")
    result = run(build_machine(model, overrides), BfsOptions(deadlock=model.engine["deadlock"]))
    return _figures(result)


def run_spark(model_files: list[str], overrides: dict[str, str], master: str,
              partitions: int | None, driver_memory: str, work: str) -> list[dict]:
    """The Spark engine's figures for each model, in one session (in a child process)."""
    from checker.engines.spark.session import spark_session
    from checker.models import build_machine, load_model
    from checker.run import SparkOptions, run

    started = time.perf_counter()
    spark_session(master, driver_memory)  # with this driver memory; `run` reuses it
    startup = time.perf_counter() - started
    out = []
    for i, model_file in enumerate(model_files):
        model = load_model(model_file, ROOT / "models")
        run_dir = Path(work) / f"run{i}"
        result = run(build_machine(model, overrides),  # on the session started above
                     SparkOptions(master=master, partitions=partitions, run_dir=str(run_dir),
                                  deadlock=model.engine["deadlock"], label=model.name,
                                  progress=lambda line: print(line, file=sys.stderr,
                                                              flush=True)))
        figures = _figures(result)
        figures["startup_seconds"] = round(startup, 1)
        records = sorted(run_dir.glob("level=*/_ctmc_level.json"),
                         key=lambda p: int(p.parent.name.partition("=")[2]))
        figures["levels"] = [{"level": k, "states": r["counts"]["states"],
                              **r["counts"]["timings"]}
                             for k, r in enumerate(json.loads(p.read_text()) for p in records)]
        shutil.rmtree(run_dir)
        out.append(figures)
    return out


def _figures(result) -> dict:
    stats = dict(result.stats)
    stats["outcome"] = result.expectation
    stats["trace_length"] = len(result.violation.trace) if result.violation else None
    return stats


def _child(*args: str) -> object:
    """Run this script with `args` in a new process; its last stdout line is JSON."""
    out = subprocess.run([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True,
                         check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cores(master: str) -> int:
    match = re.fullmatch(r"local\[(\d+)(,\d+)?\]", master)
    return int(match.group(1)) if match else os.cpu_count() or 1


def compare(model_file: str, overrides: dict[str, str], args: argparse.Namespace) -> None:
    local = _child("--child-local", model_file, json.dumps(overrides))
    with tempfile.TemporaryDirectory(prefix="ctmc-bench-") as work:
        spark = _child("--child-spark", json.dumps([model_file]), json.dumps(overrides),
                       args.master, str(args.partitions or 0), args.driver_memory, work)[0]
    cores = _cores(args.master)
    print(f"model {Path(model_file).stem} {overrides or ''}: {local['distinct_states']:,} states, "
          f"{local['generated']:,} transitions, diameter {local['diameter']}, "
          f"{local['state_bits']}-bit states, {local['fingerprint']} fingerprints")
    print(f"{'engine':<7} {'cores':>5} {'seconds':>8} {'states/s':>10} {'per core':>10} "
          f"{'peak RSS MB':>11}  notes")
    print(f"{'local':<7} {1:>5} {local['seconds']:>8.1f} {local['states_per_second']:>10,} "
          f"{local['states_per_second']:>10,} {local['peak_rss_mb']:>11,.0f}  "
          f"{local['bytes_per_state']} B/state in memory")
    per_core = spark["states_per_second"] / cores
    print(f"{'spark':<7} {cores:>5} {spark['seconds']:>8.1f} {spark['states_per_second']:>10,} "
          f"{per_core:>10,.0f} {spark['peak_rss_mb']:>11,.0f}  "
          f"{spark['parquet_bytes_per_state']} B/state of Parquet, {spark['partitions']} "
          f"partitions, {args.master}, driver memory {args.driver_memory}, "
          f"+{spark['startup_seconds']} s Spark startup")
    print(f"spark per core / local per core: {per_core / local['states_per_second']:.2f}")
    print("\nper level (spark): wall seconds; task seconds summed over tasks")
    print(f"{'level':>5} {'new':>11} {'seconds':>8} {'expand':>8} {'dedupe':>8} {'write':>8} "
          f"{'Parquet B':>12}")
    for lv in spark["levels"]:
        print(f"{lv['level']:>5} {lv['states']:>11,} {lv['seconds']:>8.2f} "
              f"{lv.get('expand_task_seconds', 0):>8.2f} {lv.get('dedupe_task_seconds', 0):>8.2f} "
              f"{lv.get('write_task_seconds', 0):>8.2f} {lv['bytes']:>12,}")
    same = all(local[k] == spark[k] for k in SAME + ("trace_length", "outcome"))
    print(f"\nsame states, transitions, diameter, outcome and trace length: "
          f"{'yes' if same else 'NO'}")


def suite(args: argparse.Namespace) -> None:
    """Both engines on every model in models/ (one Spark session for all)."""
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "models").glob("*.toml"))
    with tempfile.TemporaryDirectory(prefix="ctmc-bench-") as work:
        sparks = _child("--child-spark", json.dumps(files), "{}", args.master,
                        str(args.partitions or 0), args.driver_memory, work)
    print(f"{'model':<50} {'states':>10} {'diam':>4} {'outcome':<36} {'len':>4} "
          f"{'local s':>8} {'spark s':>8} same")
    all_same = True
    for file, spark in zip(files, sparks, strict=True):
        local = _child("--child-local", file, "{}")
        same = all(local[k] == spark[k] for k in SAME + ("trace_length", "outcome"))
        all_same &= same
        print(f"{Path(file).stem:<50} {local['distinct_states']:>10,} {local['diameter']:>4} "
              f"{local['outcome']:<36} {local['trace_length'] or '-':>4} "
              f"{local['seconds']:>8.1f} {spark['seconds']:>8.1f} {'yes' if same else 'NO'}",
              flush=True)
    print(f"\nevery model: {'same results' if all_same else 'DIFFERENT RESULTS'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bench/models/tracker_bench_large.toml")
    parser.add_argument("--set", dest="overrides", action="append", metavar="NAME=VALUE")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--suite", action="store_true", help="every model in models/")
    parser.add_argument("--child-local", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child-spark", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child_local:
        print(json.dumps(run_local(args.child_local[0], json.loads(args.child_local[1]))))
    elif args.child_spark:
        files, overrides, master, partitions, memory, work = args.child_spark
        print(json.dumps(run_spark(json.loads(files), json.loads(overrides), master,
                                   int(partitions) or None, memory, work)))
    elif args.suite:
        suite(args)
    else:
        default = args.model == parser.get_default("model") and not args.overrides
        overrides = {"max_now": "4"} if default else \
            dict(item.split("=", 1) for item in args.overrides or [])
        compare(args.model, overrides, args)


if __name__ == "__main__":
    main()

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
    python bench/spark_vs_local.py --table         # bench models + largest log-driven model
    python bench/spark_vs_local.py --suite         # every model in models/, both engines
    python bench/spark_vs_local.py --big           # a model one 2 GB process cannot hold
    python bench/spark_vs_local.py --model bench/models/tracker_bench_medium.toml \
        --exchange shuffle                         # Spark's shuffle, as with no shared folder

`--big` runs a tracker model of more than 200 million states: Spark on local[2]
with a 2 GB driver and 1 GB per Python worker, and the local engine capped at 2 GB
of address space. It reports what each did (the local engine runs out of memory,
and says how far it got), Parquet bytes per state and the run directory's size.
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAME = ("distinct_states", "generated", "diameter")
STANDARD = [  # the tracker bench models and the largest log-driven model
    ("bench/models/tracker_bench_small.toml", {}),
    ("bench/models/tracker_bench_medium.toml", {}),
    ("bench/models/tracker_bench_large.toml", {"max_now": "4"}),
    ("models/log_driven_side_transport_two_writes.toml", {}),
]
BIG_MODEL = "bench/models/tracker_bench_large.toml"
BIG_SET = {"requests": "6", "max_now": "6", "max_ts": "3"}
BIG_PARTITIONS = 64  # so each task's share fits a 1 GB Python worker
GB = 1 << 30


def run_local(model_file: str, overrides: dict[str, str], memory_cap: int = 0) -> dict:
    """The local engine's figures (in a child process), or how it failed; `memory_cap`:
    bytes of address space the process may use (0: no cap)."""
    import resource

    from checker.errors import CheckerError
    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run

    if memory_cap:
        resource.setrlimit(resource.RLIMIT_AS, (memory_cap, memory_cap))
    model = load_model(model_file, ROOT / "models")
    started = time.perf_counter()
    try:
        result = run(build_machine(model, overrides),
                     BfsOptions(deadlock=model.engine["deadlock"],
                                progress=lambda line: print(line, file=sys.stderr, flush=True)))
    except CheckerError as exc:
        return {"failed": str(exc), "seconds": round(time.perf_counter() - started, 1)}
    return _figures(result)


def run_spark(model_files: list[str], overrides: dict[str, str], master: str,
              partitions: int | None, driver_memory: str, work: str,
              python_memory: str = "", exchange: str = "auto") -> list[dict]:
    """The Spark engine's figures for each model, in one session (in a child process).
    `python_memory`: the cap of each Python worker (spark.executor.pyspark.memory)."""
    from checker.engines.spark.session import spark_session
    from checker.models import build_machine, load_model
    from checker.run import SparkOptions, run

    memory = TreeMemory()
    started = time.perf_counter()
    conf = {"spark.executor.pyspark.memory": python_memory} if python_memory else {}
    spark = spark_session(master, driver_memory, conf)  # `run` reuses this session
    startup = time.perf_counter() - started
    caps = spark.sparkContext.parallelize(range(2), 2).map(_address_space_cap).collect()
    out = []
    for i, model_file in enumerate(model_files):
        model = load_model(model_file, ROOT / "models")
        run_dir = Path(work) / f"run{i}"
        result = run(build_machine(model, overrides),  # on the session started above
                     SparkOptions(master=master, partitions=partitions, run_dir=str(run_dir),
                                  deadlock=model.engine["deadlock"], label=model.name,
                                  exchange=exchange,
                                  progress=lambda line: print(line, file=sys.stderr,
                                                              flush=True)))
        figures = _figures(result)
        figures["startup_seconds"] = round(startup, 1)
        figures["python_worker_cap"] = caps[0]
        figures.update(memory.stop() if i == len(model_files) - 1 else {})
        figures["run_dir_bytes"] = sum(p.stat().st_size for p in run_dir.rglob("*")
                                       if p.is_file())
        figures["levels"] = level_records(run_dir)
        shutil.rmtree(run_dir)
        out.append(figures)
    return out


def level_records(run_dir: Path) -> list[dict]:
    """Each level's states and timings, from the records a Spark run directory keeps."""
    records = sorted(run_dir.glob("level=*/_ctmc_level.json"),
                     key=lambda p: int(p.parent.name.partition("=")[2]))
    return [{"level": k, "states": r["counts"]["states"], **r["counts"]["timings"]}
            for k, r in enumerate(json.loads(p.read_text()) for p in records)]


class TreeMemory:
    """Peak resident memory of this process and all its descendants (the driver's JVM
    and, on local masters, the executors' Python workers), sampled from /proc every
    0.2 s: ru_maxrss covers only this Python process."""

    def __init__(self) -> None:
        self.peak_total = 0  # bytes, the whole tree at one sample
        self.peak_worker = 0  # bytes, the largest single descendant Python process
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        return {"tree_peak_rss_mb": round(self.peak_total / 2**20),
                "python_worker_peak_rss_mb": round(self.peak_worker / 2**20)}

    def _sample(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        me = os.getpid()
        while not self._stop.wait(0.2):
            parents: dict[int, int] = {}
            rss: dict[int, int] = {}
            names: dict[int, str] = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    stat = Path(f"/proc/{entry}/stat").read_text()
                    pages = int(Path(f"/proc/{entry}/statm").read_text().split()[1])
                except OSError:  # the process ended meanwhile
                    continue
                name, _, rest = stat.partition(" (")[2].rpartition(")")
                pid = int(entry)
                parents[pid], rss[pid], names[pid] = int(rest.split()[1]), pages * page, name
            tree = {me}
            grew = True
            while grew:
                grew = False
                for pid, parent in parents.items():
                    if parent in tree and pid not in tree:
                        tree.add(pid)
                        grew = True
            self.peak_total = max(self.peak_total, sum(rss.get(p, 0) for p in tree))
            workers = [rss[p] for p in tree if p != me and names.get(p, "").startswith("python")]
            self.peak_worker = max([self.peak_worker, *workers])


def _address_space_cap(_: int) -> int:
    """RLIMIT_AS of the Python worker running this (-1: none)."""
    import resource

    return resource.getrlimit(resource.RLIMIT_AS)[0]


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


def measure(model_file: str, overrides: dict[str, str], args: argparse.Namespace
            ) -> tuple[dict, dict]:
    """Both engines on one model, one after the other: the local figures, Spark's."""
    local = _child("--child-local", model_file, json.dumps(overrides))
    with tempfile.TemporaryDirectory(prefix="ctmc-bench-") as work:
        spark = _child("--child-exchange", args.exchange, "--child-spark",
                       json.dumps([model_file]), json.dumps(overrides), args.master,
                       str(args.partitions or 0), args.driver_memory, work)[0]
    return local, spark


def _level_seconds(spark: dict) -> tuple[float, float]:
    """Median and max wall seconds of the levels after level 0."""
    seconds = sorted(lv["seconds"] for lv in spark["levels"][1:]) or [0.0]
    return seconds[len(seconds) // 2], seconds[-1]


def _same(local: dict, spark: dict) -> bool:
    return all(local[k] == spark[k] for k in SAME + ("trace_length", "outcome"))


def table(args: argparse.Namespace) -> None:
    """One row per standard model: both engines side by side, Spark's level split."""
    cores = _cores(args.master)
    print(f"{'model':<38} {'states':>11} {'local s':>8} {'local/s':>9} {'spark s':>8} "
          f"{'spark/s':>9} {'per core':>9} {'ratio':>5} {'lvl med':>7} {'lvl max':>7}  "
          f"task-s: expand/exchange/dedupe/write  same")
    for model_file, overrides in STANDARD:
        local, spark = measure(model_file, overrides, args)
        per_core = spark["states_per_second"] / cores
        median, most = _level_seconds(spark)
        split = "/".join(f"{sum(lv.get(f'{k}_task_seconds', 0) for lv in spark['levels']):.1f}"
                         for k in ("expand", "exchange", "dedupe", "write"))
        name = Path(model_file).stem + "".join(f" {k}={v}" for k, v in overrides.items())
        print(f"{name:<38} {local['distinct_states']:>11,} {local['seconds']:>8.1f} "
              f"{local['states_per_second']:>9,} {spark['seconds']:>8.1f} "
              f"{spark['states_per_second']:>9,} {per_core:>9,.0f} "
              f"{per_core / local['states_per_second']:>5.2f} {median:>7.2f} {most:>7.2f}  "
              f"{split:<36}  {'yes' if _same(local, spark) else 'NO'}", flush=True)
    print(f"\nspark: {args.master}, driver memory {args.driver_memory}; seconds exclude Spark's "
          "startup; ratio: spark per core / local per core")


def compare(model_file: str, overrides: dict[str, str], args: argparse.Namespace) -> None:
    local, spark = measure(model_file, overrides, args)
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
          f"{per_core:>10,.0f} {spark['tree_peak_rss_mb']:>11,.0f}  "
          f"{spark['exchange']} exchange; JVM and Python workers included (largest worker "
          f"{spark['python_worker_peak_rss_mb']:,} MB); "
          f"{spark['parquet_bytes_per_state']} B/state of Parquet, {spark['partitions']} "
          f"partitions, {args.master}, driver memory {args.driver_memory}, "
          f"+{spark['startup_seconds']} s Spark startup")
    print(f"spark per core / local per core: {per_core / local['states_per_second']:.2f}")
    print("\nper level (spark): wall seconds; task seconds summed over tasks")
    print(f"{'level':>5} {'new':>11} {'tasks':>5} {'seconds':>8} {'expand':>8} {'exchange':>8} "
          f"{'dedupe':>8} {'write':>8} {'Parquet B':>12}")
    for lv in spark["levels"]:
        print(f"{lv['level']:>5} {lv['states']:>11,} {lv.get('tasks', 1):>5} "
              f"{lv['seconds']:>8.2f} {lv.get('expand_task_seconds', 0):>8.2f} "
              f"{lv.get('exchange_task_seconds', 0):>8.2f} "
              f"{lv.get('dedupe_task_seconds', 0):>8.2f} "
              f"{lv.get('write_task_seconds', 0):>8.2f} {lv['bytes']:>12,}")
    median, most = _level_seconds(spark)
    print(f"seconds per level: median {median:.2f}, max {most:.2f}")
    print(f"\nsame states, transitions, diameter, outcome and trace length: "
          f"{'yes' if _same(local, spark) else 'NO'}")


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


def big(args: argparse.Namespace) -> None:
    """Spark and the local engine on a model too big for one 2 GB process."""
    overrides = dict(BIG_SET)
    print(f"model {Path(BIG_MODEL).stem} {overrides}", flush=True)
    try:
        local = _child("--child-local", BIG_MODEL, json.dumps(overrides), str(2 * GB))
    except subprocess.CalledProcessError as exc:  # killed, or out of memory outside a search
        local = {"failed": f"the process ended with exit code {exc.returncode}",
                 "seconds": float("nan")}
    if "failed" in local:
        print(f"local   capped at 2 GB of address space: failed after {local['seconds']:.0f} s: "
              f"{local['failed']}", flush=True)
    else:
        print(f"local   capped at 2 GB of address space: {local['outcome']}, "
              f"{local['distinct_states']:,} states in {local['seconds']:.0f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="ctmc-bench-big-", dir=args.work) as work:
        spark = _child("--child-spark", json.dumps([BIG_MODEL]), json.dumps(overrides),
                       "local[2]", str(BIG_PARTITIONS), "2g", work, "1g")[0]
    cap = spark["python_worker_cap"]
    print(f"spark   local[2], driver 2 GB, Python workers capped at "
          f"{cap / GB:.0f} GB: {spark['outcome']}, {spark['distinct_states']:,} states, "
          f"diameter {spark['diameter']}, {spark['seconds']:.0f} s, "
          f"{spark['states_per_second']:,} states/s; Parquet {spark['parquet_bytes_per_state']} "
          f"B/state; run directory {spark['run_dir_bytes'] / GB:.1f} GB "
          f"({spark['run_dir_bytes'] / spark['distinct_states']:.1f} B/state); peak RSS: "
          f"{spark['tree_peak_rss_mb']:,} MB for the driver's whole process tree (JVM and "
          f"Python workers), {spark['python_worker_peak_rss_mb']:,} MB for the largest "
          f"Python worker")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bench/models/tracker_bench_large.toml")
    parser.add_argument("--set", dest="overrides", action="append", metavar="NAME=VALUE")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--exchange", choices=("auto", "files", "shuffle"), default="auto",
                        help="how executors pass successors (files: through the run directory)")
    parser.add_argument("--suite", action="store_true", help="every model in models/")
    parser.add_argument("--big", action="store_true",
                        help="a model of 200M+ states: Spark, and the local engine in 2 GB")
    parser.add_argument("--table", action="store_true",
                        help="the tracker bench models and the largest log-driven model")
    parser.add_argument("--work", help="where --big puts its run directory (default: /tmp)")
    parser.add_argument("--child-local", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--child-spark", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--child-exchange", default="auto", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child_local:
        file, overrides, *cap = args.child_local
        print(json.dumps(run_local(file, json.loads(overrides), int(cap[0]) if cap else 0)))
    elif args.child_spark:
        files, overrides, master, partitions, memory, work, *python_memory = args.child_spark
        print(json.dumps(run_spark(json.loads(files), json.loads(overrides), master,
                                   int(partitions) or None, memory, work,
                                   python_memory[0] if python_memory else "",
                                   args.child_exchange)))
    elif args.suite:
        suite(args)
    elif args.big:
        big(args)
    elif args.table:
        table(args)
    else:
        default = args.model == parser.get_default("model") and not args.overrides
        overrides = {"max_now": "4"} if default else \
            dict(item.split("=", 1) for item in args.overrides or [])
        compare(args.model, overrides, args)


if __name__ == "__main__":
    main()

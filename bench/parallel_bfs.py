"""The local BFS with 1 and N worker processes, side by side on one model.

Each run is its own process. Prints, per worker count: distinct states, seconds,
states per second, CPU seconds of the searching process and of its workers, the
peak RSS of the searching process alone, the peak memory of all its processes
together (their anonymous memory, sampled every 250 ms, with pages the fork shares
counted once: Linux's Pss_Anon), and the rate relative to one worker. The speed-up
needs idle cores: the load average before each run is printed beside it, as other
work on the machine skews it, and `--repeat K` runs the worker counts K times in turn.

    python bench/parallel_bfs.py                       # 1 and 2 workers, ~17.7M states
    python bench/parallel_bfs.py --workers 1 2 4 --model tracker_bench_medium --repeat 3
    python bench/parallel_bfs.py --set max_now=4       # bfs_tracker's xlarge, 26.5M states
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "bench" / "models"
# Reading a process's smaps_rollup costs about 6 ms of CPU and holds its memory map's
# lock: sampled every 50 ms, the sampler took two workers' runs from 6.0 to 6.7-7.3 s
# (they have no core to spare); every 250 ms it costs about 2% of one core.
SAMPLE_EVERY = 0.25


def run_one(model_name: str, workers: int, overrides: dict[str, str]) -> dict:
    """Run in this process and return the figures (called in a child process)."""
    sys.path.insert(0, str(ROOT))
    from checker.models import build_machine, load_model
    from checker.run import BfsOptions, run

    machine = build_machine(load_model(model_name, MODELS), overrides)
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = run(machine, BfsOptions(deadlock=False, workers=workers))
    after = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the workers, once reaped
    return {**{k: result.stats[k] for k in ("distinct_states", "generated", "diameter",
                                            "seconds", "states_per_second", "peak_rss_mb")},
            "outcome": result.outcome,
            "cpu_self": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
            "cpu_workers": children.ru_utime + children.ru_stime}


def _tree(pid: int) -> list[int]:
    """A process and its descendants (Linux)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return [pid]
    return [pid] + [p for k in kids for p in _tree(k)]


def _anonymous_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return sum(int(line.split()[1]) for line in f if line.startswith("Pss_Anon:"))
    except OSError:  # gone, or not Linux
        return 0


def _run_sampled(command: list[str]) -> tuple[str, float | None]:
    """Run `command`; its output, and the peak of its process tree's summed anonymous
    memory in MB (None where /proc cannot tell)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    peak = 0

    def sample() -> None:
        nonlocal peak
        while process.poll() is None:
            peak = max(peak, sum(_anonymous_kb(p) for p in _tree(process.pid)))
            time.sleep(SAMPLE_EVERY)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = process.communicate()
    sampler.join()
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} exited with status {process.returncode}")
    return out, peak / 1024 if peak else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tracker_bench_large")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                        help="override a model parameter (max_now=4: bfs_tracker's xlarge)")
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    overrides = dict(item.split("=", 1) for item in args.set)
    if args.child:
        print(json.dumps(run_one(args.child[0], int(args.child[1]), overrides)))
        return
    header = (f"{'workers':>7} {'states':>12} {'seconds':>8} {'states/s':>11} "
              f"{'CPU main':>8} {'CPU workers':>11} {'peaks MB':>11} {'all MB':>7} "
              f"{'vs 1':>5} {'load before':>11}")
    print(f"model {args.model}{''.join(f' {item}' for item in args.set)}, "
          f"{len(os.sched_getaffinity(0))} usable cores")
    print(header)
    print("-" * len(header))
    base = None
    for workers in args.workers * args.repeat:
        load = os.getloadavg()[0]
        out, memory = _run_sampled([sys.executable, __file__, "--child", args.model,
                                    str(workers), *(f"--set={item}" for item in args.set)])
        s = json.loads(out.strip().splitlines()[-1])
        rate = s["states_per_second"]
        base = (rate if workers == 1 else None) or base
        ratio = f"{rate / base:.2f}" if base else "-"
        print(f"{workers:>7} {s['distinct_states']:>12,} {s['seconds']:>8.2f} {rate:>11,} "
              f"{s['cpu_self']:>8.1f} {s['cpu_workers']:>11.1f} {s['peak_rss_mb']:>11,.0f} "
              f"{'-' if memory is None else f'{memory:,.0f}':>7} {ratio:>5} {load:>11.2f}",
              flush=True)


if __name__ == "__main__":
    main()

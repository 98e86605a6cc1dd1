"""Faults at larger sizes: random kills and interrupts, then resumes, on both engines.

For each row, ctmc runs as a separate process; each run is sent the signal at a
random moment (seeded) and resumed from its checkpoint or run directory, until a
run finishes. Every finished run is compared with an uninterrupted run of the
same model in every figure but time and memory (states, transitions, diameter,
coverage, outcome, counterexample states). Files the user had beside the run (a
folder of their own, and siblings named like the checkpoint) are compared byte
for byte before and after. Then the cost of checkpointing is measured side by
side: the same model with and without --checkpoint (default interval, and a save
at every level), median of several runs each.

    python bench/faults.py                 # 20 kills per row (about 20 minutes)
    python bench/faults.py --kills 5 --only local

Prints one table: kills, resumes, mismatches (must be 0), files lost (must be 0),
and the checkpoint overhead in percent (for Spark, the time spent recording each level's
files, which is its checkpoint). Figures, not assertions: tests never check
timings (tests/test_faults.py runs the same on small models in CI).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "cli.py"
TIMING = ("seconds", "states_per_second", "peak_rss_mb", "liveness_seconds", "parquet_bytes",
          "parquet_bytes_per_state", "run_dir", "partitions", "bytes_per_state")
SPARK = ["--engine", "spark", "--master", "local[2]", "--partitions", "4"]


@dataclass
class Row:
    engine: str
    model: str
    signal: int
    window: tuple[float, float]  # seconds into a run when the signal may come
    args: tuple[str, ...] = ()

    @property
    def folder_flag(self) -> str:
        return "--run-dir" if self.engine == "spark" else "--checkpoint"


ROWS = [
    Row("local", "models/log_driven_duplicates.toml", signal.SIGKILL, (0.5, 4.5),
        ("--checkpoint-every", "0")),
    Row("local", "models/v1_leases.toml", signal.SIGKILL, (1.0, 11.0)),
    Row("local", "models/log_driven_mutation_closed_from_eval_time.toml", signal.SIGINT,
        (0.5, 5.5)),
    Row("spark", "bench/models/tracker_bench_small.toml", signal.SIGKILL, (10.0, 40.0), SPARK),
]


def ctmc(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(CLI), *args], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def figures(out: str, cwd: Path) -> dict:
    report = json.loads(out)
    got = {k: v for k, v in report.items() if k not in ("engine", "stats")}
    got["stats"] = {k: v for k, v in report["stats"].items() if k not in TIMING}
    for key in ("liveness_states", "liveness_edges"):
        got["stats"].pop(key, None)  # present only when liveness ran: compared via outcome
    if report.get("violation"):
        trace = json.loads((cwd / Path(report["violation"]["trace_file"]).name).read_text())
        got["violation"] = {**report["violation"], "trace_file": None,
                            "states": trace["states"], "loop": trace.get("loop")}
    return got


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def user_files(work: Path) -> Path:
    """Files a user keeps beside the run: they must come out byte-identical."""
    mine = work / "mine"
    mine.mkdir()
    (mine / "results.csv").write_text("model,states\n" * 100)
    for sibling in ("state.old", "state.tmp"):
        (work / sibling).mkdir()
        (work / sibling / "notes.txt").write_text(f"kept in {sibling}")
    return mine


def uninterrupted(row: Row, work: Path) -> tuple[dict, float | None, float]:
    """The figures of a run left alone; for Spark, also the share of its time spent
    recording levels (hashing their files), in percent; and the run's seconds."""
    spark = row.engine == "spark"
    proc = ctmc(["check", str(ROOT / row.model), "--json", "--quiet", "--trace-out",
                 str(work / "cex.itf.json"),
                 *((*row.args, "--run-dir", str(work / "clean")) if spark else ())], work)
    out, err = proc.communicate()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{row.model}: {err.strip()[-500:]}")
    if not spark:
        return figures(out, work), None, json.loads(out)["stats"]["seconds"]
    records = [json.loads(p.read_text())["counts"]["timings"]
               for p in (work / "clean").glob("level=*/_ctmc_level.json")]
    spent = sum(r.get("record_seconds", 0.0) for r in records)
    seconds = json.loads(out)["stats"]["seconds"]
    return figures(out, work), 100 * spent / seconds, seconds


def kill_series(row: Row, kills: int, seed: int) -> dict:
    """`kills` signals, resuming after each; compare the finished run with an
    uninterrupted one. Sequences of at most five kills each, as a user would retry."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="ctmc-faults-") as tmp:
        work = Path(tmp)
        mine = user_files(work)
        before = {p: snapshot(p) for p in (mine, work / "state.old", work / "state.tmp")}
        want, record_pct, seconds = uninterrupted(row, work)
        done = resumes = mismatches = sequences = 0
        while done < kills:
            sequences += 1
            folder = work / "state"
            shutil.rmtree(folder, ignore_errors=True)  # this bench's own folder
            in_sequence = min(5, kills - done)
            while True:
                resume = folder.exists() and any(folder.glob("*.json"))
                args = ["check", str(ROOT / row.model), "--json", "--quiet", "--trace-out",
                        str(work / "cex.itf.json"), *row.args,
                        "--resume" if resume else row.folder_flag, str(folder)]
                resumes += resume
                proc = ctmc(args, work)
                if in_sequence:
                    try:
                        proc.wait(timeout=rng.uniform(*row.window))
                    except subprocess.TimeoutExpired:
                        proc.send_signal(row.signal)
                        in_sequence -= 1
                        done += 1
                out, err = proc.communicate()
                if proc.returncode in (0, 1):
                    mismatches += figures(out, work) != want
                    break
                if proc.returncode not in (-signal.SIGKILL, 130):
                    print(f"  unexpected exit {proc.returncode}: {err.strip()[-300:]}",
                          file=sys.stderr)
                    mismatches += 1
                    break
        lost = sum(snapshot(p) != files for p, files in before.items())
    return {"kills": done, "resumes": resumes, "sequences": sequences,
            "mismatches": mismatches, "files_lost": lost, "record_pct": record_pct,
            "seconds": seconds}


def overhead(row: Row, repeats: int) -> dict[str, float]:
    """Seconds of a run without a checkpoint, and with one (default interval, and at
    every level), interleaved so machine noise hits all alike; medians."""
    if row.engine == "spark":
        return {}
    times: dict[str, list[float]] = {"plain": [], "default": [], "every level": []}
    extra = {"plain": [], "default": ["--checkpoint", "ck"],
             "every level": ["--checkpoint", "ck", "--checkpoint-every", "0"]}
    with tempfile.TemporaryDirectory(prefix="ctmc-overhead-") as tmp:
        work = Path(tmp)
        for _ in range(repeats):
            for name, flags in extra.items():
                shutil.rmtree(work / "ck", ignore_errors=True)
                proc = ctmc(["check", str(ROOT / row.model), "--json", "--quiet", *flags], work)
                out, _ = proc.communicate()
                times[name].append(json.loads(out)["stats"]["seconds"])
    plain = statistics.median(times["plain"])
    return {name: 100 * (statistics.median(t) - plain) / plain
            for name, t in times.items() if name != "plain"} | {"plain_seconds": plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="signals per row (default 20)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per overhead figure")
    parser.add_argument("--only", choices=("local", "spark"), help="one engine's rows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{'engine':<6} {'model':<44} {'signal':<7} {'kills':>5} {'resumes':>7} "
          f"{'mismatches':>10} {'files lost':>10} {'run s':>6} {'ckpt +%':>8} "
          f"{'every level +%':>14}")
    for i, row in enumerate(ROWS):
        if args.only and row.engine != args.only:
            continue
        got = kill_series(row, args.kills, args.seed + i)
        cost = overhead(row, args.repeats)
        if got["record_pct"] is not None:  # Spark: recording every level is its checkpoint
            cost["every level"] = got["record_pct"]
            cost["plain_seconds"] = got["seconds"]
        name = Path(row.model).stem
        sig = signal.Signals(row.signal).name
        print(f"{row.engine:<6} {name:<44} {sig:<7} {got['kills']:>5} {got['resumes']:>7} "
              f"{got['mismatches']:>10} {got['files_lost']:>10} "
              f"{cost.get('plain_seconds', float('nan')):>6.1f} "
              f"{cost.get('default', float('nan')):>8.1f} "
              f"{cost.get('every level', float('nan')):>14.1f}", flush=True)


if __name__ == "__main__":
    main()

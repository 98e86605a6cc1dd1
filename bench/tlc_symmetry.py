"""ctmc's symmetry reduction beside TLC's SYMMETRY, on the same tracker model.

`bench/tla/Tracker.tla` is the 2020 RFC's two-bucket tracker as `spec/tracker.py`
writes it (default switches), with R interchangeable requests. For each R, both
checkers search it once on one core, with symmetry (TLC: `SYMMETRY
Permutations(Request)`; ctmc: the spec's scalarset), and the orbit counts must agree;
first, both search one small R without symmetry, where the state counts must agree
(the two models are the same machine). Printed per run: states (or orbits), wall and
CPU seconds of the whole process (the JVM's or Python's start included), and TLC's
CPU over ctmc's. Exit 1 if any count differs.

TLC is not shipped with ctmc; build it from a tlaplus checkout with
`bash bench/build_tlc.sh TLAPLUS_CHECKOUT tla2tools.jar` (javac only), then:

    python bench/tlc_symmetry.py --tlc tla2tools.jar                 # R = 6, 7, 8
    python bench/tlc_symmetry.py --tlc tla2tools.jar --requests 6 --max-now 3 --max-ts 2

TLC applies every permutation to every state it reaches (R! of them), so its time
grows with R! at a fixed model: the defaults (clock up to 2, client ts 1) keep R = 8
to minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TLA = ROOT / "bench" / "tla" / "Tracker.tla"


class Run:
    """One checker's search: the count it printed, wall and CPU seconds."""

    def __init__(self, count: int | None, wall: float, cpu: float, note: str = ""):
        self.count, self.wall, self.cpu, self.note = count, wall, cpu, note


def timed(args: list[str], cwd: Path, timeout: float) -> tuple[str, float, float, str]:
    """Run `args`; its stdout, wall and CPU seconds, and why it failed. The CPU is the
    growth of this process's children's rusage: one child at a time runs here."""
    before = _children_cpu()
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return ("", time.perf_counter() - started, _children_cpu() - before,
                f"stopped at {timeout:.0f} s")
    wall = time.perf_counter() - started
    cpu = _children_cpu() - before
    return out, wall, cpu, "" if process.returncode == 0 else f"exit {process.returncode}"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_tlc(jar: Path, requests: int, params: dict[str, int], symmetry: bool,
            timeout: float) -> Run:
    with tempfile.TemporaryDirectory(prefix="ctmc-tlc-") as scratch:
        work = Path(scratch)
        shutil.copy(TLA, work / "Tracker.tla")
        members = ", ".join(f"r{i}" for i in range(1, requests + 1))
        (work / "Tracker.cfg").write_text(
            f"CONSTANTS Request = {{{members}}} NoRequest = NoRequest N = {requests}\n"
            f"    Target = 1 MaxNow = {params['max_now']} MaxTs = {params['max_ts']}\n"
            "INIT Init\nNEXT Next\nINVARIANT TrackedAboveClosed RequestsAboveBucket\n"
            "CHECK_DEADLOCK FALSE\n" + ("SYMMETRY Perms\n" if symmetry else ""))
        out, wall, cpu, failed = timed(
            ["java", "-XX:+UseParallelGC", "-cp", str(jar), "tlc2.TLC", "-workers", "1",
             "-metadir", str(work / "states"), "-config", "Tracker.cfg", "Tracker"],
            work, timeout)
    # the summary line, not a progress line ("..., 2,813 distinct states found (...)")
    found = re.search(r"([\d,]+) distinct states found, 0 states left on queue", out)
    if found is None or "No error has been found" not in out:
        return Run(None, wall, cpu, failed or "no verdict in TLC's output")
    return Run(int(found.group(1).replace(",", "")), wall, cpu)


def run_ctmc(requests: int, params: dict[str, int], symmetry: bool, timeout: float) -> Run:
    args = [sys.executable, "-m", "ctmc", "check", str(ROOT / "models" / "tracker_small.toml"),
            f"--set=requests={requests}", f"--set=max_now={params['max_now']}",
            f"--set=max_ts={params['max_ts']}", "--workers", "1", "--json",
            "--symmetry" if symmetry else "--no-symmetry"]
    out, wall, cpu, failed = timed(args, ROOT, timeout)
    try:
        report = json.loads(out[out.index("{"):])
    except ValueError:
        return Run(None, wall, cpu, failed or "no JSON from ctmc")
    if report.get("outcome") != "holds":
        return Run(None, wall, cpu, f"outcome {report.get('outcome')}")
    return Run(report["stats"]["distinct_states"], wall, cpu)


def show(label: str, ctmc: Run, tlc: Run) -> bool:
    agree = ctmc.count is not None and ctmc.count == tlc.count
    counts = " ".join(f"{run.count:>9,}" if run.count is not None else f"{run.note:>9}"
                      for run in (ctmc, tlc))
    ratio = tlc.cpu / ctmc.cpu if tlc.count is not None and ctmc.cpu else math.nan
    print(f"{label:<24}{counts}  {'yes' if agree else 'NO':<6}"
          f"{ctmc.wall:>8.1f}{ctmc.cpu:>8.1f}{tlc.wall:>8.1f}{tlc.cpu:>8.1f}{ratio:>9.1f}x",
          flush=True)
    return agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tlc", type=Path, default=os.environ.get("TLC_JAR"),
                        help="tla2tools.jar (bench/build_tlc.sh builds one) [env TLC_JAR]")
    parser.add_argument("--requests", type=int, nargs="+", default=[6, 7, 8], metavar="R")
    parser.add_argument("--full", type=int, default=4, metavar="R",
                        help="requests for the search without symmetry [default: 4]")
    parser.add_argument("--max-now", type=int, default=2)
    parser.add_argument("--max-ts", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds per run [default: 3600]")
    options = parser.parse_args()
    if options.tlc is None or not Path(options.tlc).is_file():
        parser.error("--tlc: give TLC's jar (bash bench/build_tlc.sh builds one from a "
                     "tlaplus checkout)")
    if any(r < 1 or r > 8 for r in options.requests + [options.full]):
        parser.error("requests range over 1..8 (the tracker spec's bounds)")
    params = {"max_now": options.max_now, "max_ts": options.max_ts}
    print(f"tracker, clock up to {options.max_now}, client ts 1..{options.max_ts}; "
          f"one core each; seconds of the whole process")
    print(f"{'search':<24}{'ctmc':>9} {'TLC':>9}  {'agree':<6}{'wall':>8}{'cpu':>8}"
          f"{'wall':>8}{'cpu':>8}{'TLC/ctmc':>10}")
    agree = show(f"R={options.full}, every state",
                 run_ctmc(options.full, params, False, options.timeout),
                 run_tlc(options.tlc, options.full, params, False, options.timeout))
    for r in options.requests:
        agree &= show(f"R={r}, orbits ({math.factorial(r):,} perms)",
                      run_ctmc(r, params, True, options.timeout),
                      run_tlc(options.tlc, r, params, True, options.timeout))
    sys.exit(0 if agree else 1)


if __name__ == "__main__":
    main()

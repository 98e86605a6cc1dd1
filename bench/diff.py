"""What `ctmc diff` costs beside checking each version on its own, side by side.

For each model: two `ctmc check` runs one after the other (the search a reviewer
would run by hand under each version; here both versions are this checkout, so the
searches are alike), then `ctmc diff HEAD MODEL` with a fresh cache (both sides,
plus the state graphs and the behaviour diff), then the same `diff` again with that
cache warm (nothing is searched). Every run is its own process; wall and CPU seconds
(the command and its children) are printed, and the ratios against the two checks.

    python bench/diff.py                                   # the default models
    python bench/diff.py tracker_small log_driven_tiny --workers 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODELS = ("tracker_small", "v1_tiny", "log_driven_tiny", "log_driven_core")


def timed(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (with children) and exit status of one command."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ctmc", *args], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    cpu = (after.children_user + after.children_system
           - before.children_user - before.children_system)
    return wall, cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(DEFAULT_MODELS))
    parser.add_argument("--workers", type=int, default=2,
                        help="diff's runs at once (the checks use one worker each)")
    options = parser.parse_args()
    print(f"{'model':<22}{'2 checks':>10}{'diff':>10}{'cached':>10}"
          f"{'diff/checks':>13}{'cached/checks':>15}{'cpu 2 checks':>14}{'cpu diff':>10}")
    with tempfile.TemporaryDirectory(prefix="ctmc-bench-diff-") as scratch:
        work = Path(scratch)
        for model in options.models:
            checks_wall = checks_cpu = 0.0
            for _ in range(2):
                wall, cpu, _status = timed(["check", model, "-q", "--workers", "1",
                                            "--trace-out", str(work / "cex.itf.json")], work)
                checks_wall += wall
                checks_cpu += cpu
            cache = work / f"cache-{model}"
            diff = ["--models-dir", str(ROOT / "models"), "diff", "HEAD", model, "--cache",
                    str(cache), "--workers", str(options.workers), "--trace-dir",
                    str(work / "traces"), "--json"]
            cold_wall, cold_cpu, _status = timed(diff, ROOT)
            warm_wall, _cpu, _status = timed(diff, ROOT)
            print(f"{model:<22}{checks_wall:>9.2f}s{cold_wall:>9.2f}s{warm_wall:>9.2f}s"
                  f"{cold_wall / checks_wall:>12.2f}x{warm_wall / checks_wall:>14.2f}x"
                  f"{checks_cpu:>13.2f}s{cold_cpu:>9.2f}s", flush=True)


if __name__ == "__main__":
    main()

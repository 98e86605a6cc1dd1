"""What `ctmc diff` costs beside checking each version on its own, side by side.

For each model, every run its own process, one after the other:

- `2 checks`: `ctmc check MODEL` twice (what a reviewer runs by hand, once per version);
- `unchanged`: `ctmc diff HEAD MODEL`: the model is the same in both versions, so it is
  searched once (the twin side reads the first one's answer) and no graph is walked;
- `changed`: `ctmc diff BASE MODEL` where BASE is a folder whose copy of the model file
  has one parameter lowered (a smaller design): both versions are searched, both state
  graphs walked and compared both ways;
- `cached`: the same `changed` diff again with `--cache` warm: nothing is searched.

Printed: wall seconds of each, and the ratios against the two checks. A side's search
is the gate's: a spec that declares a symmetry is searched twice (in full, and one
state per orbit, which must agree), where `check` searches once.

    python bench/diff.py                 # the default models
    python bench/diff.py --workers 1     # diff's sides one at a time
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
# model -> the parameter lowered in BASE's copy, and its value there
DEFAULT_MODELS = {"tracker_small": ("max_now", 2), "v1_tiny": ("max_ts", 2),
                  "log_driven_tiny": ("writes", 1), "log_driven_core": ("writes", 1)}


def timed(args: list[str], cwd: Path) -> float:
    """Wall seconds of one `ctmc` command (exit 0 or 1 expected)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ctmc", *args], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"ctmc {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()[-300:]}")
    return time.perf_counter() - started


def lowered_copy(model: str, param: str, value: int, into: Path) -> Path:
    """A folder standing for BASE: the models folder with `param` set to `value` in
    `model`'s file (the spec itself is the same)."""
    base = into / f"base-{model}"
    shutil.copytree(MODELS, base / "models")
    path = base / "models" / f"{model}.toml"
    # the first such line is the [params] table's ([proof.params] comes later)
    text, count = re.subn(rf"(?m)^{param} = \d+", f"{param} = {value}", path.read_text(),
                          count=1)
    if count != 1:
        sys.exit(f"{model}: no line `{param} = N` to lower")
    path.write_text(text)
    return base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="diff's runs at once")
    options = parser.parse_args()
    print(f"{'model':<18}{'2 checks':>10}{'unchanged':>11}{'changed':>10}{'cached':>9}"
          f"{'unchanged/2':>13}{'changed/2':>11}{'cached/2':>10}")
    with tempfile.TemporaryDirectory(prefix="ctmc-bench-diff-") as scratch:
        work = Path(scratch)
        for model, (param, value) in DEFAULT_MODELS.items():
            checks = sum(timed(["check", model, "-q", "--workers", "1", "--trace-out",
                                str(work / "cex.itf.json")], work) for _ in range(2))
            common = ["--models-dir", str(MODELS), "diff", "--workers", str(options.workers),
                      "--trace-dir", str(work / "traces"), "--json"]
            unchanged = timed(common[:3] + ["HEAD", model] + common[3:], ROOT)
            base = lowered_copy(model, param, value, work)
            cache = ["--cache", str(work / f"cache-{model}")]
            changed = timed(common[:3] + [str(base), model] + common[3:] + cache, ROOT)
            cached = timed(common[:3] + [str(base), model] + common[3:] + cache, ROOT)
            print(f"{model:<18}{checks:>9.2f}s{unchanged:>10.2f}s{changed:>9.2f}s"
                  f"{cached:>8.2f}s{unchanged / checks:>12.2f}x{changed / checks:>10.2f}x"
                  f"{cached / checks:>9.2f}x", flush=True)


if __name__ == "__main__":
    main()

"""Ways to a proof, side by side on the same models: k-induction with the spec's
lemmas, PDR on Spacer with none, PDR seeded with the spec's lemmas it proves first,
PDR seeded with facts mined from reachable states (none a person wrote), and `infer`
with none.

Each run is `ctmc` in a process of its own, one after the other, under the same
`--timeout`; printed per model and engine: the outcome, wall seconds, the peak
resident memory of that process, and the size of what it proved with (k-induction:
the spec's lemmas it used; PDR: the invariant's clauses, and the seeds; infer: the
lemmas it needs).
Models run at their [proof.params] sizes, as `ctmc prove` does; the examples and
`tracker_small` also at their BFS sizes (`@bfs`), where PDR has a chance.

    python bench/proof_engines.py                      # every model below, 300 s each
    python bench/proof_engines.py --timeout 60 mutex tracker_small@bfs
    python bench/proof_engines.py --engine infer       # one engine on every model
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# name -> (models folder, model, --set overrides)
MODELS: dict[str, tuple[Path, str, list[str]]] = {
    "mutex": (EXAMPLES / "mutex", "mutex", []),
    "two_phase_commit": (EXAMPLES / "two_phase_commit", "tpc", []),
    "tracker_small@bfs": (ROOT / "models", "tracker_small",
                          ["requests=3", "max_now=3", "max_ts=2"]),
    "tracker_small": (ROOT / "models", "tracker_small", []),
    "v1_tiny": (ROOT / "models", "v1_tiny", []),
    "log_driven_tiny": (ROOT / "models", "log_driven_tiny", []),
    "log_driven_core": (ROOT / "models", "log_driven_core", []),
    "log_driven_tiny_leases_in_flight": (ROOT / "models", "log_driven_tiny_leases_in_flight",
                                         []),
    "log_driven_reproposals": (ROOT / "models", "log_driven_reproposals", []),
    "log_driven_side_transport": (ROOT / "models", "log_driven_side_transport", []),
    "log_driven_tiny_merge_leases": (ROOT / "models", "log_driven_tiny_merge_leases", []),
}
ENGINES = {
    "k-induction": ["prove", "--workers", "1"],
    "pdr": ["prove", "--engine", "pdr"],
    "pdr+lemmas": ["prove", "--engine", "pdr", "--with-spec-lemmas"],
    "pdr+mined": ["prove", "--engine", "pdr", "--mine"],
    "infer": ["infer"],
}


def run_one(folder: Path, model: str, sets: list[str], command: list[str],
            timeout: float) -> dict:
    """One engine on one model: outcome, seconds, peak memory, proof size."""
    args = [sys.executable, "-m", "ctmc", "--models-dir", str(folder), *command, model,
            "--json", "--timeout", str(timeout)] + [f"--set={s}" for s in sets]
    out, code, seconds, peak = measured(args, stderr=subprocess.DEVNULL)
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        return {"outcome": f"exit {code}", "seconds": seconds, "mb": peak,
                "size": "-"}
    return {"outcome": _outcome(command, report), "seconds": seconds, "mb": peak,
            "size": _size(command, report)}


def measured(args: list[str], stderr: int | None = None) -> tuple[str, int, float, float]:
    """Run `args` to its end: its stdout, exit code, wall seconds, and the peak resident
    memory (MB) of that process alone."""
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)  # this process's own peak memory
    return (out, os.waitstatus_to_exitcode(status), time.perf_counter() - started,
            usage.ru_maxrss / 1024)


def _outcome(command: list[str], report: dict) -> str:
    if command[0] == "infer":
        if report.get("unknown"):
            return "unknown"
        return "proved" if report.get("proves") else "not proved"
    return str(report.get("outcome"))


def _size(command: list[str], report: dict) -> str:
    if command[0] == "infer":
        return str(len(report.get("needed") or [])) if report.get("proves") else "-"
    if "pdr" in command:
        stats = report.get("stats", {})
        seeds = f" + {len(stats['seeds']) + stats.get('mined_seeds', 0):,} seeds" \
            if "seeds" in stats else ""
        return f"{stats.get('invariant_clauses', '-')}{seeds}"
    used = report.get("lemmas_used")
    return "-" if report.get("outcome") != "proved" else f"{len(used or [])} lemmas"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS), metavar="MODEL",
                        help=f"of: {', '.join(MODELS)}")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per engine and model [default: 300]")
    parser.add_argument("--engine", dest="engines", action="append", choices=list(ENGINES),
                        help="run only this engine (repeatable) [default: all]")
    options = parser.parse_args()
    unknown = [m for m in options.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; known: {', '.join(MODELS)}")
    print(f"{'model':<34}{'engine':<13}{'outcome':<16}{'seconds':>9}{'peak MB':>9}"
          f"  size")
    for name in options.models:
        folder, model, sets = MODELS[name]
        for engine in options.engines or list(ENGINES):
            command = ENGINES[engine]
            row = run_one(folder, model, sets, command, options.timeout)
            print(f"{name:<34}{engine:<13}{row['outcome']:<16}{row['seconds']:>9.1f}"
                  f"{row['mb']:>9.0f}  {row['size']}", flush=True)


if __name__ == "__main__":
    main()

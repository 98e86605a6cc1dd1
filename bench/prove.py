"""Seconds, peak memory and Z3's effort for each model's proof, as `ctmc prove` runs it.

    python bench/prove.py                          # every model with [expect] proof
    python bench/prove.py log_driven_tiny_leases   # those, and the models named
    python bench/prove.py --only v1_tiny           # just the models named
    python bench/prove.py --workers 2              # each proof's goals shared by 2 processes

One row per model: the outcome, k, the invariants proved (invariants and step
invariants), the lemmas the proof used of those the spec states, wall seconds of the
proof (base case, step and cores), the peak resident memory of the process that ran
it (each proof runs in its own Python process, so Z3's memory is its own), and Z3's
statistics for the inductive step's solver: `rlimit` (Z3's count of work done, the
same on any machine), conflicts and decisions (search effort) and Z3's own peak
memory. Sizes are the models' [proof.params]. With `--workers N` (default 1, one
process, as the README's table) the Z3 figures are the workers' summed and the peak
memory is the coordinator's plus the largest worker's (the others' are not counted).
Figures, not assertions: tests never check timings.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.models import list_models, load_model  # noqa: E402

MODELS = ROOT / "models"
COLUMNS = [("model", "<"), ("outcome", "<"), ("k", ">"), ("invariants", ">"),
           ("lemmas used", ">"), ("seconds", ">"), ("peak MB", ">"), ("z3 rlimit", ">"),
           ("conflicts", ">"), ("decisions", ">"), ("z3 MB", ">")]


def prove_one(name: str, timeout: float | None, workers: int) -> dict[str, Any]:
    """The proof of one model, in this process: the row's figures."""
    from checker.engines.symbolic.induction import PROVED, prove
    from checker.models import build_machine
    from checker.run import ProveOptions

    model = load_model(name, MODELS)
    machine = build_machine(model, proof=True)
    t0 = time.perf_counter()
    result = prove(machine, ProveOptions(k=model.proof["k"], deadlock=model.engine["deadlock"],
                                         timeout=timeout or model.proof["timeout"] or None,
                                         workers=workers))
    seconds = time.perf_counter() - t0
    z3 = result.stats.get("z3", {})
    return {
        "model": name, "outcome": result.outcome, "k": result.k,
        "invariants": len(machine.invariants) + len(machine.step_invariants),
        "lemmas used": (f"{len(result.lemmas_used)}/{len(machine.lemmas)}"
                        if result.outcome == PROVED else f"-/{len(machine.lemmas)}"),
        "seconds": round(seconds, 2),
        # Linux reports ru_maxrss in KiB
        "peak MB": round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                          + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024),
        "z3 rlimit": z3.get("rlimit"), "conflicts": z3.get("conflicts"),
        "decisions": z3.get("decisions"),
        "z3 MB": None if z3.get("max_memory_mb") is None else round(z3["max_memory_mb"]),
    }


def in_child(name: str, timeout: float | None, workers: int) -> dict[str, Any]:
    """`prove_one` in a fresh interpreter, so the peak memory is that proof's alone."""
    args = [sys.executable, __file__, "--child", name, "--workers", str(workers)]
    if timeout is not None:
        args += ["--timeout", str(timeout)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        error = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"model": name, "outcome": f"error: {error}"}
    return json.loads(done.stdout)


def proved_models() -> list[str]:
    """The models whose file declares `[expect] proof`."""
    return [p.stem for p in list_models(MODELS) if load_model(p, MODELS).expect_proof]


def cell(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else str(value)


def print_row(row: dict[str, Any], widths: dict[str, int]) -> None:
    print("  ".join(f"{cell(row.get(c)):{align}{widths[c]}}" for c, align in COLUMNS),
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="more models (names in models/)")
    parser.add_argument("--only", action="store_true",
                        help="only the models named, not those with [expect] proof")
    parser.add_argument("--timeout", type=float,
                        help="seconds per proof (default: the model's proof.timeout)")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes sharing each proof's goals (default 1)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(prove_one(args.child, args.timeout, args.workers)))
        return
    names = list(dict.fromkeys(([] if args.only else proved_models()) + args.models))
    widths = {c: max(len(c), 11) for c, _ in COLUMNS}
    widths["model"] = max([len(n) for n in names] + [5])
    widths["outcome"] = len("not inductive")
    print_row({c: c for c, _ in COLUMNS}, widths)
    started = time.perf_counter()
    for name in names:
        print_row(in_child(name, args.timeout, args.workers), widths)
    command = " ".join(["python bench/prove.py", *sys.argv[1:]])
    print(f"{len(names)} proofs in {time.perf_counter() - started:.0f} s ({command})")


if __name__ == "__main__":
    main()

"""Spacer on the same models in three forms, to see what helps PDR with no lemmas.

- `int`: the encoding `ctmc prove --engine pdr` ships (decision 0026): numbers are
  unbounded integers.
- `bv`: the same clauses with every number a signed bit-vector, wide enough for the
  model's slot bounds with room to spare (twice their bits, plus two): the "second
  try" the issue suggested. An experiment, not an engine: its width is not derived
  from every expression, so a run near that width could wrap around.
- `mined`: integers, seeded as `ctmc prove --engine pdr --mine` seeds them, with facts
  no person wrote: the one- and two-literal candidates `ctmc infer` mines from the
  reachable states, those that hold initially, the largest inductive subset of them
  found by Houdini. Mining and Houdini's seconds are part of the time (and shown).

Each run is a process of its own under `--timeout`; a proof is re-checked with a
plain solver (initiation, consecution, safety) in the run's own encoding. Printed per
model and form: outcome, seconds (mined: Houdini's share too), peak memory, and the
clauses of the invariant (mined: and how many seeds).

    python bench/spacer_variants.py                        # every model, 300 s each
    python bench/spacer_variants.py --timeout 60 --form bv mutex tracker_small@bfs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from proof_engines import MODELS, measured  # noqa: E402  (bench/ is the script's folder)

FORMS = ("int", "bv", "mined")
DEFAULT_MODELS = ["mutex", "two_phase_commit", "tracker_small@bfs", "v1_tiny",
                  "log_driven_tiny"]


class BitVecNumbers:
    """Numbers as signed bit-vectors of one width (the `IntNumbers` interface)."""

    def __init__(self, width: int):
        self.width = width

    def var(self, name: str):  # type: ignore[no-untyped-def]
        import z3
        return z3.BitVec(name, self.width)

    def val(self, value: int):  # type: ignore[no-untyped-def]
        import z3
        return z3.BitVecVal(value, self.width)

    def lt(self, a, b):  # type: ignore[no-untyped-def]
        return a < b  # signed, as z3's BitVecRef operators are

    def le(self, a, b):  # type: ignore[no-untyped-def]
        return a <= b

    def add(self, a, b):  # type: ignore[no-untyped-def]
        return a + b

    def sub(self, a, b):  # type: ignore[no-untyped-def]
        return a - b


def one(name: str, form: str, timeout: float) -> dict:
    """One form on one model, in this process: a JSON-able row. (Imports are here: the
    parent process only launches runs and prints.)"""
    import tempfile

    import z3

    from checker.backends.z3_terms import Z3Encoder
    from checker.engines.symbolic.deadline import Deadline, OutOfTime
    from checker.engines.symbolic.pdr import (
        SpacerEvents,
        conjuncts,
        horn_clauses,
        proved_seeds,
        recheck,
    )
    from checker.engines.symbolic.unroll import Unrolling
    from checker.models import build_machine, load_model
    from checker.progress import Heartbeat

    folder, model, sets = MODELS[name]
    overrides = dict(s.split("=", 1) for s in sets) or None
    machine = build_machine(load_model(model, folder), overrides, proof=True)  # as prove
    machine = dataclasses.replace(machine, lemmas=[])
    started = time.perf_counter()
    deadline = Deadline(timeout)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    u = Unrolling(machine)
    row: dict = {"seeds": None, "houdini_s": None}
    if form == "bv":
        bound = max(max(abs(s.lo), abs(s.hi)) for s in machine.slots)
        u.enc = Z3Encoder(machine, BitVecNumbers(2 * bound.bit_length() + 2))  # type: ignore[arg-type]
    seeded = z3.BoolVal(True)
    if form == "mined":  # as `ctmc prove --engine pdr --mine` seeds Spacer
        try:
            seeds = proved_seeds(machine, deadline, say, spec=False, mine=True)
        except OutOfTime:  # mining or Houdini ran out of time
            return {**row, "outcome": "unknown",
                    "seconds": time.perf_counter() - started}
        seeded = seeds.formula(u)
        row["seeds"] = len(seeds.names()) + len(seeds.mined)
        row["houdini_s"] = time.perf_counter() - started
    fp, reach, bad = horn_clauses(u, False, seeded)
    fp.set("timeout", max(1, int((deadline.left() or 0) * 1000)))
    with tempfile.TemporaryDirectory(prefix="ctmc-spacer-") as scratch:
        events = SpacerEvents(Path(scratch) / "spacer.trace")
        fp.set("spacer.trace_file", str(events.path))
        try:
            with Heartbeat(say, events.status):
                answer = str(fp.query(bad))
        except z3.Z3Exception:  # Spacer's timer
            answer = "unknown"
    row["outcome"] = {"unsat": "proved", "sat": "counterexample"}.get(answer, "unknown")
    if answer == "unsat":
        invariant = z3.substitute_vars(fp.get_cover_delta(-1, reach), *u.state(0))
        failed = recheck(u, z3.And(seeded, invariant), False, Deadline(None))
        row["outcome"] = "proved" if not failed else f"re-check failed: {failed}"
        row["clauses"] = len(conjuncts(invariant))
    row["seconds"] = time.perf_counter() - started
    return row


def run(name: str, form: str, timeout: float) -> dict:
    """`one` in a process of its own, with its peak memory."""
    args = [sys.executable, __file__, "--one", name, form, "--timeout", str(timeout)]
    out, code, _, peak = measured(args)
    try:
        row = json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        row = {"outcome": f"exit {code}", "seconds": float("nan")}
    row["mb"] = peak
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=DEFAULT_MODELS, metavar="MODEL",
                        help=f"of: {', '.join(MODELS)} [default: {', '.join(DEFAULT_MODELS)}]")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per form and model [default: 300]")
    parser.add_argument("--form", dest="forms", action="append", choices=FORMS,
                        help="run only this form (repeatable) [default: all]")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(one(*options.one, options.timeout)))
        return
    unknown = [m for m in options.models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; known: {', '.join(MODELS)}")
    print(f"{'model':<20}{'form':<7}{'outcome':<16}{'seconds':>9}{'houdini s':>11}"
          f"{'peak MB':>9}  clauses")
    for name in options.models:
        for form in options.forms or FORMS:
            row = run(name, form, options.timeout)
            houdini_s = "-" if row.get("houdini_s") is None else f"{row['houdini_s']:.1f}"
            seeds = "" if row.get("seeds") is None else f" + {row['seeds']:,} seeds"
            print(f"{name:<20}{form:<7}{row['outcome']:<16}{row['seconds']:>9.1f}"
                  f"{houdini_s:>11}{row['mb']:>9.0f}  {row.get('clauses', '-')}{seeds}",
                  flush=True)


if __name__ == "__main__":
    main()

"""The CI gate: run a folder of model files and compare each with its expectation.

Every model file names its engine limits and the outcome it should give (`holds`
or `violates NAME`), and optionally a baseline distinct-state count. The gate runs
them one by one, in name order, and returns one `GateResult` per file: what was
expected, what happened, and every reason the run is a surprise. A file that does
not load or build is a surprise too (`broken`), and never stops the other files.

Counterexamples are written as ITF; the results serialise to JSON and JUnit XML.
Printing is the caller's business: nothing here writes to stdout or stderr.
`update_baseline` rewrites a model file's `states = N` (or `orbits = N`) line and
nothing else.

A model whose spec declares scalarsets runs twice: in full (`states`) and storing
one state per orbit (`orbits`). The two must agree on the verdict, the diameter
and the counterexample's length, or the declared symmetry is wrong. A model with
`engine.full_search = false` runs only the second way (the first is out of reach).

With `prove`, a model that expects `holds` and has a [proof] table, or any model
that declares `expect.proof`, is also proved by k-induction (`ctmc prove`, at its
[proof.params] sizes, k and timeout): the outcome, k, lemmas used of those stated
and seconds join its result, and a proof that does not give the expected outcome
(a lost proof) is a surprise like a lost state count.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import tomllib
import traceback
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker.engines.result import CheckResult
from checker.errors import CheckerError, ModelError
from checker.lang.machine import Machine
from checker.models import (
    SUFFIX,
    Model,
    build_machine,
    check_models_dir,
    list_models,
    load_model,
    outcome_matches,
)
from checker.outputs import MARK, replace_text


@dataclass
class ProofRow:
    """A model's proof in the gate: what it gave and what the file expects."""

    expected: str | None  # the file's expect.proof
    outcome: str  # proved / counterexample / not inductive / unknown
    k: int
    lemmas_used: int | None  # of the lemmas the proof used (known only when proved)
    lemmas_stated: int  # the lemmas the spec states for this model
    seconds: float
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"expected": self.expected, "outcome": self.outcome, "k": self.k,
                "lemmas_used": self.lemmas_used, "lemmas_stated": self.lemmas_stated,
                "seconds": self.seconds, "message": self.message}

    def cell(self) -> str:
        """`proved, k=1, 12/12 lemmas, 1.10 s`: the table's and JUnit's wording."""
        used = "-" if self.lemmas_used is None else str(self.lemmas_used)
        return (f"{self.outcome}, k={self.k}, {used}/{self.lemmas_stated} lemmas, "
                f"{self.seconds:.2f} s")


@dataclass
class GateResult:
    """One model file's run. `surprises` is empty when it met every expectation."""

    path: Path
    name: str  # the file's stem
    spec: str = ""  # the spec's name once built, else as the file names it, else ""
    expected: str = ""  # "holds" / "violates NAME"; "" when the file does not load
    got: str | None = None  # the outcome in the same words; None when nothing ran
    complete: bool = True  # False when a depth bound cut the exploration short
    states: int | None = None  # distinct states explored
    baseline: int | None = None  # the file's expect.states (after an update: the new one)
    baseline_was: int | None = None  # the replaced baseline, when --update-baselines changed it
    baseline_updated: bool = False
    orbits: int | None = None  # distinct states under the spec's symmetry, if it declares one
    orbit_baseline: int | None = None  # the file's expect.orbits (after an update: the new one)
    diameter: int | None = None
    trace_length: int | None = None  # steps in the counterexample
    trace_file: Path | None = None
    seconds: float = 0.0
    proof: ProofRow | None = None  # with --prove, for a model that has a proof to run
    # per action: [instances enabled, new states found], summed over its instances
    coverage: dict[str, list[int]] = field(default_factory=dict)
    broken: bool = False  # the file did not load, build or run
    detail: str | None = None  # the traceback of an internal error, for debugging
    surprises: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.surprises

    @property
    def reason(self) -> str:
        return "; ".join(self.surprises)


@dataclass
class GateReport:
    results: list[GateResult]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def broken(self) -> list[GateResult]:
        return [r for r in self.results if r.broken]

    @property
    def surprises(self) -> list[GateResult]:
        return [r for r in self.results if not r.ok]


# --- which files ---------------------------------------------------------------

def collect_models(args: Sequence[str | os.PathLike], models_dir: Path) -> list[Path]:
    """Model files named by `args` (folders, files, or bare names in models_dir),
    or every file in models_dir when there are none; sorted by name, no repeats."""
    found: list[Path] = []
    if not args:
        check_models_dir(models_dir)
    for arg in args or [models_dir]:
        path = Path(arg)
        if path.is_dir():
            files = list_models(path)
            if not files:
                raise ModelError(f"{path}: no model files (*{SUFFIX}) in this folder")
            found.extend(files)
        elif path.is_file():
            found.append(path)
        elif path.name == str(arg) and (Path(models_dir) / f"{arg}{SUFFIX}").is_file():
            found.append(Path(models_dir) / f"{arg}{SUFFIX}")
        else:
            raise ModelError(f"{arg}: no such folder or model file")
    unique = {p.resolve(): p for p in found}
    return sorted(unique.values(), key=lambda p: (p.name, str(p)))


# --- running -------------------------------------------------------------------

def run_gate(paths: Iterable[Path], models_dir: Path, trace_dir: Path,
             update_baselines: bool = False,
             on_start: Callable[[int, int, Path], None] | None = None,
             on_done: Callable[[int, int, GateResult], None] | None = None,
             progress: Callable[[str], None] | None = None, workers: int = 1,
             prove: bool = False) -> GateReport:
    """Run every file in `paths`; `on_start`/`on_done` get (index, total, ...) for progress,
    and `progress` the engine's own lines during a long model; `workers` processes share
    each search; `prove` also runs the proofs (see the module docstring)."""
    paths = list(paths)
    started = time.perf_counter()
    results = []
    for i, path in enumerate(paths, 1):
        if on_start:
            on_start(i, len(paths), path)
        result = run_model(path, models_dir, trace_dir, update_baselines, progress, workers,
                           prove)
        results.append(result)
        if on_done:
            on_done(i, len(paths), result)
    return GateReport(results, round(time.perf_counter() - started, 3))


def run_model(path: Path, models_dir: Path, trace_dir: Path,
              update_baselines: bool = False,
              progress: Callable[[str], None] | None = None, workers: int = 1,
              prove: bool = False) -> GateResult:
    """One model file: load, build, check, compare (and prove, with `prove`); every
    failure becomes a surprise."""
    result = GateResult(path=path, name=path.stem)
    started = time.perf_counter()
    try:
        _run(result, path, models_dir, trace_dir, update_baselines, progress, workers, prove)
    except CheckerError as exc:
        _broken(result, str(exc))
    except (Exception, SystemExit) as exc:  # a spec module that crashes must not stop the gate
        _broken(result, f"internal error: {type(exc).__name__}: {exc}")
        result.detail = traceback.format_exc()
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def _broken(result: GateResult, message: str) -> None:
    result.broken = True
    result.surprises.append(" ".join(line.strip() for line in message.splitlines()))


def _run(result: GateResult, path: Path, models_dir: Path, trace_dir: Path,
         update_baselines: bool, progress: Callable[[str], None] | None, workers: int,
         prove: bool) -> None:
    model = load_model(path, models_dir)
    result.spec, result.expected = model.spec_name, model.expect_outcome
    result.baseline, result.orbit_baseline = model.expect_states, model.expect_orbits
    machine = build_machine(model)
    result.spec = machine.spec_name

    from checker.traces.itf import write_counterexample

    full_search = model.engine["full_search"]
    checked = _search(machine, model, progress, workers, symmetry=not full_search)
    result.got, result.complete = checked.expectation, checked.complete
    result.diameter = checked.stats.get("diameter")
    for row in checked.coverage:
        counts = result.coverage.setdefault(row["name"], [0, 0])
        counts[0] += row["enabled"]
        counts[1] += row["new_states"]
    if checked.violation is not None:
        v = checked.violation
        result.trace_length = len(v.trace)
        try:
            result.trace_file = write_counterexample(
                v.trace, trace_dir / f"{model.name}-{v.name}-bfs.itf.json", model=model.name,
                model_file=str(model.path), gate=True)
        except CheckerError as exc:
            result.surprises.append(str(exc))
    matched = outcome_matches(model, checked)
    if not matched:
        result.surprises.append(f"expected {model.expect_outcome}, got {checked.expectation}")
    update = update_baselines and matched
    if full_search:
        result.states = checked.stats.get("distinct_states")
        _compare_count(result, "states", result.states, update)
    if machine.scalarsets:
        _compare_symmetry(result, machine, model, checked, progress, workers, update)
    if prove and (model.expect_proof is not None
                  or (model.has_proof and model.expect_outcome == "holds")):
        _prove(result, model, progress, workers)


def _compare_symmetry(result: GateResult, machine: Machine, model: Model,
                      checked: CheckResult, progress: Callable[[str], None] | None,
                      workers: int, update: bool) -> None:
    """The search under the spec's symmetry against the full one, and its orbit count."""
    full_search = model.engine["full_search"]
    reduced = _search(machine, model, progress, workers, symmetry=True) if full_search \
        else checked
    length = None if reduced.violation is None else len(reduced.violation.trace)
    if (reduced.expectation, reduced.stats.get("diameter"), length) != \
            (checked.expectation, result.diameter, result.trace_length):
        result.surprises.append(
            f"with symmetry: {reduced.expectation}, diameter {reduced.stats.get('diameter')}"
            f", counterexample length {length}; in full: {checked.expectation}, diameter "
            f"{result.diameter}, counterexample length {result.trace_length}")
        return
    result.orbits = reduced.stats.get("distinct_states")
    _compare_count(result, "orbits", result.orbits, update)


def _prove(result: GateResult, model: Model, progress: Callable[[str], None] | None,
           workers: int) -> None:
    """The model's proof, as `ctmc prove MODEL` runs it (`workers` processes share the
    inductive step's goals); a lost proof is a surprise."""
    from checker.engines.symbolic.induction import PROVED, prove
    from checker.engines.symbolic.options import ProveOptions

    machine = build_machine(model, proof=True)
    proof = prove(machine, ProveOptions(k=model.proof["k"], deadlock=model.engine["deadlock"],
                                        timeout=model.proof["timeout"] or None,
                                        progress=progress, workers=workers))
    result.proof = ProofRow(
        expected=model.expect_proof, outcome=proof.outcome, k=proof.k,
        lemmas_used=len(proof.lemmas_used) if proof.outcome == PROVED else None,
        lemmas_stated=len(machine.lemmas), seconds=proof.stats.get("seconds", 0.0),
        message=proof.message)
    if model.expect_proof is not None and proof.outcome != model.expect_proof:
        why = proof.message.splitlines()[0] if proof.message else ""
        result.surprises.append(f"expected proof {model.expect_proof}, got {proof.outcome}"
                                + (f" ({why})" if why else ""))


def _search(machine: Machine, model: Model, progress: Callable[[str], None] | None,
            workers: int, symmetry: bool) -> CheckResult:
    """The model's BFS, storing every state or one per orbit of its spec's symmetry."""
    from checker.run import BfsOptions, run

    return run(machine, BfsOptions(max_depth=model.engine["max_depth"] or None,
                                   deadlock=model.engine["deadlock"], label=model.name,
                                   progress=progress, symmetry=symmetry, workers=workers))


def _compare_count(result: GateResult, key: str, count: int | None, update: bool) -> None:
    """Hold a count (`states`, or `orbits` under symmetry) to the file's baseline, or
    write it there when updating."""
    baseline = result.baseline if key == "states" else result.orbit_baseline
    if count is None or count == baseline:
        return
    if update:
        try:
            update_baseline(result.path, count, key=key)
        except ModelError as exc:
            result.surprises.append(str(exc))
            return
        if key == "states":
            result.baseline_was, result.baseline = result.baseline, count
            result.baseline_updated = True
        else:
            result.orbit_baseline = count
    elif baseline is not None:
        result.surprises.append(f"{count:,} {key}, baseline {baseline:,}")


# --- baselines ---------------------------------------------------------------------

_TABLE = re.compile(r"^\s*\[\[?\s*([^\]]*?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*[A-Za-z0-9_\-\"'.]+\s*=")


def update_baseline(path: Path, states: int, key: str = "states") -> None:
    """Set `key = N` (states, or orbits) in the file's [expect] table, changing that line only
    (or adding it after the table's last key, or adding the table at the end).
    The result is re-read before it is written: a file this cannot edit safely
    (e.g. an inline `expect = {...}` table) is refused with a ModelError."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read: {exc}") from None
    new = _with_baseline(text, states, key)
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"{path}: malformed TOML: {exc}") from None
    try:
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        after = None
    before.setdefault("expect", {})
    if isinstance(before["expect"], dict):
        before["expect"][key] = states
    if after != before:
        raise ModelError(f"{path}: cannot update the baseline: no [expect] table this "
                         f"editor understands; set expect.{key} = {states} by hand")
    real = path.resolve()  # through a symbolic link: the model is its target, the link stays
    tmp = real.with_name(f".{real.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(new)
        shutil.copymode(real, tmp)
        os.replace(tmp, real)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _with_baseline(text: str, states: int, key: str) -> str:
    pattern = re.compile(rf"^(\s*{key}\s*=\s*)([^#\r\n]*?)(\s*(?:#.*)?)$")
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if "\r\n" in text else "\n"
    table: str | None = None
    last_key: int | None = None  # the last key line in [expect]
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        header = _TABLE.match(body)
        if header:
            table = header.group(1)
            if table == "expect":
                last_key = i
            continue
        if table != "expect":
            continue
        found = pattern.match(body)
        if found:
            lines[i] = f"{found.group(1)}{states}{found.group(3)}{line[len(body):]}"
            return "".join(lines)
        if _KEY.match(body):
            last_key = i
    if last_key is not None:
        if not lines[last_key].endswith(("\n", "\r")):
            lines[last_key] += newline
        lines.insert(last_key + 1, f"{key} = {states}{newline}")
        return "".join(lines)
    if text and not text.endswith(("\n", "\r")):
        text += newline
    return f"{text}[expect]{newline}{key} = {states}{newline}"


# --- reports -----------------------------------------------------------------------

def to_json(report: GateReport) -> dict[str, Any]:
    """The report as plain JSON data."""
    return {
        "ok": report.ok,
        "models": len(report.results),
        "surprises": len(report.surprises),
        "broken": len(report.broken),
        "seconds": report.seconds,
        "results": [{
            "model": r.name, "file": str(r.path), "spec": r.spec,
            "expected": r.expected or None, "got": r.got, "complete": r.complete,
            "states": r.states, "baseline": r.baseline,
            "baseline_updated": r.baseline_updated, "baseline_was": r.baseline_was,
            "orbits": r.orbits, "orbit_baseline": r.orbit_baseline,
            "diameter": r.diameter, "trace_length": r.trace_length,
            "trace_file": None if r.trace_file is None else str(r.trace_file),
            "seconds": r.seconds, "proof": None if r.proof is None else r.proof.as_dict(),
            "coverage": r.coverage, "ok": r.ok, "broken": r.broken,
            "surprises": list(r.surprises),
        } for r in report.results],
    }


def to_junit(report: GateReport, suite: str = "ctmc gate") -> ET.ElementTree:
    """JUnit XML: a <testcase> per model (classname = spec), a <failure> per surprise."""
    root = ET.Element("testsuites", name=suite, tests=str(len(report.results)),
                      failures=str(len(report.surprises)), errors="0",
                      time=f"{report.seconds:.3f}")
    suite_el = ET.SubElement(root, "testsuite", name=suite, tests=str(len(report.results)),
                             failures=str(len(report.surprises)), errors="0", skipped="0",
                             time=f"{report.seconds:.3f}")
    for r in report.results:
        case = ET.SubElement(suite_el, "testcase", classname=r.spec or "unknown",
                             name=r.name, file=str(r.path), time=f"{r.seconds:.3f}")
        if not r.ok:
            failure = ET.SubElement(case, "failure", message=r.reason,
                                    type="broken" if r.broken else "surprise")
            failure.text = r.reason
        out = [f"model file: {r.path}", f"expected: {r.expected or '-'}",
               f"got: {r.got or '-'}" + ("" if r.complete else " (depth-bounded)"),
               f"states: {_opt(r.states)}", f"baseline: {_opt(r.baseline)}",
               f"orbits: {_opt(r.orbits)}", f"orbit baseline: {_opt(r.orbit_baseline)}",
               f"diameter: {_opt(r.diameter)}",
               f"trace: {r.trace_file or '-'}"]
        if r.trace_length is not None:
            out.append(f"trace length: {r.trace_length}")
        if r.proof is not None:
            out.append(f"proof: {r.proof.cell()}"
                       + (f" (expected {r.proof.expected})" if r.proof.expected else ""))
        if r.baseline_updated:
            out.append(f"baseline updated from {_opt(r.baseline_was)}")
        ET.SubElement(case, "system-out").text = "\n".join(out)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(report: GateReport, path: Path) -> None:
    """The JUnit report, replaced atomically (`checker.outputs`)."""
    root = to_junit(report).getroot()
    assert root is not None  # to_junit builds a tree with a root
    xml = ET.tostring(root, encoding="unicode")
    replace_text(path, f'<?xml version="1.0" encoding="utf-8"?>\n<!-- {MARK} -->\n{xml}\n')


def _opt(value: int | None) -> str:
    return "-" if value is None else str(value)

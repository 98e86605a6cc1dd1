"""Exact state counts, diameters, shortest counterexamples and deadlocks.

Three sources are held to each other:
* hand derivations: `EXPECTED` in each module of `tests/specs/` (see their docstrings);
* the naive reference BFS (`tests/naive_bfs.py`): Python sets over the scalar backend;
* the BFS engine (`checker.engines.explicit.bfs`).

On top of the hand-derived specs, the tracker's small models (`models/*.toml`; the
benchmark models live in `bench/models/`) are explored by both BFS implementations,
which must agree on every count and on the length and property of the shortest
counterexample, and must match
the model's expected outcome (and its `states` baseline when it has one).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `tests.specs.x` and `spec` need the repository root
    sys.path.insert(0, str(ROOT))

from checker.lang.machine import Machine  # noqa: E402
from checker.lang.spec import Spec  # noqa: E402
from checker.registry import find_spec  # noqa: E402
from tests.naive_bfs import naive_bfs  # noqa: E402

SPECS_DIR = ROOT / "tests" / "specs"
MODELS_DIR = ROOT / "models"


# --- what to check ----------------------------------------------------------------

def _hand_cases() -> list[tuple[str, Spec, dict[str, Any]]]:
    cases = []
    for info in sorted(pkgutil.iter_modules([str(SPECS_DIR)]), key=lambda i: i.name):
        module = importlib.import_module(f"tests.specs.{info.name}")
        specs = {v.name: v for v in vars(module).values() if isinstance(v, Spec)}
        for name, facts in getattr(module, "EXPECTED", {}).items():
            assert name in specs, f"tests/specs/{info.name}.py: EXPECTED names no spec {name!r}"
            cases.append((name, specs[name], facts))
    return cases


HAND = _hand_cases()
HAND_IDS = [name for name, _, _ in HAND]


def _model_files() -> list[Path]:
    if not MODELS_DIR.is_dir():
        return []
    return sorted(MODELS_DIR.glob("*.toml"))


MODELS = _model_files()


@cache
def _model(path: Path) -> tuple[Machine, dict[str, Any]]:
    """The machine a model file describes (with its invariant selection) and the file."""
    data = tomllib.loads(path.read_text())
    spec = find_spec(data["spec"])
    machine = spec.instantiate(data.get("params", {}), data.get("mutations", []), str(path))
    wanted = data.get("invariants") or []
    if wanted:
        known = {p.name for p in machine.invariants + machine.step_invariants
                 + machine.lemmas + machine.liveness}
        unknown = sorted(set(wanted) - known)
        assert not unknown, f"{path.name}: unknown invariants {unknown}"
        machine = dataclasses.replace(
            machine,
            invariants=[p for p in machine.invariants if p.name in wanted],
            step_invariants=[p for p in machine.step_invariants if p.name in wanted],
            lemmas=[p for p in machine.lemmas if p.name in wanted],
            liveness=[p for p in machine.liveness if p.name in wanted])
    return machine, data


def _unchecked(machine: Machine) -> Machine:
    """The same machine with every property off (constraints stay)."""
    return dataclasses.replace(machine, invariants=[], step_invariants=[], lemmas=[],
                               liveness=[])


def _safety_only(machine: Machine) -> Machine:
    """The same machine without its liveness properties: the hand facts are for safety."""
    return dataclasses.replace(machine, liveness=[])


def _engine():
    from checker.engines.explicit.bfs import BfsOptions, check
    return check, BfsOptions


# --- hand derivations against the naive BFS ------------------------------------------

@pytest.mark.parametrize(("name", "spec", "facts"), HAND, ids=HAND_IDS)
def test_naive_matches_hand_counts(name, spec, facts):
    machine = _unchecked(spec.instantiate(facts["params"]))
    got = naive_bfs(machine)
    assert (got.distinct, got.diameter) == (facts["states"], facts["diameter"]), name
    assert got.violation is None and got.complete


@pytest.mark.parametrize(("name", "spec", "facts"), HAND, ids=HAND_IDS)
def test_naive_matches_hand_violation(name, spec, facts):
    got = naive_bfs(spec.instantiate(facts["params"]))
    want = facts.get("violation")
    if want is None:
        assert got.violation is None, f"{name}: unexpected {got.outcome}"
        assert got.distinct == facts["states"]
    else:
        assert got.violation is not None, f"{name}: expected {want['name']}"
        assert (got.violation.kind, got.violation.name, len(got.violation)) == (
            want["kind"], want["name"], want["length"])


@pytest.mark.parametrize(("name", "spec", "facts"), HAND, ids=HAND_IDS)
def test_naive_matches_hand_deadlock(name, spec, facts):
    got = naive_bfs(_unchecked(spec.instantiate(facts["params"])), deadlock=True)
    if facts["deadlock"] is None:
        assert got.violation is None, f"{name}: unexpected deadlock"
    else:
        assert got.violation is not None and got.violation.kind == "deadlock", name
        assert len(got.violation) == facts["deadlock"]


def test_naive_max_depth_cuts_exploration():
    _, spec, facts = next(c for c in HAND if c[0] == "two_counters")
    got = naive_bfs(_unchecked(spec.instantiate(facts["params"])), max_depth=2)
    assert (got.distinct, got.diameter, got.complete) == (6, 2, False)  # 1 + 2 + 3 states


def test_wide_spec_needs_more_than_64_bits():
    _, spec, facts = next(c for c in HAND if c[0] == "wide")
    machine = spec.instantiate(facts["params"])
    bits = sum((s.hi - s.lo).bit_length() for s in machine.slots)
    assert bits > 64


# --- the BFS engine against the hand derivations -------------------------------------

@pytest.mark.parametrize(("name", "spec", "facts"), HAND, ids=HAND_IDS)
def test_engine_matches_hand_counts(name, spec, facts):
    check, options = _engine()
    result = check(_unchecked(spec.instantiate(facts["params"])),
                   options(max_depth=None, deadlock=False))
    assert result.outcome == "holds", f"{name}: {result.expectation}"
    assert result.complete
    assert result.stats["distinct_states"] == facts["states"], name
    assert result.stats["diameter"] == facts["diameter"], name


@pytest.mark.parametrize(("name", "spec", "facts"), HAND, ids=HAND_IDS)
def test_engine_matches_hand_violation(name, spec, facts):
    check, options = _engine()
    result = check(_safety_only(spec.instantiate(facts["params"])),
                   options(max_depth=None, deadlock=False))
    want = facts.get("violation")
    if want is None:
        assert result.outcome == "holds", f"{name}: {result.expectation}"
        assert result.stats["distinct_states"] == facts["states"]
    else:
        assert result.outcome == "violated", f"{name}: {result.expectation}"
        v = result.violation
        assert (v.kind, v.name, len(v.trace)) == (want["kind"], want["name"], want["length"])
        _assert_replays(v.trace.machine, v.trace.states)


@pytest.mark.parametrize(("name", "spec", "facts"), HAND, ids=HAND_IDS)
def test_engine_matches_hand_deadlock(name, spec, facts):
    check, options = _engine()
    result = check(_unchecked(spec.instantiate(facts["params"])),
                   options(max_depth=None, deadlock=True))
    if facts["deadlock"] is None:
        assert result.outcome == "holds", f"{name}: {result.expectation}"
    else:
        assert result.outcome == "violated" and result.violation.kind == "deadlock", name
        assert len(result.violation.trace) == facts["deadlock"]
        _assert_replays(result.violation.trace.machine, result.violation.trace.states)


def _assert_replays(machine: Machine, states: list) -> None:
    """A counterexample starts in an initial state and each step is a real transition."""
    from checker.backends.scalar import ScalarMachine

    sm = ScalarMachine(machine)
    assert tuple(states[0]) in {tuple(s) for s in machine.init_states}
    for before, after in zip(states, states[1:], strict=False):
        assert tuple(after) in {t for _, t in sm.successors(tuple(before))}


# --- the tracker's models: naive BFS, expectations, and the engine ---------------------

NAIVE_LIMIT = 15_000  # states: the naive oracle runs at a few thousand states per second
# (fewer on the lease models with a split or merge, whose lemmas replay two logs)
NAIVE_LIVENESS_LIMIT = 5_000  # the naive liveness oracle is quadratic in the states


@cache
def _size(path: Path) -> int:
    """Distinct states of a model with its properties off, counted by the engine: exact
    up to the oracle's limit, and past it only as far as the first depth (doubling from
    6) that shows the model is too big, so a large model costs a few levels, not a full
    search."""
    check, options = _engine()
    machine = _unchecked(_model(path)[0])
    depth = 6
    while True:
        stats = check(machine, options(deadlock=False, max_depth=depth)).stats
        if stats["distinct_states"] > NAIVE_LIMIT or stats["diameter"] < depth:
            return stats["distinct_states"]
        depth *= 2


def _naive(path: Path, machine: Machine, **kwargs: Any) -> Any:
    """The naive BFS, or a skip that says why for models beyond its reach (their counts
    are still cross-checked: exact vs hashed fingerprints, batch sizes, and Spark).
    The engine sizes the model first, so the oracle never starts a hopeless run."""
    if _size(path) > NAIVE_LIMIT:
        pytest.skip(f"{_size(path):,} states: beyond the naive oracle's {NAIVE_LIMIT:,}")
    return naive_bfs(machine, **kwargs)


@cache
def _naive_checked(path: Path) -> Any:
    """The naive BFS of a model as its file sets it up (properties, deadlock, depth),
    run once: both the expectation test and the engine comparison read it."""
    machine, data = _model(path)
    engine = data.get("engine", {})
    return _naive(path, machine, deadlock=engine.get("deadlock", True),
                  max_depth=engine.get("max_depth") or None)


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_naive_meets_model_expectation(path):
    machine, data = _model(path)
    got = _naive_checked(path)
    expect = data["expect"]
    if machine.liveness:  # safety holds; the naive liveness oracle gives the verdict
        assert got.violation is None, path.name
        from tests.naive_liveness import naive_liveness

        if got.distinct > NAIVE_LIVENESS_LIMIT:
            pytest.skip(f"{got.distinct:,} states: beyond the naive liveness oracle's "
                        f"{NAIVE_LIVENESS_LIMIT:,}")
        violated = [p.name for p in machine.liveness if naive_liveness(machine, p) is not None]
        got_outcome = f"violates {violated[0]}" if violated else "holds"
        assert got_outcome == expect["outcome"], path.name
        return
    assert got.outcome == expect["outcome"], path.name
    if "states" in expect and got.violation is None:
        assert got.distinct == expect["states"], path.name


@pytest.mark.parametrize("path", MODELS, ids=[p.stem for p in MODELS])
def test_engine_agrees_with_naive_on_model(path):
    check, options = _engine()
    machine, data = _model(path)
    engine = data.get("engine", {})
    deadlock, max_depth = engine.get("deadlock", True), engine.get("max_depth") or None
    # Counts: both explore everything with the properties off. A checked naive run that
    # found nothing explored exactly those states (properties and deadlock only report).
    checked = _naive_checked(path)
    counts = checked if checked.violation is None else _naive(
        path, _unchecked(machine), deadlock=False, max_depth=max_depth)
    full = check(_unchecked(machine), options(max_depth=max_depth, deadlock=False))
    assert full.stats["distinct_states"] == counts.distinct, path.name
    assert full.stats["diameter"] == counts.diameter, path.name
    # Transitions computed; an engine may also count its initial states as generated.
    n_init = len(machine.init_states)
    assert full.stats["generated"] in (counts.generated, counts.generated + n_init), path.name
    # Outcome: the same verdict, with a counterexample of the same (shortest) length.
    result = check(machine, options(max_depth=max_depth, deadlock=deadlock))
    assert result.expectation == checked.outcome, path.name
    if checked.violation is not None:
        assert len(result.violation.trace) == len(checked.violation), path.name
        _assert_replays(result.violation.trace.machine, result.violation.trace.states)

"""Model files: a bounded instance of a spec, and what checking it should give.

A model is data (TOML), not code, so that a folder of them can gate CI: each
names a spec, its bounds, the mutations switched on, the properties to check,
the engine's limits and the expected outcome. Every problem in a file is
reported as one line naming the file and the key, never as a traceback.

    description = "two requests, one lease transfer"
    spec = "tracker"            # registered name or module:attribute
    mutations = []
    invariants = []             # empty or absent: all of the spec's properties
    [params]
    requests = 2
    [engine]
    deadlock = false
    max_depth = 0               # 0: unbounded
    [expect]
    outcome = "holds"           # or "violates NAME"
    states = 1234               # optional baseline distinct-state count
    proof = "proved"            # optional: what `ctmc prove` (and `gate --prove`) gives
    [proof]                     # optional: what `prove` and `infer` work on
    k = 1                       # induction depth
    timeout = 600               # seconds (0: none); on timeout the verdict is unknown
    [proof.params]              # overrides [params] for the symbolic engines, which
    requests = 8                # need not enumerate states
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.errors import ModelError, did_you_mean
from checker.lang.machine import Machine
from checker.outputs import file_kind
from checker.registry import find_spec

if TYPE_CHECKING:
    from checker.engines.result import CheckResult

SUFFIX = ".toml"
# the models that ship with ctmc, beside `checker/` in a checkout and in the wheel alike
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
BENCH_MODELS_DIR = MODELS_DIR.parent / "bench" / "models"
# full_search = false: the model is searched only under its spec's symmetry (one state
# per orbit) by the gate and the tests; storing every state is out of reach
ENGINE_DEFAULTS: dict[str, Any] = {"deadlock": True, "max_depth": 0, "full_search": True}
# What a run can be violated by besides the spec's own properties.
BUILTIN_VIOLATIONS = ("Deadlock", "EvalError")
_TOP_KEYS = ("description", "spec", "mutations", "invariants", "params", "engine", "expect",
             "proof")
_EXPECT_KEYS = ("outcome", "states", "orbits", "proof")
# the outcomes of `ctmc prove` a model file may expect (an `unknown` is never expected)
PROOF_EXPECTATIONS = ("proved", "not inductive", "counterexample")
PROOF_DEFAULTS: dict[str, Any] = {"k": 1, "timeout": 0, "params": {}}
_KIND_NAMES = {str: "a string", bool: "true or false", int: "an integer", dict: "a table",
               list: "a list of strings"}


@dataclass(frozen=True)
class Model:
    path: Path
    name: str  # the file's stem, used in trace file names and reports
    description: str
    spec_name: str
    params: dict[str, Any]
    mutations: tuple[str, ...]
    invariants: tuple[str, ...]  # empty: every invariant, step invariant and lemma
    engine: dict[str, Any]  # ENGINE_DEFAULTS overridden by the file's [engine]
    expect_outcome: str  # "holds" or "violates NAME"
    expect_states: int | None
    expect_orbits: int | None = None  # distinct states under the spec's symmetry
    proof: dict[str, Any] = field(default_factory=lambda: dict(PROOF_DEFAULTS))
    has_proof: bool = False  # the file has a [proof] table
    expect_proof: str | None = None  # one of PROOF_EXPECTATIONS, or None
    selected_by: str = "key invariants"  # where the property selection came from, for errors


def list_models(models_dir: Path) -> list[Path]:
    """Model files in a folder, by name; callers load each so one bad file spoils no others."""
    return sorted(Path(models_dir).glob(f"*{SUFFIX}"))


def resolve_model_path(path_or_name: str, models_dir: Path,
                       also: Sequence[Path] = ()) -> Path:
    """A path as given, or a bare name like `tracker_small` looked up in models_dir, then
    in the folders `also` (the benchmark models)."""
    path = Path(path_or_name)
    if _is_file(path):
        return path
    tried = [path]
    if path.name == path_or_name and path.suffix != SUFFIX:
        for folder in (Path(models_dir), *also):
            candidate = folder / f"{path_or_name}{SUFFIX}"
            if _is_file(candidate):
                return candidate
            tried.append(candidate)
    for place in tried:  # there, but not a file: say what it is rather than "no such file"
        _refuse_other_kinds(place)
    check_models_dir(models_dir)
    known = [p.stem for folder in (Path(models_dir), *also) for p in list_models(folder)]
    hint = did_you_mean(path_or_name, known) if len(path_or_name) < 200 else ""
    shown = path_or_name if len(path_or_name) <= 80 else \
        f"{path_or_name[:40]}... ({len(path_or_name):,} characters)"
    raise ModelError(f"unknown model {shown!r}: no such file, and no model of that name "
                     f"in {models_dir}{hint} (`ctmc list` shows the {len(known)} models)")


def check_models_dir(models_dir: Path) -> None:
    """Refuse a models folder that is not there, rather than finding no model in it."""
    folder = Path(models_dir)
    if not folder.is_dir():
        raise ModelError(f"--models-dir: {folder} "
                         f"{'is not a folder' if folder.exists() else 'does not exist'}")


def _refuse_other_kinds(path: Path) -> None:
    """Refuse a path that is there but is not a regular file (a folder, a FIFO, a
    device), rather than call it missing."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # missing, or a name the system refuses
        return
    raise ModelError(f"{path}: {file_kind(mode)}, not a model file")


def _is_file(path: Path) -> bool:
    """Whether `path` is a regular file; a name the system refuses (too long) is not."""
    try:
        return path.is_file()
    except OSError:
        return False


def load_model(path_or_name: str | Path, models_dir: Path = MODELS_DIR,
               also: Sequence[Path] = (BENCH_MODELS_DIR,)) -> Model:
    """A model file by path, or by name as `ctmc` finds it: in `models_dir` (the models
    that ship with ctmc), then in `also` (the benchmark models)."""
    path = resolve_model_path(str(path_or_name), models_dir, also)
    data = _read_toml(path)
    where = str(path)
    _check_keys(data, _TOP_KEYS, "", where)
    if "spec" not in data:
        raise ModelError(f"{where}: missing key 'spec' (a registered spec name or "
                         f"module:attribute)")
    params = _get(data, "params", dict, where, {})
    for name, value in params.items():
        if not isinstance(value, bool | int | str):
            raise ModelError(f"{where}: key params.{name} must be an integer, boolean or "
                             f"string, got {value!r}")
    engine = _get(data, "engine", dict, where, {})
    _check_keys(engine, tuple(ENGINE_DEFAULTS), "engine.", where)
    for key, default in ENGINE_DEFAULTS.items():
        engine[key] = _get(engine, key, type(default), where, default, prefix="engine.")
    if engine["max_depth"] < 0:
        raise ModelError(f"{where}: key engine.max_depth must be 0 (unbounded) or more, "
                         f"got {engine['max_depth']}")
    expect = _get(data, "expect", dict, where, {})
    _check_keys(expect, _EXPECT_KEYS, "expect.", where)
    counts = {key: _get(expect, key, int, where, None, prefix="expect.")
              for key in ("states", "orbits")}
    for key, count in counts.items():
        if count is not None and count < 1:
            raise ModelError(f"{where}: key expect.{key} must be positive, got {count}")
    expect_proof = _get(expect, "proof", str, where, None, prefix="expect.")
    if expect_proof is not None and expect_proof not in PROOF_EXPECTATIONS:
        raise ModelError(f"{where}: key expect.proof must be one of "
                         f"{', '.join(repr(p) for p in PROOF_EXPECTATIONS)}, got "
                         f"{expect_proof!r}{did_you_mean(expect_proof, PROOF_EXPECTATIONS)}")
    return Model(
        path=path,
        name=path.stem,
        description=_get(data, "description", str, where, ""),
        spec_name=_get(data, "spec", str, where, ""),
        params=params,
        mutations=tuple(_get(data, "mutations", list, where, [])),
        invariants=tuple(_get(data, "invariants", list, where, [])),
        engine=engine,
        expect_outcome=_parse_outcome(_get(expect, "outcome", str, where, "holds",
                                           prefix="expect."), where),
        expect_states=counts["states"],
        expect_orbits=counts["orbits"],
        proof=_proof(data, where),
        has_proof="proof" in data,
        expect_proof=expect_proof,
    )


def build_machine(model: Model, overrides: dict[str, str] | None = None,
                  proof: bool = False, progress: Callable[[str], None] | None = None) -> Machine:
    """The model's spec, built with its parameters (overridden by `--set` values),
    restricted to the selected properties. With `proof`, the [proof.params] table
    overrides [params] first: the sizes the symbolic engines work at."""
    where = str(model.path)
    try:
        spec = find_spec(model.spec_name, search=model.path.parent)
    except ModelError as exc:
        raise ModelError(f"{where}: key spec: {exc}") from None
    overrides = overrides or {}
    # Validate each source apart, so an error says where the bad value came from.
    sized = model.proof["params"] if proof else {}
    for values, mutations, label in ((model.params, (), f"{where} [params]"),
                                     (sized, (), f"{where} [proof.params]"),
                                     ({}, model.mutations, f"{where} mutations"),
                                     (overrides, (), "--set")):
        spec.resolve(values, label, mutations)
    machine = spec.instantiate({**model.params, **sized, **overrides}, model.mutations, where,
                               progress)
    machine = _select(machine, model)
    _check_expectation(machine, model)
    if not model.engine["full_search"] and not machine.scalarsets:
        raise ModelError(f"{where}: key engine.full_search = false needs a spec that "
                         "declares a scalarset (the model is then searched under its symmetry)")
    return machine


def mining_machine(model: Model, proved: Machine, overrides: dict[str, str] | None = None
                   ) -> Machine | None:
    """The machine `prove --engine pdr --mine` enumerates for candidate facts: the
    proof's shape at the BFS's ranges. Each parameter [proof.params] sets apart from
    [params] (and `--set` leaves alone) takes its [params] value if the state keeps the
    same slots with it (a clock's bound: the proof's clock is too long to exhaust);
    one that changes the slots (a member count) keeps the proof's, so what is mined
    speaks of every member the proof has. None if no parameter changes."""
    overrides = overrides or {}
    slots = [s.name for s in proved.slots]
    ranges: dict[str, Any] = {}
    mined = None  # built with every range taken so far
    for name, value in model.proof["params"].items():
        if name in overrides or name not in model.params or model.params[name] == value:
            continue
        trial = build_machine(model, {**overrides, **ranges, name: model.params[name]},
                              proof=True)
        if [s.name for s in trial.slots] == slots:
            ranges[name], mined = model.params[name], trial
    return mined


def reshape(model: Model, invariants: Sequence[str], mutations: Sequence[str]) -> Model:
    """The model with another property selection (`invariants`, if any) and more
    mutations switched on, as `--inv` and `--mutation` ask for one run; its expected
    outcome says nothing about such a run, so it becomes `holds` with no baseline."""
    chosen = tuple(dict.fromkeys(invariants)) if invariants else model.invariants
    try:
        find_spec(model.spec_name, search=model.path.parent).resolve({}, "--mutation",
                                                                     mutations)
    except ModelError as exc:
        raise ModelError(str(exc)) from None
    return dataclasses.replace(model, invariants=chosen,
                               mutations=tuple(dict.fromkeys(model.mutations + tuple(mutations))),
                               expect_outcome="holds", expect_states=None,
                               expect_proof=None,
                               selected_by="--inv" if invariants else model.selected_by)


def outcome_matches(model: Model, result: CheckResult) -> bool:
    return result.expectation == model.expect_outcome


def property_names(machine: Machine) -> list[str]:
    """Names a model can select: invariants, step invariants, lemmas and liveness."""
    return [p.name for p in machine.invariants + machine.step_invariants + machine.lemmas
            + machine.liveness]


# --- helpers -----------------------------------------------------------------

def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"{path}: malformed TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ModelError(f"{path}: malformed TOML: not UTF-8 text") from None
    except RecursionError:
        raise ModelError(f"{path}: malformed TOML: arrays or tables nested too deeply") \
            from None
    except ValueError:  # Python's limit on the digits of an int
        raise ModelError(f"{path}: malformed TOML: a number with too many digits") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot read: {exc.strerror}") from None


def _check_keys(table: dict[str, Any], allowed: tuple[str, ...], prefix: str, where: str) -> None:
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ModelError(f"{where}: unknown key '{prefix}{unknown[0]}'"
                         f"{did_you_mean(unknown[0], allowed)} "
                         f"(known: {', '.join(prefix + k for k in allowed)})")


def _get(table: dict[str, Any], key: str, kind: type, where: str, default: Any,
         prefix: str = "") -> Any:
    """table[key] if present and of the right kind (bools are not integers here)."""
    if key not in table:
        return default
    value = table[key]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if kind is list:
        ok = ok and all(isinstance(v, str) for v in value)
    if not ok:
        raise ModelError(f"{where}: key {prefix}{key} must be {_KIND_NAMES[kind]}, "
                         f"got {value!r}")
    return value


def _proof(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The [proof] table: induction depth, timeout and parameter overrides."""
    table = _get(data, "proof", dict, where, {})
    _check_keys(table, tuple(PROOF_DEFAULTS), "proof.", where)
    out = {key: _get(table, key, type(default), where, default, prefix="proof.")
           for key, default in PROOF_DEFAULTS.items()}
    if out["k"] < 1:
        raise ModelError(f"{where}: key proof.k must be a positive integer, got {out['k']}")
    if out["timeout"] < 0:
        raise ModelError(f"{where}: key proof.timeout must be 0 (none) or more seconds, "
                         f"got {out['timeout']}")
    for name, value in out["params"].items():
        if not isinstance(value, bool | int | str):
            raise ModelError(f"{where}: key proof.params.{name} must be an integer, boolean "
                             f"or string, got {value!r}")
    return out


def _parse_outcome(text: str, where: str) -> str:
    words = text.split()
    if words == ["holds"] or (len(words) == 2 and words[0] == "violates"
                              and words[1].isidentifier()):
        return " ".join(words)
    raise ModelError(f"{where}: key expect.outcome must be \"holds\" or \"violates NAME\", "
                     f"got {text!r}")


def _select(machine: Machine, model: Model) -> Machine:
    """A copy of the machine checking only the model's chosen properties."""
    if not model.invariants:
        return machine
    known = property_names(machine)
    unknown = [n for n in model.invariants if n not in known]
    if unknown:
        raise ModelError(f"{model.path}: {model.selected_by}: spec {machine.spec_name} has no "
                         f"invariant {unknown[0]!r}{did_you_mean(unknown[0], known)} "
                         f"(known: {', '.join(known) or 'none'})")
    chosen = set(model.invariants)
    return dataclasses.replace(
        machine,
        invariants=[p for p in machine.invariants if p.name in chosen],
        step_invariants=[p for p in machine.step_invariants if p.name in chosen],
        lemmas=[p for p in machine.lemmas if p.name in chosen],
        liveness=[p for p in machine.liveness if p.name in chosen],
    )


def _check_expectation(machine: Machine, model: Model) -> None:
    """An expected violation must name something this run checks, or it can never match."""
    _, _, name = model.expect_outcome.partition(" ")
    checked = property_names(machine)
    if name and name not in checked + list(BUILTIN_VIOLATIONS):
        raise ModelError(f"{model.path}: key expect.outcome names {name!r}, which is not "
                         f"checked (checked: {', '.join(checked + list(BUILTIN_VIOLATIONS))})")
    if name == "Deadlock" and not model.engine["deadlock"]:
        raise ModelError(f"{model.path}: key expect.outcome expects a deadlock, but "
                         f"engine.deadlock is false")

"""The Z3 engines: BMC against BFS, k-induction with lemma cores, CTIs, infer, the CLI.

The cross-check with BFS is the heart of it: on every mutation model small enough
for CI, BMC's counterexample has the length of BFS's shortest and names the same
property, and on shrunken holds models BMC finds nothing up to the BFS diameter.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.result import HOLDS, VIOLATED
from checker.engines.symbolic.bmc import BmcOptions, bmc
from checker.engines.symbolic.induction import NOT_INDUCTIVE, PROVED, ProveOptions, prove
from checker.engines.symbolic.infer import InferOptions, as_source, infer
from checker.lang import And, Array, Implies, Int, Or, Spec, require
from checker.models import build_machine, load_model
from checker.traces.itf import write_trace
from checker.traces.replay import check_trace
from tests.model_folders import one_error_line, write_models
from tests.model_folders import run_cli as run
from tests.z3_specs import LOCKSTEP

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
# the mutation models BMC reaches in seconds (the others are in bench/z3_engines.py --suite)
MUTATIONS = ["mutation_carry_own_bucket_ts", "mutation_heap_ignores_tracked",
             "mutation_no_forward_above_bucket", "mutation_reset_cur_on_prev_exit",
             "log_driven_mutation_side_close_with_inflight"]
# holds models, shrunk so BMC to the full BFS diameter takes seconds
SMALL = {"requests": "2", "max_now": "2"}
HOLDS_MODELS = [("tracker_small", SMALL), ("tracker_heap", SMALL),
                ("tracker_keep_cur_ts", SMALL), ("tracker_close_before_exit", SMALL)]


def _machine(name: str, overrides: dict[str, str] | None = None):
    model = load_model(name, MODELS_DIR)
    return model, build_machine(model, overrides)


@pytest.mark.parametrize("name", MUTATIONS)
def test_bmc_finds_a_counterexample_as_short_as_bfs(name: str, tmp_path: Path) -> None:
    model, machine = _machine(name)
    deadlock = model.engine["deadlock"]
    shortest = check(machine, BfsOptions(deadlock=deadlock))
    assert shortest.outcome == VIOLATED and shortest.violation is not None
    length = len(shortest.violation.trace)
    found = bmc(machine, BmcOptions(depth=length, deadlock=deadlock))
    assert found.outcome == VIOLATED and found.violation is not None
    assert len(found.violation.trace) == length
    assert found.violation.name == shortest.violation.name
    path = tmp_path / "cex.itf.json"
    write_trace(found.violation.trace, path)
    replayed, violated = check_trace(path)
    assert found.violation.name in violated
    assert replayed.states == found.violation.trace.states


@pytest.mark.parametrize(("name", "overrides"), HOLDS_MODELS, ids=[n for n, _ in HOLDS_MODELS])
def test_bmc_finds_nothing_up_to_the_bfs_diameter(name: str, overrides: dict) -> None:
    model, machine = _machine(name, overrides)
    explored = check(machine, BfsOptions(deadlock=model.engine["deadlock"]))
    assert explored.outcome == HOLDS and explored.stats["diameter"] >= 4
    result = bmc(machine, BmcOptions(depth=explored.stats["diameter"],
                                     deadlock=model.engine["deadlock"]))
    assert result.outcome == HOLDS and not result.complete
    assert result.stats["depth"] == explored.stats["diameter"]


def test_bmc_reports_a_deadlock_at_bfs_depth() -> None:
    machine = LOCKSTEP.instantiate()
    bfs = check(machine, BfsOptions(deadlock=True))
    found = bmc(machine, BmcOptions(depth=5, deadlock=True))
    assert found.violation is not None and bfs.violation is not None
    assert found.violation.name == "Deadlock" == bfs.violation.name
    assert len(found.violation.trace) == len(bfs.violation.trace) == 3


def test_bmc_gives_the_same_counterexample_every_run() -> None:
    _, machine = _machine("mutation_reset_cur_on_prev_exit")
    runs = [bmc(machine, BmcOptions(depth=7)).violation for _ in range(2)]
    assert runs[0] is not None and runs[1] is not None
    assert runs[0].trace.states == runs[1].trace.states
    assert [a and a.id for a in runs[0].trace.actions] == \
        [a and a.id for a in runs[1].trace.actions]


def test_prove_reports_the_lemmas_the_proof_needed() -> None:
    result = prove(LOCKSTEP.instantiate(), ProveOptions(k=1))
    assert result.outcome == PROVED
    assert result.lemmas_used == ["InStep"] and result.lemmas_unused == ["Positive"]


def test_without_its_lemma_the_invariant_has_a_counterexample_to_induction(
        tmp_path: Path) -> None:
    import dataclasses

    machine = dataclasses.replace(LOCKSTEP.instantiate(), lemmas=[])
    result = prove(machine, ProveOptions(k=1))
    assert result.outcome == NOT_INDUCTIVE and result.violation is not None
    trace = result.violation.trace
    start, end = machine.decode(trace.states[0]), machine.decode(trace.states[-1])
    assert start["y"] == 3 and start["x"] < 3 and end["y"] == 4  # unreachable: x != y
    assert "unreachable-or-unknown" in result.violation.message
    path = tmp_path / "cti.itf.json"
    write_trace(trace, path)
    replayed, violated = check_trace(path)
    assert "YSmall" in violated and replayed.states == trace.states


def test_a_cti_is_the_least_one_whatever_the_solver_was_asked_before() -> None:
    import dataclasses

    _, core = _machine("log_driven_tiny")
    bare = dataclasses.replace(core, lemmas=[])
    first = prove(bare, ProveOptions(k=1)).violation
    prove(LOCKSTEP.instantiate(), ProveOptions(k=1))  # other queries in between
    prove(core, ProveOptions(k=1))
    again = prove(bare, ProveOptions(k=1)).violation
    assert first is not None and again is not None
    assert first.trace.states == again.trace.states and first.name == again.name
    # least first state: every slot at its smallest value the CTI allows, so the
    # clock starts at its lower bound
    assert bare.decode(first.trace.states[0])["now"] == 1


def test_k_induction_needs_no_lemma_when_k_covers_the_unreachable_prefix() -> None:
    import dataclasses

    machine = dataclasses.replace(LOCKSTEP.instantiate(), lemmas=[])
    # four inc steps ending at y = 4 need x < 3 before each, so x would start below 0:
    # no 4-step path of YSmall states leaves YSmall, although 1-step ones do
    assert prove(machine, ProveOptions(k=4)).outcome == PROVED


def test_tracker_invariants_are_proved_with_the_spec_lemmas() -> None:
    _, machine = _machine("tracker_small", {"requests": "3", "max_now": "40", "max_ts": "4"})
    result = prove(machine, ProveOptions(k=1))
    assert result.outcome == PROVED, result.message
    assert result.lemmas_used


def test_infer_finds_the_strengthening_and_it_pastes_as_a_lemma() -> None:
    result = infer(LOCKSTEP.instantiate(), InferOptions())
    assert result.proves and not result.sampled and result.minimal
    # the first literal ruling out YSmall's CTIs; with it, inc cannot push y past x
    assert [c.source for c in result.needed] == ["s.x >= s.y"] and result.made == 0
    source = as_source(result.needed)
    pasted = Spec("pasted", "lockstep with the inferred lemmas pasted in")

    @pasted.build
    def _build(m, p):
        m.var("x", Int(0, 9), init=0)
        m.var("y", Int(0, 9), init=0)

        @m.action()
        def inc(s):
            require(s.x < 3)
            s.x = s.x + 1
            s.y = s.y + 1

        @m.invariant
        def YSmall(s):  # noqa: N802
            return s.y <= 3

        exec(source, {"m": m, "Implies": Implies})  # noqa: S102 - the code under test

    machine = pasted.instantiate()
    assert machine.lemmas
    assert prove(machine, ProveOptions(k=1)).outcome == PROVED


def test_infer_with_spec_lemmas_needs_no_search_when_they_prove() -> None:
    result = infer(LOCKSTEP.instantiate(), InferOptions(spec_lemmas=True))
    assert result.proves and result.spec_lemmas_used == ["InStep"]
    assert result.candidates == 0 and result.survivors == []


def test_infer_with_spec_lemmas_proposes_what_they_lack() -> None:
    import dataclasses

    machine = LOCKSTEP.instantiate()
    partial = dataclasses.replace(
        machine, lemmas=[p for p in machine.lemmas if p.name == "Positive"])
    result = infer(partial, InferOptions(spec_lemmas=True))
    assert result.proves and result.candidates > 0 and result.spec_lemmas_dropped == []
    assert [c.source for c in result.needed] == ["s.x >= s.y"]  # what InStep gave
    assert "Positive" not in result.spec_lemmas_used


def test_infer_falls_back_to_random_walks_for_big_models() -> None:
    result = infer(LOCKSTEP.instantiate(), InferOptions(max_states=2, walks=5))
    assert result.sampled and result.states == 4 and result.proves


def test_houdini_reaches_the_same_fixpoint_with_and_without_concrete_expansion() -> None:
    import dataclasses

    from checker.engines.symbolic.infer import as_properties, houdini, reachable_candidates

    _, machine = _machine("tracker_small", {"requests": "2"})
    machine = dataclasses.replace(machine, lemmas=[])
    # the first 500 candidates: any pool has one fixpoint, and the whole one is slow
    props = as_properties(reachable_candidates(machine, InferOptions()).kept)[:500]
    plain, _ = houdini(machine, props, None, None, expand=0)
    fast, _ = houdini(machine, props, None, None, expand=2000)
    pool = len(props) + len(machine.invariants) + len(machine.step_invariants) + 1
    assert plain == fast and len(plain) < pool  # the same members fell, and some did


def _greatest_inductive_subset(machine, props) -> set[str]:
    """The naive oracle: each pass asks, member by member over the whole step relation,
    whether a step from a state where every member alive holds breaks it, and drops
    every member that breaks; until a pass drops none."""
    import z3

    from checker.engines.symbolic.houdini import NO_ERROR
    from checker.engines.symbolic.unroll import Unrolling

    u = Unrolling(machine)
    pool = machine.invariants + props
    pre = {p.name: u.prop_holds(p, 0) for p in pool} | {NO_ERROR: u.no_error(0)}
    post = {p.name: z3.Implies(u.explored(1), u.prop_holds(p, 1)) for p in pool}
    post |= {NO_ERROR: z3.Implies(u.explored(1), u.no_error(1))}
    post |= {p.name: u.step_prop_holds(p, 1) for p in machine.step_invariants}
    alive = set(post)
    while True:
        solver = z3.Solver()
        solver.add(u.admissible(0), u.step(0), u.enc.domain(u.state(1)),
                   *[pre[n] for n in alive if n in pre])
        broken = {n for n in alive if solver.check(z3.Not(post[n])) == z3.sat}
        if not broken:
            return alive
        alive -= broken


def test_houdini_action_by_action_reaches_the_naive_fixpoint() -> None:
    """Asking action by action, each over the members it can break (alone or all at
    once), gives the survivors of the naive search, on a pool where some fall."""
    import dataclasses

    from checker.engines.symbolic.infer import as_properties, houdini, reachable_candidates

    _, machine = _machine("tracker_small", {"requests": "2"})
    lemmas = machine.lemmas
    machine = dataclasses.replace(machine, lemmas=[])
    props = lemmas + as_properties(reachable_candidates(machine, InferOptions()).kept)[:60]
    oracle = _greatest_inductive_subset(machine, props)
    together, _ = houdini(machine, props, None, None, expand=0)
    in_turn, _ = houdini(machine, props, None, None, expand=0, one_at_a_time=True)
    assert together == in_turn == oracle
    assert {p.name for p in lemmas} <= oracle  # the spec's lemmas prove themselves
    pool = len(props) + len(machine.invariants) + len(machine.step_invariants) + 1
    assert len(oracle) < pool  # and some candidates fell


def _climbers() -> Spec:
    """Two interchangeable counters: one may start (only while both are 0), then climb
    to 3. Reachable: (0, 0), (1..3, 0), (0, 1..3). Lemmas: each counter stays below 3
    (both fall) and one of them is 0 (holds)."""
    spec = Spec("climbers", "interchangeable counters, one of which climbs")

    @spec.build
    def _build(m, p):
        m.var("x", Array(Int(0, 3), 2), init=0)
        m.scalarset("Member", 2, index={"x": 0})

        @m.action(i=range(2))
        def begin(s, i):
            require(s.x[0] + s.x[1] == 0)
            s.x[i] = 1

        @m.action(i=range(2))
        def climb(s, i):
            require(And(s.x[i] >= 1, s.x[i] < 3))
            s.x[i] = s.x[i] + 1

        @m.lemma
        def FirstBelow3(s):  # noqa: N802
            return s.x[0] <= 2

        @m.lemma
        def SecondBelow3(s):  # noqa: N802
            return s.x[1] <= 2

        @m.lemma
        def OneIsZero(s):  # noqa: N802
            return Or(s.x[0] == 0, s.x[1] == 0)

    return spec


def test_houdini_images_under_the_symmetry_drop_a_fact_and_its_mirror_in_one_round(
        monkeypatch) -> None:
    """The only counterexamples start at (2, 0) or (0, 2), and the runs from one reach
    only its own counter's 3: its image under the swap starts a run that breaks the
    other counter's lemma in the same round. Without images, that takes a second."""
    import dataclasses

    from checker.engines.symbolic import houdini as module

    machine = _climbers().instantiate()
    lemmas = machine.lemmas
    machine = dataclasses.replace(machine, lemmas=[])
    moved = module.houdini(machine, lemmas, None, None)
    monkeypatch.setattr(module, "MOVED", 0)
    plain = module.houdini(machine, lemmas, None, None)
    survivors = {"OneIsZero", module.NO_ERROR}
    assert moved == (survivors, 1) and plain == (survivors, 2)
    assert survivors == _greatest_inductive_subset(machine, lemmas)


def _lopsided() -> Spec:
    """Two counters declared interchangeable (wrongly: only the first moves), with a
    lemma that holds (the second stays 0) and one that falls (the first stays below 2)."""
    spec = Spec("lopsided", "a wrong scalarset")

    @spec.build
    def _build(m, p):
        m.var("x", Array(Int(0, 2), 2), init=0)
        m.scalarset("Member", 2, index={"x": 0})

        @m.action
        def bump(s):
            require(s.x[0] < 2)
            s.x[0] = s.x[0] + 1

        @m.lemma
        def SecondStays(s):  # noqa: N802
            return s.x[1] == 0

        @m.lemma
        def FirstBelowTwo(s):  # noqa: N802
            return s.x[0] <= 1

    return spec


def test_houdini_runs_only_images_that_satisfy_every_member_alive() -> None:
    """Under a wrong symmetry declaration the image of the counterexample's first state
    (1, 0) is (0, 1), where SecondStays is already false: run from there, it would fall.
    Images are judged first, so the fixpoint is the naive one."""
    import dataclasses

    from checker.engines.symbolic.houdini import NO_ERROR, houdini

    machine = _lopsided().instantiate()
    lemmas = machine.lemmas
    machine = dataclasses.replace(machine, lemmas=[])
    alive, _ = houdini(machine, lemmas, None, None)
    assert alive == _greatest_inductive_subset(machine, lemmas) == {"SecondStays", NO_ERROR}


# --- the command line ----------------------------------------------------------------

LOCKSTEP_REF = "tests.z3_specs:LOCKSTEP"
CLI_MODELS = {
    "lockstep": f"""
spec = "{LOCKSTEP_REF}"
[engine]
deadlock = false
[proof]
k = 1
[proof.params]
limit = 7
""",
    "skewed": f"""
spec = "{LOCKSTEP_REF}"
mutations = ["skew"]
invariants = ["YSmall"]
[engine]
deadlock = false
[expect]
outcome = "violates YSmall"
""",
    "bad_lemma": f"""
spec = "{LOCKSTEP_REF}"
[params]
bad_lemma = true
""",
    "bad_proof": f"""
spec = "{LOCKSTEP_REF}"
[proof]
k = 0
""",
}


# the single-range log-driven core at log_driven_tiny's sizes, and variants of it
CORE_VARIANTS = [{}, {"duplicate": "true"}, {"reorder": "false"}, {"tracker": "heap"},
                 {"close_before_untrack": "true"}, {"writes": "3", "keys": "2"}]


@pytest.mark.parametrize("overrides", CORE_VARIANTS, ids=lambda o: ",".join(o) or "default")
def test_log_driven_core_is_proved_with_its_lemmas(overrides: dict) -> None:
    _, machine = _machine("log_driven_tiny", overrides)
    goals = {p.name for p in machine.invariants + machine.step_invariants}
    assert {"NoWriteBelowClaim", "NoStaleRead", "ClaimsOrderedByLAI"} <= goals
    result = prove(machine, ProveOptions(k=1))
    assert result.outcome == PROVED, result.message
    assert "AcceptedByLog" in result.lemmas_used


def test_log_driven_core_without_lemmas_is_not_inductive() -> None:
    import dataclasses

    _, machine = _machine("log_driven_tiny")
    result = prove(dataclasses.replace(machine, lemmas=[]), ProveOptions(k=1))
    assert result.outcome == NOT_INDUCTIVE and result.violation is not None


def test_log_driven_core_mutation_gives_a_cti_and_bmc_a_real_trace() -> None:
    import dataclasses

    model = load_model("log_driven_tiny", MODELS_DIR)
    machine = build_machine(dataclasses.replace(model, mutations=("NoFloorOnTrack",)))
    proof = prove(machine, ProveOptions(k=1))
    assert proof.outcome == NOT_INDUCTIVE and proof.violation is not None
    assert proof.violation.name == "TrackedAboveFloor"
    shortest = check(machine, BfsOptions(deadlock=False))
    assert shortest.violation is not None
    found = bmc(machine, BmcOptions(depth=len(shortest.violation.trace)))
    assert found.violation is not None and found.violation.name == "TrackedAboveFloor"
    assert len(found.violation.trace) == len(shortest.violation.trace)


@pytest.fixture
def models(tmp_path, monkeypatch) -> Path:
    return write_models(tmp_path, monkeypatch, CLI_MODELS)


def test_cli_prove_uses_the_proof_params_and_names_the_lemmas(models: Path) -> None:
    result = run(models, "prove", "lockstep", "--json", "-q")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "proved" and report["params"]["limit"] == 7
    assert report["lemmas_used"] == ["InStep"] and report["lemmas_unused"] == ["Positive"]


def test_cli_mutation_prove_gives_a_cti_and_bmc_a_real_trace(models: Path) -> None:
    proof = run(models, "prove", "skewed")
    assert proof.exit_code == 3, proof.output
    assert "not inductive" in proof.stdout and "may be unreachable" in proof.stdout
    cti = Path("traces/skewed-cti-YSmall-prove.itf.json")
    shown = run(models, "trace", "show", str(cti))
    assert shown.exit_code == 0 and "may be unreachable" in shown.stdout
    assert run(models, "trace", "check", str(cti)).exit_code == 0
    found = run(models, "bmc", "skewed", "--depth", "5")
    assert found.exit_code == 1, found.output
    assert "3-step trace" in found.stdout and "as expected" in found.stdout
    assert "depth   3" in found.stderr  # progress per depth
    checked = run(models, "trace", "check", "traces/skewed-YSmall-bmc.itf.json")
    assert checked.exit_code == 0 and "violates YSmall" in checked.stdout


def test_cli_timeout_is_unknown_never_proved(models: Path) -> None:
    result = run(models, "bmc", str(MODELS_DIR / "tracker_small.toml"), "--depth", "11",
                 "--timeout", "0.2", "-q")
    assert result.exit_code == 3, result.output
    assert "unknown" in result.stdout and "not a proof" in result.stdout


def test_cli_infer_prints_lemmas_that_prove(models: Path) -> None:
    result = run(models, "infer", "lockstep", "-q")
    assert result.exit_code == 0, result.output
    assert "@m.lemma" in result.stdout and "return s.x >= s.y" in result.stdout
    assert "they prove every invariant" in result.stdout
    assert "1 chosen in 2 rounds of counterexamples to induction" in result.stdout
    houdini = run(models, "infer", "lockstep", "--search", "houdini", "-q")
    assert houdini.exit_code == 0, houdini.output
    assert "return s.x == s.y" in houdini.stdout and "Houdini round" in houdini.stdout


def test_cli_infer_with_spec_lemmas_names_the_ones_used(models: Path) -> None:
    result = run(models, "infer", "lockstep", "--with-spec-lemmas", "-q")
    assert result.exit_code == 0, result.output
    assert "already prove every invariant" in result.stdout and "Used: InStep" in result.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (("bmc", "lockstep", "--depth", "0"), "--depth"),
    (("bmc", "lockstep", "--depth", "two"), "--depth"),
    (("prove", "lockstep", "--k", "0"), "--k"),
    (("prove", "lockstep", "--timeout", "-1"), "--timeout"),
    (("prove", "bad_lemma"), "lemma BadLemma: must return a bool expression, got int"),
    (("bmc", "bad_proof"), "proof.k must be a positive integer"),
    (("infer", "lockstep", "--set", "limit=x"), "limit"),
])
def test_cli_bad_input_is_one_line_and_exit_2(models: Path, args: tuple, needle: str) -> None:
    assert needle in one_error_line(run(models, *args))


BAD_LEMMAS = """
from checker.lang import Int, Spec, require

BAD = Spec("bad_lemmas", "one broken lemma, chosen by `kind`")
BAD.param("kind", "expr_int", "which way the lemma is broken")


@BAD.build
def _build(m, p):
    m.var("x", Int(0, 3), init=0)

    @m.action()
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1

    @m.invariant
    def Small(s):
        return s.x <= 3

    body = {
        "expr_int": lambda s: s.x + 1,
        "python_int": lambda s: 3,
        "none": lambda s: None,
        "unknown_variable": lambda s: s.nope == 1,
        "raises": lambda s: 1 // 0,
        "control_flow": lambda s: s.x if s.x > 1 else s.x + 1 > 0,
    }[p.kind]

    def Broken(s):
        return body(s)

    m.lemma(Broken)
"""


@pytest.mark.parametrize(("kind", "says"), [
    ("expr_int", "must return a bool expression, got int"),
    ("python_int", "must return a bool expression, got int"),
    ("none", "must return a bool expression, got NoneType"),
    ("unknown_variable", "no state variable named 'nope'"),
    ("raises", "ZeroDivisionError: integer division or modulo by zero"),
    ("control_flow", "a symbolic value was used in Python control flow"),
])
def test_a_broken_lemma_is_one_line_naming_it(models: Path, kind: str, says: str) -> None:
    """However a lemma is broken, the user reads which one and where it is declared,
    on one line, whichever command builds it."""
    (models / "bad_lemmas.py").write_text(BAD_LEMMAS)
    (models / "broken.toml").write_text(f'spec = "bad_lemmas.py:BAD"\n[params]\n'
                                        f'kind = "{kind}"\n[engine]\ndeadlock = false\n')
    for command in ("prove", "bmc", "infer"):
        line = one_error_line(run(models, command, "broken", "-q"))
        assert line.startswith("error: lemma Broken: ") and line.count(says) == 1, line
        assert "bad_lemmas.py:" in line, line


def test_an_unsupported_construct_in_a_spec_is_one_line(models: Path, tmp_path: Path) -> None:
    (tmp_path / "times.py").write_text(
        "from checker.lang import Int, Spec\n"
        "TIMES = Spec('times')\n"
        "@TIMES.build\n"
        "def _b(m, p):\n"
        "    m.var('x', Int(0, 3), init=0)\n"
        "    @m.action()\n"
        "    def double(s):\n"
        "        s.x = s.x * 2\n")
    (models / "times.toml").write_text('spec = "times:TIMES"\n')
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        result = run(models, "prove", "times")
    finally:
        sys.path.remove(str(tmp_path))
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert "multiplication is not in the spec language" in result.stderr

"""`--timeout` for bmc, prove and infer: one wall-clock limit for the whole command.

Where the deadline passes is made certain by a `Deadline` that runs out at a named
phase (whatever the machine's speed), so each stop's wording and result are checked
exactly; the CLI tests use a real limit far below what the model takes and assert
only the verdict, never "proved", and a generous bound (3x) on the time taken.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import z3

from checker.engines.result import UNKNOWN, VIOLATED
from checker.engines.symbolic.bmc import NOT_LEAST, BmcOptions, bmc
from checker.engines.symbolic.deadline import Deadline
from checker.engines.symbolic.induction import (
    NOT_INDUCTIVE,
    PROVED,
    ProveOptions,
    prove,
)
from checker.engines.symbolic.infer import InferOptions, infer
from checker.engines.symbolic.infer import pipeline as infer_module
from checker.engines.symbolic.infer.cti_search import PHASE
from checker.engines.symbolic.step import STEP_PHASE
from checker.models import build_machine, load_model
from checker.reporting.proofs import print_inferred
from tests.model_folders import run_cli as run
from tests.z3_specs import LOCKSTEP

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"


class RunsOutAt(Deadline):
    """A deadline that passes when the `n`th solver query of a phase starting with
    `phase` is about to run: a stop at a known point, on any machine."""

    def __init__(self, phase: str, n: int = 1):
        super().__init__(None)
        self.seconds = 9.0  # what the verdict says the limit was
        self.at, self.n = phase, n

    def solve(self, solver: z3.Solver, phase: str, *assumptions: z3.BoolRef
              ) -> z3.CheckSatResult:
        if phase.startswith(self.at):
            self.n -= 1
            if self.n == 0:
                raise self.out_of_time(phase)
        return super().solve(solver, phase, *assumptions)


def _machine(name: str):
    return build_machine(load_model(name, MODELS_DIR))


def test_a_proof_out_of_time_at_a_lemmas_goal_is_unknown_not_proved() -> None:
    """The invariants' goal held, the first lemma's did not get its turn: unknown, with
    the goal named, and no lemmas reported."""
    machine = LOCKSTEP.instantiate()
    assert prove(machine, ProveOptions(k=1)).outcome == PROVED  # with time, it proves
    result = prove(machine, ProveOptions(k=1), RunsOutAt(f"{STEP_PHASE} (goal 2 of"))
    assert result.outcome == UNKNOWN and not result.lemmas_used
    first = machine.lemmas[0].name
    goals = 1 + len(machine.lemmas)
    assert result.message == f"timeout (9 s) during {STEP_PHASE} (goal 2 of {goals}: {first})"


def test_a_proof_stopped_in_its_base_case_is_unknown() -> None:
    result = prove(LOCKSTEP.instantiate(), ProveOptions(k=3), RunsOutAt("depth 1"))
    assert result.outcome == UNKNOWN
    assert result.message == "base case: timeout (9 s) during depth 1"


def test_a_counterexample_found_before_the_deadline_is_kept_though_not_least() -> None:
    """BMC found a violation; the deadline then stopped the search for the least
    one: the trace is as real and as short, and says it is not the least."""
    machine = _machine("mutation_reset_cur_on_prev_exit")
    least = bmc(machine, BmcOptions(depth=7))
    found = bmc(machine, BmcOptions(depth=7), RunsOutAt("the search for the least trace"))
    assert least.outcome == found.outcome == VIOLATED
    assert least.violation is not None and found.violation is not None
    assert found.violation.name == least.violation.name
    assert len(found.violation.trace) == len(least.violation.trace)
    assert "trace" not in least.stats and found.stats["trace"] == NOT_LEAST


def test_a_cti_found_before_the_deadline_is_kept_though_not_least() -> None:
    bare = dataclasses.replace(LOCKSTEP.instantiate(), lemmas=[])
    result = prove(bare, ProveOptions(k=1), RunsOutAt("the search for the least trace"))
    assert result.outcome == NOT_INDUCTIVE and result.violation is not None
    assert result.stats["trace"] == NOT_LEAST


def test_infer_stopped_in_houdini_reports_the_candidates_alive_and_no_proof(
        monkeypatch, capsys) -> None:
    monkeypatch.setattr(infer_module, "Deadline",
                        lambda seconds, started=None: RunsOutAt("Houdini round 3"))
    result = infer(_machine("tracker_small"), InferOptions(search="houdini"))
    assert result.unknown == "timeout (9 s) during Houdini round 3"
    assert not result.proves and not result.needed
    assert 0 < len(result.survivors) < result.after_states  # two rounds dropped some
    assert "not yet dropped after 2 Houdini rounds" in result.alive_note
    print_inferred(result, spec_lemmas=False)
    out = capsys.readouterr().out
    assert out.startswith("# inconclusive: timeout (9 s) during Houdini round 3; nothing is "
                          "proved\n")
    assert f"# {len(result.survivors):,} candidates still alive" in out
    assert "They are not a proof." in out and out.count("@m.lemma") == len(result.survivors)


def test_infer_stopped_in_the_cti_search_reports_the_lemmas_chosen_and_no_proof(
        monkeypatch, capsys) -> None:
    monkeypatch.setattr(infer_module, "Deadline",
                        lambda seconds, started=None: RunsOutAt(PHASE, 12))
    result = infer(_machine("tracker_small"), InferOptions())
    assert result.unknown == f"timeout (9 s) during {PHASE}"
    assert not result.proves and not result.needed and result.rounds > 0
    assert 0 < len(result.survivors) < result.after_states
    print_inferred(result, spec_lemmas=False)
    out = capsys.readouterr().out
    assert out.startswith(f"# inconclusive: timeout (9 s) during {PHASE}; nothing is proved\n")
    assert f"# {len(result.survivors):,} candidates still alive: chosen in " in out
    assert "They are not a proof." in out and out.count("@m.lemma") == len(result.survivors)


def test_infer_out_of_time_in_a_worker_of_its_proof_is_inconclusive(monkeypatch) -> None:
    """The proof that checks the lemmas found runs its goals in worker processes; one
    running out there is the command running out, not lemmas that fail to prove."""
    from checker.engines.symbolic.step import STEP_PHASE

    monkeypatch.setattr(infer_module, "Deadline",
                        lambda seconds, started=None: RunsOutAt(STEP_PHASE, 2))
    machine = build_machine(load_model(ROOT / "examples" / "mutex" / "mutex.toml",
                                       ROOT / "examples" / "mutex"))
    result = infer(machine, InferOptions(workers=2))
    assert result.unknown is not None and result.unknown.startswith("timeout (9 s) during ")
    assert not result.proves and not result.dropped_invariants and result.survivors
    assert "the proof that checks them had not finished" in result.alive_note


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_prove_timeout_bounds_the_whole_proof(here: Path) -> None:
    """log_driven_core's proof takes tens of seconds; with one second it stops."""
    result = run(here, "prove", str(MODELS_DIR / "log_driven_core.toml"), "--timeout", "1",
                 "-q", "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "unknown" and report["lemmas_used"] == []
    assert report["message"].startswith(("timeout (1 s) during ",
                                         "base case: timeout (1 s) during "))
    assert report["stats"]["seconds"] < 3
    said = run(here, "prove", str(MODELS_DIR / "log_driven_core.toml"), "--timeout", "0.5",
               "-q")
    assert said.exit_code == 3, said.output
    assert said.stdout.startswith("unknown: ") and "timeout (0.5 s)" in said.stdout
    assert "inconclusive: nothing is proved" in said.stdout
    assert "proved:" not in said.stdout


def test_cli_infer_timeout_stops_the_whole_search(here: Path) -> None:
    """log_driven_tiny's search takes minutes; with one second it stops, inconclusive."""
    result = run(here, "infer", str(MODELS_DIR / "log_driven_tiny.toml"), "--timeout", "1",
                 "-q", "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["proves"] is False and report["needed"] == []
    assert report["unknown"].startswith("timeout (1 s) during ")
    assert report["stats"]["seconds"] < 3
    said = run(here, "infer", str(MODELS_DIR / "log_driven_tiny.toml"), "--timeout", "1", "-q")
    assert said.exit_code == 3, said.output
    assert said.stdout.startswith("# inconclusive: timeout (1 s) during ")
    assert "They are not a proof." in said.stdout and "they prove" not in said.stdout


def test_cli_infer_stopped_in_a_huge_filter_counts_and_stops_on_time(here: Path) -> None:
    """A model whose templates make 18.5 million candidates (its filter takes about 45
    s): stopped in the filter, the command counts those still alive from their bits
    and lists none (building them took two minutes past the deadline before, and 3.8 GB,
    when its templates made 115 million)."""
    model = str(MODELS_DIR / "log_driven_tiny_merge_leases.toml")
    result = run(here, "infer", model, "--timeout", "5", "-q", "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["unknown"] == "timeout (5 s) during the reachable-state filter"
    assert report["unfiltered"] > 0 and report["others"] == []
    assert report["stats"]["seconds"] < 5.5
    said = run(here, "infer", model, "--timeout", "5", "-q")
    assert "template candidates still alive" in said.stdout and "not listed" in said.stdout


def test_cli_bmc_timeout_bounds_every_depth_together(here: Path) -> None:
    result = run(here, "bmc", str(MODELS_DIR / "v1_core.toml"), "--depth", "40",
                 "--timeout", "1", "-q", "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "unknown"
    assert report["stats"]["seconds"] < 3

"""`prove --workers N`: processes sharing the inductive step's goals give the verdict
and the counterexample to induction one process gives, and a worker that fails, dies
or runs out of time ends the proof with one line and no process left behind."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from checker.engines.result import UNKNOWN
from checker.engines.symbolic import step as step_module
from checker.engines.symbolic.deadline import Deadline
from checker.engines.symbolic.induction import NOT_INDUCTIVE, PROVED, ProveOptions, prove
from checker.engines.symbolic.step import STEP_PHASE, goal_names
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.models import build_machine, load_model
from tests.model_folders import one_error_line, run_cli
from tests.test_deadline import RunsOutAt

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def _machine(name: str) -> Machine:
    return build_machine(load_model(name, MODELS_DIR), proof=True)


def _without(machine: Machine, i: int) -> Machine:
    return dataclasses.replace(machine, lemmas=[p for j, p in enumerate(machine.lemmas) if j != i])


def _same(one, two) -> None:
    assert (one.outcome, one.message) == (two.outcome, two.message)
    if one.violation is None:
        assert two.violation is None
        return
    assert two.violation is not None
    assert one.violation.trace.states == two.violation.trace.states
    assert [a and a.label for a in one.violation.trace.actions] == \
        [a and a.label for a in two.violation.trace.actions]


# v1_tiny and log_driven_tiny without one lemma: the step then fails on the invariants'
# goal or on a lemma's, of either worker, or still proves (v1_tiny's 2; measured: the
# verdict and the CTI agreed for each of v1_tiny's 15 lemmas, log_driven_tiny's 12,
# log_driven_tiny_side_transport's 17 and tracker_small's 6)
CASES = [("v1_tiny", i) for i in (0, 2, 3, 6, 9, 14)] + [("log_driven_tiny", i) for i in (4, 8)]


@pytest.mark.parametrize("name,dropped", CASES)
def test_two_workers_give_the_verdict_and_the_cti_one_gives(name: str, dropped: int) -> None:
    machine = _without(_machine(name), dropped)
    one = prove(machine, ProveOptions(workers=1))
    two = prove(machine, ProveOptions(workers=2))
    _same(one, two)
    assert two.stats["workers"] == 2


@pytest.mark.parametrize("name", ["log_driven_tiny", "v1_tiny"])
def test_a_proof_shared_by_workers_proves_and_says_the_same_lemmas_every_run(name: str) -> None:
    machine = _machine(name)
    runs = [prove(machine, ProveOptions(workers=w)) for w in (1, 2, 2, 3)]
    assert all(r.outcome == PROVED for r in runs)
    assert runs[1].lemmas_used == runs[2].lemmas_used  # fixed shares: the same cores
    assert set(runs[1].stats["seconds_per_goal"]) == set(goal_names(machine))
    assert not multiprocessing.active_children()


def test_more_workers_than_goals_is_as_many_as_goals() -> None:
    machine = dataclasses.replace(_machine("log_driven_tiny"), lemmas=[])
    result = prove(machine, ProveOptions(workers=4))
    assert result.outcome == NOT_INDUCTIVE and result.stats["workers"] == 1


def test_a_worker_out_of_time_makes_the_proof_unknown() -> None:
    machine = _machine("v1_tiny")
    result = prove(machine, ProveOptions(workers=2), RunsOutAt(f"{STEP_PHASE} (goal 2 of"))
    assert result.outcome == UNKNOWN and not result.lemmas_used
    first = machine.lemmas[0].name
    assert result.message == (f"timeout (9 s) during {STEP_PHASE} "
                              f"(goal 2 of {1 + len(machine.lemmas)}: {first})")
    assert not multiprocessing.active_children()


def test_a_failing_worker_is_one_line(monkeypatch) -> None:
    ask = step_module.InductiveStep.ask

    def broken(self, name):
        if name == self.goals[1]:  # the second worker's first goal
            raise RuntimeError("no goals today")
        return ask(self, name)

    monkeypatch.setattr(step_module.InductiveStep, "ask", broken)  # in the workers only
    with pytest.raises(CheckerError, match=r"^prove worker 2 of 2 failed: RuntimeError: "
                                           r"no goals today$"):
        prove(_machine("v1_tiny"), ProveOptions(workers=2))
    assert not multiprocessing.active_children()


def test_a_killed_worker_is_one_line(monkeypatch) -> None:
    ask = step_module.InductiveStep.ask

    def killed(self, name):
        if name == self.goals[1]:
            os.kill(os.getpid(), signal.SIGKILL)
        return ask(self, name)

    monkeypatch.setattr(step_module.InductiveStep, "ask", killed)
    with pytest.raises(CheckerError, match=r"^prove worker 2 of 2 \(pid \d+\) was killed by "
                                           r"SIGKILL before it answered"):
        prove(_machine("v1_tiny"), ProveOptions(workers=2))
    assert not multiprocessing.active_children()


def test_a_worker_that_does_not_stop_on_time_does_not_hold_the_proof(monkeypatch) -> None:
    """Workers stop at the deadline themselves; one that does not (a query Z3 does not
    interrupt) is given a few seconds, then the proof is unknown all the same. (Were
    it waited for, its sleep would end in a failure: `ask` answers nothing.)"""
    def stuck(self, name):
        time.sleep(60)

    monkeypatch.setattr(step_module.InductiveStep, "ask", stuck)
    machine = _machine("v1_tiny")
    result = prove(machine, ProveOptions(workers=2), Deadline(2.0))
    assert result.outcome == UNKNOWN
    assert result.message == (f"timeout (2 s) during {STEP_PHASE} (workers asking "
                              f"{goal_names(machine)[0]}, {machine.lemmas[0].name})")
    assert not multiprocessing.active_children()


def test_cli_prove_workers_option() -> None:
    result = run_cli(MODELS_DIR, "prove", "v1_tiny", "--workers", "2", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["stats"]["workers"] == 2
    assert "--workers" in one_error_line(run_cli(MODELS_DIR, "prove", "v1_tiny", "--workers", "0"))

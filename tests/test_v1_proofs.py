"""The 2018 design's proofs: `spec/follower_reads_2018/lemmas.py` makes the single-range
design 1-inductive, at the models' sizes and one size up; the lemmas are registered
exactly for the configuration they are about and selected by the holds models that
have it (so BFS checks them); no 2018 mutation model proves, and the lemmas name the
design fact a mutation of that configuration breaks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.result import HOLDS
from checker.engines.symbolic.induction import (
    COUNTEREXAMPLE,
    NOT_INDUCTIVE,
    PROVED,
    ProveOptions,
    prove,
)
from checker.models import MODELS_DIR, build_machine, load_model

LEMMAS = ["LeaseStaysWithN1", "WritePhases", "LAIsAssignedOnce", "MPTOrdered",
          "TrackedIsEvaluating", "MPTHoldsReleasedLAIs", "SenderState", "MessageIsLastSent",
          "ReceiverBehindSender", "ReceiverInStep", "ReceiverMapIsAccumulation",
          "SentClosedCoversWrites", "LogInLAIOrder", "ReplicasApplyPrefix",
          "ReadsSawLowerWrites"]
V1_MODELS = sorted(p.stem for p in Path(MODELS_DIR).glob("v1_*.toml"))


def _proved(name: str, overrides: dict[str, str] | None = None, proof: bool = True):
    machine = build_machine(load_model(name), overrides, proof=proof)
    result = prove(machine, ProveOptions(k=load_model(name).proof["k"]))
    assert result.outcome == PROVED, result.message
    return result


def test_v1_tiny_proves_with_every_lemma() -> None:
    result = _proved("v1_tiny")
    assert result.lemmas_used == LEMMAS and result.lemmas_unused == []


# one size up: one more node and one more write; then failures, restarts and a third epoch
@pytest.mark.parametrize("overrides", [
    {"nodes": "3", "writes": "2"},
    {"nodes": "3", "writes": "2", "failures": "true", "epochs": "3"},
], ids=["one-size-up", "one-size-up-failures"])
def test_v1_tiny_one_size_up_proves_with_the_same_lemmas(overrides: dict) -> None:
    _proved("v1_tiny", overrides)


def test_v1_core_at_its_own_sizes_proves() -> None:
    """v1_core's [proof.params] are larger than its BFS sizes; its own sizes prove too."""
    machine = build_machine(load_model("v1_core"))
    assert prove(machine, ProveOptions(k=1)).outcome == PROVED


def test_lemmas_are_registered_exactly_for_the_single_range_design() -> None:
    for name in V1_MODELS:
        model = load_model(name)
        machine = build_machine(dataclasses.replace(model, invariants=()))
        registered = [p.name for p in machine.lemmas]
        params = machine.params
        single = (params["structure"] == "none" and params["lease_changes"] == 0
                  and params["init_holder"] == 0 and params["reproposals"] == 0
                  and not params["reorder"] and not params["duplicate"]
                  and not params["window"] and not params["keep_previous"])
        assert registered == (LEMMAS if single else []), name
        if model.expect_outcome == "holds" and single:  # BFS checks every lemma there
            assert set(LEMMAS) <= set(model.invariants), name


def test_lemmas_hold_on_every_state_of_v1_tiny_one_size_up() -> None:
    """A false lemma fails a holds model: BFS checks them as invariants."""
    machine = build_machine(load_model("v1_tiny"), {"nodes": "3", "writes": "2"})
    assert {p.name for p in machine.lemmas} == set(LEMMAS)
    assert check(machine, BfsOptions(deadlock=False)).outcome == HOLDS


MUTATION_MODELS = [n for n in V1_MODELS if n.startswith("v1_mutation_")
                   and n != "v1_mutation_epoch_pollution"]  # liveness: BFS only


@pytest.mark.parametrize("name", MUTATION_MODELS)
def test_no_2018_mutation_model_proves(name: str) -> None:
    result = prove(build_machine(load_model(name), proof=True), ProveOptions(k=1))
    assert result.outcome in (NOT_INDUCTIVE, COUNTEREXAMPLE), result.message


# mutations of the single-range design: with every lemma, the proof still fails
@pytest.mark.parametrize("mutation", ["NoGapReset", "SharedSequence", "ResumeAfterGap"])
def test_a_single_range_mutation_does_not_prove_even_with_the_lemmas(mutation: str) -> None:
    model = load_model("v1_tiny")
    machine = build_machine(dataclasses.replace(model, mutations=(mutation,)),
                            {"nodes": "3", "writes": "2"})
    assert {p.name for p in machine.lemmas} == set(LEMMAS)
    result = prove(machine, ProveOptions(k=1))
    assert result.outcome in (NOT_INDUCTIVE, COUNTEREXAMPLE), result.message

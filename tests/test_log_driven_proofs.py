"""The log-driven spec's lemmas prove its models, at their own sizes and one size up.

A lemma that holds only at the size it was written for is a defect: each proof here runs
at the model's sizes and with one more write and one more node, with the same lemmas.
Every lemma is also an invariant BFS checks on every holds model it is registered for
(`tests/test_models.py` runs them), so a false one fails there too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.symbolic.induction import NOT_INDUCTIVE, PROVED, ProveOptions, prove
from checker.models import build_machine, load_model

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
UP = {"writes": "3", "nodes": "3"}

# (model, overrides, a lemma the proof must use)
# (one size up for the reproposals, 3 nodes and 3 writes, takes 25 s: `ctmc prove
# log_driven_tiny_reproposals --set writes=3 --set nodes=3`, spec/README "Proofs")
PROOFS = [
    ("log_driven_tiny_reproposals", {}, "RetiredAttemptsRejected"),
    ("log_driven_tiny", UP, "AcceptedByLog"),
    ("log_driven_tiny_side_transport", {}, "ReplicasHoldBumps"),
    ("log_driven_side_transport", {"writes": "2", "nodes": "3"}, "BumpsBelowLaterWrites"),
    ("log_driven_policy_flip", {}, "StreamsCarryHistory"),
    ("log_driven_tiny_split", {}, "SplitLastUntilApplied"),
    ("log_driven_tiny_merge", {}, "SubsumeFrozeRHS"),
    ("log_driven_tiny_split_merge", {}, "MergePhasesInOrder"),
    # (3 nodes and 2 writes: 67 s; 2 writes alone: 33 s; the extensions with two lease
    # changes: 38 s; spec/README "Proofs")
    ("log_driven_tiny_leases_in_flight", {"nodes": "3"}, "ReplicasReplayTheLog"),
    # (the side transport under leases, two senders; 3 nodes: 31 s; 2 writes: 56 s; the
    # other lease proofs, log_driven_tiny_leases 12 s, log_driven_restart 23 s, ..., are
    # in `ctmc gate --prove` and bench/prove.py, to keep this suite's time)
    ("log_driven_tiny_senders", {}, "FloorAboveBumps"),
]


@pytest.mark.parametrize("name,overrides,lemma", PROOFS,
                         ids=[f"{n}-{','.join(o) or 'own'}" for n, o, _ in PROOFS])
def test_the_lemmas_prove_the_model(name: str, overrides: dict, lemma: str) -> None:
    machine = build_machine(load_model(name, MODELS_DIR), overrides)
    result = prove(machine, ProveOptions(k=1))
    assert result.outcome == PROVED, result.message
    assert lemma in result.lemmas_used


def test_the_side_transport_without_its_lemmas_is_not_inductive() -> None:
    """The side transport's lemmas are what makes the proof go through: without them,
    Z3 finds a state no run reaches."""
    import dataclasses

    machine = build_machine(load_model("log_driven_tiny_side_transport", MODELS_DIR))
    side = {"SenderHistory", "BumpsBelowSender", "BumpsBelowLaterWrites",
            "StreamsCarryHistory", "ReplicasHoldBumps"}
    assert side <= {lemma.name for lemma in machine.lemmas}
    core_only = [lemma for lemma in machine.lemmas if lemma.name not in side]
    result = prove(dataclasses.replace(machine, lemmas=core_only), ProveOptions(k=1))
    assert result.outcome == NOT_INDUCTIVE and result.violation is not None


STRUCTURE_LEMMAS = {
    "log_driven_tiny_split": {"SplitLastUntilApplied", "SplitAppliedWhereRHSExists",
                              "RHSWritesOfR1BeforeSplit", "RHSStartsAtSplitClosed",
                              "R1ReadsOfRHSBelowSplit"},
    "log_driven_tiny_merge": {"MergePhasesInOrder", "SubsumeFrozeRHS", "MergeWaitedForRHS",
                              "R1WritesOfRHSAboveRHSClaims", "KeysOfTheirRange"},
}
STRUCTURE_LEMMAS["log_driven_tiny_split_merge"] = (STRUCTURE_LEMMAS["log_driven_tiny_split"]
                                                   | STRUCTURE_LEMMAS["log_driven_tiny_merge"])


@pytest.mark.parametrize("name", sorted(STRUCTURE_LEMMAS))
def test_a_structure_without_its_lemmas_is_not_inductive(name: str) -> None:
    """The core's lemmas, stated per range, do not prove a split or a merge alone: what
    links range 1 to range 0 (`lemmas/splits.py`, `lemmas/merges.py`) is what makes the
    step go through."""
    import dataclasses

    machine = build_machine(load_model(name, MODELS_DIR))
    assert STRUCTURE_LEMMAS[name] <= {lemma.name for lemma in machine.lemmas}
    per_range = [lemma for lemma in machine.lemmas if lemma.name not in STRUCTURE_LEMMAS[name]]
    result = prove(dataclasses.replace(machine, lemmas=per_range), ProveOptions(k=1))
    assert result.outcome == NOT_INDUCTIVE and result.violation is not None

"""A mutation never proves: `prove` gives the real counterexample or a counterexample
to induction on every mutation model, so a proof cannot hide a known bug.

Which models: every `models/*mutation*.toml` that `prove` can take (all but those with
liveness properties, which it refuses), at the model's own sizes. None is named
`tiny`; the criterion is that each finishes in a few seconds, measured on a 2-core
machine: about 0.5 s each, and the ones taking 1 to 3 s are marked slow. A proof
that runs into the timeout fails the test too: `unknown` says nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.symbolic.induction import COUNTEREXAMPLE, NOT_INDUCTIVE, ProveOptions, prove
from checker.models import build_machine, load_model

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
MUTATIONS = sorted(p.stem for p in MODELS_DIR.glob("*mutation*.toml"))
LIVENESS = {"v1_mutation_epoch_pollution"}  # prove refuses liveness properties
SLOW = {  # 1 to 3 s each
    "log_driven_mutation_extension_carries_closed", "log_driven_mutation_extension_may_shorten",
    "log_driven_mutation_lease_request_carries_start",
    "log_driven_mutation_lease_request_sets_assigned_closed",
    "log_driven_mutation_merge_without_timestamp_cache_bump",
    "log_driven_mutation_new_rhs_lease_ignores_merge_intent",
    "log_driven_mutation_promotion_regresses_expiration",
    "log_driven_mutation_reads_at_lease_start", "log_driven_mutation_repropose_below_closed",
    "log_driven_mutation_sender_keeps_moved_range",
    "log_driven_mutation_side_close_under_revoked_lease_fatal",
    "log_driven_mutation_side_receiver_shared_across_senders",
    "log_driven_mutation_split_rhs_zero", "log_driven_mutation_transfer_without_read_summary",
    "v1_mutation_split_init_at_split_lai", "v1_mutation_subsumed_keeps_emitting",
}
TIMEOUT = 60  # seconds: far above any measured proof; running into it fails the test


def test_the_lists_name_mutation_models() -> None:
    assert len(MUTATIONS) >= 50
    assert LIVENESS | SLOW <= set(MUTATIONS)
    for name in LIVENESS:
        assert build_machine(load_model(name, MODELS_DIR), proof=True).liveness, name


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
    for n in MUTATIONS if n not in LIVENESS])
def test_prove_never_proves_a_mutation(name: str) -> None:
    model = load_model(name, MODELS_DIR)
    machine = build_machine(model, proof=True)
    result = prove(machine, ProveOptions(k=model.proof["k"], deadlock=model.engine["deadlock"],
                                         timeout=TIMEOUT))
    assert result.outcome in (COUNTEREXAMPLE, NOT_INDUCTIVE), (result.outcome, result.message)
    assert result.violation is not None and not result.lemmas_used

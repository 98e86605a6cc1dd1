"""The frontier kept in a file, the words rebuilt a window of parents at a time, and
fingerprints hashed in chunks report exactly what the search in memory does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from checker import packing
from checker.engines.explicit import bfs, successors
from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.explicit.frontier import SpilledColumns
from checker.models import build_machine, load_model
from tests.test_checkpoints import CASES, _SignalMidLevel, figures, options, uninterrupted

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
# exact and hashed fingerprints, a scalarset, and counterexamples (a mutation of each
# design)
MODELS = ["tracker_small", "log_driven_tiny_split", "log_driven_tiny_leases",
          "mutation_reset_cur_on_prev_exit", "log_driven_mutation_split_rhs_zero"]
PER_RUN = ("seconds", "states_per_second", "peak_rss_mb", "peak_rss_mb_workers")


def test_spilled_columns_read_back_what_was_written():
    rng = np.random.default_rng(7)
    columns = [rng.integers(0, 2**64, 100_003, dtype=np.uint64) for _ in range(3)]
    spilled = SpilledColumns(columns)
    for _ in range(2):  # and again from the file, once the pages were given back
        idx = rng.integers(0, len(columns[0]), 1000)
        for written, read in zip(columns, spilled.columns, strict=True):
            assert np.array_equal(read[idx], written[idx])
            assert np.array_equal(read, written)
        spilled.release()


@pytest.mark.parametrize("name", MODELS)
def test_a_spilled_frontier_and_windowed_rebuild_change_nothing(name, monkeypatch):
    model = load_model(name, MODELS_DIR)
    in_memory = check(build_machine(model), BfsOptions(deadlock=model.engine["deadlock"],
                                                       spill_from=None))
    spills: list[int] = []

    class Counted(SpilledColumns):
        def __init__(self, columns):
            super().__init__(columns)
            spills.append(len(columns[0]))

    monkeypatch.setattr(bfs, "SpilledColumns", Counted)
    monkeypatch.setattr(successors, "_WINDOW_BITS", 2)  # windows of 4 parents
    monkeypatch.setattr(successors, "_REBUILD_SLICE", 3)  # slices of a batch (64 keys)
    spilled = check(build_machine(model), BfsOptions(deadlock=model.engine["deadlock"],
                                                     spill_from=1, batch_size=64))
    assert len(spills) == spilled.stats["diameter"]  # the levels after the initial one
    assert len(spills) >= 3
    one, other = figures(in_memory), figures(spilled)
    for run in (one, other):
        run["stats"] = {k: v for k, v in run["stats"].items() if k not in PER_RUN}
    assert one == other


def test_the_cases_cover_both_fingerprint_kinds_and_a_counterexample():
    kinds, outcomes = set(), set()
    for name in MODELS:
        machine = build_machine(load_model(name, MODELS_DIR))
        kinds.add(packing.Layout(machine).exact)
        outcomes.add(bool(load_model(name, MODELS_DIR).expect_outcome != "holds"))
    assert kinds == {True, False} and outcomes == {True, False}


def test_fingerprints_hashed_in_chunks_equal_one_pass(monkeypatch):
    machine = build_machine(load_model("log_driven_tiny_split", MODELS_DIR))
    layout = packing.Layout(machine)
    assert not layout.exact
    rng = np.random.default_rng(3)
    words = [rng.integers(0, 2**64, 10_001, dtype=np.uint64) for _ in range(layout.n_words)]
    whole = packing._hash(words)
    monkeypatch.setattr(packing, "_HASH_CHUNK", 1000)
    assert np.array_equal(layout.fingerprints(words), whole)
    assert np.array_equal(layout.fingerprints([w[:999] for w in words]), whole[:999])


@pytest.mark.parametrize("case", ["exact", "hashed", "violation"])
def test_a_spilled_frontier_is_checkpointed_and_resumed_alike(case, tmp_path):
    """Interrupted mid-level with the frontier in a file, saved, resumed (from a
    frontier the checkpoint holds in memory), and interrupted again."""
    spec, params = CASES[case]
    want = uninterrupted(spec, params)
    folder = tmp_path / "ckpt"
    stops = 0
    for n in (3, 7, 12):
        try:
            got = check(spec.instantiate(params), options(
                folder, resume=folder.exists(), progress=_SignalMidLevel(n), spill_from=1))
        except KeyboardInterrupt:
            stops += 1
            continue
        break
    else:
        got = check(spec.instantiate(params), options(folder, resume=True, spill_from=1))
    assert stops >= 2
    assert figures(got) == want

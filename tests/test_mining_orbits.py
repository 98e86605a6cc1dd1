"""Mining candidates from one state per orbit (`infer/orbits.py`) and at the proof's
member counts with the BFS's ranges (`models.mining_machine`), as `prove --engine pdr
--mine` does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.symbolic.infer.orbits import close_under_symmetry, literal_image
from checker.engines.symbolic.infer.templates import Pool
from checker.models import build_machine, load_model, mining_machine
from checker.symmetry.group import SymmetryGroup
from tests.model_folders import ctmc
from tests.test_infer_search import EXAMPLES


def _judged(machine, symmetry: bool) -> Pool:
    pool = Pool(machine)
    result = check(machine, BfsOptions(deadlock=False, symmetry=symmetry,
                                       on_level=lambda read, n: pool.see_all(read, n)))
    assert result.violation is None
    return pool


def _kept(pool: Pool) -> set[tuple[int, ...]]:
    return {c.clause for c in pool.candidates()}


def _bits(pool: Pool) -> tuple[bytes, bytes]:
    """The literals and clauses still alive, as bits."""
    return pool.units.tobytes(), pool.clauses.tobytes()


def _within(pool: Pool, other: Pool | tuple[bytes, bytes]) -> bool:
    """Is every candidate alive in `pool` alive in `other`?"""
    units, clauses = _bits(other) if isinstance(other, Pool) else other
    return bool((np.frombuffer(units, bool) >= pool.units).all()
                and (np.frombuffer(clauses, bool) >= pool.clauses.ravel()).all())


@pytest.mark.parametrize("name, states, orbits", [("tracker_small", 4742, 900),
                                                   ("log_driven_tiny", 16712, 8362)])
def test_a_pool_judged_on_orbits_and_closed_keeps_what_every_state_and_closing_keep(
        name: str, states: int, orbits: int) -> None:
    """Judged on every reachable state or on one per orbit, the pools differ (the
    representatives satisfy facts their images break); closed under the scalarsets,
    they are the same, and everything kept holds in every reachable state."""
    machine = dataclasses.replace(build_machine(load_model(name)), lemmas=[])
    full, reps = _judged(machine, symmetry=False), _judged(machine, symmetry=True)
    assert (full.states, reps.states) == (states, orbits)
    assert _within(full, reps) and not _within(reps, full)
    everywhere = _bits(full)
    assert close_under_symmetry(full, machine) >= 1
    assert close_under_symmetry(reps, machine) >= 2  # the last pass changes nothing
    assert _bits(reps) == _bits(full) and _kept(reps) == _kept(full)
    assert _within(full, everywhere) and _bits(full) != everywhere

def test_a_literals_image_renames_its_slots_and_member_values_or_is_none() -> None:
    """Swapping requests 0 and 1 of the tracker: a request's fields move to the
    other's, a buffer position naming request 1 names request 0, and a timestamp
    compared with a request's name has no template image."""
    machine = build_machine(load_model("tracker_small"))
    pool = Pool(machine)
    swap = SymmetryGroup(machine).generators()[0][0]
    by_source = {lit.source: lit for lit in pool.literals}
    by_shape = {(lit.shape, lit.positive): lit.source for lit in pool.literals}

    def image(source: str) -> str | None:
        lit = by_source[source]
        shape = literal_image(lit, swap, machine)
        return None if shape is None else by_shape[(shape, lit.positive)]

    assert image("s.wts[0] != 1") == "s.wts[1] != 1"
    assert image("s.wts[2] < 3") == "s.wts[2] < 3"
    assert image("s.buf[0] == 1") == "s.buf[0] == 0"
    assert image("s.wts[0] == s.bts[1]") == "s.wts[1] == s.bts[1]"
    assert image("s.now == 1") == "s.now == 1"
    assert image("s.wts[0] != s.buf[2]") is None


def test_the_mining_machine_has_the_proofs_members_and_the_bfs_ranges() -> None:
    """tracker_small proves at 8 requests with a clock up to 1,000,000: it is mined at
    8 requests with [params]' clock and timestamps. A --set value stays as set; a
    model whose proof changes no range is mined as it is proved."""
    model = load_model("tracker_small")
    proved = build_machine(model, None, proof=True)
    mined = mining_machine(model, proved)
    assert mined is not None and [s.name for s in mined.slots] == \
        [s.name for s in proved.slots]
    assert {k: mined.params[k] for k in ("requests", "max_now", "max_ts")} == \
        {"requests": 8, "max_now": 3, "max_ts": 2}
    sets = {"max_now": "5"}
    mined = mining_machine(model, build_machine(model, sets, proof=True), sets)
    assert mined is not None and (mined.params["max_now"], mined.params["max_ts"]) == (5, 2)
    mutex = load_model(EXAMPLES / "mutex" / "mutex.toml", EXAMPLES / "mutex")
    assert mining_machine(mutex, build_machine(mutex, None, proof=True)) is None


def test_prove_mines_at_the_proofs_members_and_the_bfs_ranges(tmp_path: Path) -> None:
    """`ctmc prove --engine pdr --mine` at tracker_small's proof clock (up to
    1,000,000), 2 requests: it says where it mined, and the mined facts prove every
    property with nothing left for Spacer, each one checked again."""
    run = ctmc("prove", "tracker_small", "--engine", "pdr", "--mine", "--set", "requests=2",
               "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["outcome"] == "proved" and report["stats"]["mined_seeds"] > 1000
    assert "candidates hold in every image of" in run.stderr
    assert "random walks at the full sizes" in run.stderr
    assert report["stats"]["mined_at"] == {"max_now": 3, "max_ts": 2}

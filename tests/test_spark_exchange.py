"""The file exchange's layout: which bucket a fingerprint goes to, a task's rows
grouped by bucket, written and read back, and the reduce side's choice of each
state's canonical generator (no Spark needed)."""

from __future__ import annotations

import numpy as np
import pytest

from checker.engines.spark import exchange
from checker.engines.spark.levels import _canonical_rows
from checker.engines.spark.visited_runs import bucket_of
from checker.packing import U64, Layout
from tests.test_bfs import GRID

BUCKETS = 8
ACTIONS = 37


def _layout(exact: bool) -> Layout:
    machine = GRID.instantiate({"n": 6, "pad": 0 if exact else 1})
    layout = Layout(machine)
    assert layout.exact == exact
    return layout


def _rows(layout: Layout, n: int, seed: int) -> list[np.ndarray]:
    """A task's successors as `expand_states` makes them, sorted by fingerprint:
    fingerprint, words (none when exact), parent, action."""
    rng = np.random.default_rng(seed)
    high = 1 << 20 if layout.exact else 1 << 63  # exact states crowd into a narrow range
    words = [rng.integers(0, high, n, dtype=np.uint64) for _ in range(layout.n_words)]
    fps = layout.fingerprints(words)
    fps, rows = np.unique(fps, return_index=True)
    words = [w[rows] for w in words]
    parents = rng.integers(0, 1 << 63, len(fps), dtype=np.uint64)
    actions = rng.integers(0, ACTIONS, len(fps)).astype(U64)
    return [fps, *([] if layout.exact else words), parents, actions]


def test_hashed_buckets_are_ranges_of_the_fingerprint():
    fps = np.sort(np.random.default_rng(7).integers(0, 2**64, 10_000, dtype=np.uint64))
    got = bucket_of(fps, BUCKETS, exact=False)
    assert (np.diff(got) >= 0).all()  # fingerprint order is bucket order
    assert got[0] == 0 and got[-1] == BUCKETS - 1
    edges = np.array([b << 61 for b in range(BUCKETS)], dtype=U64)  # 2**64 / 8 apart
    assert (got == np.searchsorted(edges, fps, side="right") - 1).all()


def test_exact_fingerprints_are_spread_evenly():
    """Consecutive packed states (one narrow range) still fill every bucket alike."""
    got = bucket_of(np.arange(80_000, dtype=U64), BUCKETS, exact=True)
    counts = np.bincount(got, minlength=BUCKETS)
    assert counts.min() > 9_000 and counts.max() < 11_000, counts


@pytest.mark.parametrize("exact", [False, True])
def test_a_task_file_gives_each_bucket_its_rows_in_order(tmp_path, exact):
    layout = _layout(exact)
    rows = _rows(layout, 5_000, seed=11)
    fps = rows[0]
    offsets, order = exchange.grouping(fps, BUCKETS, exact)
    assert (order is None) == (not exact)  # sorted hashed rows are grouped already
    targets = bucket_of(fps, BUCKETS, exact)
    assert list(np.diff(offsets)) == list(np.bincount(targets, minlength=BUCKETS))
    written = exchange.write(tmp_path, 1, 0, BUCKETS, rows, layout, ACTIONS)
    # no hashed fingerprint, two bytes an action
    u64_columns = len(rows) - (1 if exact else 2)
    assert written == 8 * (BUCKETS + 1) + (8 * u64_columns + 2) * len(fps)
    for b in range(BUCKETS):
        got = exchange.read(tmp_path, 1, 1, BUCKETS, b, layout, ACTIONS)
        mine = np.flatnonzero(targets == b)
        assert len(got) == len(rows)
        for column, sent in zip(got, rows, strict=True):
            assert column.dtype == U64
            assert (column == sent[mine]).all()


def test_buckets_gather_every_tasks_share(tmp_path):
    """A bucket's rows are the concatenation of each task's share, in task order."""
    layout = _layout(False)
    shares = [_rows(layout, 3_000, seed=t) for t in range(3)]
    for t, rows in enumerate(shares):
        exchange.write(tmp_path, 4, t, BUCKETS, rows, layout, ACTIONS)
    for b in (0, BUCKETS - 1):
        got = exchange.read(tmp_path, 4, 3, BUCKETS, b, layout, ACTIONS)
        mine = [rows[0][bucket_of(rows[0], BUCKETS, False) == b] for rows in shares]
        assert (got[0] == np.concatenate(mine)).all()


def test_the_canonical_row_does_not_depend_on_the_rows_order():
    """Each fingerprint's row with the smallest (parent, action), found by brute force,
    whatever order the rows come in (the sort that groups them need not be stable)."""
    rng = np.random.default_rng(5)
    n = 20_000
    fps = rng.integers(0, 500, n).astype(U64)  # many rows per fingerprint
    pairs = rng.permutation(n * 4)[:n]  # distinct (parent, action): each row one transition
    parents, actions = (pairs // 4).astype(U64), (pairs % 4).astype(np.int64)
    best: dict[int, tuple[int, int, int]] = {}
    for i in range(n):
        key = (int(parents[i]), int(actions[i]), i)
        best[int(fps[i])] = min(best.get(int(fps[i]), key), key)
    expected = [best[f][2] for f in sorted(best)]
    assert list(_canonical_rows(fps, parents, actions)) == expected
    shuffled = rng.permutation(n)
    got = _canonical_rows(fps[shuffled], parents[shuffled], actions[shuffled])
    assert list(shuffled[got]) == expected

"""The compact visited set, packed integers and level records against plain oracles:
a sorted array (or a Python set) on random and adversarial fingerprints."""

import numpy as np
import pytest

from checker.engines.explicit.packed import PackedUInts
from checker.engines.explicit.records import LevelRecords
from checker.engines.explicit.visited import LevelDedup, VisitedSet

TOP = 2**64 - 1


def _u64(values) -> np.ndarray:
    return np.array(sorted(set(values)), dtype=np.uint64)


def _random(rng, n: int, bits: int = 64) -> np.ndarray:
    return rng.integers(0, 2**bits, n, dtype=np.uint64, endpoint=False) if bits < 64 else \
        rng.integers(0, TOP, n, dtype=np.uint64, endpoint=True)


@pytest.mark.parametrize("bits", [0, 1, 4, 9, 16, 27, 28, 32, 33, 44, 56, 63, 64])
def test_packed_uints_give_back_every_value(bits):
    rng = np.random.default_rng(bits)
    values = _random(rng, 1001, bits) if bits else np.zeros(1001, dtype=np.uint64)
    if bits:
        values[:2] = (0, 2**bits - 1)  # both ends of the range
    packed = PackedUInts(values, bits)
    idx = rng.integers(0, len(values), 300)
    assert np.array_equal(packed.decode(), values)
    assert np.array_equal(packed.get(idx), values[idx])
    top = values[idx] >> np.uint64(packed.top_shift)
    assert np.array_equal(packed.top(idx).astype(np.uint64), top)
    assert packed.nbytes <= len(values) * (-(-bits // 4) * 4) / 8 + 1


@pytest.mark.parametrize("bits", [4, 12, 44, 64])
def test_packed_uints_encode_across_chunks(monkeypatch, bits):
    """Values are encoded a chunk at a time: an odd count over several chunks."""
    monkeypatch.setattr("checker.engines.explicit.packed._CHUNK", 8)
    rng = np.random.default_rng(bits + 1)
    values = _random(rng, 37, bits)
    packed = PackedUInts(values, bits)
    assert np.array_equal(packed.decode(), values)
    assert np.array_equal(packed.get(np.arange(37)), values)


def _check(members: np.ndarray, extra: np.ndarray, max_run: int) -> None:
    """Build from half the members, add the other half, querying all along."""
    first, second = members[::2], members[1::2]
    queries = np.unique(np.concatenate((members, extra)))
    visited = VisitedSet(first.copy(), max_run=max_run)
    assert np.array_equal(visited.to_array(), first)
    assert np.array_equal(visited.missing(queries), ~np.isin(queries, first))
    visited.add_sorted(second.copy())
    assert len(visited) == len(members)
    assert np.array_equal(visited.to_array(), members)
    assert np.array_equal(visited.missing(queries), ~np.isin(queries, members))
    sparse = queries[::41]  # few queries a segment: the bisection rather than a decode
    assert np.array_equal(visited.missing(sparse), ~np.isin(sparse, members))


@pytest.mark.parametrize("max_run", [4, 64, 1 << 20])
def test_random_fingerprints_match_a_sorted_array(max_run):
    rng = np.random.default_rng(max_run)
    members = np.unique(_random(rng, 20_000))
    _check(members, _random(rng, 5_000), max_run)


@pytest.mark.parametrize("max_run", [4, 1 << 20])
def test_range_edges_and_neighbours(max_run):
    members = _u64([0, 1, 2, 2**32 - 1, 2**32, 2**63 - 1, 2**63, TOP - 1, TOP])
    _check(members, _u64([3, 2**32 + 1, 2**63 + 1, TOP - 2]), max_run)


def test_fingerprints_crowded_into_one_bucket():
    rng = np.random.default_rng(7)
    # exact fingerprints: packed states sharing every high bit, differing in a few low ones
    members = np.unique(np.uint64(0xABCD_0000_0000_0000) + _random(rng, 30_000, 20))
    _check(members, np.uint64(0xABCD_0000_0000_0000) + _random(rng, 3_000, 21), 1 << 20)


def test_values_sharing_the_searched_plane_are_told_apart():
    # equal top 32 bits of the stored remainder, different low bits: the tie search
    base = np.uint64(5 << 40)
    members = np.unique(base + np.arange(0, 4000, 3, dtype=np.uint64))
    _check(members, base + np.arange(1, 4000, 3, dtype=np.uint64), 1 << 20)


def test_empty_sets_and_empty_queries():
    visited = VisitedSet()
    assert len(visited) == 0 and len(visited.to_array()) == 0
    assert visited.missing(_u64([0, TOP])).all()
    assert len(visited.missing(np.empty(0, dtype=np.uint64))) == 0
    visited.add_sorted(np.empty(0, dtype=np.uint64))
    visited.add_sorted(_u64([TOP]))
    assert np.array_equal(visited.missing(_u64([0, TOP])), [True, False])


def test_large_random_sets_store_fewer_than_seven_bytes_a_fingerprint():
    rng = np.random.default_rng(3)
    members = np.unique(_random(rng, 1 << 20))
    visited = VisitedSet(members)
    assert visited.nbytes / len(members) < 7  # 8 as a plain uint64 array


def test_records_give_back_parent_and_action():
    rng = np.random.default_rng(11)
    records = LevelRecords(n_actions=25)
    records.append(np.zeros(3, dtype=np.int64))
    parents = rng.integers(0, 3, 500)
    actions = rng.integers(0, 25, 500)
    records.append_parents(parents.astype(np.uint32), actions.astype(np.uint16))
    assert len(records) == 2
    steps = [records.step(1, i) for i in range(500)]
    assert steps == list(zip(parents.tolist(), actions.tolist(), strict=True))
    assert records.step(1, 17) == (parents[17], actions[17])
    level = records.steps(1, np.uint16)
    assert len(level) == 500
    back_p, back_a = (np.concatenate(c) for c in zip(*level, strict=True))
    assert np.array_equal(back_p, parents) and np.array_equal(back_a, actions)
    assert back_a.dtype == np.uint16 and back_p.dtype == np.uint32
    assert records.nbytes < 500 * 2  # 3 * 25 keys: 8 bits a state


def test_a_level_decodes_a_chunk_at_a_time_and_again(monkeypatch):
    """A checkpoint writes a level's steps in chunks (little memory when it is short)
    and a failed save iterates them again: chunks join to the level, twice over."""
    from checker.engines.explicit.records import LevelSteps

    monkeypatch.setattr(LevelSteps, "CHUNK", 64)
    rng = np.random.default_rng(5)
    records = LevelRecords(n_actions=7)
    parents, actions = rng.integers(0, 1000, 1001), rng.integers(0, 7, 1001)
    records.append_parents(parents.astype(np.uint32), actions.astype(np.uint16))
    level = records.steps(0, np.uint16)
    for _ in range(2):
        chunks = list(level)
        assert [len(p) for p, _ in chunks] == [64] * 15 + [41]
        assert np.array_equal(np.concatenate([p for p, _ in chunks]), parents)
        assert np.array_equal(np.concatenate([a for _, a in chunks]), actions)


@pytest.mark.parametrize("bits", [4, 12, 28, 44, 64])
def test_packed_values_decode_by_range(bits):
    rng = np.random.default_rng(bits)
    values = rng.integers(0, 2**bits - 1, 999, dtype=np.uint64, endpoint=True)
    packed = PackedUInts(values, bits)
    for lo, hi in [(0, 999), (0, 1), (2, 7), (10, 998), (998, 999), (500, 2000), (4, 4)]:
        assert np.array_equal(packed.decode(lo, hi), values[lo:hi]), (lo, hi)


@pytest.mark.parametrize("exact,n_words,bits", [(False, 2, 64), (False, 0, 64), (True, 1, 40),
                                                (True, 1, 64)],
                         ids=["hashed", "hashed-keys-only", "exact", "exact-64-bits"])
def test_level_dedup_keeps_each_new_state_once_with_its_smallest_key(exact, n_words, bits):
    """Chunks sharing states, some already visited, many folds per part: against a
    dictionary of each unvisited fingerprint's smallest key. With `n_words` 0 no word
    is held (the caller rebuilds them from the keys). Exact 64-bit states that differ
    in their low bits only leave neither sort trick room: the plain argsort decides."""
    rng = np.random.default_rng(5 + exact)
    if exact and bits == 64:
        pool = np.unique(_random(rng, 6_000, 16)) | np.uint64(0xABCD << 48)
    else:
        pool = np.unique(_random(rng, 6_000, 40 if exact else 64))
    visited = VisitedSet(pool[::3].copy(), max_run=256)  # several segments, so many parts
    dedup = LevelDedup(visited, n_words, bits if exact else None, budget=64)
    best: dict[int, int] = {}
    first = 0
    for _ in range(30):  # chunks in parent order, as BFS adds them
        fps = pool[rng.integers(0, len(pool), 700)]
        gen = first + rng.permutation(700).astype(np.int64)  # distinct within a chunk
        first += 700
        words = [fps] if exact else [fps, fps ^ np.uint64(0x5555)]
        dedup.add(fps, gen, words)
        for f, g in zip(fps.tolist(), gen.tolist(), strict=True):
            best[f] = min(best.get(f, g), g)
    members = set(pool[::3].tolist())
    expect = sorted((f, g) for f, g in best.items() if f not in members)
    fps, gen, words = dedup.result()
    assert list(zip(fps.tolist(), gen.tolist(), strict=True)) == expect
    assert len(words) == n_words
    if n_words:
        assert np.array_equal(words[0], fps)
    if n_words == 2:
        assert np.array_equal(words[1], fps ^ np.uint64(0x5555))
    assert dedup.high_bits_group == (not exact or bits < 64)  # stopped trying, or never failed


def test_recently_added_fingerprints_are_found_before_and_after_reencoding():
    rng = np.random.default_rng(9)
    members = np.unique(_random(rng, 40_000))
    visited = VisitedSet(members[::2].copy(), max_run=1 << 20)
    added = members[1::2]
    queries = np.unique(np.concatenate((members[::3], _random(rng, 2_000))))
    kept_aside = False
    for lo in range(0, len(added), 1_000):  # small levels: kept aside, then re-encoded
        visited.add_sorted(added[lo:lo + 1_000].copy())
        kept_aside |= any(len(s.recent) for s in visited.segments)
        so_far = np.union1d(members[::2], added[:lo + 1_000])
        assert np.array_equal(visited.missing(queries), ~np.isin(queries, so_far))
    assert kept_aside
    assert np.array_equal(visited.to_array(), members)

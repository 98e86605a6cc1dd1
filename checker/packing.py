"""States as fixed-width 64-bit words, and their 64-bit fingerprints.

Each slot takes just enough bits for its range and never straddles a word.
When a state fits in one word the word *is* the fingerprint (exact, no
collisions); otherwise the words are hashed (splitmix64 chaining) and the
engines report the probability of a collision, as TLC does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from checker.errors import SpecError
from checker.lang.machine import Machine

U64 = np.uint64
_GOLDEN = U64(0x9E3779B97F4A7C15)
_MIX1 = U64(0xBF58476D1CE4E5B9)
_MIX2 = U64(0x94D049BB133111EB)
_HASH_CHUNK = 1 << 16  # states hashed at a time


@dataclass(frozen=True)
class SlotField:
    word: int
    offset: int
    bits: int
    lo: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1


class Layout:
    """Where each slot lives in the packed words."""

    def __init__(self, machine: Machine):
        fields: list[SlotField] = []
        word, offset = 0, 0
        for slot in machine.slots:
            bits = (slot.hi - slot.lo).bit_length()
            if bits > 64 or not -(2**63) <= slot.lo <= slot.hi < 2**63:
                raise SpecError(
                    f"spec {machine.spec_name}: {slot.name} ranges over {slot.lo}..{slot.hi}, "
                    f"beyond the 64-bit integers the explicit engines store; lower the "
                    f"parameter that bounds it (the symbolic engines, bmc and prove, have no "
                    f"such limit)")
            if offset + bits > 64:
                word, offset = word + 1, 0
            fields.append(SlotField(word, offset, bits, slot.lo))
            offset += bits
        self.fields = fields
        self.n_words = word + 1
        self.bits = sum(f.bits for f in fields)

    @property
    def exact(self) -> bool:
        """True when the packed state is its own fingerprint."""
        return self.n_words == 1

    # scalar ------------------------------------------------------------------
    def pack(self, state: tuple[int, ...]) -> tuple[int, ...]:
        words = [0] * self.n_words
        for f, v in zip(self.fields, state, strict=True):
            words[f.word] |= (v - f.lo) << f.offset
        return tuple(words)

    def unpack(self, words: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(((words[f.word] >> f.offset) & f.mask) + f.lo for f in self.fields)

    def fingerprint(self, state: tuple[int, ...]) -> int:
        words = np.array([[w] for w in self.pack(state)], dtype=U64)
        return int(self.fingerprints(list(words))[0])

    # batches -----------------------------------------------------------------
    def pack_batch(self, states: np.ndarray) -> list[np.ndarray]:
        """(n, n_slots) int array -> list of n_words uint64 arrays."""
        words = [np.zeros(len(states), dtype=U64) for _ in range(self.n_words)]
        for j, f in enumerate(self.fields):
            if f.bits:
                words[f.word] |= (states[:, j] - f.lo).astype(U64) << U64(f.offset)
        return words

    def pack_states(self, states: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        """State tuples (the scalar backend's) -> list of n_words uint64 arrays."""
        return self.pack_batch(np.array(states, dtype=np.int64).reshape(len(states),
                                                                        len(self.fields)))

    def raw_slot(self, words: list[np.ndarray], j: int) -> np.ndarray:
        """Slot j's stored bits (its value minus its lower bound), as uint64."""
        f = self.fields[j]
        return (words[f.word] >> U64(f.offset)) & U64(f.mask)

    def unpack_slot(self, words: list[np.ndarray], j: int) -> np.ndarray:
        return self.raw_slot(words, j).astype(np.int64) + self.fields[j].lo

    def fingerprints(self, words: list[np.ndarray]) -> np.ndarray:
        if self.exact:
            return words[0]
        n = len(words[0])
        if n <= _HASH_CHUNK:
            return _hash(words)
        # a chunk at a time: the mixing's temporaries stay small (and in cache)
        out = np.empty(n, dtype=U64)
        for lo in range(0, n, _HASH_CHUNK):
            out[lo:lo + _HASH_CHUNK] = _hash([w[lo:lo + _HASH_CHUNK] for w in words])
        return out


def fingerprint_ranges(fps: np.ndarray, n: int, exact: bool) -> np.ndarray:
    """Which of `n` (at most 2**16) equal ranges of the 64-bit space each fingerprint
    falls in, as uint64: how the parallel BFS splits states among workers and Spark
    among buckets. A hashed fingerprint is uniform, so fingerprint order is range
    order; an exact one, the packed state itself (a level's states crowd into a few
    narrow ranges), is spread first by multiplying by an odd constant (a bijection)."""
    with np.errstate(over="ignore"):
        top = (fps * _GOLDEN if exact else fps) >> U64(32)
    top *= U64(n)
    top >>= U64(32)
    return top


def _hash(words: list[np.ndarray]) -> np.ndarray:
    h = _splitmix(words[0] + _GOLDEN)
    for w in words[1:]:
        h = _splitmix(h ^ w)
    return h


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> U64(30))) * _MIX1
        z = (z ^ (z >> U64(27))) * _MIX2
        return z ^ (z >> U64(31))


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate for 64-bit fingerprints: n * (g - n) / 2^64."""
    return distinct * max(generated - distinct, 0) / 2.0**64

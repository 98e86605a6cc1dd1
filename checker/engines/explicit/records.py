"""Where each visited state came from, in as few bits as its level needs.

A state of level d is reached from parent p (its index in level d-1) by action
a; both are kept as one generation key p * n_actions + a, packed in the width
of the level's largest key (rounded up to a nibble): 28 bits for a level of
5 million states and 25 actions, where a uint32 parent and a uint16 action
take 48. Traces walk these keys back to an initial state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from checker.engines.explicit.packed import PackedUInts


def action_dtype(n_actions: int) -> type[np.unsignedinteger]:
    """Action ids take 2 bytes a state, or 4 for a machine of more than 65,536 actions."""
    return np.uint16 if n_actions <= 1 << 16 else np.uint32


class LevelRecords:
    """Per level, each state's generation key (the initial level's are zeros)."""

    def __init__(self, n_actions: int):
        self.n_actions = n_actions
        self.levels: list[PackedUInts] = []

    def __len__(self) -> int:
        return len(self.levels)

    @property
    def nbytes(self) -> int:
        return sum(level.nbytes for level in self.levels)

    def append(self, gen: np.ndarray) -> None:
        """Add a level from its generation keys (non-negative)."""
        top = int(gen.max()) if len(gen) else 0
        self.levels.append(PackedUInts(gen, top.bit_length()))

    def append_parents(self, parents: np.ndarray, actions: np.ndarray) -> None:
        """Add a level from parent indexes and action ids (as checkpoints hold them)."""
        self.append(parents.astype(np.int64) * self.n_actions + actions.astype(np.int64))

    def step(self, depth: int, index: int) -> tuple[int, int]:
        """(parent index, action id) of state `index` of level `depth`."""
        key = int(self.levels[depth].get(np.array([index]))[0])
        return divmod(key, self.n_actions)

    def steps(self, depth: int, action_dtype: type[np.unsignedinteger]) -> LevelSteps:
        """Level `depth` as uint32 parent indexes and `action_dtype` action ids, decoded
        a chunk at a time when iterated (a checkpoint writes them so, and a save that
        runs when memory is short needs little of it)."""
        return LevelSteps(self.levels[depth], self.n_actions, action_dtype)


@dataclass(frozen=True)
class LevelSteps:
    """One level's (parents, actions), as chunks of at most `CHUNK` states; iterating
    again starts over (a failed save is retried from the start)."""

    keys: PackedUInts
    n_actions: int
    action_dtype: type[np.unsignedinteger]
    CHUNK: ClassVar[int] = 1 << 18

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for lo in range(0, len(self.keys), self.CHUNK):
            parent, action = np.divmod(self.keys.decode(lo, lo + self.CHUNK),
                                       np.uint64(self.n_actions))
            yield parent.astype(np.uint32), action.astype(self.action_dtype)

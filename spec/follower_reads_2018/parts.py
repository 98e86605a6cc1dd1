"""Vocabulary of the 2018 spec's components, beside the log-driven spec's `Ctx`.

The shared components (`spec/log_driven/raft.py`, `follower_reads.py`) read the
log-driven `Ctx`; the 2018 components also read `V1`: the origin store, ranges,
epochs, sequence numbers, the switches, and the registry of renumbered values that
the liveness models' window uses (`window.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from checker.lang import And, Enum

ORIGIN = 0  # n1: the store whose closed-timestamp updates the model follows
NONE = -1  # no MLAI known / no sequence number / nothing closed yet

LeaseKind = Enum("LeaseKind", "initial takeover transfer")

# A location renumbered by the window: read(s) -> value, write(s, value), and whether
# the value is live (a dead one is neither renumbered nor blocks renumbering).
Loc = tuple[Callable[[Any], Any], Callable[[Any, Any], None], Callable[[Any], Any]]


@dataclass
class V1:
    """Sizes and switches of one build of the 2018 spec."""

    nodes: int
    ranges: int
    writes: int
    lease_changes: int
    epochs: int
    max_seq: int
    max_ts: int
    target: int
    lai_hi: int
    muts: frozenset[str]
    window: bool = False
    failures: bool = True
    keep_previous: bool = False
    # called as hook(s, ok, closed, sent_mlais) when n1's periodic close runs
    on_close: list[Callable] = field(default_factory=list)
    # values the window renumbers, by dimension: "ts", "lai", "seq"
    locs: dict[str, list[Loc]] = field(
        default_factory=lambda: {"ts": [], "lai": [], "seq": []})

    def mutated(self, name: str) -> bool:
        return name in self.muts

    def register(self, dim: str, read: Callable, write: Callable,
                 live: Callable = lambda s: True) -> None:
        self.locs[dim].append((read, write, live))


def holds_lease(s: Any, node: int) -> Any:
    """`node` holds the newest lease and has applied it; n1 must also be live in the
    lease's epoch (epoch-based leases: "Reference-level explanation")."""
    j = s.lcount
    mine = And(s.lholder[j] == node, s.lseq[node] == j)
    if node != ORIGIN:
        return mine
    return And(mine, s.live, s.lepoch[j] == s.epoch[ORIGIN])

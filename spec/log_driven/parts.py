"""Vocabulary shared by the log-driven spec's components.

Every component is a function `add(m, p, ctx)` that declares its variables,
actions and properties on the model builder; `Ctx` carries the sizes and
switches all of them read, and the hooks one component offers another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.lang import Enum, Or

NIL = -1  # unset timestamp: an empty tracker bucket, "nothing closed yet"

# A write request's lifecycle on the leaseholder. `released` is reached only under
# UntrackWholeBatchFirst: buffered, but already out of the tracker.
WPhase = Enum("WPhase", "idle evaluating buffered released flushed")

KEY_NAMES = "abcdefgh"


def node_name(n: int) -> str:
    """n0 in the state is n1 in prose, as in the RFC and the ground-truth scenarios."""
    return f"n{n + 1}"


@dataclass
class Ctx:
    """Sizes, switches and cross-component hooks for one build of the spec."""

    nodes: int
    keys: int
    writes: int
    reads: int
    log_len: int
    max_ts: int
    target: int
    lease_exp: int
    muts: frozenset[str]
    lead: int = 0  # LEAD policy: close now + lead (0: only the LAG policy exists)
    lease_changes: int = 0  # lease requests or transfers after n1's initial lease
    # hooks a component offers others: "after_apply" (called with (s, n) when replica n
    # applies a log entry) and "effective_closed" ((s, n) -> the closed ts reads use)
    hooks: dict[str, Any] = field(default_factory=lambda: {"after_apply": []})
    key_type: Any = None

    def __post_init__(self) -> None:
        self.key_type = Enum("Key", list(KEY_NAMES[:self.keys]))

    def mutated(self, name: str) -> bool:
        return name in self.muts

    @property
    def closed_hi(self) -> int:
        """Largest closed ts: the clock's bound, plus the lead of a LEAD policy."""
        return self.max_ts + self.lead

    @property
    def ts_hi(self) -> int:
        """Largest timestamp a write can take (one above any closed ts)."""
        return self.closed_hi + 1


def tracked(s: Any, w: int) -> Any:
    """Write w is in the tracker: evaluating, or buffered and not yet released."""
    return Or(s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered)

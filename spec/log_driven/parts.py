"""Vocabulary shared by the log-driven spec's components.

Every component is a function `add(m, p, ctx)` that declares its variables,
actions and properties on the model builder; `Ctx` carries the sizes and
switches all of them read, and the hooks one component offers another.

Ranges: range 0 exists from the start. A model with a split (`structure =
"split"`) creates range 1 from range 0's keys at and above `split_key`; a model
with a merge starts with both ranges and merges range 1 into range 0. Either way
the one structural command is proposal `ctx.struct`, proposed by range 0, and
each node's `span_changed` flag says whether its replica of range 0 has applied
it (a node's replicas then cover the new spans).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.lang import And, Enum, Max, Not, Or

NIL = -1  # unset timestamp: an empty tracker bucket, "nothing closed yet"

# A proposal's lifecycle on the leaseholder. `released` is reached only under
# UntrackWholeBatchFirst and ReproposeWithoutTracking: buffered, but out of the
# tracker. `failed`: the client
# got an error (a reproposal gave up, or the lease moved away while it was evaluating or
# buffered).
WPhase = Enum("WPhase", "idle evaluating buffered released flushed failed")

KEY_NAMES = "abcdefgh"


def node_name(n: int) -> str:
    """n0 in the state is n1 in prose, as in the RFC and the reference's scenarios."""
    return f"n{n + 1}"


def range_name(g: int) -> str:
    return f"r{g + 1}"


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
    lease_changes: int = 0  # lease commands (requests, transfers, extensions) per range
    structure: str = "none"  # "split", "merge" or "none"
    split_key: int = 1  # keys at and above this index belong to the right-hand side
    restarts: bool = False  # n1 may restart (restarts.py)
    reproposals: int = 0  # new-LAI reproposals allowed in a run (log entries then carry
    # their own LAI and closed ts: `elai`, `ects`)
    lease_extensions: bool = False  # the leaseholder may extend its lease (leases.py)
    # hooks a component offers others: "after_apply" (called with (s, g, n) when replica
    # (g, n) applies a log entry), "effective_closed" ((s, g, n) -> the closed ts reads
    # use), "apply_lease", "apply_struct"
    hooks: dict[str, Any] = field(default_factory=lambda: {"after_apply": []})
    key_type: Any = None

    def __post_init__(self) -> None:
        self.key_type = Enum("Key", list(KEY_NAMES[:self.keys]))

    def mutated(self, name: str) -> bool:
        return name in self.muts

    @property
    def ranges(self) -> int:
        return 1 if self.structure == "none" else 2

    @property
    def props(self) -> int:
        """Proposals: the writes, then the structural command if there is one."""
        return self.writes + (self.structure != "none")

    @property
    def struct(self) -> int:
        """The proposal id of the split or merge command."""
        return self.writes

    @property
    def buffer_len(self) -> int:
        """Proposal buffer slots: every proposal, and every lease command (transfers and
        extensions go through the leaseholder's buffer)."""
        return self.props + self.lease_changes

    @property
    def max_lai(self) -> int:
        return self.props + self.lease_changes + self.reproposals

    @property
    def closed_hi(self) -> int:
        """Largest closed ts: the clock's bound, plus the lead of a LEAD policy."""
        return self.max_ts + self.lead

    @property
    def ts_hi(self) -> int:
        """Largest timestamp a write can take (one above any closed ts)."""
        return self.closed_hi + 1

    def rhs(self, k: Any) -> bool:
        """Key k (a concrete key) lies in the right-hand side of the split or merge."""
        return self.structure != "none" and k.index >= self.split_key

    @property
    def rhs_keys(self) -> list[Any]:
        return [k for k in self.key_type.values if self.rhs(k)]


def tracked(s: Any, w: int) -> Any:
    """Write w is in the tracker: evaluating, or buffered and not yet released."""
    return Or(s.wphase[w] == WPhase.evaluating, s.wphase[w] == WPhase.buffered)


def in_range(s: Any, ctx: Ctx, w: int, g: int) -> Any:
    """Proposal w belongs to range g (the structural command to range 0)."""
    if ctx.ranges == 1 or w >= ctx.writes:
        return g == 0
    return s.wrng[w] == g


def tracked_in(s: Any, ctx: Ctx, w: int, g: int) -> Any:
    return And(tracked(s, w), in_range(s, ctx, w, g))


def leaseholder(s: Any, ctx: Ctx, g: int) -> Any:
    """The node whose proposal buffer serves range g (n1 unless leases change)."""
    return s.lh[g] if ctx.lease_changes else 0


def lease_base(s: Any, ctx: Ctx, g: int, j: Any) -> Any:
    """The lease sequence of range g's lease command j: an extension keeps the sequence
    of the lease it extends (`leases.py`), so writes proposed under either apply under
    both."""
    return s.lbase[g][j] if ctx.lease_extensions else j


def exists(s: Any, ctx: Ctx, g: int, n: Any) -> Any:
    """Node n has a replica of range g: a split creates range 1 on each node as it
    applies the split; a merge removes it."""
    if g == 0 or ctx.structure == "none":
        return True
    changed = s.span_changed[n]
    return changed if ctx.structure == "split" else Not(changed)


def covers(s: Any, ctx: Ctx, g: int, k: Any, n: Any) -> Any:
    """Node n's replica of range g holds key k (a concrete key)."""
    if ctx.structure == "none":
        return True
    changed = s.span_changed[n]
    if ctx.structure == "split":
        if g == 0:
            return True if not ctx.rhs(k) else Not(changed)
        return changed if ctx.rhs(k) else False
    if g == 0:
        return True if not ctx.rhs(k) else changed
    return Not(changed) if ctx.rhs(k) else False


def write_floor(s: Any, ctx: Ctx, g: int, k: Any = None) -> Any:
    """The lowest ts range g's leaseholder lets a write to key k take: above its
    assigned closed ts, above its lease's start (the timestamp cache's low water for a
    new lease), and, after a merge, above the right-hand side's timestamp cache."""
    floor = s.assigned_closed[g] + 1
    if ctx.lease_changes and not ctx.mutated("NoTimestampCacheOnLeaseChange"):
        # the timestamp cache pushes writes strictly above the lease start
        low = s.lh_low[g] if ctx.mutated("WriteAtLeaseStart") else s.lh_low[g] + 1
        floor = Max(floor, low)
    if ctx.structure == "merge" and g == 0 and k is not None and ctx.rhs(k):
        floor = Max(floor, s.rhs_tsc + 1)
    return floor

"""Vocabulary shared by the log-driven spec's components.

Every component is a function `add(m, p, ctx)` that declares its variables,
actions and properties on the model builder; `Ctx` carries the sizes and
switches all of them read, and the hooks one component offers another.

Ranges: range 0 exists from the start. A model with a split (`structure =
"split"`) creates range 1 from range 0's keys at and above `split_key`; a model
with a merge starts with both ranges and merges range 1 into range 0; a model
with both (`"split_merge"`) splits range 1 off and later merges it back. Each
structural command is a proposal of range 0 (`ctx.split_id`, `ctx.merge_id`),
and per node a flag says whether its replica of range 0 has applied it
(`split_applied`, `merge_applied`): a node's replicas then cover the new spans.

Proposers: every replica has its own proposal buffer, tracker, assigned LAI and
assigned closed ts (reference §2.1: "per replica; only meaningful on the LH"). A
node proposes for a range while the lease its own replica applied names it and is
usable; when leases change, a node that lost the lease keeps its buffer, and what
is left in it is flushed later and rejected below Raft. Without lease changes only
n1 ever proposes, so the per-node arrays have one slot (`ctx.proposers`).

Keys form one segment, or two when a split or merge divides them at `split_key`
(left and right of it): each node's timestamp cache keeps a low water per segment
(`tsc[n][seg]`), the store-wide cache keyed by span (reference §5.1, §5.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.lang import And, Enum, If, Max, Not, Or

NIL = -1  # unset timestamp: an empty tracker bucket, "nothing closed yet"

# A proposal's lifecycle on its proposer. `released` is reached only under
# UntrackWholeBatchFirst and ReproposeWithoutTracking: buffered, but out of the
# tracker. `failed`: the client got an error (a reproposal gave up). `orphaned`:
# flushed, then forgotten by its proposer in a restart (it may still reach the log).
WPhase = Enum("WPhase", "idle evaluating buffered released flushed failed orphaned")

KEY_NAMES = "abcdefgh"


def node_name(n: int) -> str:
    """n0 in the state is n1 in prose, as in the RFC and the reference's scenarios."""
    return f"n{n + 1}"


def range_name(g: int) -> str:
    return f"r{g + 1}"


def structural_name(state: dict, w: int) -> str:
    """"split" or "merge": what structural proposal w is, in a decoded state (for
    narration and views). With both, the split comes first and the merge's flag is
    `merged`."""
    if "merged" in state:
        return "split" if w == len(state["wkey"]) else "merge"
    return "merge" if "subsumed" in state else "split"


@dataclass
class Ctx:
    """Sizes, switches and cross-component hooks for one build of the spec."""

    nodes: int
    keys: int
    writes: int
    reads: int
    max_ts: int
    target: int
    lease_exp: int
    muts: frozenset[str]
    lead: int = 0  # LEAD policy: close now + lead (0: only the LAG policy exists)
    lease_changes: int = 0  # lease commands (requests, transfers, extensions) per range
    structure: str = "none"  # "split", "merge", "split_merge" or "none"
    split_key: int = 1  # keys at and above this index belong to the right-hand side
    restarts: bool = False  # n1 may restart (restarts.py)
    reproposals: int = 0  # new-LAI reproposals allowed in a run (log entries then carry
    # their own LAI and closed ts: `elai`, `ects`)
    lease_extensions: bool = False  # the leaseholder may extend its lease (leases.py)
    duplicate: bool = False  # Raft may append a command a second time
    max_offset: int = 0  # the maximum clock offset between two nodes (`clocks.py`)
    epochs: bool = False  # new leases are epoch-based (`leases.py`)
    lease_bases: bool = False  # lease commands carry their sequence (`lbase`): renewals
    # and extensions keep the one they extend
    # hooks a component offers others: "after_apply" (called with (s, g, n) when replica
    # (g, n) applies a log entry), "effective_closed" ((s, g, n) -> the closed ts reads
    # use), "apply_lease", "apply_struct" (per structural proposal id: called with
    # (s, n, accepted, first) when replica (r1, n) applies an entry of it)
    hooks: dict[str, Any] = field(default_factory=lambda: {"after_apply": [],
                                                            "apply_struct": {},
                                                            "lease_taken": []})
    key_type: Any = None

    def __post_init__(self) -> None:
        self.key_type = Enum("Key", list(KEY_NAMES[:self.keys]))

    def mutated(self, name: str) -> bool:
        return name in self.muts

    @property
    def ranges(self) -> int:
        return 1 if self.structure == "none" else 2

    @property
    def splits(self) -> bool:
        """Range 1 is created by a split of range 0."""
        return self.structure in ("split", "split_merge")

    @property
    def merges(self) -> bool:
        """Range 1 is merged into range 0."""
        return self.structure in ("merge", "split_merge")

    @property
    def struct_ids(self) -> list[int]:
        """The proposal ids of the structural commands, after the writes': the split's,
        then the merge's."""
        return list(range(self.writes, self.writes + self.splits + self.merges))

    @property
    def split_id(self) -> int:
        return self.writes

    @property
    def merge_id(self) -> int:
        return self.writes + self.splits

    @property
    def props(self) -> int:
        """Proposals: the writes, then the structural commands."""
        return self.writes + len(self.struct_ids)

    @property
    def proposers(self) -> int:
        """Nodes with a proposal buffer of their own: every node when leases change,
        else only n1."""
        return self.nodes if self.lease_changes else 1

    @property
    def segments(self) -> int:
        """Key segments the timestamp cache tells apart: left and right of the split
        key when a split or merge divides the keys, else one."""
        return 1 if self.structure == "none" else 2

    def segment(self, k: Any) -> int:
        """The segment of key k (a concrete key)."""
        return 1 if self.rhs(k) else 0

    @property
    def buffer_len(self) -> int:
        """Proposal buffer slots: every proposal, and every lease command (transfers and
        extensions go through the leaseholder's buffer)."""
        return self.props + self.lease_changes

    @property
    def max_lai(self) -> int:
        return self.props + self.lease_changes + self.reproposals

    @property
    def log_len(self) -> int:
        """Raft log entries per range: one per LAI a range can assign (every proposal,
        lease command and reproposal), twice over if Raft may duplicate them."""
        return self.max_lai * (2 if self.duplicate else 1)

    @property
    def closed_hi(self) -> int:
        """Largest closed ts: the clock's bound, plus the lead of a LEAD policy."""
        return self.max_ts + self.lead

    @property
    def exp_hi(self) -> int:
        """Largest lease expiration: beyond every closed ts."""
        return self.closed_hi + 2

    @property
    def timestamp_cache(self) -> bool:
        """Writes consult the store's timestamp cache (`tsc`): something raises it above
        0 (a lease changing hands, a merge, a restart)."""
        return bool(self.lease_changes or self.merges or self.restarts)

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


def proposer(s: Any, ctx: Ctx, w: int) -> Any:
    """The node whose replica evaluated proposal w (n1 without lease changes)."""
    return s.wnode[w] if ctx.proposers > 1 else 0


def proposed_by(s: Any, ctx: Ctx, w: int, g: int, x: Any) -> Any:
    """Proposal w belongs to range g and was evaluated by node x."""
    if ctx.proposers == 1:
        return in_range(s, ctx, w, g)
    return And(in_range(s, ctx, w, g), s.wnode[w] == x)


def tracked_in(s: Any, ctx: Ctx, w: int, g: int, x: Any) -> Any:
    """Write w is in node x's tracker of range g."""
    return And(tracked(s, w), proposed_by(s, ctx, w, g, x))


def lease_base(s: Any, ctx: Ctx, g: int, j: Any) -> Any:
    """The lease sequence of range g's lease command j: an extension (or a request for
    the holder's own expired lease) keeps the sequence of the lease it extends
    (`leases.py`), so writes proposed under either apply under both."""
    return s.lbase[g][j] if ctx.lease_bases else j


def owns_applied_lease(s: Any, ctx: Ctx, g: int, x: Any) -> Any:
    """The lease node x's replica of range g applied names x (n1 without lease
    changes)."""
    if not ctx.lease_changes:
        return x == 0
    return s.lholder[g][s.lseq[g][x]] == x


def split_applied(s: Any, ctx: Ctx, n: Any) -> Any:
    """Node n's replica of range 0 has applied the split (with a merge only, range 1
    exists from the start, as if split long ago)."""
    return s.span_changed[n] if ctx.splits else True


def merge_applied(s: Any, ctx: Ctx, n: Any) -> Any:
    """Node n's replica of range 0 has applied the merge."""
    if not ctx.merges:
        return False
    return s.merged[n] if ctx.splits else s.span_changed[n]


def pick(values: list[Any], i: Any) -> Any:
    """values[i] for a symbolic index i (an If-chain)."""
    out = values[-1]
    for j in range(len(values) - 2, -1, -1):
        out = If(i == j, values[j], out)
    return out


def exists(s: Any, ctx: Ctx, g: int, n: Any) -> Any:
    """Node n has a replica of range g: a split creates range 1 on each node as it
    applies the split; a merge removes it."""
    if g == 0 or ctx.structure == "none":
        return True
    if not ctx.merges:
        return split_applied(s, ctx, n)
    if not ctx.splits:
        return Not(merge_applied(s, ctx, n))
    return And(split_applied(s, ctx, n), Not(merge_applied(s, ctx, n)))


def covers(s: Any, ctx: Ctx, g: int, k: Any, n: Any) -> Any:
    """Node n's replica of range g holds key k (a concrete key): range 0 holds the
    right-hand keys unless range 1 does."""
    if not ctx.rhs(k):
        return g == 0
    if g == 1:
        return exists(s, ctx, 1, n)
    if not ctx.merges:
        return Not(split_applied(s, ctx, n))
    if not ctx.splits:
        return merge_applied(s, ctx, n)
    return Or(Not(split_applied(s, ctx, n)), merge_applied(s, ctx, n))


def write_floor(s: Any, ctx: Ctx, g: int, x: Any, k: Any) -> Any:
    """The lowest ts node x lets a write to key k of range g take: above its replica's
    assigned closed ts, and above its store's timestamp cache over k's segment (the
    low water a new lease, a transfer's read summary, a merge or a restart left;
    WriteAtLeaseStart takes the low water as inclusive)."""
    floor = s.assigned_closed[g][x] + 1
    if ctx.timestamp_cache:
        tsc = s.tsc[x][ctx.segment(k)]
        floor = Max(floor, tsc if ctx.mutated("WriteAtLeaseStart") else tsc + 1)
    return floor

"""The 2020 RFC's two-bucket closed-timestamp tracker, as a bounded state machine.

Source: the Log-Driven Closed Timestamps RFC (2020, PR #56675), sections "Theoretical
considerations", "Analysis", "How the tracker will work", "Rules for maintaining the
buckets", "Rules for assigning a proposal's closed ts" and the diagrams that follow.
This is the RFC's design, keyed by *target* timestamps (now - target), not the
lock-free tracker CockroachDB later shipped (see docs/closedts-reference.md §1.5 and §D).

Model
-----
A range's leaseholder with a clock `now` and `requests` write requests. Each request
goes once through idle -> evaluating -> buffered -> flushed:

* `arrive(r, c)`: the request comes in with a client timestamp `c` and enters the tracker
  (`TrackerRules.enter`): in the bucket design it joins *cur*, sets cur's ts to
  now - target if unset, is forwarded strictly above its bucket's ts, and shifts
  prev/cur if prev is empty. In the heap design it is forwarded above the range's
  closed ts.
* `finish(r)`: evaluation is done; the request is appended to the proposal buffer (a
  FIFO queue: the array `buf` of request ids and its length `buflen`).
* `flush(r)`: the head of the buffer is flushed (`TrackerRules.flush`): the request leaves
  its bucket by the RFC's exit rules and its proposal is given a closed ts by the RFC's
  three rules, in one atomic step. The RFC puts the tracker under the proposal
  buffer's lock and requires a request to fix its closed ts "before, or otherwise
  atomically with, exiting their bucket" ("How the tracker will work"); we take the
  atomic reading, with the closed ts computed just after the exit (as in the
  diagrams, where the last request out of *cur* carries now - target "since both
  buckets are empty"). `close_before_exit=true` computes it just before the exit
  instead (negative control N7).
* `tick`: the clock advances, up to `max_now`.

Timestamps are integers. The clock starts at `target`, so now - target is never
negative and -1 (`NIL`) can stand for "unset" (a bucket's ts) or "nothing closed yet"
(the range's closed ts). Client timestamps range over 1..max_ts: every bucket ts is
>= 0, so a client ts of 1 already behaves like any lower one (it is always forwarded),
and including 0 would only add action instances that reach no new state. The range's
closed ts `closed` is the one carried by the last flushed proposal; the RFC keeps it
"separately" from the buckets. A flushed request's `wts` is reset to 0 (it no longer
matters to the tracker), which keeps the state space small.

Buckets are two physical slots plus a pointer `prev` to the one that is *prev*, so an
"increment" (prev := cur, cur := a new bucket) is a pointer flip plus a reset of the
slot that becomes the new *cur*, as in the implementation's pointer swap. Bucket
membership is each request's `bucket` slot; emptiness is derived from the request
phases, not kept as a reference count.

Readings of the RFC
-------------------
* Exit rule 1 versus the diagrams: the rules say that when the last request leaves
  *prev*, prev and cur are incremented; the third diagram instead leaves an empty
  *prev* in place while *cur* still has a request ("if cur were empty, prev and cur
  would now be incremented"), and has that last request out of prev carry prev's ts
  (10) where the rules, applied after the exit, give cur's (15). We follow the rules
  text. Both readings are safe; the diagram's carries a lower closed ts.
* Rule 2 needs cur's ts to be set ("otherwise we would have been in case 1"), so a
  *cur* holding requests but no ts (reachable only under ResetCurOnPrevExit) falls to
  rule 1, as in the reference's M11 scenario. With the correct rules, rule 2 is
  never used: a request that finds prev empty moves cur into prev, so whenever prev
  is empty cur is empty too.
* A proposal carries exactly what the three rules give; nothing forwards it to the
  previous closed ts. ClosedMonotone checks that the rules alone are monotone.
* In the bucket design a request is forwarded only above its bucket's ts, as the RFC
  says; TrackedAboveClosed checks that this also keeps it above the range's closed ts.
  In the heap design it is forwarded above the range's closed ts (the tracker's
  contract in the implementation: every tracked ts is above what was closed).
* Lease requests are not tracked by the RFC's tracker and are not modelled here.

Reuse
-----
`TrackerRules` holds the rules as small functions over the symbolic state of any host
spec that has a `wts` array indexed by request and says which requests are tracked
(`tracked(s, q)`). `declare_tracker_switches(spec)` gives a host spec the same
`tracker`, `close_before_exit` and `keep_cur_ts` parameters and the same mutations;
`TrackerRules.from_params` builds the rules from them; `rules.declare(m, ts_hi)` adds
the tracker's variables and `rules.add_invariants(m)` its own invariants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checker.errors import ModelError
from checker.lang import (
    And,
    Array,
    Enum,
    ForAll,
    If,
    Implies,
    Int,
    Max,
    Min,
    Not,
    Or,
    Spec,
    require,
)

NIL = -1  # an unset bucket ts, or "nothing closed yet"

TRACKERS = ("buckets", "heap")

Phase = Enum("Phase", "idle evaluating buffered flushed")

# Known wrong designs, each a switch on the spec (spec.mutation). The docstrings say why
# each is wrong; models/mutation_*.toml expect the checker to refute them.
TRACKER_MUTATIONS: dict[str, str] = {
    "ResetCurOnPrevExit": (
        "M11. When the last request leaves prev, reset cur's ts instead of incrementing "
        "(prev := cur, cur := new). Wrong because requests still in cur lose the ts that "
        "bounds them: the exiting proposal falls to rule 1 and carries now - target, which "
        "can be at or above the write ts of a request still in cur (RFC 'Rules for "
        "maintaining the buckets', exit rule 1)."),
    "CarryOwnBucketTs": (
        "A proposal carries the ts of the bucket its request was in, instead of the one the "
        "RFC's rules pick. Wrong for a request in cur while prev is not empty: cur's ts is "
        "above prev's, and prev's requests are only known to write above prev's ts (RFC "
        "'Rules for assigning a proposal's closed ts', rule 3)."),
    "NoForwardAboveBucket": (
        "The request keeps its client ts instead of being forwarded strictly above its "
        "bucket's ts (in the heap design: above the range's closed ts). Wrong because the "
        "bucket ts is what a later proposal closes (rules 2 and 3) and a request may "
        "already be below the closed ts when it arrives (RFC 'How the tracker will work': "
        "a request's write ts must be strictly greater than its bucket's ts)."),
    "HeapIgnoresTracked": (
        "Heap design only: close now - target without looking at the requests still "
        "evaluating. Wrong because a timestamp can only be closed once no request is "
        "evaluating below it (RFC 'Theoretical considerations'); the min-heap exists to "
        "bound the closed ts by the lowest in-flight write ts."),
}

SWITCHES = {
    "tracker": ("buckets", "the RFC's two buckets, or the min-heap of its Analysis section"),
    "close_before_exit": (False, "N7: compute a proposal's closed ts before its request "
                                 "leaves its bucket (still safe, lower closed ts)"),
    "keep_cur_ts": (False, "N1: keep cur's ts when cur drains (still safe; only liveness)"),
}


def declare_tracker_switches(spec: Spec) -> None:
    """Give `spec` the tracker's parameters (`tracker`, `close_before_exit`, `keep_cur_ts`)
    and mutations, so a host spec can offer the same design choices."""
    for name, (default, doc) in SWITCHES.items():
        spec.param(name, default, doc, choices=TRACKERS if name == "tracker" else None)
    for name, doc in TRACKER_MUTATIONS.items():
        spec.mutation(name, doc)


def _phase_tracked(s: Any, q: int) -> Any:
    return Or(s.phase[q] == Phase.evaluating, s.phase[q] == Phase.buffered)


@dataclass(frozen=True)
class TrackerRules:
    """The tracker's rules, as functions over a host spec's symbolic state.

    The host spec provides `wts` (an array of write timestamps indexed by request) and a
    predicate `tracked(s, q)`: request q has entered the tracker and not yet left it. The
    helpers never rely on the host having updated q's phase yet: where a rule concerns
    "the other requests", the request at hand is excluded explicitly.

    Variables declared by `declare` (bucket design only):
      bts[2]     the two physical buckets' timestamps (NIL = unset)
      prev       which physical bucket is *prev*; *cur* is 1 - prev
      bucket[R]  the physical bucket each tracked request is in (0 when untracked)
      bts_hi     ghost: the highest bucket ts ever set (for BucketTsIncrease)
    A host spec must not use these names for its own variables.

    In a host spec's build function (`_build` below is the full pattern):

        rules = TrackerRules.from_params(p, n, p.target, tracked=lambda s, q: ...)
        m.var("wts", Array(Int(0, wts_hi), n), init=0)
        rules.declare(m, ts_hi)
        ...  # in the action where request r starts evaluating:
        rules.enter(s, r, client_ts, s.now, floor=s.closed)
        ...  # in the flush action, while r is still tracked:
        carried = rules.flush(s, r, s.now)
        ...
        rules.add_invariants(m)
    """

    kind: str
    requests: int
    target: int
    tracked: Callable[[Any, int], Any] = _phase_tracked
    keep_cur_ts: bool = False
    close_before_exit: bool = False
    reset_cur_on_prev_exit: bool = False
    carry_own_bucket_ts: bool = False
    no_forward: bool = False
    heap_ignores_tracked: bool = False

    def __post_init__(self) -> None:
        if self.kind not in TRACKERS:
            raise ModelError(f"tracker must be one of {', '.join(TRACKERS)}, got {self.kind!r}")
        bucket_only = {"keep_cur_ts": self.keep_cur_ts,
                       "ResetCurOnPrevExit": self.reset_cur_on_prev_exit,
                       "CarryOwnBucketTs": self.carry_own_bucket_ts}
        if self.kind == "heap":
            for name, on in bucket_only.items():
                if on:
                    raise ModelError(f"{name} applies to tracker=buckets only")
        elif self.heap_ignores_tracked:
            raise ModelError("HeapIgnoresTracked applies to tracker=heap only")

    @classmethod
    def from_params(cls, p: Any, requests: int, target: int,
                    tracked: Callable[[Any, int], Any] = _phase_tracked) -> TrackerRules:
        """The rules selected by the switches of `declare_tracker_switches`."""
        muts = p.mutations
        return cls(kind=p.tracker, requests=requests, target=target, tracked=tracked,
                   keep_cur_ts=p.keep_cur_ts, close_before_exit=p.close_before_exit,
                   reset_cur_on_prev_exit="ResetCurOnPrevExit" in muts,
                   carry_own_bucket_ts="CarryOwnBucketTs" in muts,
                   no_forward="NoForwardAboveBucket" in muts,
                   heap_ignores_tracked="HeapIgnoresTracked" in muts)

    @property
    def buckets(self) -> bool:
        return self.kind == "buckets"

    # --- state ------------------------------------------------------------------
    def declare(self, m: Any, ts_hi: int) -> None:
        """Declare the tracker's variables; bucket timestamps range over NIL..ts_hi."""
        if not self.buckets:
            return  # the heap is the set of tracked requests itself
        m.var("bts", Array(Int(NIL, ts_hi), 2), init=NIL,
              doc="the two physical buckets' timestamps (-1 = unset)")
        m.var("prev", Int(0, 1), init=0, doc="which physical bucket is prev; cur is the other")
        m.var("bucket", Array(Int(0, 1), self.requests), init=0,
              doc="the physical bucket of each tracked request (0 otherwise)")
        m.var("bts_hi", Int(NIL, ts_hi), init=NIL, ghost=True,
              doc="the highest bucket ts set so far")

    def others(self, exclude: int | None) -> list[int]:
        return [q for q in range(self.requests) if q != exclude]

    def in_bucket(self, s: Any, q: int, b: Any) -> Any:
        return And(self.tracked(s, q), s.bucket[q] == b)

    def bucket_empty(self, s: Any, b: Any, exclude: int | None = None) -> Any:
        """No tracked request other than `exclude` is in physical bucket `b`."""
        return ForAll(self.others(exclude), lambda q: Not(self.in_bucket(s, q, b)))

    # --- rules ------------------------------------------------------------------
    def enter(self, s: Any, r: int, client_ts: Any, now: Any, floor: Any) -> None:
        """Request r arrives with `client_ts` and enters the tracker; sets `s.wts[r]`.

        Buckets ("Rules for maintaining the buckets"): r enters cur; an unset cur ts
        becomes now - target; r's write ts is forwarded strictly above cur's ts; if prev
        is empty, prev and cur are incremented, so r ends up in prev. Heap ("Analysis"):
        r is forwarded strictly above `floor`, the range's closed ts.
        """
        if not self.buckets:
            s.wts[r] = client_ts if self.no_forward else Max(client_ts, floor + 1)
            return
        prev0 = s.prev
        cur = 1 - prev0
        unset = s.bts[cur] == NIL
        fresh = now - self.target
        s.bts[cur] = If(unset, fresh, s.bts[cur])
        s.bts_hi = If(unset, Max(s.bts_hi, fresh), s.bts_hi)
        s.wts[r] = client_ts if self.no_forward else Max(client_ts, s.bts[cur] + 1)
        s.bucket[r] = cur
        shift = self.bucket_empty(s, prev0, exclude=r)
        s.bts[prev0] = If(shift, NIL, s.bts[prev0])  # the old prev slot becomes the new cur
        s.prev = If(shift, cur, prev0)

    def exit_bucket(self, s: Any, r: int) -> None:
        """Request r leaves its bucket ("Rules for maintaining the buckets").

        Only the last request out of a bucket does something: out of prev, prev and cur
        are incremented; out of cur, cur's ts is reset (unless keep_cur_ts).
        """
        if not self.buckets:
            return  # leaving the heap is the host marking r untracked
        prev0 = s.prev
        cur0 = 1 - prev0
        b = s.bucket[r]
        last = self.bucket_empty(s, b, exclude=r)
        drained_prev = And(last, b == prev0)
        drained_cur = And(last, b == cur0)
        if not self.keep_cur_ts:
            s.bts[cur0] = If(drained_cur, NIL, s.bts[cur0])
        if self.reset_cur_on_prev_exit:
            s.bts[cur0] = If(drained_prev, NIL, s.bts[cur0])
        else:
            s.bts[prev0] = If(drained_prev, NIL, s.bts[prev0])
            s.prev = If(drained_prev, cur0, prev0)
        s.bucket[r] = 0

    def closed_for_flush(self, s: Any, now: Any, exclude: int | None = None) -> Any:
        """The closed ts a proposal carries, with `exclude` no longer counted as tracked.

        Buckets ("Rules for assigning a proposal's closed ts"): (3) prev not empty: prev's
        ts; (2) prev empty: cur's ts; (1) both empty: now - target. Rule 2 needs cur's ts
        to be set ("otherwise we would have been in case 1"), so a cur with requests but
        no ts falls to rule 1. Heap ("Analysis"): min(now - target, lowest tracked write
        ts - 1).
        """
        fresh = now - self.target
        if not self.buckets:
            if self.heap_ignores_tracked:
                return fresh
            out = fresh
            for q in self.others(exclude):
                out = If(self.tracked(s, q), Min(out, s.wts[q] - 1), out)
            return out
        prev = s.prev
        cur = 1 - prev
        prev_busy = Not(self.bucket_empty(s, prev, exclude))
        cur_busy = Not(self.bucket_empty(s, cur, exclude))
        return If(prev_busy, s.bts[prev],
                  If(And(cur_busy, s.bts[cur] != NIL), s.bts[cur], fresh))

    def flush(self, s: Any, r: int, now: Any) -> Any:
        """Request r's proposal is flushed: r exits and the carried closed ts is returned.

        Call while r is still tracked in the host's eyes. Exit and closed-ts choice are one
        atomic step ("How the tracker will work"); by default the ts is chosen just after
        the exit, with close_before_exit just before it.
        """
        own = s.bts[s.bucket[r]] if self.buckets else None
        if self.close_before_exit:
            closed = self.closed_for_flush(s, now, exclude=None)
            self.exit_bucket(s, r)
        else:
            self.exit_bucket(s, r)
            closed = self.closed_for_flush(s, now, exclude=r)
        return own if self.carry_own_bucket_ts else closed

    # --- the tracker's own invariants ---------------------------------------------
    def add_invariants(self, m: Any) -> None:
        """Register RequestsAboveBucket and BucketTsIncrease (bucket design only)."""
        if not self.buckets:
            return
        rules = self

        def RequestsAboveBucket(s):  # noqa: N802 - property names are CamelCase
            """Every tracked request is in a bucket whose ts is set, and writes strictly
            above it (RFC "How the tracker will work": "a request's write timestamp needs
            to be strictly greater than its bucket's timestamp")."""
            return ForAll(range(rules.requests), lambda q: Implies(
                rules.tracked(s, q),
                And(s.bts[s.bucket[q]] != NIL, s.wts[q] > s.bts[s.bucket[q]])))

        def BucketTsIncrease(before, after):  # noqa: N802
            """prev's ts <= cur's ts when both are set, and a newly set bucket ts is >= every
            bucket ts set before it (ghost bts_hi). RFC "Rules for maintaining the buckets":
            "timestamps for buckets are monotonically increasing"; "How the tracker will
            work": bucket i's ts is larger than bucket i-1's."""
            prev, cur = after.bts[after.prev], after.bts[1 - after.prev]
            ordered = Implies(And(prev != NIL, cur != NIL), prev <= cur)
            newly = ForAll(range(2), lambda b: Implies(
                And(after.bts[b] != NIL, after.bts[b] != before.bts[b]),
                after.bts[b] >= before.bts_hi))
            return And(ordered, newly)

        m.invariant(RequestsAboveBucket)
        m.step_invariant(BucketTsIncrease)


# --- the spec ---------------------------------------------------------------------

TRACKER = Spec("tracker", doc=(
    "The 2020 log-driven closed timestamps RFC's two-bucket tracker (or its min-heap "
    "alternative) in the proposal buffer: requests enter buckets, are forwarded above "
    "their bucket's ts, and at flush leave their bucket and carry a closed ts."))
TRACKER.param("requests", 3, "write requests (each arrives once)", min=1, max=8)
TRACKER.param("target", 1, "closed ts target duration: buckets close now - target", min=0)
TRACKER.param("max_now", 3, "the clock runs from `target` up to max_now", min=0)
TRACKER.param("max_ts", 2, "client timestamps range over 1..max_ts", min=1)
declare_tracker_switches(TRACKER)


def tracker_bounds(p: Any) -> tuple[int, int]:
    """(highest bucket/closed ts, highest write ts) for the tracker spec's parameters."""
    if p.max_now < p.target:
        raise ModelError(f"max_now={p.max_now} must be >= target={p.target} "
                         "(the clock starts at target)")
    ts_hi = p.max_now - p.target
    return ts_hi, max(p.max_ts, ts_hi + 1)


@TRACKER.build
def _build(m, p):
    n = p.requests
    ts_hi, wts_hi = tracker_bounds(p)
    rules = TrackerRules.from_params(p, n, p.target)

    m.var("now", Int(p.target, p.max_now), init=p.target, doc="the leaseholder's clock")
    m.var("phase", Array(Phase, n), init=Phase.idle, doc="each request's lifecycle")
    m.var("wts", Array(Int(0, wts_hi), n), init=0,
          doc="write ts of a tracked or buffered request (0 otherwise)")
    rules.declare(m, ts_hi)
    m.var("buf", Array(Int(NIL, n - 1), n), init=NIL,
          doc="the proposal buffer: request ids in flush order (-1 past buflen)")
    m.var("buflen", Int(0, n), init=0, doc="how many requests are buffered")
    m.var("closed", Int(NIL, ts_hi), init=NIL,
          doc="the range's closed ts: carried by the last flushed proposal")
    m.var("closed_hi", Int(NIL, ts_hi), init=NIL, ghost=True,
          doc="the highest closed ts carried so far")
    # requests are interchangeable: nothing in the rules looks at a request's id
    m.scalarset("Request", n, index={"phase": 0, "wts": 0,
                                     **({"bucket": 0} if rules.buckets else {})},
                values=["buf"])

    @m.action()
    def tick(s):
        require(s.now < p.max_now)
        s.now = s.now + 1

    @m.action(r=range(n), c=range(1, p.max_ts + 1))
    def arrive(s, r, c):
        require(s.phase[r] == Phase.idle)
        rules.enter(s, r, c, s.now, floor=s.closed)
        s.phase[r] = Phase.evaluating

    @m.action(r=range(n))
    def finish(s, r):
        require(s.phase[r] == Phase.evaluating)
        s.phase[r] = Phase.buffered
        s.buf[s.buflen] = r
        s.buflen = s.buflen + 1

    @m.action(r=range(n))
    def flush(s, r):
        require(s.buflen > 0)
        require(s.buf[0] == r)
        carried = rules.flush(s, r, s.now)
        s.phase[r] = Phase.flushed
        s.wts[r] = 0
        s.closed = carried
        s.closed_hi = Max(s.closed_hi, carried)
        for i in range(n - 1):
            s.buf[i] = s.buf[i + 1]
        s.buf[n - 1] = NIL
        s.buflen = s.buflen - 1

    @m.step_invariant
    def ClosedMonotone(before, after):  # noqa: N802 - property names are CamelCase
        """The closed ts carried by successive proposals never decreases (RFC "How the
        tracker will work": integrating the tracker with the proposal buffer "helps to
        ensure that the closed timestamps carried by successive commands are monotonic";
        "closed ts are monotonic below Raft")."""
        return after.closed >= before.closed

    @m.step_invariant
    def NoWriteBelowClosed(before, after):  # noqa: N802
        """No proposal writes at or below a closed ts carried by an earlier proposal (RFC
        "Design": a command carrying closed ts ts1 promises that "all further applying
        commands perform writes at timestamps > ts1"). Checked on each flush against the
        ghost closed_hi."""
        return ForAll(range(n), lambda r: Implies(
            And(before.phase[r] == Phase.buffered, after.phase[r] == Phase.flushed),
            before.wts[r] > before.closed_hi))

    @m.invariant
    def TrackedAboveClosed(s):  # noqa: N802
        """Every request still evaluating or buffered writes strictly above the range's
        closed ts (RFC "Theoretical considerations": once a timestamp is closed, "any
        write at a lower timestamp needs to be bumped"; reference A7/A8(c))."""
        return ForAll(range(n), lambda r: Implies(rules.tracked(s, r), s.wts[r] > s.closed))

    rules.add_invariants(m)
    if p.tracker == "buckets" and not (p.keep_cur_ts or p.close_before_exit):
        add_lemmas(m, p, n)
    m.narrate(narrate)


def add_lemmas(m: Any, p: Any, n: int) -> None:
    """The strengthening that makes the bucket tracker's properties 1-inductive, so
    `ctmc prove` holds at any clock and request count (without it, Z3 finds states no
    run reaches: a closed ts above a tracked request's bucket, a full buffer with a
    request still evaluating). Registered for the RFC's rules as written; the negative
    controls keep_cur_ts and close_before_exit are safe for other reasons."""

    @m.lemma
    def ClosedHiIsClosed(s):  # noqa: N802
        """The ghost highest closed ts is the current one: NoWriteBelowClosed then
        follows from TrackedAboveClosed."""
        return s.closed_hi == s.closed

    @m.lemma
    def ClockAboveTimestamps(s):  # noqa: N802
        """Nothing closed or stamped is above now - target, and bts_hi bounds both
        buckets: a fresh bucket ts is then at or above everything before it."""
        return And(s.closed <= s.now - p.target, s.bts_hi <= s.now - p.target,
                   ForAll(range(2), lambda b: s.bts[b] <= s.bts_hi))

    @m.lemma
    def BucketsOrdered(s):  # noqa: N802
        """prev's ts is at most cur's when both are set (the state half of
        BucketTsIncrease), so closing prev's ts closes below cur's requests too."""
        prev, cur = s.bts[s.prev], s.bts[1 - s.prev]
        return Implies(And(prev != NIL, cur != NIL), prev <= cur)

    @m.lemma
    def ClosedBelowTrackedBuckets(s):  # noqa: N802
        """The closed ts is at most the ts of every bucket holding a request: with
        RequestsAboveBucket this gives TrackedAboveClosed, and a flush closing a busy
        bucket's ts never moves the closed ts back (ClosedMonotone)."""
        return ForAll(range(n), lambda r: Implies(_phase_tracked(s, r),
                                                  s.closed <= s.bts[s.bucket[r]]))

    @m.lemma
    def EmptyBucketsUnset(s):  # noqa: N802
        """A bucket without requests has no ts (it is reset when it drains), so a new
        request never joins a bucket stamped before the last close."""
        return ForAll(range(2), lambda b: Implies(
            ForAll(range(n), lambda r: Not(And(_phase_tracked(s, r), s.bucket[r] == b))),
            s.bts[b] == NIL))

    @m.lemma
    def BufferHoldsBuffered(s):  # noqa: N802
        """buf[0..buflen) lists each buffered request once: finish then never writes
        past the buffer, and flush takes a buffered request."""
        return buffer_lists(s.buf, s.buflen, lambda r: s.phase[r] == Phase.buffered, n)


def buffer_lists(buf: Any, buflen: Any, buffered: Callable[[Any], Any], n: int) -> Any:
    """A proposal buffer `buf[0..buflen)` over n entries lists each buffered entry once
    and nothing else (`buffered(r)` says entry r is buffered; r may be symbolic). Used
    by both specs' lemmas: with it, appending never writes past the buffer and a flush
    takes a buffered entry."""
    listed = ForAll(range(n), lambda i: Implies(i < buflen, buffered(buf[i])))
    distinct = ForAll([(i, j) for i in range(n) for j in range(i + 1, n)],
                      lambda ij: Implies(ij[1] < buflen, buf[ij[0]] != buf[ij[1]]))
    count = buflen == sum(If(buffered(r), 1, 0) for r in range(n))
    return And(listed, distinct, count)


def _ts(v: int) -> str:
    return "nil" if v == NIL else str(v)


def buckets_text(state: dict[str, Any]) -> str:
    """The tracker as in the RFC's diagrams, e.g. `prev ts=0 {r1} | cur ts=nil {}`."""
    tracked = [q for q, ph in enumerate(state["phase"]) if ph in ("evaluating", "buffered")]
    if "bts" not in state:
        return "heap {" + ", ".join(f"r{q}@{state['wts'][q]}" for q in tracked) + "}"
    out = []
    for label, b in (("prev", state["prev"]), ("cur", 1 - state["prev"])):
        members = ", ".join(f"r{q}" for q in tracked if state["bucket"][q] == b)
        out.append(f"{label} ts={_ts(state['bts'][b])} {{{members}}}")
    return " | ".join(out)


def narrate(action: str, params: dict[str, Any], before: dict[str, Any],
            after: dict[str, Any]) -> str:
    """One line per step for the trace viewer."""
    r = params.get("r")
    if action == "arrive":
        head = f"r{r} arrives with ts {params['c']}, writes at {after['wts'][r]}"
    elif action == "finish":
        head = f"r{r} finishes evaluating and joins the proposal buffer"
    elif action == "flush":
        head = (f"r{r}'s proposal is flushed: writes at {before['wts'][r]}, "
                f"carries closed ts {_ts(after['closed'])}")
    else:
        head = f"the clock ticks to {after['now']}"
    return f"{head}; {buckets_text(after)}"

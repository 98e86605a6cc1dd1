"""The 2018 design: follower reads from store-wide closed-timestamp updates.

Source: the "Follower Reads" RFC (2018) ("Reference-level explanation" through
"Splits/Merges", and "Further work"), with the receiver made precise by
`docs/closedts-reference.md` §C; in this package, "reference", section numbers (§) and
A-, M- and V-numbers refer to that file. Components (see `spec/README.md` for the map from
RFC sections to components, invariants and models):

- `mpt.py`        the min proposal tracker of the origin store n1
- `writes.py`     the write path: Track, LAI, release, propose
- `reproposals.py` a write rejected for its LAI proposed again with a new LAI, through
                  the MPT again (#42821, #42939)
- `transport.py`  n1's periodic close and its updates; the lossy in-order transport;
                  the receivers' per-origin (epoch, seq, closed, MLAI map) state
- `epochs.py`     liveness epochs, takeovers, restarts, lease transfers
- `reads.py`      the follower-read rule
- `structure.py`  splits (the RHS starts from the LHS's closed state) and merges
                  (Subsume's closed ts; a subsumed range's unreachable MLAI)
- `window.py`     time passing; for liveness models, renumbering time, LAIs and
                  sequence numbers so behaviours can go on forever
- `lemmas.py`     facts that make the properties inductive (`ctmc prove`)
- `narration.py`  how a trace reads in protocol words

Shared with the log-driven spec (`spec/log_driven/`), unchanged: the Raft log and
application (`raft.py`: reordering, the LAI check, the lease-sequence check), and
follower reads with the end-to-end `NoStaleRead` (`follower_reads.py`), which sees
this design's read rule through the `effective_closed` hook.
"""

from __future__ import annotations

from checker.errors import ModelError
from checker.lang import And, Int, Spec
from spec.follower_reads_2018 import (
    epochs,
    lemmas,
    reads,
    reproposals,
    structure,
    transport,
    views,
    window,
    writes,
)
from spec.follower_reads_2018.narration import narrate
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1
from spec.log_driven import follower_reads, raft, symmetry
from spec.log_driven.parts import Ctx

FOLLOWER_READS_2018 = Spec("follower_reads_2018", doc=(
    "Follower reads (2018 RFC): n1's min proposal tracker, store-wide closed-timestamp "
    "updates with epochs, sequence numbers and MLAI maps, receivers, epoch-based leases, "
    "and the follower-read rule over the shared Raft log."))
P = FOLLOWER_READS_2018
P.param("nodes", 3, "nodes; each holds a replica of the range; n1 is the origin store", min=2,
        max=3)
P.param("keys", 1, "keys in the range", min=1, max=3)
P.param("writes", 2, "write slots (each write evaluates once, unless window)", min=1, max=3)
P.param("reads", 1, "follower reads recorded", min=0, max=2)
P.param("max_ts", 6, "the clock's bound", min=2)
P.param("target", 1, "n1 closes now - target", min=1)
P.param("max_seq", 2, "n1's largest sequence number", min=0)
P.param("epochs", 2, "largest liveness epoch", min=1, max=3)
P.param("lease_changes", 0, "takeovers or transfers after the initial lease", min=0, max=2)
P.param("init_holder", 0, "r1's initial leaseholder (0: n1)", min=0, max=2)
P.param("structure", "none", "r1 splits into r1 and r2, or r2 (leased to n1) merges into "
        "r1", choices=("none", "split", "merge"))
P.param("split_key", 1, "the first key of r2 (keys a, b, c: 0, 1, 2)", min=1, max=2)
P.param("failures", True, "n1's liveness may lapse (then heartbeat, restart, takeover)")
P.param("transfers", True, "n1 may transfer r1's lease (with lease_changes)")
P.param("restarts", True, "n1 may restart in a new epoch (with failures)")
P.param("losses", True, "the network may drop an update")
P.param("mlai_requests", True, "receivers may ask n1 for a missing MLAI")
P.param("reorder", False, "Raft may append proposals out of LAI order")
P.param("duplicate", False, "Raft may append a proposal a second time (a reproposal)")
P.param("reproposals", 0, "new-LAI reproposals a run may make: a write n1's replica "
        "rejects for its LAI is proposed again, through the MPT (0: none)", min=0, max=2)
P.param("window", False, "liveness models: renumber time, LAIs and sequence numbers")
P.param("keep_previous", False, "receivers keep the previous closed ts (RFC 'Lagging "
        "followers' fix)")

for _name, _doc in {
    "IgnoreEpoch": "M31. The receiver neither resets its state on a new epoch nor matches "
                   "the lease's epoch when serving a read.",
    "NoGapReset": "M32. The receiver keeps its MLAI map across a lost update (sequence gap).",
    "TransferStartBelowClosed": "M28. A lease transfer bypasses the MPT: its start is not "
                                "forced above next, and its LAI is missing from the MLAI map.",
    "EpochPollution": "M34 (#48553). An MLAI refresh releases into the MPT with the applied "
                      "lease's epoch, another node's: closes stop succeeding.",
    "SplitInitAtSplitLAI": "The split's RHS starts from the LHS's closed ts computed at the "
                           "split's LAI, which may rest on an update sent after the RHS took "
                           "writes (found by this model; the safe start is just below it).",
    "SubsumedKeepsEmitting": "M33 (#44878). A subsumed range keeps publishing its real LAI "
                             "instead of LAI + 1, so followers use newer closed ts.",
    "SharedSequence": "Finding: n1 numbers its updates once for all peers, so a full "
                      "update one peer asks for restarts the numbers every peer sees; a "
                      "peer that missed the new run's first updates takes a later one as "
                      "the successor of the old run's.",
    "ResumeAfterGap": "Finding: after a gap the receiver keeps the gap's sequence number "
                      "and resumes from it, instead of waiting for the full update it "
                      "asked for; the sender's new run may reach that number again.",
    "ReproposeBypassesMPT": "#42821 (before #42939). A write rejected for its LAI is "
                            "proposed again with a new LAI without going through the MPT: "
                            "never tracked, never released, never giving up.",
    "ReproposeBelowClosed": "The reproposal goes through the MPT but does not give up when "
                            "its ts is below Track's minimum (next + 1), where a closed ts "
                            "covering it may already be out.",
    "ReproposeWithoutMLAI": "The reproposal is tracked (its ts protected) but released "
                            "with zeros, so its new LAI never reaches an MLAI map.",
}.items():
    P.mutation(_name, _doc)


@P.build
def _build(m, p):
    N, W, C = p.nodes, p.writes, p.lease_changes
    if p.init_holder >= N:
        raise ModelError(f"init_holder={p.init_holder} must name one of {N} nodes")
    if p.window and (p.reads or p.duplicate or C or p.structure != "none" or p.losses):
        raise ModelError("window models check liveness only: reads = 0, losses = false, no "
                         "duplicates, no lease changes, no split or merge")
    if "TransferStartBelowClosed" in p.mutations and not (C and p.transfers):
        raise ModelError("TransferStartBelowClosed needs lease_changes >= 1 and transfers")
    if p.structure != "none":
        if p.keys <= p.split_key:
            raise ModelError(f"structure={p.structure} needs a key at or above "
                             f"split_key={p.split_key} (keys={p.keys})")
        if C:
            raise ModelError("split and merge models keep their leases: lease_changes = 0")
    if p.structure == "merge" and p.init_holder == 0:
        raise ModelError("a merge model puts r1's lease on another store: init_holder >= 1")
    if p.structure == "split" and p.init_holder != 0:
        raise ModelError("a split model keeps r1's lease on n1: init_holder = 0")
    if "SplitInitAtSplitLAI" in p.mutations and p.structure != "split":
        raise ModelError("SplitInitAtSplitLAI needs structure = 'split'")
    if "SubsumedKeepsEmitting" in p.mutations and p.structure != "merge":
        raise ModelError("SubsumedKeepsEmitting needs structure = 'merge'")
    if p.reproposals and (C or p.init_holder or p.structure == "merge" or p.window):
        raise ModelError("reproposals are modelled for writes n1 proposes: lease_changes "
                         "= 0, init_holder = 0, no merge, no window")
    repropose_muts = {"ReproposeBypassesMPT", "ReproposeBelowClosed", "ReproposeWithoutMLAI"}
    if repropose_muts & set(p.mutations) and not p.reproposals:
        raise ModelError("reproposal mutations need reproposals >= 1")
    structural = p.structure != "none"
    ctx = Ctx(nodes=N, keys=p.keys, writes=W, reads=p.reads, duplicate=p.duplicate,
              max_ts=p.max_ts, target=p.target, lease_exp=p.max_ts + 2, muts=p.mutations,
              lease_changes=C, structure=p.structure, split_key=p.split_key,
              reproposals=p.reproposals)
    if "EpochPollution" in p.mutations and not p.mlai_requests:
        raise ModelError("EpochPollution needs mlai_requests = true")
    v = V1(nodes=N, ranges=ctx.ranges, writes=W, lease_changes=C, epochs=p.epochs,
           max_seq=p.max_seq, max_ts=p.max_ts, target=p.target, lai_hi=ctx.max_lai,
           muts=p.mutations, window=p.window, failures=p.failures,
           keep_previous=p.keep_previous, losses=p.losses, mlai_requests=p.mlai_requests,
           transfers=p.transfers, restarts=p.restarts)
    m.var("now", Int(0, p.max_ts), init=p.target + 1, doc="the (single) clock")
    v.register("ts", lambda s: s.now, lambda s, x: setattr(s, "now", x), lambda s: False)
    holders = [p.init_holder] + ([ORIGIN] if structural else [])
    epochs.add(m, p, ctx, v, holders)
    writes.add(m, p, ctx, v)
    if p.reproposals:
        reproposals.add(m, ctx, v)
    transport.add(m, ctx, v)
    raft.add(m, p, ctx)
    if p.structure == "split":
        structure.add_split(m, ctx, v)
    elif p.structure == "merge":
        structure.add_merge(m, ctx, v)
    reads.add(m, ctx, v)
    follower_reads.add(m, p, ctx)
    window.add(m, ctx, v)
    lemmas.add(m, p, ctx, v)
    # write and read slots are interchangeable as in the log-driven spec, with the
    # 2018 design's own per-write state (its MPT's tracking, the epoch it tracked under)
    symmetry.add(m, ctx, {"wepoch": 0, "worigin": 0, "wmpt": 0, "wleft": 0})
    _liveness(m, v)
    m.narrate(narrate)
    m.view(views.lanes, views.tables, views.events)


def _liveness(m, v: V1) -> None:
    progress = ["tick", "close", "deliver", "propose", "append", "apply"]
    progress += ["refresh"] if v.mlai_requests else []
    progress += ["append_lease"] if v.lease_changes else []
    progress += ["heartbeat"] if v.failures else []
    progress += ["renumber", "truncate"] if v.window else []

    def idle(s):
        return And(s.left_ref == 0, s.right_ref == 0, s.live)

    m.liveness("CloseEventuallySucceeds", idle, lambda b, a: a.ct_sent != b.ct_sent,
               fair=progress, doc="L2 (#48553): with no proposal in flight and n1 live, "
               "a close eventually succeeds (and is sent).")
    follower = v.nodes - 1

    def viewing(s):
        j = s.lseq[0][follower]
        return And(s.lholder[0][j] == ORIGIN, s.rc_epoch[follower] == s.lepoch[0][j],
                   s.rc_closed[follower] != NONE)

    m.liveness("FollowerEventuallyServes", viewing,
               lambda s: reads.served_closed(s, v, 0, follower) != NONE, fair=progress,
               doc="RFC 'Lagging followers': a follower that has n1's closed ts for its "
               "lease eventually serves follower reads.")


__all__ = ["FOLLOWER_READS_2018"]

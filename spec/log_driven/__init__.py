"""The 2020 design: log-driven closed timestamps, as a bounded state machine.

Source: the "Log-Driven Closed Timestamps" RFC (2020), with the implementation's
choices from `docs/closedts-reference.md` as switches; in this package, "reference",
section numbers (§) and A-, M- and N-numbers refer to that file. The spec is assembled from
components a reader can find by name (see `spec/README.md` for the map from RFC
sections to components, invariants and models):

- `tracker.py`       the evaluation tracker (implementation, RFC buckets, min-heap)
- `proposals.py`     request evaluation, the write floor, the proposal buffer, flush
- `raft.py`          the Raft log (reordering, duplicates) and command application
- `follower_reads.py` follower reads and the end-to-end NoStaleRead guarantee
- `leases.py`        lease requests and transfers
- `policy.py`        LAG/LEAD targets, the lease's ceiling, policy flips
- `clocks.py`        one clock, or one per node within the maximum clock offset
- `side_transport.py` closed timestamps for idle ranges, off the log
- `side_access.py`   each replica's side-transport closed ts (cur, next)
- `restarts.py`      a restart of the side-transport sender
- `splits.py`, `merges.py` a second range, created by a split, merged away, or both
- `lemmas/`          inductive strengthenings by mechanism, for `ctmc prove`
- `narration.py`     how a trace reads in protocol words
- `views.py`         how a state reads per node, and the events between nodes
"""

from __future__ import annotations

from checker.errors import ModelError
from checker.lang import Spec
from spec.log_driven import (
    clocks,
    follower_reads,
    leases,
    lemmas,
    merges,
    policy,
    proposals,
    raft,
    restarts,
    side_transport,
    splits,
    symmetry,
    views,
)
from spec.log_driven.narration import narrate
from spec.log_driven.parts import Ctx
from spec.log_driven.tracker import Tracker

LOG_DRIVEN = Spec("log_driven", doc=(
    "Log-driven closed timestamps (2020 RFC): writes tracked while evaluating, proposals "
    "carrying a closed ts and an LAI, a Raft log that may reorder and duplicate them, "
    "per-replica application with the LAI check, and follower reads."))
LOG_DRIVEN.param("nodes", 3, "replicas of each range (n1 holds the leases)", min=1, max=5)
LOG_DRIVEN.param("keys", 2, "keys", min=1, max=3)
LOG_DRIVEN.param("writes", 2, "write requests (each evaluates once)", min=1, max=6)
LOG_DRIVEN.param("reads", 1, "follower reads recorded", min=0, max=3)
LOG_DRIVEN.param("max_ts", 6, "the clock's bound; client timestamps are 1..max_ts", min=1)
LOG_DRIVEN.param("target", 2, "LAG policy: close now - target; the clock starts at target",
                 min=0)
LOG_DRIVEN.param("lease_exp", 0, "n1's first leases' expiration (0: beyond the clock's "
                 "bound)", min=0)
LOG_DRIVEN.param("tracker", "impl", "evaluation tracker design",
                 choices=("impl", "rfc", "heap"))
LOG_DRIVEN.param("close_before_untrack", False,
                 "N7: compute a proposal's closed ts before it leaves the tracker")
LOG_DRIVEN.param("keep_cur_ts", False, "N1 (rfc tracker): keep cur's ts when cur drains")
LOG_DRIVEN.param("reorder", True, "Raft may append flushed proposals out of LAI order")
LOG_DRIVEN.param("duplicate", False, "Raft may append a proposal a second time")
LOG_DRIVEN.param("side_transport", False, "component: closed ts for inactive ranges")
LOG_DRIVEN.param("publishes", 2, "side transport: how many times n1 publishes", min=1, max=3)
LOG_DRIVEN.param("side_unapplied", "stash", "side update for an LAI not yet applied: the "
                 "RFC ignores it, the implementation stashes it", choices=("ignore", "stash"))
LOG_DRIVEN.param("stream_breaks", False, "side transport: streams may break")
LOG_DRIVEN.param("restarts", False, "n1 (the side-transport sender) may restart once, "
                 "losing its in-flight proposals and streams; its leases are proscribed")
LOG_DRIVEN.param("lease_changes", 0, "component: lease requests and transfers after n1's "
                 "initial lease (0: n1 keeps it)", min=0, max=3)
LOG_DRIVEN.param("lease_duration", 3, "how long a new lease lasts", min=1)
LOG_DRIVEN.param("lead", 0, "LEAD policy: close now + lead (0: LAG only)", min=0)
LOG_DRIVEN.param("policy", "lag", "the range's initial policy", choices=("lag", "lead"))
LOG_DRIVEN.param("policy_flip", False, "the policy may flip between LAG and LEAD")
LOG_DRIVEN.param("structure", "none", "component: r1 splits into r1 and r2, r2 merges "
                 "into r1, or both: r1 splits and r2 later merges back",
                 choices=("none", "split", "merge", "split_merge"))
LOG_DRIVEN.param("split_key", 1, "the first key of r2 (keys are a, b, c: 0, 1, 2)", min=1, max=2)

for _name, _doc in {
    "NoLAICheck": "M2. Application accepts a command whatever its LAI, so a reordered "
                  "command with a lower LAI and a lower closed ts applies after a higher one "
                  "(reference §3.1 CheckForcedErr step 3).",
    "RejectedCommandKeepsClosed": "M3. A command rejected by the LAI check still sets the "
                                  "replica's closed ts; a rejected command must have no "
                                  "effect at all (§3.1 toCheckedCmd).",
    "ClosedFromEvalTime": "M4. A proposal carries the closed ts seen when its request started "
                          "evaluating instead of one chosen at flush, so closed ts no longer "
                          "follow LAI order (RFC 'Rules for assigning a proposal's closed ts').",
    "UntrackWholeBatchFirst": "M7. Flushing untracks every buffered proposal before choosing "
                              "any closed ts, so a proposal's closed ts ignores the later "
                              "proposals of its batch (§2.4 step e).",
    "TrackerNoSwap": "M8. The lock-free tracker resets a drained b1 but does not swap it with "
                     "b2, so its lower bound forgets b2's requests (§1.2 Untrack).",
    "ResetCurOnPrevExit": "M11 (rfc tracker). The last request out of prev resets cur's ts "
                          "instead of incrementing prev and cur.",
    "NoFloorOnTrack": "M12. A write is not forwarded above the assigned closed ts when it "
                      "starts evaluating (§2.2 TrackEvaluatingRequest's minTS).",
    "SideIgnoresAppliedLAI": "M14. A replica uses a side-transport closed ts for an LAI it has "
                             "not applied yet (RFC 'Side-transport': the update must wait).",
    "SideCloseWithInflight": "M15. The side transport closes a range with a proposal in flight "
                             "(§4.3 step 6, ProposalsInFlight).",
    "SideCloseNoFloorRaise": "M17. A side-transport close does not raise the assigned closed "
                             "ts, so the next write may evaluate below it (§2.8).",
    "SenderKeepsFailedRange": "M18. A range whose bump fails stays tracked and keeps getting "
                              "the group's closed ts (§4.1: a failed bump means Removed).",
    "DeltaAfterGap": "M20. Messages are lost and the receiver applies the next delta anyway, "
                     "without a snapshot (§4.2: a gap is impossible on one stream).",
    "SideCloseUnderRevokedLease": "M22. The side transport keeps closing under a lease the "
                                  "leaseholder revoked for a transfer (bug #102407).",
    "NoLeaseExpirationBound": "M23. Closed ts may reach the lease expiration, so a later lease "
                              "can start below them (§6 ClosedTimestampUpperBound, #61559).",
    "NoFloorOnLeaseAcquire": "M25. A new leaseholder does not raise its write floor to the "
                             "closed ts it applied (§2.7 OnLeaseChangeLocked).",
    "LeaseRequestCarriesStart": "M26, the RFC's design: a lease request carries its start as "
                                "a closed ts; the implementation dropped it (#65624).",
    "SplitClosedAtEval": "M1, the RFC's rejected alternative: the right-hand side starts "
                         "with the closed ts chosen while the split was evaluated, not the "
                         "one its command carried at flush (RFC 'Splits and Merges').",
    "SplitRHSZero": "M6. The right-hand side starts with no closed ts and an unseeded "
                    "proposal buffer (§5.1 splitPreApply, leasePostApplyLocked).",
    "MergeWithoutTimestampCacheBump": "M29. The merge does not raise the timestamp cache "
                                      "over the right-hand keys to the right-hand closed ts "
                                      "(§5.2 MergeRange).",
}.items():
    LOG_DRIVEN.mutation(_name, _doc)


# -- issue 12: proposals, leases and the timestamp cache under load ------------------------
# (parameters and mutations of reproposals, lease changes in flight, lease extensions,
# lease commands through the proposal buffer)
LOG_DRIVEN.param("reproposals", 0, "new-LAI reproposals a run may make: a write its "
                 "proposer's replica rejects for its LAI is tracked and flushed again "
                 "(0: none; log entries then carry their own LAI and closed ts)", min=0, max=2)
for _name, _doc in {
    "ReproposeBelowClosed": "A reproposal never gives up: a write rejected for its LAI is "
                            "proposed again even when its ts is at or below the assigned "
                            "closed ts, which later commands already promised to stay "
                            "above (§2.9: give up when wts <= minTS).",
    "ReproposeWithoutTracking": "A reproposal re-enters the proposal buffer without being "
                                "tracked again, so a flush or a side-transport close may "
                                "close its ts while it waits (§2.9 TrackEvaluatingRequest).",
    "ReproposeKeepsClosed": "A reproposal patches only the LAI of the encoded command and "
                            "keeps the closed ts it carried the first time: a higher LAI "
                            "then carries a lower closed ts (the recurring 'raft closed "
                            "timestamp regression', reference bug table row 12).",
    "NoLeaseSequenceCheck": "Application skips the lease-sequence check, so a write the old "
                            "leaseholder flushed after a transfer applies under the new "
                            "lease (§3.1 CheckForcedErr step 2).",
    "TransferCarriesNoClosed": "A lease transfer is proposed straight to Raft instead of "
                               "through the buffer, carrying no closed ts: the new holder's "
                               "floor ignores what the old one closed (§6, A9).",
    "ExtensionTrustsProposedExpiration": "The leaseholder closes up to the expiration of an "
                                         "extension it proposed but has not applied, which "
                                         "may lose the race to another node's request (§6).",
    "ExtensionMayShorten": "An extension takes its new expiration as is, even below the "
                           "current one (bug #121480, fixed by #123442).",
    "ExtensionCarriesClosed": "A lease extension is flushed like a write and carries a closed "
                              "ts, but it has no LAI, so it can apply after a command that "
                              "carried a higher one (§2.5 reason (i)).",
    "LeaseRequestSetsAssignedClosed": "Flushing a lease request or extension sets the "
                                      "proposer's assigned closed ts to the requested lease's "
                                      "start instead of leaving it (#63672, "
                                      "TestRejectedLeaseDoesntDictateClosedTimestamp).",
    "NewRHSLeaseIgnoresMergeIntent": "A node that takes r2's lease over while the merge's "
                                     "deletion intent exists does not freeze r2, so it "
                                     "writes and closes past what Subsume reported "
                                     "(§5.3 maybeWatchForMergeLocked).",
    "PromotionRegressesExpiration": "Promoting an expiration-based lease to an epoch-based "
                                    "one takes the liveness record's expiration as is, "
                                    "below the old lease's: another node may then take the "
                                    "lease over below what the holder closed (#121480, fixed "
                                    "by #123442).",
    "FollowerReadIgnoresUncertainty": "A follower read compares only its read ts with the "
                                      "closed ts, not its uncertainty limit (read ts + max "
                                      "offset): a write in the uncertainty window that "
                                      "committed before the read is missed (#36247).",
    "ReadsAtLeaseStart": "A replica serves follower reads up to its applied lease's start "
                         "as well as its closed ts (#35130); a lease change around a merge "
                         "then serves r2's keys above what the merge's timestamp-cache bump "
                         "protects (#60929, fixed by #62570).",
    "InjectedLAIMayBeReal": "An injected stale LAI (lai_errors) is 1, which a real proposal "
                            "may also get and a replica at LAI 0 accepts, so an injected "
                            "command carrying a higher closed ts can win LAI 1 (#118017, "
                            "fixed by reserving LAI 1: #121965).",
    "WriteAtLeaseStart": "A new leaseholder's writes may land at its lease start: the "
                         "timestamp cache's low water is taken as inclusive (§6).",
    "NoTimestampCacheOnLeaseChange": "A new leaseholder does not raise its timestamp cache "
                                     "to the lease start, so its writes are bounded only by "
                                     "the closed ts it applied (§6, A9).",
    "TransferWithoutReadSummary": "After a merge, a transfer of r1's lease does not hand the "
                                  "read summary over, so the new holder's timestamp cache "
                                  "over r2's keys forgets the merge's bump (§5.2 caveat).",
}.items():
    LOG_DRIVEN.mutation(_name, _doc)
LOG_DRIVEN.param("lease_extensions", False, "the leaseholder may extend its lease through "
                 "its proposal buffer (each extension is one of the lease_changes)")
LOG_DRIVEN.param("max_offset", 0, "the maximum clock offset: nodes' clocks differ by at most "
                 "this, and a lease is unusable for requests this close to its expiration "
                 "(0: one clock)", min=0, max=2)
LOG_DRIVEN.param("lease_type", "expiration", "new leases are expiration-based, or epoch-based "
                 "(valid while their holder's liveness record is, in its epoch; a transferred "
                 "lease arrives expiration-based and its holder promotes it)",
                 choices=("expiration", "epoch"))
LOG_DRIVEN.param("lai_errors", 0, "stale LAIs a run may inject at flush, as CockroachDB's "
                 "tests do to drive reproposals from any state (0: none)", min=0, max=2)

# -- issue 12: several side-transport senders, policy groups, the tracker's lower bound -------
# (parameters and mutations of side_transport.py)
LOG_DRIVEN.param("senders", 1, "side transport: nodes n1..n<senders> may send, each for the "
                 "ranges whose lease it holds (1: only n1); more needs lease_changes >= 1",
                 min=1, max=5)
for _name, _doc in {
    "SideReceiverSharedAcrossSenders": "A receiver keeps one stream state for all senders, so "
                                       "a message of one sender applies over another's state "
                                       "(§4.2: one incomingStream per sending node).",
    "SenderKeepsMovedRange": "The old leaseholder's sender keeps tracking a range whose lease "
                             "moved away, so the range keeps getting its group's closed ts "
                             "(§4.1 step 3: a range no longer registered is Removed).",
    "SideBreakForgetsCopies": "Replicas keep no copy of what a stream told them: a stream "
                              "break loses the side closed ts they were using (§4.2 "
                              "onRecvErr relies on replicas having copied it; #68313).",
    "SideRangeGetsOtherGroup": "The receiver gives a tracked range the closed ts of the "
                               "message's last policy group (LEAD), not of its own (§4.2 "
                               "GetClosedTimestamp: lastClosed[tracked[r].policy]).",
    "SideRemovalWithNewClosed": "The receiver sets the new message's closed ts before handing "
                                "its removed ranges over, so they get a closed ts their "
                                "bump never reached (§4.2 step 2).",
    "SideBumpReadsUpperBucket": "The bump reads the lock-free tracker's upper bucket (b2) as "
                                "the lower bound instead of b1 (§2.8, §1.2 LowerBound).",
    "SideBumpAtLowerBound": "The bump succeeds when the tracker's lower bound equals the "
                            "target: `lb < target` instead of `lb <= target` (§2.8).",
}.items():
    LOG_DRIVEN.mutation(_name, _doc)



@LOG_DRIVEN.build
def _build(m, p):
    if p.tracker == "rfc" and "UntrackWholeBatchFirst" in p.mutations:
        raise ModelError("UntrackWholeBatchFirst applies to tracker=impl or heap")
    if p.tracker != "impl" and "TrackerNoSwap" in p.mutations:
        raise ModelError("TrackerNoSwap applies to tracker=impl")
    if p.tracker != "rfc" and ("ResetCurOnPrevExit" in p.mutations or p.keep_cur_ts):
        raise ModelError("ResetCurOnPrevExit and keep_cur_ts apply to tracker=rfc")
    if p.structure != "none":
        if p.keys <= p.split_key:
            raise ModelError(f"structure={p.structure} needs a key at or above "
                             f"split_key={p.split_key} (keys={p.keys})")
        if p.tracker == "rfc":
            raise ModelError("the RFC tracker is modelled for one range: structure must be none")
    needs = {"SplitClosedAtEval": "split", "SplitRHSZero": "split",
             "MergeWithoutTimestampCacheBump": "merge", "NewRHSLeaseIgnoresMergeIntent": "merge"}
    for mutation, structure in needs.items():
        if mutation in p.mutations and structure not in p.structure.split("_"):
            raise ModelError(f"{mutation} needs structure = {structure!r} or 'split_merge'")
    if p.tracker == "rfc" and (p.reproposals or p.lease_changes):
        raise ModelError("reproposals and lease changes are modelled with tracker=impl or heap")
    lease_muts = ("SideCloseUnderRevokedLease", "NoFloorOnLeaseAcquire",
                  "LeaseRequestCarriesStart", "NoLeaseSequenceCheck", "TransferCarriesNoClosed",
                  "WriteAtLeaseStart", "NoTimestampCacheOnLeaseChange",
                  "TransferWithoutReadSummary", "LeaseRequestSetsAssignedClosed",
                  "ReadsAtLeaseStart", "NewRHSLeaseIgnoresMergeIntent")
    if not p.lease_changes and any(x in p.mutations for x in lease_muts):
        raise ModelError("lease mutations need lease_changes >= 1")
    if not p.lease_extensions and any(x.startswith("Extension") for x in p.mutations):
        raise ModelError("extension mutations need lease_extensions = true")
    if p.lease_extensions and not p.lease_changes:
        raise ModelError("lease_extensions needs lease_changes >= 1")
    if not p.reproposals and any(x.startswith("Repropose") for x in p.mutations):
        raise ModelError("reproposal mutations need reproposals >= 1")
    if "InjectedLAIMayBeReal" in p.mutations and not p.lai_errors:
        raise ModelError("InjectedLAIMayBeReal needs lai_errors >= 1")
    if p.lai_errors and p.tracker == "rfc":
        raise ModelError("lai_errors is modelled with tracker=impl or heap")
    ctx = Ctx(nodes=p.nodes, keys=p.keys, writes=p.writes, reads=p.reads,
              max_ts=p.max_ts, target=p.target, lease_exp=p.lease_exp or p.max_ts + p.lead + 2,
              muts=p.mutations, lead=p.lead, lease_changes=p.lease_changes,
              structure=p.structure, split_key=p.split_key, restarts=p.restarts,
              reproposals=p.reproposals, lease_extensions=p.lease_extensions,
              duplicate=p.duplicate, lease_bases=bool(p.lease_changes),
              max_offset=p.max_offset, epochs=p.lease_type == "epoch")
    if p.max_offset and p.tracker == "rfc":
        raise ModelError("the RFC tracker is modelled with one clock: max_offset = 0")
    if p.lease_type == "epoch" and not p.lease_changes:
        raise ModelError("lease_type = 'epoch' needs lease_changes >= 1")
    if "PromotionRegressesExpiration" in p.mutations and p.lease_type != "epoch":
        raise ModelError("PromotionRegressesExpiration needs lease_type = 'epoch'")
    if "FollowerReadIgnoresUncertainty" in p.mutations and not p.max_offset:
        raise ModelError("FollowerReadIgnoresUncertainty needs max_offset >= 1")
    if p.target > p.max_ts:
        raise ModelError(f"target={p.target} must be <= max_ts={p.max_ts}")

    clocks.add(m, p, ctx)
    policy.add(m, p, ctx)
    tracker = Tracker(p.tracker, ctx, p.close_before_untrack, p.keep_cur_ts)
    if p.lease_changes:
        leases.add(m, p, ctx, tracker)
    proposals.add(m, p, ctx, tracker)
    raft.add(m, p, ctx)
    side_transport.validate(p)
    if p.side_transport:
        side_transport.add(m, p, ctx, tracker)
    elif any(x.startswith(("Side", "Sender", "Delta")) for x in p.mutations):
        raise ModelError("side-transport mutations need side_transport = true")
    if p.restarts:
        if not (p.side_transport and p.lease_changes and p.structure == "none"):
            raise ModelError("restarts needs side_transport, lease_changes >= 1 and no "
                             "split or merge")
        restarts.add(m, p, ctx)
    if ctx.splits:
        splits.add(m, p, ctx)
    if ctx.merges:
        merges.add(m, p, ctx)
    follower_reads.add(m, p, ctx)
    follower_reads.add_claims_invariant(m, ctx)
    lemmas.add(m, p, ctx)
    symmetry.add(m, ctx, followers=not (p.side_transport and p.senders > 1))
    m.narrate(narrate)
    m.view(views.lanes, views.tables, views.events)


__all__ = ["LOG_DRIVEN"]

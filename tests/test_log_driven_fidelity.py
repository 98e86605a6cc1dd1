"""The log-driven spec where CockroachDB's real bugs lived (issue 28): the timestamp cache
over spans, the merge as a transaction, each replica's side-transport state, clocks and
stasis, epoch-based leases and their promotion, follower reads' uncertainty, and where a
read was served. Each test plays a scenario action by action on the scalar backend."""

from __future__ import annotations

from functools import partial

from spec.log_driven import LOG_DRIVEN
from tests import scenarios

play = partial(scenarios.play, LOG_DRIVEN)
enabled = partial(scenarios.enabled_after, LOG_DRIVEN)

# r2 merges into r1; leases expire at 2 and may change once per range. Proposal ids: w1
# is 0, the merge 1, lease command j of a range sits in buffers as 2 + j - 2 = j.
MERGE = {"nodes": 2, "keys": 2, "writes": 1, "reads": 0, "max_ts": 3, "target": 1,
         "structure": "merge", "lease_changes": 1, "lease_exp": 2}


def test_a_new_lease_raises_the_timestamp_cache_only_over_its_ranges_span():
    """n2 takes r1's lease before the merge: its store's cache rises to the lease start
    over r1's keys only. After the merge, r2's key b is covered by the merge's own bump
    (the freeze time: n2 did not hold r2's lease), not by the lease start, so n2 writes
    b at the lease start itself (#60929's gap, closed by the merge's bump, not the lease)."""
    taken = ["begin_merge(x=0, y=0)", "subsume(x=0)", "tick()", "request_lease(g=0, x=1)",
             "flush(g=0, x=1, w=2)", "append_lease(g=0, j=2)", "apply(g=0, n=1)"]
    s = play(MERGE, taken)
    assert s[-1]["lstart"][0][2] == 2 and s[-1]["tsc"][1] == [2, 0]
    merged = play(MERGE, taken + ["evaluate_merge(x=1)", "flush(g=0, x=1, w=1)",
                                  "append(g=0, w=1)", "apply(g=0, n=1)",
                                  "evaluate(g=0, x=1, w=0, k=b, c=1)"])
    assert merged[-2]["tsc"][1] == [2, 1]  # the freeze time over r2's keys
    assert merged[-1]["wts"][0] == 2  # at the lease start: allowed on merged keys
    left = play(MERGE, taken + ["evaluate(g=0, x=1, w=0, k=a, c=1)"])
    assert left[-1]["wts"][0] == 3  # strictly above the start on r1's own keys


def test_the_merge_transaction_is_above_both_floors_and_lease_checked():
    """T is above both ranges' assigned closed ts, and the intents and the EndTxn need a
    lease usable at T: with leases expiring at 1 nothing can start."""
    s = play(MERGE, ["begin_merge(x=0, y=0)"])
    assert s[-1]["merge_ts"] == 1  # the clock; nothing closed yet
    assert not enabled({**MERGE, "lease_exp": 1}, [], "begin_merge(x=0, y=0)")
    assert not enabled(MERGE, [], "subsume(x=0)")  # Subsume needs the deletion intent


def test_a_node_taking_r2s_lease_during_the_merge_freezes_r2_on_applying_it():
    """After the intents and Subsume on n1, r2's lease expires and n2 takes it: applying
    the lease, n2 notices the deletion intent and freezes its replica of r2
    (maybeWatchForMergeLocked), so it evaluates nothing there. Under
    NewRHSLeaseIgnoresMergeIntent it does not."""
    labels = ["begin_merge(x=0, y=0)", "subsume(x=0)", "tick()", "request_lease(g=1, x=1)",
              "flush(g=1, x=1, w=2)", "append_lease(g=1, j=2)", "apply(g=1, n=1)"]
    s = play(MERGE, labels)
    assert s[2]["frozen"] == [True, False] and s[-1]["frozen"] == [True, True]
    write_b = "evaluate(g=1, x=1, w=0, k=b, c=3)"
    assert not enabled(MERGE, labels, write_b)
    ignoring = play(MERGE, labels, ("NewRHSLeaseIgnoresMergeIntent",))
    assert ignoring[-1]["frozen"] == [True, False]


def test_a_replicas_side_closed_ts_is_pulled_from_its_leaseholders_stream():
    """A delivered message only updates the receiver; the replica takes its closed ts
    when something asks (get), and only for an LAI it has applied (else it stashes it)."""
    side = {"nodes": 2, "keys": 1, "writes": 1, "reads": 1, "max_ts": 3, "target": 1,
            "side_transport": True, "publishes": 2}
    s = play(side, ["publish(x=0)", "deliver(x=0, n=1)", "pull(g=0, n=1)"])
    assert s[2]["side_ts"][0][1] == -1 and s[3]["side_ts"][0][1] == 0
    assert not s[3]["side_fatal"]


def test_clocks_drift_within_the_offset_and_a_lease_is_unusable_in_its_stasis():
    clocks = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
              "lease_changes": 1, "lease_exp": 3, "max_offset": 1}
    s = play(clocks, ["tick(x=0)"])
    assert s[-1]["clk"] == [2, 1]
    assert not enabled(clocks, ["tick(x=0)"], "tick(x=0)")  # 2 ahead of n2: too far
    # n1's lease expires at 3: stasis from 2, so a write at 2 cannot use it
    assert not enabled(clocks, [], "evaluate(g=0, x=0, w=0, k=a, c=2)")
    assert enabled(clocks, [], "evaluate(g=0, x=0, w=0, k=a, c=1)")
    # n2's clock reaches 3 first: it sees n1's lease expired and requests one, backdated
    taken = play(clocks, ["tick(x=1)", "tick(x=0)", "tick(x=1)", "request_lease(g=0, x=1)"])
    assert taken[-1]["clk"] == [2, 3] and taken[-1]["lstart"][0][2] == 3


def test_a_follower_read_needs_its_uncertainty_limit_closed():
    clocks = {"nodes": 2, "keys": 1, "writes": 1, "reads": 1, "max_ts": 4, "target": 1,
              "max_offset": 1}
    closed_1 = ["tick()", "evaluate(g=0, w=0, k=a, c=3)", "finish(g=0, w=0)",
                "flush(g=0, w=0)", "append(g=0, w=0)", "apply(g=0, n=1)"]
    labels = [label.replace("tick()", "tick(x=0)") for label in closed_1]
    assert play(clocks, labels)[-1]["closed"][0][1] == 1
    assert not enabled(clocks, labels, "read(i=0, g=0, n=1, k=a, t=1)")  # 1 + 1 > 1
    ignoring = scenarios.play(LOG_DRIVEN, clocks, labels + ["read(i=0, g=0, n=1, k=a, t=1)"],
                              ("FollowerReadIgnoresUncertainty",))
    assert ignoring[-1]["racc"] == [[True]] and ignoring[-1]["rnode"] == [1]


EPOCH = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 3, "target": 1,
         "lease_changes": 2, "lease_exp": 2, "lease_type": "epoch", "lease_duration": 4}


def test_an_epoch_lease_lives_with_its_holders_liveness_record():
    """n1's epoch lease expires with its liveness record at 2; a heartbeat extends it.
    n2 may take it over only after incrementing n1's epoch, which needs the record to
    have expired at n2's clock; the new lease starts at n2's clock."""
    assert not enabled(EPOCH, ["tick()"], "request_lease(g=0, x=1)")  # not incremented
    assert not enabled(EPOCH, [], "increment_epoch(x=1, h=0)")  # record still live at 1
    s = play(EPOCH, ["tick()", "increment_epoch(x=1, h=0)", "request_lease(g=0, x=1)"])
    assert s[2]["live_epoch"] == [2, 1] and s[3]["lstart"][0][2] == 2
    assert s[3]["lepoch"][0][2] == 1  # an epoch lease in n2's epoch
    beat = play(EPOCH, ["heartbeat(x=0)", "tick()"])
    assert beat[1]["live_exp"][0] == 5
    assert not enabled(EPOCH, ["heartbeat(x=0)", "tick()"], "increment_epoch(x=1, h=0)")


def test_a_promotion_keeps_the_old_expiration_as_its_minimum():
    """n1 transfers its lease (expiration-based, to 5) to n2, which promotes it to an
    epoch lease. Its liveness record expires at 2, yet the lease lasts until 5: n1 may
    increment n2's epoch at 2 but not take the lease. PromotionRegressesExpiration lets
    the lease end at 2."""
    labels = ["transfer_lease(g=0, y=0, x=1)", "flush(g=0, x=0, w=1)",
              "append_lease(g=0, j=2)", "apply(g=0, n=1)", "apply(g=0, n=0)",
              "promote_lease(g=0, x=1)", "flush(g=0, x=1, w=2)", "append_lease(g=0, j=3)",
              "apply(g=0, n=0)", "tick()", "increment_epoch(x=0, h=1)"]
    three = {**EPOCH, "lease_changes": 3}
    s = play(three, labels)
    assert s[6]["lexp"][0][3] == 5 and s[6]["lbase"][0][3] == 2  # same sequence
    assert not enabled(three, labels, "request_lease(g=0, x=0)")
    bug = play(three, labels + ["request_lease(g=0, x=0)"], ("PromotionRegressesExpiration",))
    assert bug[6]["lexp"][0][3] == 0 and bug[-1]["lstart"][0][4] == 2


def test_a_restart_resets_the_timestamp_cache_and_the_replicas_side_state():
    params = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 3, "target": 1,
              "lease_changes": 1, "side_transport": True, "restarts": True,
              "publishes": 1}
    s = play(params, ["tick()", "publish(x=0)", "restart()"])
    assert s[2]["side_ts"][0][0] == 1 and s[-1]["side_ts"][0][0] == -1
    assert s[-1]["tsc"][0] == [2] and s[-1]["proscribed"][0] == [True, False]
    # n1 may take its proscribed lease back at once, under a new sequence from its clock
    back = play(params, ["tick()", "publish(x=0)", "restart()", "request_lease(g=0, x=0)"])
    assert back[-1]["lstart"][0][2] == 2 and back[-1]["lbase"][0][2] == 2


def test_a_read_records_the_replica_that_served_it():
    split = {"nodes": 2, "keys": 2, "writes": 1, "reads": 1, "max_ts": 3, "target": 1,
             "structure": "split"}
    s = play(split, ["tick()", "evaluate_split()", "flush(g=0, w=1)", "append(g=0, w=1)",
                     "apply(g=0, n=1)", "read(i=0, g=1, n=1, k=b, t=1)"])
    assert (s[-1]["rnode"], s[-1]["rrng"]) == ([1], [1])


# The merge-takeover finding with the merge as a transaction (docs/findings/): r2's lease
# moves to n2; n1 extends r1's lease to 3 so that the EndTxn can be evaluated at T = 2; the
# intents are laid at T; n2 then writes b and its command carries closed 4 (LEAD), which
# n1 serves a follower read of b at; Subsume reports 4 and the merge raises n1's cache
# over b to 4; r1's lease expires at 3 and n2 takes it over, its cache over b at 3, and
# writes b at 4. Ids: w1 0, w2 1, the merge 2; lease command j is j + 1 in buffers.
FINDING = {"nodes": 2, "keys": 2, "writes": 2, "reads": 1, "max_ts": 3, "target": 1,
           "structure": "merge", "lease_changes": 2, "lease_exp": 2, "lead": 3,
           "policy": "lead", "lease_duration": 4, "lease_extensions": True}
FINDING_ORDER = [
    "transfer_lease(g=1, y=0, x=1)", "flush(g=1, x=0, w=3)", "append_lease(g=1, j=2)",
    "apply(g=1, n=1)", "apply(g=1, n=0)",
    "extend_lease(g=0, x=0, d=2)", "flush(g=0, x=0, w=3)", "append_lease(g=0, j=2)",
    "apply(g=0, n=0)", "apply(g=0, n=1)",
    "begin_merge(x=0, y=1)",
    "evaluate(g=1, x=1, w=0, k=b, c=1)", "finish(g=1, w=0)", "flush(g=1, x=1, w=0)",
    "append(g=1, w=0)", "apply(g=1, n=1)", "apply(g=1, n=0)",
    "read(i=0, g=1, n=0, k=b, t=4)",
    "subsume(x=1)", "evaluate_merge(x=0)", "flush(g=0, x=0, w=2)", "append(g=0, w=2)",
    "apply(g=0, n=0)", "apply(g=0, n=1)", "tick()", "tick()",
    "request_lease(g=0, x=1)", "flush(g=0, x=1, w=4)", "append_lease(g=0, j=3)",
    "apply(g=0, n=1)",
    "evaluate(g=0, x=1, w=1, k=b, c=1)", "finish(g=0, w=1)", "flush(g=0, x=1, w=1)",
    "append(g=0, w=1)", "apply(g=0, n=1)"]


def test_the_merge_takeover_finding_survives_the_merge_transaction(tmp_path):
    """Every step is a legal step of the correct design; the properties hold until n2
    applies r1's lease, when its write floor for b (4) is no longer above r2's claim
    (FloorAboveClaims), and its write at b@4 is then accepted below the closed ts r2 had
    carried, which the read at 4 missed. `trace check` replays the written trace and
    confirms NoStaleRead."""
    from checker.backends.scalar import ScalarMachine
    from checker.traces.itf import write_trace
    from checker.traces.replay import check_trace
    from checker.traces.trace import Trace

    machine = LOG_DRIVEN.instantiate(FINDING, ())
    sm = ScalarMachine(machine)
    by_label = {a.label: a for a in machine.actions}
    states, actions = [machine.init_states[0]], [None]
    takeover = len(FINDING_ORDER) - 6  # n2 applies its lease of r1
    for step, label in enumerate(FINDING_ORDER):
        if step <= takeover:
            assert sm.violated_invariants(states[-1]) == [], label
        action = by_label[label]
        assert sm.enabled(states[-1], action), label
        actions.append(action)
        states.append(sm.apply(states[-1], action))
    assert sm.violated_invariants(states[takeover + 1]) == ["FloorAboveClaims"]
    end = machine.decode(states[-1])
    assert end["merge_ts"] == 2 and end["merge_closed"] == 4 and end["lstart"][0][3] == 3
    assert end["wts"] == [2, 4] and end["accepted"][:2] == [True, True]
    assert end["rts"] == [4] and end["robs"] == [[True, False]]
    assert "NoStaleRead" in sm.violated_invariants(states[-1])
    path = tmp_path / "finding.itf.json"
    write_trace(Trace(machine, states, actions, {"kind": "invariant", "name": "NoStaleRead"}),
                path)
    _, violated = check_trace(path)
    assert "NoStaleRead" in violated


# r1 splits off r2 and r2 may merge back; closed ts one behind the clock, up to 4.
# Proposal ids: w1 is 0, the split 1, the merge 2; lease command j sits at 1 + j.
SPLIT_MERGE = {"nodes": 2, "keys": 2, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
               "structure": "split_merge", "lease_changes": 1}
SPLIT_PENDING_ON_HOLDER = [
    "transfer_lease(g=0, y=0, x=1)", "flush(g=0, x=0, w=3)", "append_lease(g=0, j=2)",
    "apply(g=0, n=1)", "tick()", "evaluate_split(x=1)", "tick()", "flush(g=0, x=1, w=1)",
    "append(g=0, w=1)", "apply(g=0, n=0)", "apply(g=0, n=0)", "tick()",
    "request_lease(g=1, x=0)", "flush(g=1, x=0, w=3)", "append_lease(g=1, j=2)",
    "apply(g=1, n=0)", "evaluate(g=1, x=0, w=0, k=b, c=1)", "finish(g=1, w=0)",
    "flush(g=1, x=0, w=0)", "append(g=1, w=0)", "apply(g=1, n=0)"]


def test_an_r1_holder_whose_split_waits_is_latched_not_above_r2s_claims():
    """n2 holds r1's lease and evaluates the split; n1 applies it first, takes r2's lease
    once n2's copy expires and closes r2 at 3, above n2's floor over r2's keys (2). n2
    has not applied its own split, so its latches block every write of r1 there (and r1
    leaves r2's keys when it applies): FloorAboveClaims leaves such a holder out, which
    the proofs found it had to (spec/README, "What these proofs found")."""
    from checker.backends.scalar import ScalarMachine

    machine = LOG_DRIVEN.instantiate(SPLIT_MERGE, ())
    sm = ScalarMachine(machine)
    by_label = {a.label: a for a in machine.actions}
    state = machine.init_states[0]
    for label in SPLIT_PENDING_ON_HOLDER:
        assert sm.enabled(state, by_label[label]), label
        state = sm.apply(state, by_label[label])
        assert sm.violated_invariants(state) == [], label
    end = machine.decode(state)
    assert end["lseq"][0] == [2, 2] and end["lholder"][0][2] == 1  # n2 holds r1's newest
    assert end["span_changed"] == [True, False]  # n1 applied the split, n2 not yet
    assert end["claim_hi"][1] == 3 and end["assigned_closed"][0][1] == 2
    assert end["tsc"][1][1] == 1  # n2's floor over r2's keys is below r2's claim
    assert not any(sm.enabled(state, a) for a in machine.actions
                   if a.label.startswith("evaluate(g=0, x=1"))

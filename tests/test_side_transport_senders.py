"""Several side-transport senders, policy groups and the tracker's lower bound (issue 12,
mechanisms 5 and 6): scenarios step by step on the scalar backend, and what the mutation
models' counterexamples rest on."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import pytest

from checker.errors import SpecError
from checker.models import build_machine, load_model, reshape
from checker.run import BfsOptions, run
from spec.log_driven import LOG_DRIVEN
from tests import scenarios

MODELS = Path(__file__).resolve().parent.parent / "models"

# n1 and n2 may send; n3 only receives. n1's first lease expires at 3.
THREE = {"nodes": 3, "keys": 1, "writes": 1, "reads": 1, "max_ts": 4, "target": 1,
         "lease_changes": 1, "lease_exp": 3, "side_transport": True, "senders": 2,
         "publishes": 2, "stream_breaks": True}

play = partial(scenarios.play, LOG_DRIVEN)
enabled = partial(scenarios.enabled_after, LOG_DRIVEN)


# n1 closes r1 and tells n3; n1 transfers the lease to n2 (flushed at LAI 1); n2 and n1
# apply it; a tick later n2 closes r1 at LAI 1 and n1 removes it; n3 hears both.
HANDOVER = ["publish(x=0)", "deliver(x=0, n=2)", "transfer_lease(g=0, y=0, x=1)",
            "flush(g=0, x=0, w=1)", "append_lease(g=0, j=2)", "apply(g=0, n=1)",
            "apply(g=0, n=0)",
            "tick()", "publish(x=1)", "publish(x=0)", "deliver(x=1, n=2)", "deliver(x=0, n=2)"]


def test_the_side_transport_moves_with_the_lease():
    s = play(THREE, HANDOVER)
    first = s[1]
    assert first["pub_tracked"][0] == [True] and first["hist_bump"][0][1] == [0]
    moved = s[10]  # n2's first publish: a snapshot tracking r1 at n2's applied LAI
    assert moved["pub_tracked"][1] == [True] and moved["pub_lai"][1] == [1]
    assert moved["hist_bump"][1][1] == [1]  # the bump's LAI, recorded for A13
    assert moved["q_snap"][1][2][0] and moved["q_entry"][1][2][0] == ["upsert"]
    removed = s[11]  # n1 has applied n2's lease: it removes r1 without a bump
    assert removed["pub_tracked"][0] == [False] and removed["hist_bump"][0][2] == [-1]
    assert removed["q_entry"][0][2][0] == ["remove"]


def test_a_receiver_keeps_one_state_per_sender():
    end = play(THREE, HANDOVER)[-1]
    assert end["rv_ok"][0][2] and end["rv_ok"][1][2]
    assert (end["rv_seq"][0][2], end["rv_seq"][1][2]) == (2, 1)
    assert end["rv_tracked"][0][2] == [False]  # n1's stream removed r1 ...
    assert end["rv_tracked"][1][2] == [True] and end["rv_lai"][1][2] == [1]  # ... n2's has it
    assert end["rv_closed"][0][2] == [1] and end["rv_closed"][1][2] == [1]
    # n1's removal handed n3's replica n1's previous closed ts, 0 at LAI 0; n2's closed ts
    # for LAI 1 waits in n3's receiver until the replica asks for it
    assert (end["side_ts"][0][2], end["side_lai"][0][2]) == (0, 0)
    assert (end["next_ts"][0][2], end["next_lai"][0][2]) == (-1, 0)
    asked = play(THREE, HANDOVER + ["pull(g=0, n=2)"])[-1]
    assert asked == end  # n3 is still on n1's lease: it asks n1's stream, which has nothing


def test_a_replica_reads_the_stream_of_the_lease_it_applied():
    """n3 still on n1's lease may read at n1's closed ts 0, not at n2's 1; once it applies
    the transfer (LAI 1) it uses n2's stream, whose stashed closed ts 1 is promoted."""
    read_at = "read(i=0, g=0, n=2, k=a, t={t})"
    assert not enabled(THREE, HANDOVER + ["pull(g=0, n=2)"], read_at.format(t=1))
    moved = HANDOVER + ["apply(g=0, n=2)", "pull(g=0, n=2)"]
    after = play(THREE, moved)[-1]
    assert after["lseq"][0][2] == 2 and (after["side_ts"][0][2], after["side_lai"][0][2]) == (1, 1)
    assert enabled(THREE, moved, read_at.format(t=1))


def test_a_break_resets_one_stream_and_the_next_message_is_a_snapshot():
    s = play(dict(THREE, publishes=3), HANDOVER[:2] + [
        "pull(g=0, n=2)", "publish(x=0)", "break_stream(x=0, n=2)", "publish(x=0)"])
    broken = s[5]
    assert not broken["rv_ok"][0][2] and broken["fresh"][0][2] and broken["q_len"][0][2] == 0
    assert broken["side_ts"][0][2] == 0  # n3's replica keeps what it asked for
    assert broken["q_len"][0][1] == 2  # the stream to n2 is untouched
    assert s[6]["q_snap"][0][2][0] and not s[6]["q_snap"][0][1][2]


def test_a_restart_drops_only_the_restarted_nodes_streams():
    params = dict(THREE, restarts=True, stream_breaks=False)
    labels = ["transfer_lease(g=0, y=0, x=1)", "flush(g=0, x=0, w=1)", "append_lease(g=0, j=2)",
              "apply(g=0, n=1)",
              "tick()", "publish(x=1)", "publish(x=0)", "restart()"]
    s = play(params, labels)
    before, after = s[-2], s[-1]
    assert before["q_len"][1][0] == 1 and before["q_len"][1][2] == 1
    assert after["q_len"][1][0] == 0 and after["fresh"][1][0]  # n2 -> n1: n1's receiver
    assert after["q_len"][1][2] == 1 and not after["fresh"][1][2]  # n2 -> n3 untouched
    assert after["q_len"][0][1] == 0 and after["q_len"][0][2] == 0  # n1's own streams
    assert after["fresh"][0][1] and after["fresh"][0][2]


def test_a_message_carries_one_closed_ts_per_policy_group():
    params = {"nodes": 2, "keys": 1, "writes": 1, "reads": 0, "max_ts": 4, "target": 1,
              "lead": 2, "policy_flip": True, "side_transport": True, "publishes": 2}
    s = play(params, ["publish(x=0)", "deliver(x=0, n=1)", "pull(g=0, n=1)", "flip_policy()",
                      "tick()", "publish(x=0)", "deliver(x=0, n=1)", "pull(g=0, n=1)"])
    lag = s[3]
    assert lag["rv_closed"][0][1] == [0, 3]  # LAG now - 1, LEAD now + 2
    assert lag["rv_grp"][0][1] == [0] and lag["side_ts"][0][1] == 0
    lead = s[8]  # the flip to LEAD is sent explicitly: same LAI, new group
    assert s[6]["q_entry"][0][1][0] == ["upsert"]
    assert lead["rv_closed"][0][1] == [1, 4] and lead["rv_grp"][0][1] == [1]
    assert lead["side_ts"][0][1] == 4


def test_the_bump_asks_the_trackers_lower_bound():
    """w1 writes at 3 and w2 at 1, both into b1 (b1's ts 1); w2 is flushed and applied,
    and b1 keeps ts 1 though only w1@3 is left. At now 3 the target 2 is below every
    tracked write, but the lock-free tracker's bound (1) is not above it: the bump fails
    (§2.8). The exact minimum (the heap tracker) lets it close."""
    params = {"nodes": 2, "keys": 1, "writes": 2, "reads": 0, "max_ts": 3, "target": 1,
              "side_transport": True, "publishes": 1}
    labels = ["tick()", "evaluate(g=0, w=0, k=a, c=3)", "evaluate(g=0, w=1, k=a, c=1)",
              "finish(g=0, w=1)", "flush(g=0, w=1)", "append(g=0, w=1)", "apply(g=0, n=0)",
              "tick()", "publish(x=0)"]
    s = play(params, labels)
    stale = s[-2]
    assert stale["wts"] == [3, 1] and stale["tb_ts"][0][0][stale["tb_first"][0][0]] == 1
    published = s[-1]
    assert published["hist_bump"][0][1] == [-1] and not published["pub_tracked"][0][0]
    assert published["assigned_closed"] == stale["assigned_closed"] == [[0]]
    heap = play(dict(params, tracker="heap"), labels)[-1]
    assert heap["hist_bump"][0][1] == [1] and heap["assigned_closed"] == [[2]]


def test_senders_need_lease_changes():
    with pytest.raises(SpecError, match="senders > 1 needs lease_changes >= 1"):
        LOG_DRIVEN.instantiate({"side_transport": True, "senders": 2})
    with pytest.raises(SpecError, match="needs senders >= 2"):
        LOG_DRIVEN.instantiate({"side_transport": True, "lease_changes": 1},
                               ("SideReceiverSharedAcrossSenders",))


def _check(name: str, mutations: tuple[str, ...] | None = None,
           invariants: tuple[str, ...] = ()):
    model = load_model(MODELS / f"{name}.toml", MODELS)
    if mutations is not None:
        model = dataclasses.replace(model, mutations=mutations)
    if invariants:
        model = reshape(model, invariants, ())
    return run(build_machine(model), BfsOptions(deadlock=False))


# mutation model -> (the invariant it violates, the counterexample's length if fixed here)
CAUGHT = {
    "log_driven_mutation_side_receiver_shared_across_senders": ("SideLAINeverRegresses", None),
    "log_driven_mutation_side_break_forgets_copies": ("SideClosedNeverRegresses", 5),
    "log_driven_mutation_side_range_gets_other_group": ("NoStaleRead", 9),
    "log_driven_mutation_side_removal_with_new_closed": ("RemovalKeepsPreviousClosed", 6),
    "log_driven_mutation_side_bump_reads_upper_bucket": ("NoStaleRead", 8),
    "log_driven_mutation_side_bump_at_lower_bound": ("NoStaleRead", 8),
}


@pytest.mark.parametrize("name", sorted(CAUGHT))
def test_the_mutation_alone_makes_the_difference(name: str):
    """Each small mutation model is violated as recorded, and holds without its
    mutation: the counterexample is the mutation's."""
    invariant, length = CAUGHT[name]
    result = _check(name)
    assert result.violation is not None and result.violation.name == invariant
    if length is not None:  # (a lease change's steps are the leases' business)
        assert len(result.violation.trace.states) - 1 == length
    assert _check(name, mutations=()).violation is None


def test_a13_names_the_sender_and_receiver_mistakes():
    """ReceiverMatchesSender (A13) catches the receiver and sender mutations at once: a
    range with the wrong group's closed ts, a range kept without a bump."""
    for name, steps in (("log_driven_mutation_side_range_gets_other_group", 2),
                        ("log_driven_mutation_sender_keeps_failed_range", 4)):
        result = _check(name, invariants=("ReceiverMatchesSender",))
        assert result.violation is not None
        assert result.violation.name == "ReceiverMatchesSender"
        assert len(result.violation.trace.states) - 1 == steps

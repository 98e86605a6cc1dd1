"""Each step of a trace, told in the protocol's words for `ctmc trace show`.

Writes are w1, w2, ...; replicas n1, n2, n3 (n1 holds the first lease); keys a, b, c.
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.parts import node_name


def _ts(v: int) -> str:
    return "none" if v < 0 else str(v)


def _lh(state: dict) -> str:
    """The node whose proposal buffer is in use (n1 unless leases change)."""
    return node_name(state.get("lh", 0))


def narrate(action: str, params: dict[str, Any], before: dict, after: dict) -> str:
    """One line for one step; `before`/`after` are decoded states."""
    w = params.get("w")
    if action == "tick":
        return f"the clock moves to {after['now']}"
    if action == "evaluate":
        key = params["k"]
        return (f"w{w + 1} starts evaluating on {_lh(before)}: writes {key} at {after['wts'][w]} "
                f"(client ts {params['c']}, write floor {_ts(before['assigned_closed'])})")
    if action == "finish":
        return f"w{w + 1} finishes evaluating and enters the proposal buffer"
    if action == "flush":
        return (f"{_lh(before)} flushes w{w + 1} at LAI {after['wlai'][w]} carrying closed "
                f"{_ts(after['wcts'][w])}")
    if action == "append":
        index = before["loglen"]
        again = " again" if before["appended"][w] else ""
        return f"Raft appends w{w + 1}{again} at log index {index}"
    if action == "apply":
        n = params["n"]
        index = before["applied"][n]
        e = before["log"][index]
        if e >= len(before["wlai"]):  # a lease command
            j = e - len(before["wlai"]) + 2
            took = after["lseq"][n] != before["lseq"][n]
            return (f"{node_name(n)} applies log[{index}] = lease #{j}: "
                    + (f"accepted; closed {_ts(after['closed'][n])}" if took else "rejected"))
        who = f"{node_name(n)} applies log[{index}] = w{e + 1} (LAI {before['wlai'][e]})"
        if after["lai"][n] != before["lai"][n] or after["accepted"][e] != before["accepted"][e]:
            return f"{who}: accepted; closed {_ts(after['closed'][n])}, LAI {after['lai'][n]}"
        return (f"{who}: rejected (applied LAI is {before['lai'][n]}); closed "
                f"{_ts(after['closed'][n])}")
    if action == "read":
        n, k, t = params["n"], params["k"], params["t"]
        seen = after["rlen"][params["i"]]
        closed = max(before["closed"][n], before.get("side_ts", [-1] * (n + 1))[n])
        return (f"{node_name(n)} serves a follower read of {k}@{t} "
                f"(closed {_ts(closed)}), seeing log[0..{seen})")
    if action == "publish":
        seq = after["pub_seq"]
        if after["assigned_closed"] != before["assigned_closed"] or (
                after["side_ts"][0] != before["side_ts"][0]):
            return (f"n1 closes {after['pub_closed']} by side transport at LAI "
                    f"{after['pub_lai']} and publishes message {seq}")
        state = "removes the range" if before["pub_tracked"] and not after["pub_tracked"] \
            else "cannot close the range"
        return f"n1 {state} and publishes message {seq} (group closed {after['pub_closed']})"
    if action == "deliver":
        n = params["n"]
        return (f"{node_name(n)} receives side message {after['rv_seq'][n]}: closed "
                f"{_ts(after['rv_closed'][n])}, range tracked={after['rv_tracked'][n]}; "
                f"usable side closed {_ts(after['side_ts'][n])} at LAI {after['side_lai'][n]}")
    if action in ("request_lease", "transfer_lease"):
        j = after["lcount"]
        who = node_name(params["x"])
        how = "acquires" if action == "request_lease" \
            else f"gets by transfer from {node_name(before['lh'])}"
        carried = after["lcts"][j]
        return (f"{who} {how} lease #{j} [{after['lstart'][j]}, {after['lexp'][j]})"
                + (f", carrying closed {carried}" if carried >= 0 else ""))
    if action == "append_lease":
        return f"Raft appends lease command #{params['j']} at log index {before['loglen']}"
    if action == "flip_policy":
        return f"the range's policy becomes {'LEAD' if after['lead_policy'] else 'LAG'}"
    if action == "break_stream":
        return f"the side-transport stream to {node_name(params['n'])} breaks"
    return ""

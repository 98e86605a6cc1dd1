"""Each step of a trace, told in the protocol's words for `ctmc trace show`.

Writes are w1, w2, ...; replicas n1, n2, n3 (n1 holds the first leases); keys
a, b, c; ranges r1 and r2 (only named when a model has two).
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.parts import node_name, range_name


def _ts(v: int) -> str:
    return "none" if v < 0 else str(v)


def _where(state: dict, g: int) -> str:
    """` on r2` when the model has two ranges, else nothing."""
    return f" on {range_name(g)}" if len(state["loglen"]) > 1 else ""


def _lh(state: dict, g: int) -> str:
    """The node whose proposal buffer serves range g (n1 unless leases change)."""
    return node_name(state["lh"][g]) if "lh" in state else "n1"


def _proposal(state: dict, w: int) -> str:
    return f"w{w + 1}" if w < len(state["wkey"]) else _struct_name(state)


def _struct_name(state: dict) -> str:
    return "the merge" if "subsumed" in state else "the split"


def narrate(action: str, params: dict[str, Any], before: dict, after: dict) -> str:
    """One line for one step; `before`/`after` are decoded states."""
    w, g = params.get("w"), params.get("g", 0)
    where = _where(before, g)
    if action == "tick":
        return f"the clock moves to {after['now']}"
    if action == "evaluate":
        return (f"w{w + 1} starts evaluating on {_lh(before, g)}{where}: writes {params['k']} at "
                f"{after['wts'][w]} (client ts {params['c']}, assigned closed "
                f"{_ts(before['assigned_closed'][g])})")
    if action == "finish":
        return f"w{w + 1} finishes evaluating and enters the proposal buffer{where}"
    if action == "flush":
        return (f"{_lh(before, g)} flushes {_proposal(before, w)}{where} at LAI "
                f"{after['wlai'][w]} carrying closed {_ts(after['wcts'][w])}")
    if action == "append":
        again = " again" if before["appended"][w] else ""
        return (f"Raft appends {_proposal(before, w)}{again} at log index "
                f"{before['loglen'][g]}{where}")
    if action == "apply":
        return _apply(params, before, after)
    if action == "read":
        return _read(params, before, after)
    if action in ("publish", "deliver", "break_stream"):
        return _side(action, params, before, after)
    if action in ("request_lease", "transfer_lease", "append_lease"):
        return _lease(action, params, before, after)
    if action == "flip_policy":
        return f"the policy becomes {'LEAD' if after['lead_policy'] else 'LAG'}"
    if action == "evaluate_split":
        known = after.get("wevc", [None] * (len(after["wphase"])))[-1]
        note = f" (trigger closed {_ts(known)})" if known is not None else ""
        return f"n1 evaluates the split of r1 into r1 and r2{note}"
    if action == "subsume":
        return (f"{_lh(before, 1)} subsumes r2: frozen at {after['merge_freeze']}, closed "
                f"{_ts(after['merge_closed'])}, LAI {after['merge_lai']}")
    if action == "restart":
        return ("n1 restarts: it forgets its in-flight proposals, its side-transport streams "
                "break, and the leases it holds are proscribed")
    if action == "evaluate_merge":
        return f"{_lh(before, 0)} evaluates the merge of r2 into r1"
    return ""


def _apply(params: dict, before: dict, after: dict) -> str:
    g, n = params.get("g", 0), params["n"]
    where = _where(before, g)
    index = before["applied"][g][n]
    e = before["log"][g][index]
    props = len(before["wphase"])
    head = f"{node_name(n)} applies log[{index}]{where}"
    if e >= props:  # a lease command
        j = e - props + 2
        took = after["lseq"][g][n] != before["lseq"][g][n]
        return (f"{head} = lease #{j}: "
                + (f"accepted; closed {_ts(after['closed'][g][n])}" if took else "rejected"))
    who = f"{head} = {_proposal(before, e)} (LAI {before['wlai'][e]})"
    if after["accepted"][e] != before["accepted"][e] or after["lai"][g][n] != before["lai"][g][n]:
        text = f"{who}: accepted; closed {_ts(after['closed'][g][n])}, LAI {after['lai'][g][n]}"
        if "span_changed" in after and after["span_changed"][n] != before["span_changed"][n]:
            if "subsumed" in after:
                tsc = after["rhs_tsc"]
                text += ("; r2 is merged into r1 here" + (
                    f", r1's timestamp cache over r2's keys is now {_ts(tsc)}"
                    if tsc != before["rhs_tsc"] else ""))
            else:
                text += f"; r2 starts here with closed {_ts(after['closed'][1][n])}"
        return text
    return (f"{who}: rejected (applied LAI is {before['lai'][g][n]}); closed "
            f"{_ts(after['closed'][g][n])}")


def _read(params: dict, before: dict, after: dict) -> str:
    g, n, k, t = params.get("g", 0), params["n"], params["k"], params["t"]
    seen = [f"w{w + 1}" for w, saw in enumerate(after["robs"][params["i"]]) if saw]
    closed = before["closed"][g][n]
    if "side_ts" in before:
        closed = max(closed, before["side_ts"][g][n])
    return (f"{node_name(n)} serves a follower read of {k}@{t}{_where(before, g)} "
            f"(closed {_ts(closed)}), seeing {', '.join(seen) or 'no write'}")


def _side(action: str, params: dict, before: dict, after: dict) -> str:
    if action == "break_stream":
        return f"the side-transport stream to {node_name(params['n'])} breaks"
    if action == "deliver":
        n = params["n"]
        ranges = range(len(after["side_ts"]))
        usable = ", ".join(f"{_ts(after['side_ts'][g][n])} at LAI {after['side_lai'][g][n]}"
                           f"{_where(after, g)}" for g in ranges)
        tracked = [str(after["rv_tracked"][n][g]) for g in ranges]
        return (f"{node_name(n)} receives side message {after['rv_seq'][n]}: closed "
                f"{_ts(after['rv_closed'][n])}, tracked={'/'.join(tracked)}; usable side "
                f"closed {usable}")
    seq = after["pub_seq"]
    parts = []
    for g in range(len(after["side_ts"])):
        if after["assigned_closed"][g] != before["assigned_closed"][g] or (
                after["side_ts"][g][0] != before["side_ts"][g][0]):
            parts.append(f"closes {after['pub_closed']}{_where(after, g)} at LAI "
                         f"{after['pub_lai'][g]}")
        elif before["pub_tracked"][g] and not after["pub_tracked"][g]:
            parts.append(f"removes{_where(after, g) or ' the range'}")
        else:
            parts.append(f"cannot close{_where(after, g) or ' the range'}")
    return (f"n1 {'; '.join(parts)} by side transport and publishes message {seq} "
            f"(group closed {after['pub_closed']})")


def _lease(action: str, params: dict, before: dict, after: dict) -> str:
    g = params.get("g", 0)
    where = _where(before, g)
    if action == "append_lease":
        return (f"Raft appends lease command #{params['j']}{where} at log index "
                f"{before['loglen'][g]}")
    j = after["lcount"][g]
    who = node_name(params["x"])
    how = "acquires" if action == "request_lease" \
        else f"gets by transfer from {node_name(before['lh'][g])}"
    carried = after["lcts"][g][j]
    return (f"{who} {how} lease #{j}{where} [{after['lstart'][g][j]}, {after['lexp'][g][j]})"
            + (f", carrying closed {carried}" if carried >= 0 else ""))

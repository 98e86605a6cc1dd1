"""Each step of a trace, told in the protocol's words for `ctmc trace show`.

Writes are w1, w2, ...; replicas n1, n2, n3 (n1 holds the first leases); keys
a, b, c; ranges r1 and r2 (only named when a model has two).
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.parts import node_name, range_name, structural_name


def _ts(v: int) -> str:
    return "none" if v < 0 else str(v)


def _where(state: dict, g: int) -> str:
    """` on r2` when the model has two ranges, else nothing."""
    return f" on {range_name(g)}" if len(state["loglen"]) > 1 else ""


def _lh(state: dict, g: int) -> str:
    """The node whose proposal buffer serves range g (n1 unless leases change)."""
    return node_name(state["lh"][g]) if "lh" in state else "n1"


def _proposal(state: dict, w: int) -> str:
    return f"w{w + 1}" if w < len(state["wkey"]) else f"the {structural_name(state, w)}"


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
    if action == "flush" and w >= len(before["wphase"]):
        return _flush_lease(w - len(before["wphase"]) + 2, g, before, after)
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
    if action in ("request_lease", "transfer_lease", "append_lease", "extend_lease"):
        return _lease(action, params, before, after)
    if action == "flip_policy":
        return f"the policy becomes {'LEAD' if after['lead_policy'] else 'LAG'}"
    if action == "evaluate_split":
        known = after["wevc"][len(after["wkey"])] if "wevc" in after else None  # the split's
        note = f" (trigger closed {_ts(known)})" if known is not None else ""
        return f"{_lh(before, 0)} evaluates the split of r1 into r1 and r2{note}"
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
        text = f"{head} = lease #{j}: " + (
            f"accepted; closed {_ts(after['closed'][g][n])}" if took
            else f"rejected (it builds on lease #{before['lprev'][g][j]}, the replica has "
                 f"#{before['lseq'][g][n]})")
        if after["lh"][g] != before["lh"][g]:
            failed = [f"w{w + 1}" for w in range(len(before["wts"]))
                      if after["wphase"][w] == "failed" != before["wphase"][w]]
            text += f"; {node_name(n)} takes over {range_name(g)}'s proposal buffer"
            if failed:
                text += (f", and {node_name(before['lh'][g])}'s unproposed "
                         f"{', '.join(failed)} fail")
        return text
    lai = before["elai"][g][index] if "elai" in before else before["wlai"][e]
    who = f"{head} = {_proposal(before, e)} (LAI {lai})"
    if after["accepted"][e] != before["accepted"][e] or after["lai"][g][n] != before["lai"][g][n]:
        text = f"{who}: accepted; closed {_ts(after['closed'][g][n])}, LAI {after['lai'][g][n]}"
        # the merge's flag is `merged` after a split, else `span_changed` as the split's
        merge_flag = "merged" if "merged" in after else "span_changed"
        if "subsumed" in after and after[merge_flag][n] != before[merge_flag][n]:
            tsc = after["rhs_tsc"]
            text += ("; r2 is merged into r1 here" + (
                f", r1's timestamp cache over r2's keys is now {_ts(tsc)}"
                if tsc != before["rhs_tsc"] else ""))
        elif "span_changed" in after and after["span_changed"][n] != before["span_changed"][n]:
            text += f"; r2 starts here with closed {_ts(after['closed'][1][n])}"
        return text
    text = (f"{who}: rejected (applied LAI is {before['lai'][g][n]}); closed "
            f"{_ts(after['closed'][g][n])}")
    return text + _reproposal(before, after, g, e)


def _reproposal(before: dict, after: dict, g: int, e: int) -> str:
    """What the proposer does with a command its replica rejected for its LAI."""
    if e >= len(before["wts"]) or before["wphase"][e] == after["wphase"][e]:
        return ""
    minimum = before["assigned_closed"][g] + 1
    if after["wphase"][e] == "failed":
        if before.get("reproposals_left", 1) == 0:
            return "; the model allows no more reproposals: the client gets an error"
        return (f"; {node_name(after['lh'][g] if 'lh' in after else 0)} gives up on "
                f"w{e + 1}: its ts {before['wts'][e]} is at or below the minimum {minimum} "
                "(assigned closed + 1), and the client gets an error")
    tracked = "not tracked" if after["wphase"][e] == "released" else "tracked again"
    return (f"; w{e + 1} is re-proposed: {tracked} at {after['wts'][e]} (above the minimum "
            f"{minimum}) and back in the proposal buffer for a new LAI")


def _read(params: dict, before: dict, after: dict) -> str:
    g, n, k, t = params.get("g", 0), params["n"], params["k"], params["t"]
    seen = [f"w{w + 1}" for w, saw in enumerate(after["robs"][params["i"]]) if saw]
    closed = before["closed"][g][n]
    if "side_ts" in before:
        closed = max(closed, _side_closed(before, g, n))
    return (f"{node_name(n)} serves a follower read of {k}@{t}{_where(before, g)} "
            f"(closed {_ts(closed)}), seeing {', '.join(seen) or 'no write'}")


GROUP_NAMES = ("LAG", "LEAD")


def _groups(closed: list[int]) -> str:
    """A message's closed ts per policy group (just the value with one group)."""
    if len(closed) == 1:
        return f"closed {_ts(closed[0])}"
    return "closed " + ", ".join(f"{GROUP_NAMES[c]} {_ts(v)}" for c, v in enumerate(closed))


def _group(state: dict, key: str, *index: int) -> str:
    """` (LAG)` or ` (LEAD)`: a tracked range's group, when there are two."""
    if key not in state:
        return ""
    value = state[key]
    for i in index:
        value = value[i]
    return f" ({GROUP_NAMES[value]})"


def _side_closed(state: dict, g: int, n: int) -> int:
    """The side closed ts replica (g, n) uses: from the stream of its applied lease's
    holder, if that node may send."""
    holder = state["lholder"][g][state["lseq"][g][n]] if "lseq" in state else 0
    if holder >= len(state["pub_seq"]):
        return -1
    return state["side_ts"][holder][g][n]


def _side(action: str, params: dict, before: dict, after: dict) -> str:
    x, n = params["x"], params.get("n")
    sender = node_name(x)
    ranges = range(len(after["side_ts"][x]))
    if action == "break_stream":
        lost = [f"{range_name(g)} {_ts(before['side_ts'][x][g][n])} -> "
                f"{_ts(after['side_ts'][x][g][n])}" for g in ranges
                if after["side_ts"][x][g][n] < before["side_ts"][x][g][n]]
        return (f"the side-transport stream from {sender} to {node_name(n)} breaks: "
                f"{node_name(n)} drops its state for {sender}'s stream, and {sender}'s next "
                "message to it will be a snapshot"
                + (f"; {node_name(n)}'s replicas lose the side closed ts they had from "
                   f"{sender} ({', '.join(lost)})" if lost else ""))
    if action == "deliver":
        r = x if after["rv_ok"][x][n] else 0  # SideReceiverSharedAcrossSenders: one state
        kind = "snapshot" if before["q_snap"][x][n][0] else "delta"
        tracked = [f"{range_name(g)} at LAI {after['rv_lai'][r][n][g]}"
                   + _group(after, "rv_grp", r, n, g)
                   for g in ranges if after["rv_tracked"][r][n][g]]
        removed = [range_name(g) for g in ranges
                   if before["rv_tracked"][r][n][g] and not after["rv_tracked"][r][n][g]]
        usable = ", ".join(f"{_ts(after['side_ts'][x][g][n])} at LAI "
                           f"{after['side_lai'][x][g][n]}{_where(after, g)}" for g in ranges)
        return (f"{node_name(n)} receives {sender}'s side message {before['q_seq'][x][n][0]} "
                f"({kind}): {_groups(after['rv_closed'][r][n])}; tracks "
                f"{', '.join(tracked) or 'nothing'}"
                + (f"; removes {', '.join(removed)}" if removed else "")
                + f"; side closed from {sender} usable here: {usable}")
    seq = after["pub_seq"][x]
    parts = []
    for g in ranges:
        name = _where(after, g) or " the range"
        was, now = before["pub_tracked"][x][g], after["pub_tracked"][x][g]
        holder = after["lholder"][g][after["lseq"][g][x]] if "lseq" in after else 0
        if after["hist_bump"][x][seq][g] >= 0:
            grp = after["pub_grp"][x][g] if "pub_grp" in after else 0
            bound = ""
            if "tb_ts" in before:  # the lock-free tracker's lower bound: b1's ts
                lb = before["tb_ts"][g][before["tb_first"][g]]
                bound = f" (tracker lower bound {lb})" if lb >= 0 else ""
            parts.append(f"closes {after['pub_closed'][x][grp]}{_where(after, g)} at LAI "
                         f"{after['pub_lai'][x][g]}" + _group(after, "pub_grp", x, g)
                         + bound)
        elif holder != x and was and now:
            parts.append(f"keeps{name} tracked (its lease is now {node_name(holder)}'s)")
        elif holder != x:
            parts.append(f"removes{name}: its lease is {node_name(holder)}'s"
                         if was else f"does not lead{name}")
        elif was and not now:
            parts.append(f"cannot close{name} and removes it")
        elif was:
            parts.append(f"cannot close{name} but keeps it tracked")
        else:
            parts.append(f"cannot close{name}")
    return (f"{sender} {'; '.join(parts)} by side transport and publishes message {seq} "
            f"({_groups(after['pub_closed'][x])})")


def _lease(action: str, params: dict, before: dict, after: dict) -> str:
    g = params.get("g", 0)
    where = _where(before, g)
    if action == "append_lease":
        return (f"Raft appends lease command #{params['j']}{where} at log index "
                f"{before['loglen'][g]}")
    j = after["lcount"][g]
    span = f"lease #{j}{where} [{after['lstart'][g][j]}, {after['lexp'][g][j]})"
    built_on = f", built on lease #{after['lprev'][g][j]}" if "lprev" in after else ""
    if action == "extend_lease":
        return (f"{node_name(before['lh'][g])} proposes an extension, {span}{built_on}, "
                "through its proposal buffer")
    if action == "transfer_lease":
        return (f"{node_name(before['lh'][g])} revokes its lease and proposes a transfer to "
                f"{node_name(params['x'])}, {span}, through its proposal buffer")
    carried = after["lcts"][g][j]
    return (f"{node_name(params['x'])} requests {span}{built_on}"
            + (f", carrying closed {carried}" if carried >= 0 else ""))


def _flush_lease(j: int, g: int, before: dict, after: dict) -> str:
    """A lease transfer or extension leaves the leaseholder's proposal buffer."""
    kind = after["lkind"][g][j]
    lai, carried = after["llai"][g][j], after["lcts"][g][j]
    text = f"{_lh(before, g)} flushes lease #{j} ({kind}){_where(before, g)}"
    if lai:
        text += f" at LAI {lai}"
    text += f" carrying closed {_ts(carried)}" if carried >= 0 else " carrying no closed ts"
    if after["assigned_closed"][g] != before["assigned_closed"][g]:
        text += f"; assigned closed {_ts(after['assigned_closed'][g])}"
    return text

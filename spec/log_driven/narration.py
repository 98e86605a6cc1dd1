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


def _proposer(state: dict, w: int) -> int:
    """The node whose replica evaluated proposal w (n1 without lease changes)."""
    return state["wnode"][w] if "wnode" in state else 0


def _assigned(state: dict, g: int, x: int) -> int:
    """Node x's replica of range g: its assigned closed ts."""
    return state["assigned_closed"][g][x]


def _proposal(state: dict, w: int) -> str:
    return f"w{w + 1}" if w < len(state["wkey"]) else f"the {structural_name(state, w)}"


def narrate(action: str, params: dict[str, Any], before: dict, after: dict) -> str:
    """One line for one step; `before`/`after` are decoded states."""
    w, g = params.get("w"), params.get("g", 0)
    where = _where(before, g)
    x = params.get("x", 0)
    if action == "tick":
        if "x" in params:
            return f"{node_name(x)}'s clock moves to {after['clk'][x]}"
        return f"the clock moves to {after['now']}"
    if action == "heartbeat":
        return (f"{node_name(x)} heartbeats its liveness record (epoch "
                f"{after['live_epoch'][x]}): it now expires at {after['live_exp'][x]}")
    if action == "increment_epoch":
        h = params["h"]
        return (f"{node_name(x)} increments {node_name(h)}'s epoch to "
                f"{after['live_epoch'][h]}: {node_name(h)}'s liveness record expired at "
                f"{before['live_exp'][h]}, and its epoch-based leases end")
    if action == "promote_lease":
        j = after["lcount"][g]
        return (f"{node_name(x)} promotes its lease{where} to an epoch-based one, lease #{j} "
                f"in epoch {after['lepoch'][g][j]} with minimum expiration "
                f"{after['lexp'][g][j]}, through its proposal buffer")
    x = params.get("x", 0)
    if action == "evaluate":
        return (f"w{w + 1} starts evaluating on {node_name(x)}{where}: writes {params['k']} at "
                f"{after['wts'][w]} (client ts {params['c']}, assigned closed "
                f"{_ts(_assigned(before, g, x))})")
    if action == "finish":
        return (f"w{w + 1} finishes evaluating and enters {node_name(_proposer(before, w))}'s "
                f"proposal buffer{where}")
    if action == "flush" and w >= len(before["wphase"]):
        return _flush_lease(w - len(before["wphase"]) + 2, g, x, before, after)
    if action in ("flush", "flush_stale_lai"):
        stale = "" if action == "flush" else " (injected" + (
            ": below every real LAI, rejected everywhere)" if after["wlai"][w] == 0 else ")")
        return (f"{node_name(x)} flushes {_proposal(before, w)}{where} at LAI "
                f"{after['wlai'][w]}{stale} carrying closed {_ts(after['wcts'][w])}")
    if action == "pull":
        return _pull(params, before, after)
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
        return f"{node_name(x)} evaluates the split of r1 into r1 and r2{note}"
    if action == "subsume":
        return (f"{node_name(x)} subsumes r2: frozen at {after['merge_freeze']}, closed "
                f"{_ts(after['merge_closed'])}, LAI {after['merge_lai']}")
    if action == "restart":
        return ("n1 restarts: it forgets its proposal buffers, in-flight proposals, "
                "side-transport state and timestamp cache (now "
                f"{after['tsc'][0][0]}); its streams break and its leases are proscribed")
    if action == "evaluate_merge":
        return (f"{node_name(x)} evaluates the merge's EndTxn at {before['merge_ts']} (its r1 "
                "lease usable there): the merge of r2 into r1")
    if action == "begin_merge":
        y = params.get("y", 0)
        return (f"{node_name(x)} starts the merge transaction at {after['merge_ts']}: intents "
                f"on r1's descriptor and, on {node_name(y)}, a deletion intent on r2's")
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
        if took:
            text += _lease_applied(before, after, g, n, j)
        return text
    lai = before["elai"][g][index] if "elai" in before else before["wlai"][e]
    who = f"{head} = {_proposal(before, e)} (LAI {lai})"
    if after["accepted"][e] != before["accepted"][e] or after["lai"][g][n] != before["lai"][g][n]:
        text = f"{who}: accepted; closed {_ts(after['closed'][g][n])}, LAI {after['lai'][g][n]}"
        # the merge's flag is `merged` after a split, else `span_changed` as the split's
        merge_flag = "merged" if "merged" in after else "span_changed"
        if "subsumed" in after and after[merge_flag][n] != before[merge_flag][n]:
            tsc = after["tsc"][n][1]
            text += ("; r2 is merged into r1 here" + (
                f", and {node_name(n)}'s timestamp cache over r2's keys rises to {_ts(tsc)}"
                if tsc != before["tsc"][n][1] else ""))
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
    x = _proposer(before, e)
    minimum = _assigned(before, g, x) + 1
    if after["wphase"][e] == "failed":
        if before.get("reproposals_left", 1) == 0:
            return "; the model allows no more reproposals: the client gets an error"
        return (f"; {node_name(x)} gives up on "
                f"w{e + 1}: its ts {before['wts'][e]} is at or below the minimum {minimum} "
                "(assigned closed + 1), and the client gets an error")
    tracked = "not tracked" if after["wphase"][e] == "released" else "tracked again"
    return (f"; w{e + 1} is re-proposed: {tracked} at {after['wts'][e]} (above the minimum "
            f"{minimum}) and back in {node_name(x)}'s proposal buffer for a new LAI")


def _lease_applied(before: dict, after: dict, g: int, n: int, j: int) -> str:
    """What applying lease j did on node n: its store's timestamp cache and its proposal
    buffer (leasePostApplyLocked, OnLeaseChangeLocked)."""
    if after["lholder"][g][j] != n:
        if before["assigned_closed"][g][n] != -1 or before["assigned_lai"][g][n] != 0:
            return f"; {node_name(n)}'s proposal buffer{_where(before, g)} has its assigned " \
                   "LAI and closed ts zeroed"
        return ""
    raised = [f"{_seg(after, seg)} to {after['tsc'][n][seg]}"
              for seg in range(len(after["tsc"][n]))
              if after["tsc"][n][seg] != before["tsc"][n][seg]] if "tsc" in after else []
    text = f"; {node_name(n)} holds{_where(before, g)} from here"
    if raised:
        text += f", its timestamp cache rises ({', '.join(raised)})"
    return text + (f", its assigned closed ts is {_ts(after['assigned_closed'][g][n])} and "
                   f"its assigned LAI {after['assigned_lai'][g][n]}")


def _seg(state: dict, seg: int) -> str:
    """A timestamp-cache segment: all keys, or left and right of the split key."""
    if len(state["tsc"][0]) == 1:
        return "every key"
    return "r1's keys" if seg == 0 else "r2's keys"


def _read(params: dict, before: dict, after: dict) -> str:
    g, n, k, t = params.get("g", 0), params["n"], params["k"], params["t"]
    seen = [f"w{w + 1}" for w, saw in enumerate(after["robs"][params["i"]]) if saw]
    closed = before["closed"][g][n]
    if "side_ts" in before:
        closed = max(closed, before["side_ts"][g][n])
    return (f"{node_name(n)} serves a follower read of {k}@{t}{_where(before, g)} "
            f"(closed {_ts(closed)}), seeing {', '.join(seen) or 'no write'}")


def _pull(params: dict, before: dict, after: dict) -> str:
    g, n = params["g"], params["n"]
    head = f"{node_name(n)}'s replica{_where(before, g)} asks for its closed ts"
    if after.get("side_fatal") and not before.get("side_fatal"):
        return head + ": the side-transport update regresses its (LAI, closed ts): fatal"
    cur = (after["side_lai"][g][n], after["side_ts"][g][n])
    if cur == (before["side_lai"][g][n], before["side_ts"][g][n]) and \
            after.get("next_ts") == before.get("next_ts"):
        return head + ": nothing new"
    text = f"{head}: side closed {_ts(cur[1])} at LAI {cur[0]}"
    if "next_ts" in after and after["next_ts"][g][n] != before["next_ts"][g][n] \
            and after["next_ts"][g][n] >= 0:
        text += (f", stashing {after['next_ts'][g][n]} for LAI {after['next_lai'][g][n]} "
                 "(not applied here yet)")
    return text


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


def _side(action: str, params: dict, before: dict, after: dict) -> str:
    x, n = params["x"], params.get("n")
    sender = node_name(x)
    ranges = range(len(after["side_ts"]))
    if action == "break_stream":
        lost = [f"{range_name(g)} {_ts(before['side_ts'][g][n])} -> "
                f"{_ts(after['side_ts'][g][n])}" for g in ranges
                if after["side_ts"][g][n] < before["side_ts"][g][n]]
        return (f"the side-transport stream from {sender} to {node_name(n)} breaks: "
                f"{node_name(n)} drops its state for {sender}'s stream, and {sender}'s next "
                "message to it will be a snapshot"
                + (f"; {node_name(n)}'s replicas lose their side closed ts "
                   f"({', '.join(lost)})" if lost else ""))
    if action == "deliver":
        r = x if after["rv_ok"][x][n] else 0  # SideReceiverSharedAcrossSenders: one state
        kind = "snapshot" if before["q_snap"][x][n][0] else "delta"
        tracked = [f"{range_name(g)} at LAI {after['rv_lai'][r][n][g]}"
                   + _group(after, "rv_grp", r, n, g)
                   for g in ranges if after["rv_tracked"][r][n][g]]
        removed = [range_name(g) for g in ranges
                   if before["rv_tracked"][r][n][g] and not after["rv_tracked"][r][n][g]]
        handed = [f"{_ts(after['side_ts'][g][n])} at LAI {after['side_lai'][g][n]}"
                  f"{_where(after, g)}" for g in removed
                  if (after["side_ts"][g][n], after["side_lai"][g][n])
                  != (before["side_ts"][g][n], before["side_lai"][g][n])]
        return (f"{node_name(n)} receives {sender}'s side message {before['q_seq'][x][n][0]} "
                f"({kind}): {_groups(after['rv_closed'][r][n])}; tracks "
                f"{', '.join(tracked) or 'nothing'}"
                + (f"; removes {', '.join(removed)}" if removed else "")
                + (f", handing {node_name(n)}'s replica its previous closed ts "
                   f"({', '.join(handed)})" if handed else "")
                + ("; the forward regresses the replica's (LAI, closed ts): fatal"
                   if after.get("side_fatal") and not before.get("side_fatal") else ""))
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
                lb = before["tb_ts"][g][x][before["tb_first"][g][x]]
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
    built_on = f", built on lease #{after['lprev'][g][j]}"
    if action == "extend_lease":
        return (f"{node_name(params.get('x', 0))} proposes an extension, {span}{built_on}, "
                "through its proposal buffer")
    if action == "transfer_lease":
        return (f"{node_name(params['y'])} revokes its lease and proposes a transfer to "
                f"{node_name(params['x'])}, {span}, through its proposal buffer (read "
                f"summary {after['lsum'][g][j]})")
    carried = after["lcts"][g][j]
    renewal = " (a renewal of its own lease: same sequence)" \
        if after["lbase"][g][j] != j else ""
    return (f"{node_name(params['x'])} requests {span}{built_on}{renewal}, into its "
            "proposal buffer" + (f", carrying closed {carried}" if carried >= 0 else ""))


def _flush_lease(j: int, g: int, x: int, before: dict, after: dict) -> str:
    """A lease command leaves its proposer's buffer."""
    kind = after["lkind"][g][j]
    lai, carried = after["llai"][g][j], after["lcts"][g][j]
    text = f"{node_name(x)} flushes lease #{j} ({kind}){_where(before, g)}"
    if lai:
        text += f" at LAI {lai}"
    text += f" carrying closed {_ts(carried)}" if carried >= 0 else " carrying no closed ts"
    if _assigned(after, g, x) != _assigned(before, g, x):
        text += f"; assigned closed {_ts(_assigned(after, g, x))}"
    return text

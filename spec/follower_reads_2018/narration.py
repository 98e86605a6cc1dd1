"""Each step of a 2018 trace in the RFC's words, for `ctmc trace show`.

Writes are w1, w2, ...; nodes n1 (the origin store), n2, n3; the range is g.
Raft steps are told by the log-driven spec's narrator.
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.narration import narrate as narrate_raft
from spec.log_driven.parts import node_name, range_name


def _v(x: int) -> str:
    return "none" if x < 0 else str(x)


def _mlais(values: list[int]) -> str:
    shown = [f"{range_name(r)}:{x}" for r, x in enumerate(values) if x >= 0]
    return "{" + ", ".join(shown) + "}"


def _seqs(state: dict) -> str:
    """n1's last sequence number to each peer (one number when they agree)."""
    seqs = state["ct_seq"][1:]
    if len(set(seqs)) == 1:
        return f"seq {seqs[0]}" + (" (full update)" if seqs[0] == 0 else "")
    return "seq " + ", ".join(f"{x} to {node_name(n + 1)}" for n, x in enumerate(seqs))


def _mpt(state: dict) -> str:
    return (f"MPT closed {state['mpt_closed']} next {state['mpt_next']} "
            f"| @{_mlais(state['left_mlai'])} #{state['left_ref']} "
            f"| @{_mlais(state['right_mlai'])} #{state['right_ref']}")


def narrate(action: str, params: dict[str, Any], before: dict, after: dict) -> str:
    """One line for one step; `before`/`after` are decoded states."""
    w, n = params.get("w"), params.get("n")
    if action == "tick":
        if after["now"] == before["now"]:
            return "time passes: every timestamp moves one tick into the past (window)"
        return f"the clock moves to {after['now']}"
    if action == "evaluate":
        h = params["h"]
        tracked = " (tracked by n1's MPT, forced above next)" if h == 0 else ""
        return (f"{node_name(h)} evaluates w{w + 1} on {range_name(params['g'])}: writes "
                f"{params['k']} at "
                f"{after['wts'][w]} (client ts {params['c']}){tracked}; {_mpt(after)}")
    if action == "propose":
        again = " again" if before["wlai"][w] else ""
        released = " (its LAI reaches no MLAI)" if before["wmpt"][w] and again and \
            after["right_mlai"] == before["right_mlai"] and \
            after["left_mlai"] == before["left_mlai"] else ""
        return (f"w{w + 1} gets LAI {after['wlai'][w]} and is proposed{again}{released}"
                + (f"; {_mpt(after)}" if before["wmpt"][w] else ""))
    if action == "close":
        if after["ct_seq"] == before["ct_seq"] and after["ct_closed"] == before["ct_closed"]:
            return f"n1 tries to close {before['mpt_next']}: nothing sent; {_mpt(after)}"
        mlais = {_mlais(x) for x in after["msg_mlai"][1:]}
        return (f"n1 closes {after['ct_closed']} in epoch {after['ct_epoch']} and sends "
                f"{_seqs(after)} with MLAIs {' / '.join(sorted(mlais))}; {_mpt(after)}")
    if action == "lose":
        return f"the update on its way to {node_name(n)} is lost"
    if action == "deliver":
        return (f"{node_name(n)} applies n1's update (epoch {before['msg_epoch'][n]}, seq "
                f"{before['msg_seq'][n]}, closed {before['msg_closed'][n]}): its state is "
                f"epoch {after['rc_epoch'][n]}, seq {_v(after['rc_seq'][n])}, closed "
                f"{_v(after['rc_closed'][n])}, MLAIs {_mlais(after['rc_mlai'][n])}"
                + ("; it asks n1 for a full update" if after["full_next"] !=
                   before["full_next"] else ""))
    if action == "request_mlai":
        return f"{node_name(n)} has no MLAI for the range and asks n1 for one"
    if action == "refresh":
        took = after["right_mlai"] != before["right_mlai"] or \
            after["right_epoch"] != before["right_epoch"]
        return ("n1 feeds the MPT the range's LAI" if took
                else "n1 does not hold the lease and drops the request") + f"; {_mpt(after)}"
    if action in ("expire", "heartbeat", "restart"):
        what = {"expire": "n1's liveness record lapses",
                "heartbeat": "n1 heartbeats its liveness record",
                "restart": "n1 restarts"}[action]
        return f"{what} (epoch {after['epoch'][0]})"
    if action in ("takeover", "transfer"):
        j = after["lcount"][0]
        x = node_name(params["x"])
        lease = f"lease #{j} from {after['lstart'][0][j]} (epoch {after['lepoch'][0][j]})"
        if action == "takeover":
            return f"{x} increments n1's epoch to {after['epoch'][0]} and takes over: {lease}"
        return (f"n1 transfers r1's lease to {x}: {lease} at LAI {after['llai'][0][j]}; "
                f"{_mpt(after)}")
    if action == "append_lease":
        return f"Raft appends lease #{params['j']} at log index {before['loglen'][0]}"
    g = params.get("g", 0)
    if action == "apply" and before["log"][g][before["applied"][g][n]] < len(before["wkey"]):
        return _apply_write(before, after, g, n)
    if action == "apply" and before["log"][g][before["applied"][g][n]] >= len(before["wlai"]):
        j = before["log"][g][before["applied"][g][n]] - len(before["wlai"]) + 2
        took = after["lseq"][g][n] != before["lseq"][g][n]
        return (f"{node_name(n)} applies lease #{j} of {range_name(g)}: "
                + (f"now sees holder {node_name(after['lholder'][g][j])}, LAI "
                   f"{after['lai'][g][n]}" if took else "rejected"))
    if action == "read":
        t = params["t"]
        seen = [f"w{w + 1}" for w, x in enumerate(after["robs"][params["i"]]) if x]
        return (f"{node_name(n)} serves a follower read of {params['k']}@{t} on "
                f"{range_name(g)} (n1's closed {before['rc_closed'][n]}, MLAIs "
                f"{_mlais(before['rc_mlai'][n])}, its LAI {before['lai'][g][n]}), seeing "
                f"{', '.join(seen) or 'no write'}")
    if action == "split":
        return f"n1 splits r1 (LAI {after['wlai'][-1]}) and feeds its MPT r2's LAI; {_mpt(after)}"
    if action == "subsume":
        return (f"n1 subsumes r2 at LAI {after['merge_lai']}: r2 is frozen; closed ts "
                f"returned {after['merge_closed']}; {_mpt(after)}")
    if action == "merge":
        return f"{node_name(params['h'])} proposes the merge at r1's LAI {after['wlai'][-1]}"
    if action == "renumber":
        return "every LAI or sequence number moves down by one (window)"
    if action == "truncate":
        return "Raft truncates the log entry every replica applied; its write slot is free"
    return narrate_raft(action, params, before, after)


def _apply_write(before: dict, after: dict, g: int, n: int) -> str:
    """Replica (g, n) applies a write's entry (2018 commands carry no closed ts); a
    rejection on n1's replica may re-propose it (reproposals.py)."""
    index = before["applied"][g][n]
    e = before["log"][g][index]
    lai = before["elai"][g][index] if "elai" in before else before["wlai"][e]
    head = f"{node_name(n)} applies log[{index}] = w{e + 1} (LAI {lai}) on {range_name(g)}"
    if after["lai"][g][n] != before["lai"][g][n]:
        return f"{head}: accepted, its LAI is now {after['lai'][g][n]}"
    why = f"applied LAI is {before['lai'][g][n]}"
    if "lseq" in before and before["wseq"][e] != before["lseq"][g][n]:
        why = f"proposed under lease #{before['wseq'][e]}, the replica has #" \
              f"{before['lseq'][g][n]}"
    head = f"{head}: rejected ({why})"
    if before["wphase"][e] == after["wphase"][e]:
        return head
    return _reproposal(before, after, e, head)


def _reproposal(before: dict, after: dict, e: int, head: str) -> str:
    """n1's replica rejected write e's newest entry for its LAI, and n1 proposes it
    again (through the MPT, `tryReproposeWithNewLeaseIndex`) or gives up."""
    minimum = before["mpt_next"] + 1
    ts = before["wts"][e]
    if after["wphase"][e] == "failed":
        if before["reproposals_left"] == 0:
            return f"{head}; the model allows no more reproposals: the client gets an error"
        return (f"{head}; n1 gives up on w{e + 1}: its ts {ts} is below the MPT's minimum "
                f"{minimum} (next + 1), a closed ts covering it may be out, and the client "
                "gets an error")
    if not after["wmpt"][e]:
        return (f"{head}; w{e + 1} is re-proposed at {ts} for a new LAI without going "
                f"through the MPT (next is {before['mpt_next']})")
    where = "above" if ts >= minimum else "below"
    return (f"{head}; w{e + 1} is re-proposed: tracked by n1's MPT again at {ts}, {where} "
            f"its minimum {minimum} (next + 1), and waits for a new LAI; {_mpt(after)}")

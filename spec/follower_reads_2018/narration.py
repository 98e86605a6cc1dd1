"""Each step of a 2018 trace in the RFC's words, for `ctmc trace show`.

Writes are w1, w2, ...; nodes n1 (the origin store), n2, n3; the range is g.
Raft steps are told by the log-driven spec's narrator.
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.narration import narrate as narrate_raft
from spec.log_driven.parts import node_name


def _v(x: int) -> str:
    return "none" if x < 0 else str(x)


def _mlais(values: list[int]) -> str:
    shown = [f"g:{x}" if len(values) == 1 else f"g{r + 1}:{x}"
             for r, x in enumerate(values) if x >= 0]
    return "{" + ", ".join(shown) + "}"


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
        return (f"{node_name(h)} evaluates w{w + 1}: writes {params['k']} at "
                f"{after['wts'][w]} (client ts {params['c']}){tracked}; {_mpt(after)}")
    if action == "propose":
        return (f"w{w + 1} gets LAI {after['wlai'][w]} and is proposed"
                + (f"; {_mpt(after)}" if before["wmpt"][w] else ""))
    if action == "close":
        if after["ct_seq"] == before["ct_seq"] and after["ct_closed"] == before["ct_closed"]:
            return f"n1 tries to close {before['mpt_next']}: nothing sent; {_mpt(after)}"
        full = " (full update)" if after["ct_seq"] == 0 else ""
        return (f"n1 closes {after['ct_closed']} in epoch {after['ct_epoch']} and sends "
                f"seq {after['ct_seq']}{full} with MLAIs {_mlais(after['msg_mlai'][-1])}; "
                f"{_mpt(after)}")
    if action == "lose":
        return f"the update on its way to {node_name(n)} is lost"
    if action == "deliver":
        return (f"{node_name(n)} applies n1's update (epoch {before['msg_epoch'][n]}, seq "
                f"{before['msg_seq'][n]}, closed {before['msg_closed'][n]}): its state is "
                f"epoch {after['rc_epoch'][n]}, seq {_v(after['rc_seq'][n])}, closed "
                f"{_v(after['rc_closed'][n])}, MLAIs {_mlais(after['rc_mlai'][n])}"
                + ("; it asks n1 for a full update" if after["full_next"]
                   and not before["full_next"] else ""))
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
        j = after["lcount"]
        x = node_name(params["x"])
        if action == "takeover":
            return (f"{x} increments n1's epoch to {after['epoch'][0]} and takes the lease "
                    f"over: lease #{j} from {after['lstart'][j]} (epoch {after['lepoch'][j]})")
        return (f"n1 transfers the lease to {x}: lease #{j} from {after['lstart'][j]} "
                f"(epoch {after['lepoch'][j]}) at LAI {after['llai'][j]}; {_mpt(after)}")
    if action == "append_lease":
        return f"Raft appends lease #{params['j']} at log index {before['loglen']}"
    if action == "apply" and before["log"][before["applied"][n]] >= len(before["wlai"]):
        j = before["log"][before["applied"][n]] - len(before["wlai"]) + 2
        took = after["lseq"][n] != before["lseq"][n]
        return (f"{node_name(n)} applies lease #{j}: "
                + (f"now sees lease holder {node_name(after['lholder'][j])}, LAI "
                   f"{after['lai'][n]}" if took else "rejected"))
    if action == "read":
        i, t = params["i"], params["t"]
        return (f"{node_name(n)} serves a follower read of {params['k']}@{t} (n1's closed "
                f"{before['rc_closed'][n]}, MLAI {_mlais(before['rc_mlai'][n])}, its LAI "
                f"{before['lai'][n]}), seeing log[0..{after['rlen'][i]})")
    if action == "renumber":
        return "every LAI or sequence number moves down by one (window)"
    if action == "truncate":
        return "Raft truncates the log entry every replica applied; its write slot is free"
    return narrate_raft(action, params, before, after)

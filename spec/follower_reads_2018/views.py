"""How a 2018 state reads in the RFC's terms: one lane per node.

n1, the origin store, shows its min proposal tracker (closed, next, the left and
right reference counts, MLAIs and epochs) and its last closed-timestamp update;
every node shows its replicas (applied index, LAI, the lease it applied) and, on
n2 and n3, the receiver's state for n1's updates (epoch, sequence number, closed
ts, MLAI map) and any update still on its way. Events: n1's close sends an update
to each receiver, a delivery or a loss happens on the receiver, a proposal
appended to the log goes from n1 to the other replicas, an application happens on
its node, and a follower read happens on the node that served it.
"""

from __future__ import annotations

from checker.views import Event, Step, Table
from spec.log_driven.parts import node_name, range_name

NONE = -1


def _v(x: int) -> str:
    return "-" if x is None or x < 0 else str(x)


def _mlais(values: list[int]) -> str:
    shown = [f"{range_name(r)}:{x}" for r, x in enumerate(values) if x >= 0]
    return "{" + ", ".join(shown) + "}"


def _nodes(s: dict) -> int:
    return len(s["epoch"])


def lanes(s: dict) -> list[str]:
    return [node_name(n) for n in range(_nodes(s))]


def _exists(s: dict, g: int, n: int) -> bool:
    if g == 0 or "span_changed" not in s:
        return True
    return s["span_changed"][n] if "subsumed" not in s else not s["span_changed"][n]


def tables(s: dict) -> dict[str, list[Table]]:
    out: dict[str, list[Table]] = {}
    ranges = len(s["loglen"])
    for n in range(_nodes(s)):
        rows = []
        for g in range(ranges):
            if not _exists(s, g, n):
                continue
            j = s["lseq"][g][n]
            lease = f"#{j} {node_name(s['lholder'][g][j])} (epoch {s['lepoch'][g][j]})"
            rows.append([range_name(g), s["applied"][g][n], s["lai"][g][n], lease])
        lane = [Table.of("replicas", ["range", "applied", "LAI", "lease"], rows),
                Table.of("liveness", ["epoch", "live"],
                         [[s["epoch"][n], ("yes" if s["live"] else "no") if n == 0 else "-"]])]
        if n == 0:
            lane.append(Table.of(
                "min proposal tracker", ["closed", "next", "left", "right"],
                [[s["mpt_closed"], s["mpt_next"],
                  f"#{s['left_ref']} {_mlais(s['left_mlai'])} e{s['left_epoch']}",
                  f"#{s['right_ref']} {_mlais(s['right_mlai'])} e{s['right_epoch']}"]]))
            lane.append(Table.of(
                "last update sent", ["epoch", "seq", "closed", "next is full"],
                [[_v(s["ct_epoch"]) if s["ct_epoch"] else "-",
                  " ".join(_v(x) for x in s["ct_seq"][1:]), _v(s["ct_closed"]),
                  " ".join("yes" if x else "no" for x in s["full_next"][1:])]]))
        else:
            lane.append(Table.of(
                "receiver (n1's updates)", ["epoch", "seq", "closed", "MLAIs"],
                [[s["rc_epoch"][n] or "-", _v(s["rc_seq"][n]), _v(s["rc_closed"][n]),
                  _mlais(s["rc_mlai"][n])]]))
            if s["msg"][n]:
                lane.append(Table.of(
                    "update on its way", ["epoch", "seq", "closed", "MLAIs"],
                    [[s["msg_epoch"][n], _v(s["msg_seq"][n]), _v(s["msg_closed"][n]),
                      _mlais(s["msg_mlai"][n])]]))
        out[node_name(n)] = lane
    writes = [[f"w{w + 1}", s["wkey"][w], s["wts"][w] or "-", s["wphase"][w],
               s["wlai"][w] or "-", "yes" if s["accepted"][w] else "no"]
              for w in range(len(s["wkey"])) if s["wphase"][w] != "idle"]
    reads = [[f"read {i + 1}", f"{s['rkey'][i]}@{s['rts'][i]}",
              ", ".join(f"w{w + 1}" for w, saw in enumerate(s["robs"][i]) if saw) or "none"]
             for i in range(len(s.get("rdone", []))) if s["rdone"][i]]
    out[""] = ([Table.of("writes", ["write", "key", "ts", "phase", "LAI", "accepted"], writes)]
               if writes else []) + \
        ([Table.of("follower reads", ["read", "key@ts", "saw"], reads)] if reads else [])
    return out


def events(step: Step) -> list[Event]:
    a, p, before, after = step.action, step.params, step.before, step.after
    others = tuple(node_name(n) for n in range(1, _nodes(before)))
    if a == "evaluate":
        w = p["w"]
        return [Event(node_name(p["h"]), f"w{w + 1} evaluates {p['k']}@{after['wts'][w]}")]
    if a == "propose":
        again = "re-propose" if before["wlai"][p["w"]] else "propose"
        return [Event("n1", f"{again} w{p['w'] + 1} at LAI {after['wlai'][p['w']]}")]
    if a == "close":
        if after["ct_seq"] == before["ct_seq"] and after["ct_closed"] == before["ct_closed"]:
            return [Event("n1", "close: nothing sent")]
        seqs = "/".join(_v(x) for x in after["ct_seq"][1:])
        return [Event("n1", f"update e{after['ct_epoch']} #{seqs}: closed "
                            f"{after['ct_closed']}", others)]
    if a == "deliver":
        return [Event(node_name(p["n"]), f"takes update #{_v(before['msg_seq'][p['n']])}")]
    if a == "lose":
        return [Event(node_name(p["n"]), "update lost")]
    if a == "request_mlai":
        return [Event(node_name(p["n"]), "asks n1 for an MLAI", ("n1",))]
    if a == "append":
        return [Event("n1", f"append w{p['w'] + 1}" if p["w"] < len(before["wkey"])
                      else "append split/merge", others)]
    if a == "apply":
        g, n = p.get("g", 0), p["n"]
        took = after["lai"][g][n] != before["lai"][g][n] or after["lseq"] != before["lseq"]
        e = before["log"][g][before["applied"][g][n]]
        fate = ""
        if 0 <= e < len(before["wkey"]) and before["wphase"][e] != after["wphase"][e]:
            fate = f"; w{e + 1} fails" if after["wphase"][e] == "failed" \
                else f"; w{e + 1} re-proposed"
        return [Event(node_name(n), f"apply log[{before['applied'][g][n]}]: "
                                    + ("accepted" if took else "rejected") + fate)]
    if a == "read":
        return [Event(node_name(p["n"]), f"read {p['k']}@{p['t']}")]
    if a in ("expire", "heartbeat", "restart"):
        return [Event("n1", a)]
    if a in ("takeover", "transfer"):
        return [Event("n1" if a == "transfer" else node_name(p["x"]),
                      f"{a} r1's lease", (node_name(p["x"]),) if a == "transfer" else ())]
    return []

"""How a log-driven state reads in the protocol's terms: one lane per node.

Each node shows its replicas (applied index, LAI, closed ts from Raft and from the
side transport, the lease it applied), and, for each replica whose proposal buffer is
in use (its lease names the node, or it still holds proposals), that buffer: the
tracker's buckets, the buffered proposals, the assigned LAI and closed ts, and the
write floor (with the store's timestamp cache). Its writes, its follower reads and
its side transport follow (its sender's state if it may send, its receiver's state
for each other sender's stream); the follower reads recorded so far are a table of
the whole system (lane ""). Events: a flushed proposal appended to the Raft log goes
from its proposer to every replica, each application happens on its node, a
side-transport publish goes from its sender to every other node, a delivery happens
on the receiver, a lease transfer goes from the old leaseholder to the new one, and a
follower read happens on the node that served it.
"""

from __future__ import annotations

from typing import Any

from checker.views import Event, Step, Table
from spec.log_driven.parts import node_name, range_name, structural_name

NONE = -1


def _ts(v: int) -> str:
    return "-" if v is None or v < 0 else str(v)


def _ranges(s: dict) -> int:
    return len(s["loglen"])


def _nodes(s: dict) -> int:
    return len(s["lai"][0])


def lanes(s: dict) -> list[str]:
    return [node_name(n) for n in range(_nodes(s))]


def _exists(s: dict, g: int, n: int) -> bool:
    if g == 0 or "span_changed" not in s:
        return True
    if "merged" in s:  # a split, then a merge
        return s["span_changed"][n] and not s["merged"][n]
    return s["span_changed"][n] if "subsumed" not in s else not s["span_changed"][n]


def _owns(s: dict, g: int, n: int) -> bool:
    """Node n's replica of range g applied a lease naming n (n1 without lease changes)."""
    if "lseq" not in s:
        return n == 0
    return s["lholder"][g][s["lseq"][g][n]] == n


def _proposers(s: dict) -> int:
    return len(s["assigned_closed"][0])


def _lease(s: dict, g: int, n: int) -> str:
    if "lseq" not in s:
        return "n1 (initial)"
    j = s["lseq"][g][n]
    holder = node_name(s["lholder"][g][j])
    epoch = s["lepoch"][g][j] if "lepoch" in s else 0
    if epoch:
        h = s["lholder"][g][j]
        alive = s["live_epoch"][h] == epoch
        until = max(s["lexp"][g][j], s["live_exp"][h]) if alive else "ended"
        return f"#{j} {holder} epoch {epoch} until {until}"
    return f"#{j} {holder} until {s['lexp'][g][j]}"


def _proposal(s: dict, w: int) -> str:
    """A buffered or logged command: a write, the split or merge, or lease command j
    (ids from len(wphase) on)."""
    if w < len(s["wkey"]):
        return f"w{w + 1}"
    if w < len(s["wphase"]):
        return structural_name(s, w)
    return f"lease #{w - len(s['wphase']) + 2}"


def _tracker(s: dict, g: int, x: int) -> str:
    if "tb_ts" in s:
        first = s["tb_first"][g][x]
        b1, b2 = s["tb_ts"][g][x][first], s["tb_ts"][g][x][1 - first]
        return f"b1={_ts(b1)} b2={_ts(b2)}"
    if "bts" in s:  # the RFC's prev and cur buckets
        prev = s["prev"]
        return f"prev={_ts(s['bts'][prev])} cur={_ts(s['bts'][1 - prev])}"
    return "exact (heap)"


def _floor(s: dict, g: int, x: int) -> str:
    """Node x's write floor for range g's keys: above its assigned closed ts and its
    store's timestamp cache (per key segment when a split or merge divides the keys)."""
    base = s["assigned_closed"][g][x] + 1
    if "tsc" not in s:
        return str(base)
    cache = s["tsc"][x]
    if len(cache) == 1 or g == 1:
        return str(max(base, cache[-1] + 1))
    left = str(max(base, cache[0] + 1))
    if _exists(s, 1, x):  # r2's keys are r2's here
        return left
    return f"{left} (r2's keys {max(base, cache[1] + 1)})"


def tables(s: dict) -> dict[str, list[Table]]:
    out: dict[str, list[Table]] = {}
    side = "side_ts" in s
    for n in range(_nodes(s)):
        lane = node_name(n)
        columns = ["range", "applied", "LAI", "closed"] + (["side closed"] if side else []) \
            + ["lease"]
        rows = []
        for g in range(_ranges(s)):
            if not _exists(s, g, n):
                continue
            row: list[Any] = [range_name(g), s["applied"][g][n], s["lai"][g][n],
                              _ts(s["closed"][g][n])]
            if side:
                row.append(_side_closed(s, g, n))
            row.append(_lease(s, g, n))
            rows.append(row)
        lane_tables = [Table.of("replicas", columns, rows)]
        used = [g for g in range(_ranges(s)) if n < _proposers(s)
                and (_owns(s, g, n) or s["buflen"][g][n] > 0)]
        if used:
            lane_tables.append(Table.of(
                "proposal buffer", ["range", "lease", "tracker", "buffer", "assigned LAI",
                                    "assigned closed", "write floor"],
                [[range_name(g), "held" if _owns(s, g, n) else "lost", _tracker(s, g, n),
                  " ".join(_proposal(s, w) for w in s["buf"][g][n][:s["buflen"][g][n]])
                  or "-", s["assigned_lai"][g][n], _ts(s["assigned_closed"][g][n]),
                  _floor(s, g, n)]
                 for g in used]))
        writes = [[f"w{w + 1}", s["wkey"][w], s["wts"][w] or "-", s["wphase"][w],
                   s["wlai"][w] or "-", _ts(s["wcts"][w]),
                   "yes" if s["accepted"][w] else "no"]
                  for w in range(len(s["wkey"])) if s["wphase"][w] != "idle"
                  and (s["wnode"][w] if "wnode" in s else 0) == n]
        if writes:
            lane_tables.append(Table.of(
                "writes", ["write", "key", "ts", "phase", "LAI", "carries", "accepted"],
                writes))
        if side:
            lane_tables += _side_tables(s, n)
        out[lane] = lane_tables
    reads = [[f"read {i + 1}", f"{s['rkey'][i]}@{s['rts'][i]}", _served_by(s, i),
              ", ".join(f"w{w + 1}" for w, saw in enumerate(s["robs"][i]) if saw) or "none"]
             for i in range(len(s.get("rdone", []))) if s["rdone"][i]]
    if reads:
        out[""] = [Table.of("follower reads", ["read", "key@ts", "served by", "saw"], reads)]
    return out


GROUP_NAMES = ("LAG", "LEAD")


def _senders(s: dict) -> int:
    return len(s["pub_seq"])


def _groups(closed: list[int]) -> str:
    """A message's closed ts per policy group: just the value with one group."""
    if len(closed) == 1:
        return _ts(closed[0])
    return " ".join(f"{GROUP_NAMES[c]} {_ts(v)}" for c, v in enumerate(closed))


def _tracked_text(tracked: list[bool], lai: list[int], grp: list[int] | None) -> str:
    out = []
    for g, on in enumerate(tracked):
        if on:
            where = f" ({GROUP_NAMES[grp[g]]})" if grp is not None else ""
            out.append(f"{range_name(g)}@LAI {lai[g]}{where}")
    return " ".join(out) or "none"


def _side_closed(s: dict, g: int, n: int) -> str:
    """Replica (g, n)'s side-transport closed ts, with its LAI and any stashed update."""
    text = f"{_ts(s['side_ts'][g][n])}@{s['side_lai'][g][n]}"
    if "next_ts" in s and s["next_ts"][g][n] >= 0:
        text += f" (next {s['next_ts'][g][n]}@{s['next_lai'][g][n]})"
    return text


def _served_by(s: dict, i: int) -> str:
    """The replica that served read i: its node, and its range when there are two."""
    where = f" {range_name(s['rrng'][i])}" if "rrng" in s else ""
    return f"{node_name(s['rnode'][i])}{where}"


def _side_tables(s: dict, n: int) -> list[Table]:
    """Node n's side transport: its sender (if it may send), and its receiver's state for
    each other sender's stream."""
    out = []
    grp = "pub_grp" in s
    if n < _senders(s):
        out.append(Table.of("side transport (sender)", ["seq", "closed", "tracked"], [[
            s["pub_seq"][n], _groups(s["pub_closed"][n]),
            _tracked_text(s["pub_tracked"][n], s["pub_lai"][n],
                          s["pub_grp"][n] if grp else None)]]))
    rows = []
    for x in range(_senders(s)):
        if x == n:
            continue
        state = f"seq {s['rv_seq'][x][n]}" if s["rv_ok"][x][n] else "no stream state"
        rows.append([node_name(x), state, _groups(s["rv_closed"][x][n]),
                     _tracked_text(s["rv_tracked"][x][n], s["rv_lai"][x][n],
                                   s["rv_grp"][x][n] if grp else None),
                     s["q_len"][x][n]])
    if rows:
        out.append(Table.of("side transport (receiver)",
                            ["from", "stream", "closed", "tracked", "queued"], rows))
    return out


def events(step: Step) -> list[Event]:
    a, p, before, after = step.action, step.params, step.before, step.after
    g = p.get("g", 0)
    x = node_name(p.get("x", 0))

    def others(src: str) -> tuple[str, ...]:
        return tuple(node_name(n) for n in range(_nodes(before))
                     if node_name(n) != src and _exists(before, g, n))
    if a == "evaluate":
        return [Event(x, f"w{p['w'] + 1} evaluates {p['k']}@{after['wts'][p['w']]}")]
    if a in ("flush", "flush_stale_lai"):
        w = p["w"]
        if w >= len(before["wphase"]):
            j = w - len(before["wphase"]) + 2
            return [Event(x, f"flush lease #{j}: LAI {after['llai'][g][j] or '-'}, closed "
                             f"{_ts(after['lcts'][g][j])}")]
        return [Event(x, f"flush {_proposal(before, w)}: LAI {after['wlai'][w]}, closed "
                         f"{_ts(after['wcts'][w])}")]
    if a == "append":
        w = p["w"]
        src = node_name(before["wnode"][w] if "wnode" in before else 0)
        return [Event(src, f"append {_proposal(before, w)} (LAI {before['wlai'][w]}, closed "
                           f"{_ts(before['wcts'][w])})", others(src))]
    if a == "apply":
        n = p["n"]
        took = after["lai"][g][n] != before["lai"][g][n] or \
            after.get("lseq", before.get("lseq")) != before.get("lseq")
        return [Event(node_name(n), f"apply log[{before['applied'][g][n]}]: "
                                    + ("accepted" if took else "rejected"))]
    if a == "read":
        return [Event(node_name(p["n"]), f"read {p['k']}@{p['t']}")]
    if a == "pull":
        return [Event(node_name(p["n"]), f"asks {range_name(g)}'s closed ts")]
    if a == "publish":
        receivers = tuple(node_name(n) for n in range(_nodes(before)) if n != p["x"])
        return [Event(x, f"side #{after['pub_seq'][p['x']]}: closed "
                         f"{_groups(after['pub_closed'][p['x']])}", receivers)]
    if a == "deliver":
        n = p["n"]
        return [Event(node_name(n), f"takes {x}'s side #{before['q_seq'][p['x']][n][0]}")]
    if a == "break_stream":
        return [Event(node_name(p["n"]), f"stream from {x} breaks")]
    if a == "transfer_lease":
        return [Event(node_name(p["y"]), f"transfer {range_name(g)}'s lease", (x,))]
    if a == "extend_lease":
        return [Event(x, f"extends {range_name(g)}'s lease")]
    if a == "request_lease":
        return [Event(x, f"requests {range_name(g)}'s lease")]
    if a in ("evaluate_split", "evaluate_merge", "subsume"):
        return [Event(x, a.replace("_", " "))]
    if a == "begin_merge":
        y = node_name(p.get("y", 0))
        return [Event(x, f"merge txn at {after['merge_ts']}", (y,) if y != x else ())]
    if a == "restart":
        return [Event("n1", "restarts")]
    if a == "heartbeat":
        return [Event(x, f"heartbeat: live until {after['live_exp'][p['x']]}")]
    if a == "increment_epoch":
        return [Event(x, f"increments {node_name(p['h'])}'s epoch")]
    if a == "promote_lease":
        return [Event(x, f"promotes {range_name(g)}'s lease to epoch-based")]
    return []

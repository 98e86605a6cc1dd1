"""Which parts of the log-driven spec are interchangeable (scalarsets).

Write slots: nothing in the protocol looks at a write's id. A write's
evaluation, buffering, flush, append and application depend only on its own
fields and on the order the buffer and the log hold ids in, so renaming write
ids maps runs onto runs. Arrays over proposals (writes, then a split or merge
command) are indexed by the writes' ids at the front; the buffer and the log
hold ids as values, with -1 past their ends so that an empty slot names no
write. Read slots are interchangeable the same way: a read picks any unused
slot and records what it saw there.

Nodes other than n1 (Follower), when n1 is the only side-transport sender: n1
holds the first leases, is the one that may restart and sends on the side
transport; the others differ only in what happens to them. With several
senders, node x also runs sender x, so they are not declared. Keys are not
(a split puts keys at and above `split_key` in the right-hand range), nor
ranges.
`ctmc check --check-symmetry` tests these declarations on every model.
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.parts import Ctx

# variable -> the array axis its write ids index (0 is the outermost)
WRITE_INDEXED = {"wphase": 0, "wrng": 0, "wnode": 0, "wkey": 0, "wts": 0, "wlai": 0, "wseq": 0,
                 "wcts": 0, "wevc": 0, "wrep": 0, "tok": 0, "bucket": 0, "appended": 0,
                 "accepted": 0, "has": 1, "robs": 1, "racc": 1, "wexp": 0}
WRITE_VALUED = ("buf", "log")
READ_INDEXED = {"rdone": 0, "rkey": 0, "rts": 0, "rnode": 0, "rrng": 0, "robs": 0,
                "racc": 0}
# variable -> the array axis node ids index; n1 (node 0) is left out of Follower
FOLLOWER_INDEXED = {"applied": 1, "lai": 1, "closed": 1, "has": 0, "lseq": 1,
                    "span_changed": 0, "merged": 0, "q_len": 1, "q_seq": 1, "q_snap": 1,
                    "q_closed": 1, "q_entry": 1, "q_lai": 1, "q_grp": 1, "fresh": 1, "rv_ok": 1,
                    "rv_seq": 1, "rv_closed": 1, "rv_tracked": 1, "rv_lai": 1, "rv_grp": 1,
                    "side_ts": 1, "side_lai": 1, "next_ts": 1, "next_lai": 1, "tsc": 0,
                    "proscribed": 1, "frozen": 0, "clk": 0, "live_epoch": 0, "live_exp": 0}
# per-replica proposal buffers have a slot per node only when leases change (else n1's)
PROPOSER_INDEXED = {"assigned_lai": 1, "assigned_closed": 1, "buf": 1, "buflen": 1,
                    "tb_ts": 1, "tb_first": 1}
FOLLOWER_VALUED = ("lholder", "wnode", "rnode")


def add(m: Any, ctx: Ctx, write_indexed: dict[str, int] | None = None,
        followers: bool = False) -> None:
    """Declare the write and read scalarsets over the variables this build has;
    `write_indexed` adds a host spec's own arrays over writes (the 2018 spec's).
    `followers`: the nodes other than n1 are interchangeable too (Follower), as when
    only n1 sends on the side transport, starts with the leases and may restart."""
    if ctx.writes > 1:
        indexed = WRITE_INDEXED | (write_indexed or {})
        m.scalarset("Write", ctx.writes,
                    index={v: a for v, a in indexed.items() if m.has_var(v)},
                    values=[v for v in WRITE_VALUED if m.has_var(v)])
    if ctx.reads > 1:
        m.scalarset("Read", ctx.reads,
                    index={v: a for v, a in READ_INDEXED.items() if m.has_var(v)})
    if followers and ctx.nodes > 2:
        indexed = FOLLOWER_INDEXED | (PROPOSER_INDEXED if ctx.proposers > 1 else {})
        m.scalarset("Follower", range(1, ctx.nodes),
                    index={v: a for v, a in indexed.items() if m.has_var(v)},
                    values=[v for v in FOLLOWER_VALUED if m.has_var(v)])

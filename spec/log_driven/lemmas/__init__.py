"""Lemmas that make the log-driven spec's properties inductive, for `ctmc prove`.

Each module states the facts one mechanism's rules make true, next to the rules they
describe, and registers them only for the configurations they are about; BFS checks
every registered lemma as an invariant on every model, so a false lemma fails a holds
model, not only a proof (`spec/README.md`, "Proofs"):

- `core.py`        one range, one proposer: the buffer, LAIs and closed ts handed out at
                   flush, the Raft log (with reproposals: one entry per attempt),
                   acceptance, replicas, claims and follower reads
- `side.py`        the side transport (from n1, or per sender and range under lease
                   changes): bumps, streams, receivers, replicas' side-transport
                   closed ts, and what a split and Subsume take of them
- `leases.py`      lease changes, per range: the log replayed, the lease chain, each
                   holder's counters against the replay
- `splits.py`      a split: range 1 against range 0 (the split last until applied,
                   right-hand writes before it, range 1's start); under lease changes,
                   range 1 existing where the replay accepted the split
- `merges.py`      a merge: the transaction's phases, range 1 frozen by Subsume, the
                   wait for its replicas, the timestamp cache over its keys; under
                   lease changes, every holder of range 1's sequence frozen
"""

from __future__ import annotations

from typing import Any

from spec.log_driven.lemmas import core, leases, merges, side, splits
from spec.log_driven.parts import Ctx


def add(m: Any, p: Any, ctx: Ctx) -> None:
    core.add(m, p, ctx)
    side.add(m, p, ctx)
    leases.add(m, p, ctx)
    splits.add(m, p, ctx)
    merges.add(m, p, ctx)

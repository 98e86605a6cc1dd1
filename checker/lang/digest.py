"""A digest of what a Machine means: its state layout, initial states, transitions and
properties, independent of the process that built it.

Checkpoints and run directories record it, so a run is never resumed against a
spec whose text changed in a way that changes the search (a guard, an update, an
invariant), even when its name and parameters stayed the same. Docstrings,
narration and the order in which expression nodes were created do not count.
"""

from __future__ import annotations

import hashlib
from typing import Any

from checker.lang.expr import EnumType, Expr, walk
from checker.lang.machine import Machine

_COMMUTATIVE = frozenset({"eq", "min", "max"})  # the builders order their two arguments by id


def machine_digest(machine: Machine) -> str:
    """SHA-256 (hex) over the machine's meaning; equal machines give equal digests."""
    nodes: dict[int, bytes] = {}  # Expr.id -> digest of the node, for shared subterms

    def node(e: Expr) -> bytes:
        for top in walk([e], known=nodes):
            sort = top.sort
            sort_text = f"enum {sort.name}{sort.members}" if isinstance(sort, EnumType) \
                else str(sort)
            head = repr((top.op, top.value, sort_text, top.lo, top.hi, top.slot, top.frame))
            h = hashlib.sha256(head.encode())
            children = [nodes[a.id] for a in top.args]
            if top.op in _COMMUTATIVE:  # built in node-creation order, which varies by process
                children.sort()
            for child in children:
                h.update(child)
            nodes[top.id] = h.digest()
        return nodes[e.id]

    total = hashlib.sha256()

    def put(*items: Any) -> None:
        for item in items:
            total.update(node(item) if isinstance(item, Expr) else repr(item).encode())
            total.update(b"\0")

    put("slots", *[(s.name, s.lo, s.hi, str(s.leaf.sort)) for s in machine.slots])
    put("init", *machine.init_states)
    for a in machine.actions:
        put("action", a.name, a.params, a.guard)
        for slot, e in a.updates:
            put(slot, e)
        for check in a.write_checks:
            put(check.cond, check.array, check.length)
    for kind, props in (("invariant", machine.invariants), ("step", machine.step_invariants),
                        ("constraint", machine.constraints), ("lemma", machine.lemmas)):
        for p in props:
            put(kind, p.name, p.expr)
    for live in machine.liveness:
        put("liveness", live.name, live.trigger, live.goal, live.goal_is_step, live.fair)
    return total.hexdigest()

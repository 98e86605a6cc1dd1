"""Which pairs of integer slots a candidate lemma may compare: those the spec relates.

Comparing every two integer slots whose ranges overlap grows with the square of the
slots (a spec of 140 integer slots: 9,730 pairs, six literals each, and a guard for
every one-slot literal: over 100 million clauses). Protocol lemmas compare numbers the
protocol itself compares or copies, so a pair is kept when

* some comparison in an action's guard or update, or in a property, has one slot
  among the values on its left and the other among those on its right;
* an update writes one slot from a value the other flows into (`closed := max(closed,
  wts[r])` relates `closed` and every `wts[r]`);
* one action writes both (counters that move together, as `x := x + 1; y := y + 1`);
  or
* both are the same field of one array at different positions (`log[0].lai` and
  `log[1].lai`), for "pairwise ordering over indexed arrays".

"Values" are the slots whose value can become the expression's: arithmetic operands,
both branches of an if-then-else and every element a dynamic index may select, not
the conditions or the indices themselves. The spec's lemmas are not read: the pool
must not depend on the lemmas a person wrote. This is DistAI's and endive's restriction
of templates to the protocol's own atoms, computed from the spec rather than declared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from checker.lang.expr import INT, Expr
from checker.lang.machine import Machine, Slot

_ARITHMETIC = frozenset({"add", "sub", "max", "min"})
_COMPARISONS = frozenset({"lt", "le", "eq"})
_POSITION = re.compile(r"\[\d+\]")


def related_pairs(machine: Machine) -> set[tuple[int, int]]:
    """The pairs (a, b), a < b, of integer slots the spec relates (module docstring)."""
    ints = {s.index for s in machine.slots if s.leaf.sort == INT}
    pairs: set[tuple[int, int]] = set()
    seen: set[int] = set()

    def relate(left: Iterable[int], right: Iterable[int]) -> None:
        right = list(right)
        for a in left:
            for b in right:
                if a != b and a in ints and b in ints:
                    pairs.add((min(a, b), max(a, b)))

    def comparisons(e: Expr) -> None:
        stack = [e]
        while stack:
            node = stack.pop()
            if node.id in seen:
                continue
            seen.add(node.id)
            if node.op in _COMPARISONS and node.args[0].sort == INT:
                relate(values(node.args[0]), values(node.args[1]))
            stack.extend(node.args)

    for action in machine.actions:
        comparisons(action.guard)
        for slot, update in action.updates:
            comparisons(update)
            relate([slot], values(update))
        written = [slot for slot, _ in action.updates]
        relate(written, written)
    for prop in [*machine.invariants, *machine.step_invariants, *machine.constraints]:
        comparisons(prop.expr)
    by_family: dict[str, list[int]] = {}
    for s in machine.slots:
        if s.index in ints:
            by_family.setdefault(family(s), []).append(s.index)
    for members in by_family.values():
        relate(members, members)
    return pairs


def family(slot: Slot) -> str:
    """The slot's name with its array positions left out: `log[2].lai` is `log[].lai`."""
    return _POSITION.sub("[]", slot.name)


def values(e: Expr) -> set[int]:
    """The slots whose value can become `e`'s (module docstring)."""
    out: set[int] = set()
    stack = [e]
    while stack:
        node = stack.pop()
        if node.op == "var":
            out.add(node.slot)
        elif node.op in ("ite", "select"):  # (condition or index, the values...)
            stack += node.args[1:]
        elif node.op in _ARITHMETIC:
            stack += node.args
    return out

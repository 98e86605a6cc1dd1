"""Candidates judged on one state per orbit, made exact by the spec's symmetry.

A BFS that stores one state per orbit of the scalarsets (`--symmetry`) sees every
reachable state only up to a renaming of members, and at the proof's member counts
that is the only BFS that fits: tracker_small with 8 requests has 462,085 orbits.
A clause c holds in every reachable state exactly when c∘g (c read after renaming
the state by g) holds in every representative, for every element g of the group.
So the candidates kept are the largest set, among those the representatives
satisfy, that each neighbour swap of members maps into itself (the swaps generate
the group): closed under the group, each one's every image holds in every
representative, so it holds everywhere reachable.

A literal's image under a swap is found from its shape (`templates.Literal.shape`),
the renamed slots and the renamed member values. A candidate with an image that
is not a template literal (an order between member names, or a constant that is not
one of the slot's) cannot be judged this way and is dropped: only soundness matters
here, since Houdini proves what is kept.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from checker.engines.symbolic.infer.templates import Literal, Pool, Shape
from checker.lang.machine import Machine
from checker.symmetry.group import Element, SymmetryGroup

SMALL = 64  # slots with at most this many values are renamed value by value


def close_under_symmetry(pool: Pool, machine: Machine) -> int:
    """Drop from `pool` every candidate with an image under the spec's scalarsets that
    is not kept (or not a candidate), until none has; returns the passes made."""
    index = {(lit.shape, lit.positive): n for n, lit in enumerate(pool.literals)}
    row_of = np.full(len(pool.literals), -1, dtype=np.int64)
    row_of[pool.guards] = np.arange(len(pool.guards))
    images = []
    for element, _, _ in SymmetryGroup(machine).generators():
        image = np.full(len(pool.literals), -1, dtype=np.int64)
        for n, lit in enumerate(pool.literals):
            shape = literal_image(lit, element, machine)
            if shape is not None:
                image[n] = index.get((shape, lit.positive), -1)
        guard_image = np.where(image[pool.guards] >= 0,
                               row_of[np.maximum(image[pool.guards], 0)], -1)
        images.append((image, guard_image))
    passes = 0
    while True:
        passes += 1
        before = int(pool.units.sum()) + int(pool.clauses.sum())
        for image, guard_image in images:
            mapped = image >= 0
            units = np.zeros_like(pool.units)
            units[mapped] = pool.units[image[mapped]]
            pool.units &= units
            rows, cols = np.flatnonzero(guard_image >= 0), np.flatnonzero(mapped)
            clauses = np.zeros_like(pool.clauses)
            clauses[np.ix_(rows, cols)] = pool.clauses[np.ix_(guard_image[rows], image[cols])]
            pool.clauses &= clauses
        if int(pool.units.sum()) + int(pool.clauses.sum()) == before:
            return passes


def literal_image(lit: Literal, element: Element, machine: Machine) -> Shape | None:
    """The shape of `lit` read after renaming the state by `element` (with the same
    sign), or None if that is no literal's shape."""
    kind = lit.shape[0]
    if kind in ("bool", "enum", "eq", "lt"):
        dest = int(lit.shape[1])
        renamed = _renaming(element, machine, dest)
        source = int(element.src[dest])
        if renamed is None:
            return (kind, source, *lit.shape[2:])
        if kind in ("bool", "enum"):
            return None  # members are ints: no such slot is renamed
        values, images = renamed
        c = int(lit.shape[2])
        if kind == "lt":
            return ("lt", source, c) if np.array_equal(values < c, images < c) else None
        preimage = values[images == c]
        return ("eq", source, int(preimage[0])) if len(preimage) == 1 else None
    a, b = (int(x) for x in lit.shape[1:])
    ra, rb = _renaming(element, machine, a), _renaming(element, machine, b)
    sa, sb = int(element.src[a]), int(element.src[b])
    if ra is not None or rb is not None:
        ra, rb = ra or _same(machine, sa), rb or _same(machine, sb)
        if ra is None or rb is None:
            return None  # a wide slot beside a renamed one
        (va, ia), (vb, ib) = ra, rb
        compare: Callable[[np.ndarray, np.ndarray], np.ndarray] = \
            np.less if kind == "lt2" else np.equal
        if not np.array_equal(compare(va[:, None], vb[None, :]),
                              compare(ia[:, None], ib[None, :])):
            return None
    if kind == "lt2":
        return ("lt2", sa, sb)
    return ("eq2", min(sa, sb), max(sa, sb))


def _renaming(element: Element, machine: Machine, dest: int
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """The values of the slot `dest` reads from and what each becomes in `dest`, or
    None if `element` renames no value there."""
    table = element.tables.get(dest)
    if table is None:
        return None
    source = machine.slots[int(element.src[dest])]
    return np.arange(source.lo, source.hi + 1), table


def _same(machine: Machine, slot: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A slot no value of which is renamed, as `_renaming` says it (None if wide)."""
    s = machine.slots[slot]
    if s.hi - s.lo >= SMALL:
        return None
    values = np.arange(s.lo, s.hi + 1)
    return values, values

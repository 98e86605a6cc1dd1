"""Members compared by signature on whole batches: keys, order, ranks.

A signature is a list of uint64 key arrays (one lane per state), most significant
first. Both canonical forms that order members use these: the sort of a simple
scalarset (`canonical`) and the refinement of the others (`refine`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from checker.lang.machine import Machine, Scalarset
from checker.packing import U64, Layout


def pack_keys(fields: list[tuple[np.ndarray, int]]) -> list[np.ndarray]:
    """uint64 keys holding `fields` (a column and its width in bits), the first field
    most significant; a field never straddles two keys."""
    keys: list[np.ndarray] = []
    used = 64
    for column, bits in fields:
        if used + bits > 64:
            keys.append(np.zeros(len(column), dtype=U64))
            used = 0
        keys[-1] = (keys[-1] << U64(bits)) | column
        used += bits
    return keys


def lex_less(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """Per lane: the words `a` compare below `b`, word 0 first."""
    less = a[-1] < b[-1]
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1]), strict=True):
        less = (x < y) | ((x == y) & less)
    return less


def least(images: Iterable[list[np.ndarray]]) -> list[np.ndarray]:
    """Per lane, the least of several images of a batch (compared word 0 first)."""
    found = iter(images)
    best = next(found)
    for image in found:
        smaller = lex_less(image, best)
        if smaller.any():
            best = [np.where(smaller, im, b) for im, b in zip(image, best, strict=True)]
    return best


def stable_ranks(keys: list[list[np.ndarray]], lanes: int) -> list[np.ndarray]:
    """Each member's position when members are ordered by signature (`keys[i]` is member
    i's), equal signatures kept in member order: k^2 whole-array comparisons, cheaper
    than a per-lane sort for the few members a scalarset has."""
    k = len(keys)
    return [sum((lex_less(keys[j], keys[i]) if j > i else ~lex_less(keys[i], keys[j])
                 for j in range(k) if j != i), np.zeros(lanes, dtype=np.int64))
            for i in range(k)]


def member_cells(sset: Scalarset, machine: Machine, layout: Layout,
                 keep: Callable[[str], bool] = lambda var: True
                 ) -> list[tuple[str, list[int]]]:
    """A scalarset's members' own fields, as (variable, the slot of each member's cell)
    in one order for all members: the slots of variables it indexes on one axis (and
    `keep` accepts), one row per path with the member's position left open. Rows some
    member has no cell in (past the members on a longer axis) are left out."""
    k = len(sset.members)
    paths = [path for v in machine.vars for path, _ in v.type.leaves()]
    axes = dict(sset.index)
    cells: dict[tuple, list[int | None]] = {}
    for slot in machine.slots:
        if (slot.var not in axes or len(axes[slot.var]) != 1 or not keep(slot.var)
                or not layout.fields[slot.index].bits):
            continue
        path = list(paths[slot.index])
        at = [p for p, step in enumerate(path) if isinstance(step, int)][axes[slot.var][0]]
        member = path[at]
        if member not in sset.members:
            continue  # a cell of no member (past the members on a longer axis)
        path[at] = None
        cells.setdefault((slot.var, tuple(path)), [None] * k)[
            sset.members.index(member)] = slot.index
    return [(var, [s for s in row if s is not None]) for (var, _), row in cells.items()
            if all(s is not None for s in row)]

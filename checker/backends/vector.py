"""The NumPy backend: expressions compiled to whole-batch array code.

`compile_batch(roots)` emits one Python function in SSA form: every node is
computed once per batch (shared subexpressions across all roots are shared),
as NumPy operations over arrays of slot values. Evaluation is eager, so an
array read uses a clipped index; lanes where `defined(e)` is false carry an
arbitrary value and the engines report them as errors from `defined(e)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from checker.errors import SpecError
from checker.lang.expr import BOOL, Expr, walk

Reader = Callable[[int], np.ndarray]
# A compiled batch: f(V, W) -> the roots' values, each an array or (a constant) a scalar.
BatchFn = Callable[[Reader, Reader], list[Any]]


def _select(index: np.ndarray, *elems: Any) -> Any:
    """elems[index] lane by lane; out-of-range lanes get some element."""
    n = len(elems)
    if n <= 4:
        out = elems[-1]
        for j in range(n - 2, -1, -1):
            out = np.where(index == j, elems[j], out)
        return out
    clipped = np.clip(index, 0, n - 1)
    if n <= 32:
        return np.choose(clipped, elems)
    stacked = np.stack([np.broadcast_to(e, index.shape) for e in elems])
    return np.take_along_axis(stacked, clipped[None, :], axis=0)[0]


_BINARY = {"eq": "==", "lt": "<", "le": "<=", "add": "+", "sub": "-"}


def _literal(e: Expr, dtype_name: str) -> str:
    if e.sort == BOOL:
        return "True" if e.value else "False"
    return f"{dtype_name}({e.value})"


def dtype_for(exprs: Sequence[Expr]) -> np.dtype:
    """Smallest signed integer dtype holding every intermediate value."""
    lo = min((n.lo for n in walk(exprs)), default=0)
    hi = max((n.hi for n in walk(exprs)), default=0)
    for dt in (np.int16, np.int32, np.int64):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return np.dtype(dt)
    raise SpecError(f"the spec's expressions reach values from {lo:,} to {hi:,}, beyond "
                    "the 64-bit integers a search of states computes with (check, simulate, "
                    "infer, --mine); lower the parameter that bounds them")


def compile_batch(roots: Sequence[Expr], dtype: np.dtype, name: str = "batch") -> BatchFn:
    """A function f(V, W) -> list of root values; V/W read before/after slots."""
    dt = f"_{np.dtype(dtype).name}"
    lines = [f"def {name}(V, W):"]
    names: dict[int, str] = {}

    def ref(x: Expr) -> str:
        return _literal(x, dt) if x.op == "const" else names[x.id]

    for node in walk(roots):
        if node.op == "const":
            continue
        t = f"t{node.id}"
        names[node.id] = t
        op, args = node.op, node.args
        if op == "var":
            reader = "W" if node.frame else "V"
            code = f"{reader}({node.slot})"
        elif op == "not":
            code = f"~{ref(args[0])}"
        elif op == "and":
            code = " & ".join(ref(a) for a in args)
        elif op == "or":
            code = " | ".join(ref(a) for a in args)
        elif op in _BINARY:
            code = f"{ref(args[0])} {_BINARY[op]} {ref(args[1])}"
        elif op == "min":
            code = f"_np.minimum({ref(args[0])}, {ref(args[1])})"
        elif op == "max":
            code = f"_np.maximum({ref(args[0])}, {ref(args[1])})"
        elif op == "ite":
            code = f"_np.where({ref(args[0])}, {ref(args[1])}, {ref(args[2])})"
        elif op == "select":
            code = f"_select({', '.join(ref(a) for a in args)})"
        else:
            raise AssertionError(f"unknown op {op}")
        lines.append(f"    {t} = {code}")
    lines.append(f"    return [{', '.join(ref(r) for r in roots)}]")
    namespace: dict[str, Any] = {"_np": np, "_select": _select, dt: np.dtype(dtype).type}
    exec(compile("\n".join(lines), f"<{name}>", "exec"), namespace)  # noqa: S102 - our own codegen
    return namespace[name]


def slot_reader(columns: np.ndarray, bool_slots: set[int], dtype: np.dtype) -> Reader:
    """Reads slot j of a (n, n_slots) array as a typed lane vector."""
    cache: dict[int, np.ndarray] = {}

    def read(j: int) -> np.ndarray:
        got = cache.get(j)
        if got is None:
            col = columns[:, j]
            got = col.astype(bool) if j in bool_slots else col.astype(dtype)
            cache[j] = got
        return got

    return read


def evaluate_batch(e: Expr, before: np.ndarray, after: np.ndarray | None = None,
                   bool_slots: set[int] | None = None) -> np.ndarray:
    """Value of `e` on every row of `before` (and `after`), as an (n,) array."""
    dtype = dtype_for([e])
    bools = bool_slots if bool_slots is not None else _bool_slots_of(e)
    fn = compile_batch([e], dtype)
    n = len(before)
    v = slot_reader(before, bools, dtype)
    w = slot_reader(after if after is not None else before, bools, dtype)
    out = fn(v, w)[0]
    return np.broadcast_to(np.asarray(out, dtype=bool if e.sort == BOOL else dtype), (n,)).copy()


def _bool_slots_of(e: Expr) -> set[int]:
    return {x.slot for x in walk([e]) if x.op == "var" and x.sort == BOOL}

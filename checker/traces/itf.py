"""Traces as ITF files (the JSON trace format of Apalache and Quint).

Writing ITF lets counterexamples outlive the process that found them, be
replayed against a changed spec, and be read by Quint/Apalache tooling. Each
state is written in the shape the spec declares (records as objects, arrays
as lists, enums by member name), with the action that produced it in the
state's "#meta" so replay does not have to guess.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checker.errors import TraceError, shown_path
from checker.outputs import file_kind, replace_text
from checker.traces.trace import Trace

FORMAT_URL = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# keys of the top-level "#meta" that describe the spec; the rest is provenance
SPEC_KEYS = ("format", "format-description", "spec", "spec_ref", "params", "mutations",
             "violation", "loop_action")
_SAFE_INT = 2**53


def to_itf_value(value: Any) -> Any:
    """A Python value as ITF JSON: integers beyond 2^53 become {"#bigint": "..."}."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return value if -_SAFE_INT < value < _SAFE_INT else {"#bigint": str(value)}
    if isinstance(value, dict):
        return {str(k): to_itf_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_itf_value(v) for v in value]
    return str(value)  # provenance such as a Path


def from_itf_value(value: Any, where: str) -> Any:
    """The inverse of `to_itf_value`; `where` locates a malformed #bigint."""
    if isinstance(value, dict):
        if set(value) == {"#bigint"}:
            try:
                return int(value["#bigint"])
            except (TypeError, ValueError):
                raise TraceError(f"{where}: bad #bigint {value['#bigint']!r}") from None
        return {k: from_itf_value(v, where) for k, v in value.items()}
    if isinstance(value, list):
        return [from_itf_value(v, where) for v in value]
    return value


def trace_to_itf(trace: Trace) -> dict[str, Any]:
    """The ITF document of a trace: spec, parameters and violation in "#meta"."""
    machine = trace.machine
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": FORMAT_URL,
        "spec": machine.spec_name,
        "spec_ref": machine.spec_ref,
        "params": machine.params,
        "mutations": list(machine.mutations),
        "violation": trace.violation,
    }
    meta.update((k, v) for k, v in sorted(trace.meta.items()) if k not in SPEC_KEYS)
    states = []
    for i, (state, action) in enumerate(zip(trace.states, trace.actions, strict=True)):
        state_meta = {"index": i,
                      "action": action.name if action is not None else None,
                      "params": action.params_json() if action is not None else {}}
        states.append({"#meta": state_meta, **machine.decode(state)})
    doc: dict[str, Any] = {"#meta": meta, "vars": [v.name for v in machine.vars],
                           "states": states}
    if trace.loop is not None:  # a lasso: the last state is followed by states[loop]
        doc["loop"] = trace.loop
        action = trace.loop_action
        meta["loop_action"] = None if action is None else {
            "action": action.name, "params": action.params_json()}
    return to_itf_value(doc)


def write_trace(trace: Trace, path: str | os.PathLike) -> None:
    """Write `trace` as ITF; atomic, so a reader never sees half a file."""
    replace_text(path, json.dumps(trace_to_itf(trace), indent=2, ensure_ascii=False) + "\n")


def write_counterexample(trace: Trace, path: str | os.PathLike, **provenance: Any) -> Path:
    """Write a counterexample with where it came from (model, model file, ...) in its
    #meta; a failure is one TraceError line naming the file."""
    trace.meta.update(provenance)
    try:
        write_trace(trace, path)
    except OSError as exc:
        raise TraceError(f"cannot write trace {path}: {exc.strerror or exc}") from None
    return Path(path)


@dataclass(frozen=True)
class Limits:
    """How much of a trace file is read: a file bigger than `max_bytes` is refused before
    it is read, one with more than `max_steps` steps once it is parsed (both can be
    raised: `--max-mb`, `--max-steps`), and JSON nested deeper than `max_nesting` (no
    trace needs that many) is refused."""

    max_steps: int = 10_000
    max_bytes: int = 256 * 2**20
    max_nesting: int = 64


DEFAULT_LIMITS = Limits()


def read_itf(path: str | os.PathLike, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """Parse and check the shape of an ITF file; any problem is one TraceError line. Only
    a regular file is read (not a device, a FIFO or a folder), and only within `limits`."""
    where = shown_path(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise TraceError(f"{where}: not a regular file ({file_kind(info.st_mode)}); "
                             "give a trace file")
        if info.st_size > limits.max_bytes:
            raise TraceError(f"{where}: {info.st_size / 2**20:,.0f} MB, above the limit of "
                             f"{limits.max_bytes / 2**20:,.0f} MB (raise it with --max-mb)")
        with open(path, "rb") as f:
            data = f.read(limits.max_bytes + 1)
        if len(data) > limits.max_bytes:  # it grew since stat
            raise TraceError(f"{where}: above the limit of {limits.max_bytes / 2**20:,.0f} MB "
                             "(raise it with --max-mb)")
        text = data.decode("utf-8")
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{where}: not JSON: {exc.msg} at line {exc.lineno} column "
                         f"{exc.colno}") from None
    except UnicodeDecodeError:
        raise TraceError(f"{where}: not a UTF-8 text file") from None
    except ValueError:  # Python's limit on the digits of an int
        raise TraceError(f"{where}: not JSON ctmc reads: a number with too many digits") \
            from None
    except RecursionError:
        raise TraceError(f"{where}: JSON nested deeper than {limits.max_nesting} levels") \
            from None
    except OSError as exc:
        raise TraceError(f"{where}: cannot read: {exc.strerror}") from None
    deepest = nesting(doc)
    if deepest > limits.max_nesting:
        raise TraceError(f"{where}: JSON nested {deepest} levels deep, deeper than "
                         f"{limits.max_nesting}: not a trace")
    if _SURROGATE_ESCAPE.search(text) and not _is_text(doc):
        raise TraceError(f"{where}: a string holds half a UTF-16 surrogate pair (an escape "
                         "from \\ud800 to \\udfff alone), which is not text")
    check_itf(doc, where)
    if len(doc["states"]) - 1 > limits.max_steps:
        raise TraceError(f"{where}: {len(doc['states']) - 1:,} steps, above the limit of "
                         f"{limits.max_steps:,} (raise it with --max-steps)")
    return doc


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # pairs decode to one character; halves stay


def _is_text(doc: Any) -> bool:
    """Whether every string in `doc` (already no deeper than the limit) can be written
    out, as a lone surrogate cannot."""
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def nesting(doc: Any) -> int:
    """How deeply lists and objects nest in `doc` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict)
                                                  else value))
    return deepest


def check_itf(doc: Any, where: str) -> None:
    """Refuse a document that is not shaped like an ITF trace."""
    if not isinstance(doc, dict):
        raise TraceError(f"{where}: not an ITF trace: the top level is not a JSON object")
    for key in ("vars", "states"):
        if key not in doc:
            raise TraceError(f"{where}: not an ITF trace: missing {key!r}")
    if not isinstance(doc.get("#meta", {}), dict):
        raise TraceError(f"{where}: \"#meta\" is not an object")
    if not isinstance(doc["vars"], list) or not all(isinstance(v, str) for v in doc["vars"]):
        raise TraceError(f"{where}: \"vars\" is not a list of names")
    states = doc["states"]
    if not isinstance(states, list) or not states:
        raise TraceError(f"{where}: \"states\" is not a non-empty list")
    loop = doc.get("loop")
    if loop is not None and (isinstance(loop, bool) or not isinstance(loop, int)
                             or not 0 <= loop < len(states)):
        raise TraceError(f"{where}: \"loop\" is not the index of a state")
    for i, state in enumerate(states):
        if not isinstance(state, dict):
            raise TraceError(f"{where}: state {i} is not an object")
        if not isinstance(state.get("#meta", {}), dict):
            raise TraceError(f"{where}: state {i}: \"#meta\" is not an object")
        missing = [v for v in doc["vars"] if v not in state]
        if missing:
            raise TraceError(f"{where}: state {i} lacks {', '.join(missing)}")

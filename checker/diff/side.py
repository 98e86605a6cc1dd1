"""One model under one version, in a process of its own (`run._LAUNCH` starts it).

Two versions of a spec package cannot be imported into one Python process, so `ctmc
diff` runs each side here, with that version's spec packages first on the import path
(`versions.Version.import_path`), ahead of ctmc's own. The run is the gate's
(`checker.gate.run_model`: verdict, states, orbits, coverage, counterexample, proof)
and the digest of what the spec means (`CHECK`). Only when the two versions' digests
differ is a side asked for what the behaviour diff needs (`GRAPH`): the reachable state
graph (`behaviours`), written as JSON, and whether the model's mutations still change
any state or step.

The request is one JSON argument; the answer is a JSON file (the spec may print on
stdout); progress lines go to stderr, one per line, for the coordinator to show.
With a cache folder, a side whose spec means the same (`machine_digest`), under the
same checker and options, is answered from the cache (files copied back into place).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from checker.diff import cache
from checker.diff.walk import TooManyStates, Walk, walk
from checker.errors import CheckerError
from checker.gate import GateReport, run_model, to_json
from checker.lang.digest import machine_digest
from checker.lang.machine import Machine
from checker.models import Model, build_machine, load_model
from checker.outputs import replace_text
from checker.traces.itf import to_itf_value, trace_to_itf
from checker.traces.trace import Trace

CHECKER_DIR = Path(__file__).resolve().parent.parent


CHECK, GRAPH = "check", "graph"  # what a side is asked: the gate's run, or the state graph


@dataclass(frozen=True)
class SideRequest:
    """What one side runs: a model file of one version, and where its outputs go."""

    mode: str  # CHECK or GRAPH
    model_file: str
    models_dir: str
    trace_dir: str
    answer_file: str  # the answer as JSON
    graph_file: str  # GRAPH: the state graph as JSON
    graph_max_states: int  # GRAPH: refuse a model with more states
    prove: bool = False
    workers: int = 1
    cache_dir: str = ""


def main(argv: list[str]) -> int:
    request = SideRequest(**json.loads(argv[0]))
    answer = answer_side(request, _progress)
    replace_text(request.answer_file, json.dumps(answer, indent=1, sort_keys=True) + "\n")
    return 0


def _progress(line: str) -> None:
    print(line.replace("\n", " "), file=sys.stderr, flush=True)


def answer_side(request: SideRequest, progress: Any = None) -> dict[str, Any]:
    """The side's answer (see the module docstring), from the cache when it has it; a
    side whose twin (the same key) is running waits for its answer instead of searching
    the same states again."""
    try:
        model = load_model(Path(request.model_file), Path(request.models_dir))
        machine = build_machine(model)
    except Exception:  # noqa: BLE001 - the gate's run of it says what is wrong
        model, machine = None, None

    def work() -> dict[str, Any]:
        if request.mode == CHECK:
            return _check(request, progress, "" if machine is None else machine_digest(machine))
        return _explore(request, progress)

    ignored = ("model_file", "models_dir", "trace_dir", "answer_file", "graph_file",
               "cache_dir", "workers") + (("graph_max_states",) if request.mode == CHECK
                                          else ("prove",))
    entry = None
    if request.cache_dir and model is not None and machine is not None:
        entry = cache.Entry.of(request, model, machine, CHECKER_DIR, ignored)
    if entry is None:
        return work() | {"cache": ""}
    with entry.claimed(progress):
        found = entry.read(request)
        if found is not None:
            return found | {"cache": "hit"}
        answer = work() | {"cache": "miss"}
        if not answer.get("broken"):
            entry.write(answer)
    return answer


def _check(request: SideRequest, progress: Any, digest: str) -> dict[str, Any]:
    """The gate's run of the model, and `digest`, what its spec means (equal digests:
    equal behaviours, so the state graphs need not be compared)."""
    result = run_model(Path(request.model_file), Path(request.models_dir),
                       Path(request.trace_dir), progress=progress, workers=request.workers,
                       prove=request.prove)
    return {"gate": to_json(GateReport([result]))["results"][0],
            "digest": "" if result.broken else digest, "broken": result.broken}


def _explore(request: SideRequest, progress: Any) -> dict[str, Any]:
    """The state graph for the behaviour diff and, for a model with mutations, whether
    they change the reachable states and steps at all; or why there is none."""
    answer: dict[str, Any] = {"graph": None, "graph_note": "", "mutations_change_states": None}
    try:
        model = load_model(Path(request.model_file), Path(request.models_dir))
        machine = build_machine(model)
        graph = _graph(machine, model, request.graph_max_states, progress)
        write_graph(machine, graph, Path(request.graph_file))
        answer["graph"] = request.graph_file
        if model.mutations:
            plain = build_machine(replace(model, mutations=()))
            unmutated = _graph(plain, model, request.graph_max_states, progress)
            answer["mutations_change_states"] = _edges(graph) != _edges(unmutated)
    except TooManyStates as exc:
        answer["graph_note"] = f"{exc} (--behaviour-states {request.graph_max_states:,})"
    except CheckerError as exc:
        answer["graph_note"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - the verdicts still compare
        answer["graph_note"] = f"the state graph failed: {type(exc).__name__}: {exc}"
    return answer


def _graph(machine: Machine, model: Model, max_states: int, progress: Any) -> Walk:
    return walk(machine, max_states, model.engine["max_depth"] or None, progress)


def _edges(graph: Walk) -> set[tuple[Any, ...]]:
    """The graph as a set of steps between states, and its initial states."""
    states = graph.states
    return {(states[src], states[dst]) for src, dst, _ in graph.edges} | {
        (states[i],) for i in range(graph.initial)}


def write_graph(machine: Machine, graph: Walk, path: Path) -> None:
    """The graph as JSON (the format `behaviours` reads): per variable, the table of the
    ITF values it takes; per state, an index into each table; the initial states; the
    action instances; each transition as (src, dst, action); and the #meta a trace of
    this spec carries."""
    tables: list[dict[tuple[int, ...], int]] = [{} for _ in machine.vars]
    values: dict[str, list[Any]] = {v.name: [] for v in machine.vars}
    rows = []
    for state in graph.states:
        row = []
        for table, var in zip(tables, machine.vars, strict=True):
            slots = state[var.first:var.first + var.count]
            at = table.get(slots)
            if at is None:
                at = table[slots] = len(table)
                values[var.name].append(to_itf_value(var.type.to_python(list(slots))))
            row.append(at)
        rows.append(row)
    doc = {
        "#meta": trace_to_itf(Trace(machine, [graph.states[0]], [None]))["#meta"],
        "vars": [v.name for v in machine.vars],
        "values": values,
        "states": rows,
        "initial": list(range(graph.initial)),
        "actions": [[a.name, a.params_json()] for a in machine.actions],
        "edges": graph.edges,
    }
    replace_text(path, json.dumps(doc, separators=(",", ":")) + "\n")

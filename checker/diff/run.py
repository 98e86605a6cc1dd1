"""`ctmc diff`: run each model under BASE and under the files as they are, and compare.

Models are matched by their path inside the repository. Each side runs in a child
process of its own (`side`), up to `jobs` at once, while the coordinator shows their
progress. First both sides check the model; when the two specs mean different things
(their digests differ) and both are small enough, both sides then write their state
graphs, and the coordinator looks for the shortest behaviour each design allows and
the other does not (`behaviours`), written as ITF traces. Then it compares the two
answers (`compare`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from checker.diff import behaviours, cache
from checker.diff.compare import (
    BEHAVIOURS,
    INFO,
    BehaviourDiff,
    Finding,
    ModelDiff,
    compare_runs,
)
from checker.diff.side import CHECK, GRAPH, SideRequest
from checker.diff.versions import Version, base_version, repository_root
from checker.errors import CheckerError, ModelError
from checker.models import SUFFIX, list_models
from checker.outputs import check_writable, replace_text

_POLL_SECONDS = 0.1
_Key = tuple[int, str]  # a side's run: (the model's number, "base" or "head")
SAME_MEANING = "same: the spec means the same in both versions"
# A side's child process: ctmc's tree on the import path (as `import ctmc` puts it), then
# the version's spec packages before it, so `spec` is that version's and `checker` ours.
_LAUNCH = ("import os, sys, ctmc; "
           "sys.path[:0] = [p for p in sys.argv[2].split(os.pathsep) if p]; "
           "from checker.diff.side import main; sys.exit(main(sys.argv[1:2]))")


@dataclass(frozen=True)
class DiffOptions:
    base: str  # a git revision or a folder
    models: tuple[str, ...]  # folders, files or bare names; none: every model in models_dir
    models_dir: Path
    trace_dir: Path
    prove: bool = False
    jobs: int = 1  # side processes at once
    graph_max_states: int = 100_000  # 0: no behaviour diff
    behaviour_budget: int = 1_000_000  # (state, set) pairs per direction
    cache_dir: Path | None = None
    progress: Callable[[str], None] | None = None


@dataclass
class DiffReport:
    base: str
    root: Path
    models: list[ModelDiff] = field(default_factory=list)
    seconds: float = 0.0

    def regressions(self, fail_on: tuple[str, ...]) -> list[tuple[ModelDiff, Finding]]:
        return [(m, f) for m in self.models for f in m.regressions(fail_on)]


def run_diff(options: DiffOptions) -> DiffReport:
    """Both versions of every selected model, compared: every side's check first, then
    the state graphs of the models whose two specs mean different things."""
    started = time.perf_counter()
    head_root = repository_root(_anchor(options))
    with base_version(options.base, head_root) as base, \
            tempfile.TemporaryDirectory(prefix="ctmc-diff-") as scratch:
        head = Version(head_root)
        files = _model_files(options, base, head_root)
        checks = {(i, side): _request(options, version, side, relative, head_root,
                                      Path(scratch) / f"{i}-{side}")
                  for i, relative in enumerate(files)
                  for side, version in (("base", base), ("head", head))
                  if (version.root / relative).is_file()}
        names = {key: files[key[0]].stem for key in checks}
        answers = _run_sides(checks, names, options, base.import_path, "checking")
        diffs = [ModelDiff(relative.stem, answers.get((i, "base")), answers.get((i, "head")))
                 for i, relative in enumerate(files)]
        why_not = [_why_no_graphs(diff, options) for diff in diffs]
        graphs = {key: replace(request, mode=GRAPH,
                               answer_file=str(Path(request.answer_file).parent / "graph.answer"))
                  for key, request in checks.items() if not why_not[key[0]]}
        for key, graph in _run_sides(graphs, names, options, base.import_path,
                                     "state graphs").items():
            answers[key].update(graph)
        for diff, reason in zip(diffs, why_not, strict=True):
            _finish(diff, reason, options, base, head_root)
    return DiffReport(options.base, head_root, diffs, round(time.perf_counter() - started, 3))


def _request(options: DiffOptions, version: Version, side: str, relative: Path,
             head_root: Path, folder: Path) -> SideRequest:
    """The check of `relative` under `version` (the `side`), its files in `folder`."""
    folder.mkdir()
    models_dir = Path(options.models_dir)
    return SideRequest(
        mode=CHECK, model_file=str(version.root / relative),
        models_dir=str(version.place(models_dir, head_root)
                       if models_dir.resolve().is_relative_to(head_root) else models_dir),
        trace_dir=str(Path(options.trace_dir) / side), answer_file=str(folder / "check.answer"),
        graph_file=str(folder / "graph.json"), graph_max_states=options.graph_max_states,
        prove=options.prove, cache_dir=str(options.cache_dir or folder.parent / "cache"))


def _finish(diff: ModelDiff, why_not: str, options: DiffOptions, base: Version,
            head_root: Path) -> None:
    """The model's findings, once both sides have answered."""
    trace = diff.row("base").get("trace_file")
    if trace:  # BASE's counterexample, to be read from a checkout of BASE
        doc = json.loads(Path(trace).read_text())
        base.rehome(doc["#meta"], head_root)
        replace_text(trace, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    compare_runs(diff)
    if why_not:
        diff.new_behaviour = diff.lost_behaviour = BehaviourDiff(note=why_not)
    else:
        if options.progress is not None:
            options.progress(f"diff, behaviours: {diff.name}")
        _compare_behaviours(diff, options, base, head_root)


def _anchor(options: DiffOptions) -> Path:
    """Where the repository is looked for: the first model named by path, else the
    models folder."""
    for arg in options.models:
        if Path(arg).exists():
            return Path(arg).resolve().parent if Path(arg).is_file() else Path(arg).resolve()
    return Path(options.models_dir).resolve()


def _model_files(options: DiffOptions, base: Version, root: Path) -> list[Path]:
    """The selected model files as paths inside the repository, from either version."""
    found: list[Path] = []
    for arg in options.models or (str(options.models_dir),):
        path = Path(arg)
        if not path.exists() and path.name == arg and not arg.endswith(SUFFIX):
            path = Path(options.models_dir) / f"{arg}{SUFFIX}"
        inside = _inside(path, root)
        if (root / inside).is_dir() or (base.root / inside).is_dir():
            listed = {p.name for folder in (root / inside, base.root / inside)
                      if folder.is_dir() for p in list_models(folder)}
            if not listed:
                raise ModelError(f"{arg}: no model files (*{SUFFIX}) in this folder in "
                                 f"either version")
            found.extend(inside / name for name in listed)
        elif (root / inside).is_file() or (base.root / inside).is_file():
            found.append(inside)
        else:
            raise ModelError(f"{arg}: no such folder or model file in either version")
    return sorted(dict.fromkeys(found), key=lambda p: (p.name, str(p)))


def _inside(path: Path, root: Path) -> Path:
    try:
        return path.resolve().relative_to(root)
    except ValueError:
        raise ModelError(f"{path}: not inside the repository at {root}, so BASE has no "
                         f"version of it") from None


def _why_no_graphs(diff: ModelDiff, options: DiffOptions) -> str:
    """Why the state graphs are not compared ("" when they are)."""
    if diff.base is None or diff.head is None:
        return "not compared: the model is in one version only"
    if diff.base.get("broken") or diff.head.get("broken"):
        return "not compared: the model does not run in both versions"
    if diff.base["digest"] == diff.head["digest"]:
        return SAME_MEANING
    if options.graph_max_states <= 0:
        return "not compared (--behaviour-states 0)"
    known = max((row.get(key) or 0) for row in (diff.row("base"), diff.row("head"))
                for key in ("states", "orbits"))
    if known > options.graph_max_states:
        return (f"not compared: {known:,} states, more than --behaviour-states "
                f"{options.graph_max_states:,}")
    return ""


def _run_sides(requests: dict[_Key, SideRequest], names: dict[_Key, str],
               options: DiffOptions, import_path: str, phase: str) -> dict[_Key, dict[str, Any]]:
    """Each request in a child process of its own, `options.jobs` searching at once (a
    side waiting for its twin's identical run does not count), with their progress
    shown; the answers by (model, side)."""
    runs: dict[_Key, subprocess.Popen[bytes]] = {}
    heard: dict[_Key, str] = {}
    answers: dict[_Key, dict[str, Any]] = {}
    order = list(requests)

    def searching() -> list[_Key]:
        return [key for key in runs if not heard.get(key, "").startswith(cache.WAITING)]

    try:
        while order or runs:
            while order and len(searching()) < options.jobs and len(runs) < 2 * options.jobs:
                key = order.pop(0)
                runs[key] = _start(requests[key], import_path if key[1] == "base" else "",
                                   heard, key)
            time.sleep(_POLL_SECONDS)
            for key, process in list(runs.items()):
                if process.poll() is not None:
                    answers[key] = _answer(requests[key], process, heard.get(key, ""))
                    del runs[key]
            if options.progress is not None and runs:
                options.progress(f"diff, {phase}: {len(answers)}/{len(requests)} done; " +
                                 " | ".join(f"{names[key]} {key[1]}: "
                                            f"{heard.get(key, 'starting')}"
                                            for key in searching()))
    finally:  # interrupted: no side outlives the command
        for process in runs.values():
            _stop(process)
    return answers


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a side and reap it. Not with `Popen.wait`: Ctrl-C during `poll` can leave the
    Popen's own wait lock taken, and `wait` would then block for ever."""
    process.kill()
    with contextlib.suppress(ChildProcessError):
        os.waitpid(process.pid, 0)


def _start(request: SideRequest, import_path: str, heard: dict[_Key, str],
           key: _Key) -> subprocess.Popen[bytes]:
    """The side's child process, its stderr read line by line into `heard[key]`."""
    process = subprocess.Popen([sys.executable, "-P", "-c", _LAUNCH,
                                json.dumps(asdict(request)), import_path],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)

    def listen() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace").strip()
            if line:
                heard[key] = line

    threading.Thread(target=listen, daemon=True).start()
    return process


def _answer(request: SideRequest, process: subprocess.Popen[bytes],
            last_words: str) -> dict[str, Any]:
    """The side's answer, or a broken row saying how the child ended."""
    answer_file = Path(request.answer_file)
    if process.returncode == 0 and answer_file.is_file():
        return json.loads(answer_file.read_text())
    why = f"the run ended with status {process.returncode}" + (
        f": {last_words}" if last_words else "")
    if request.mode == GRAPH:
        return {"graph": None, "graph_note": why, "mutations_change_states": None}
    return {"gate": {"broken": True, "surprises": [why], "got": None}, "digest": "",
            "broken": True}


def _compare_behaviours(diff: ModelDiff, options: DiffOptions, base: Version,
                        head_root: Path) -> None:
    """The shortest behaviour each design allows and the other does not, written as
    traces; or why they were not compared."""
    assert diff.base is not None and diff.head is not None
    if not diff.base["graph"] or not diff.head["graph"]:
        why = diff.head["graph_note"] or diff.base["graph_note"] or "no state graph"
        note = f"not compared: {why}"
        diff.new_behaviour = diff.lost_behaviour = BehaviourDiff(note=note)
        return
    old = json.loads(Path(diff.base["graph"]).read_text())
    base.rehome(old["#meta"], head_root)
    new = json.loads(Path(diff.head["graph"]).read_text())
    shared = behaviours.shared_variables(new, old)
    added = [v for v in new["vars"] if v not in shared]
    removed = [v for v in old["vars"] if v not in shared]
    if added or removed:
        diff.findings.append(Finding(INFO, "compared over the shared variables only" + "".join(
            f"; {word}: {', '.join(names)}" for word, names in
            (("added", added), ("removed", removed)) if names)))
    provenance = {"model": diff.name, "diff_base": options.base}
    diff.new_behaviour = _direction(diff, new, old, shared, options, "base", "new",
                                    provenance)
    diff.lost_behaviour = _direction(diff, old, new, shared, options, "head", "lost",
                                     provenance)
    if diff.new_behaviour.trace_file:
        diff.findings.append(Finding(
            BEHAVIOURS, f"new behaviour: {diff.new_behaviour.steps} steps that base cannot "
                        f"take ({diff.new_behaviour.trace_file})"))
    if diff.lost_behaviour.trace_file:
        diff.findings.append(Finding(
            INFO, f"lost behaviour: {diff.lost_behaviour.steps} steps of base that head "
                  f"cannot take ({diff.lost_behaviour.trace_file}; a trace of the base spec)"))
    for direction in (diff.new_behaviour, diff.lost_behaviour):
        if direction.note.startswith("undecided"):
            diff.findings.append(Finding(INFO, f"behaviours {direction.note}"))


def _direction(diff: ModelDiff, a: behaviours.Graph, b: behaviours.Graph, shared: list[str],
               options: DiffOptions, other: str, word: str,
               provenance: dict[str, Any]) -> BehaviourDiff:
    found = behaviours.compare(a, b, shared, options.behaviour_budget, options.progress)
    if not found.decided:
        return BehaviourDiff(note=f"undecided: {found.searched:,} pairs searched, the budget")
    if found.difference is None:
        return BehaviourDiff(note="none")
    path = Path(options.trace_dir) / f"{diff.name}-{word}-behaviour.itf.json"
    doc = behaviours.trace_document(a, found.difference, other, provenance)
    try:
        check_writable(path, "behaviour trace")
        replace_text(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    except CheckerError as exc:
        return BehaviourDiff(note=f"found, but not written: {exc}")
    return BehaviourDiff(str(path), len(found.difference.path) - 1)

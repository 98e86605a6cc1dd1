"""Side answers kept by what they depend on, so the same run is never searched twice.

An entry's key covers the checker's code, what the model's spec means
(`machine_digest`, at the check's sizes and, when proving, the proof's), its symmetry,
the model file's text and the options that change the answer. Two runs with the same
key give the same answer, whatever folder their files came from: BASE's unchanged
model and the head's, or a base already checked by an earlier `diff` (`--cache DIR`).
Without `--cache` the coordinator keeps a cache for the one run, so an unchanged model
is searched once, not once per version.

A side holds the entry's lock (`flock`, released by the system if the process dies)
while it looks for the entry and, when it is missing, computes it; its twin waits and
then reads it. An entry is made whole in a folder of its own and renamed into place.
Paths inside an answer (the model file, the counterexample, the state graph) and the
spec reference inside the files are the reader's own, rewritten on the way out.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from checker.engines.durable import read_json, seal, unseal
from checker.errors import CheckerError
from checker.lang.digest import machine_digest
from checker.lang.machine import Machine
from checker.models import Model, build_machine
from checker.outputs import replace_text
from checker.progress import PROGRESS_SECONDS
from checker.traces.itf import trace_to_itf
from checker.traces.trace import Trace

if TYPE_CHECKING:
    from checker.diff.side import SideRequest

_WAIT_SECONDS = 0.2
WAITING = "waiting for the same run in the other version"  # the progress line, at once
_SPEC_NAMING = ("spec", "spec_ref")  # how a file's #meta names the spec to load it with


@dataclass(frozen=True)
class Entry:
    folder: Path  # the cache folder / key
    machine: Machine  # the reader's, whose spec reference the files get

    @classmethod
    def of(cls, request: SideRequest, model: Model, machine: Machine, checker_dir: Path,
           ignored: tuple[str, ...]) -> Entry | None:
        """The entry for `request` (whose `model` builds `machine`), whose fields in
        `ignored` do not change its answer; None when the proof's machine does not build
        (the run itself says why)."""
        try:
            proof = machine_digest(build_machine(model, proof=True)) if request.prove else ""
        except Exception:  # noqa: BLE001 - not cached: the side's run reports it
            return None
        h = hashlib.sha256()
        for source in sorted(checker_dir.rglob("*.py")):
            h.update(str(source.relative_to(checker_dir)).encode() + b"\0"
                     + source.read_bytes())
        options = {k: v for k, v in asdict(request).items() if k not in ignored}
        h.update(json.dumps([Path(request.model_file).read_text(errors="replace"),
                             machine_digest(machine), proof, repr(machine.scalarsets),
                             options], sort_keys=True).encode())
        return cls(Path(request.cache_dir) / h.hexdigest()[:32], machine)

    @contextmanager
    def claimed(self, progress: Callable[[str], None] | None) -> Iterator[None]:
        """Hold the entry's lock for the `with`, telling `progress` while waiting."""
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        with open(self.folder.parent / f".{self.folder.name}.lock", "a") as lock:
            said = 0.0
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:  # said at once: the coordinator starts another run
                    if progress is not None and time.monotonic() - said >= PROGRESS_SECONDS:
                        progress(WAITING)
                        said = time.monotonic()
                    time.sleep(_WAIT_SECONDS)
            if said and progress is not None:
                progress("the other version's run has ended")
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def read(self, request: SideRequest) -> dict[str, Any] | None:
        """The stored answer with the reader's paths, its files copied into place; None
        when there is none, or when it is damaged (then set aside, to be stored anew)."""
        stored = self._stored()
        if stored is None:
            return None
        answer, docs = stored
        gate = answer.get("gate")
        if gate is not None:
            gate["file"] = request.model_file
            if gate.get("trace_file"):
                trace = Path(request.trace_dir) / Path(gate["trace_file"]).name
                self._copy(docs["trace.itf.json"], trace, model_file=request.model_file)
                gate["trace_file"] = str(trace)
        if answer.get("graph"):
            self._copy(docs["graph.json"], Path(request.graph_file), compact=True)
            answer["graph"] = request.graph_file
        return answer

    def _stored(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The sealed answer and the documents it names, read whole before any is used."""
        if not (self.folder / "answer.json").is_file():
            return None
        try:
            path = self.folder / "answer.json"
            answer = unseal(path, read_json(path, f"{self.folder}: no answer"))
            names = (["trace.itf.json"] if (answer.get("gate") or {}).get("trace_file")
                     else []) + (["graph.json"] if answer.get("graph") else [])
            docs = {name: read_json(self.folder / name, f"{self.folder}: no {name}")
                    for name in names}
            if not all(isinstance(doc.get("#meta"), dict) for doc in docs.values()):
                raise CheckerError(f"{self.folder}: a stored file has no #meta")
        except (CheckerError, AttributeError, TypeError):
            self._set_aside()
            return None
        return answer, docs

    def _set_aside(self) -> None:
        """Move a damaged entry out of the way (kept, for a look) so this run stores a
        whole one; if it cannot be moved, the run's answer is simply not stored."""
        with suppress(OSError):
            os.rename(self.folder, self.folder.with_name(f".{self.folder.name}.damaged"))

    def _copy(self, doc: dict[str, Any], to: Path, compact: bool = False, **meta: Any) -> None:
        """A stored document, its #meta naming the reader's spec (and `meta`)."""
        own = trace_to_itf(Trace(self.machine, [self.machine.init_states[0]], [None]))["#meta"]
        doc["#meta"].update({k: own[k] for k in _SPEC_NAMING}, **meta)
        replace_text(to, json.dumps(doc, indent=None if compact else 2,
                                    ensure_ascii=False) + "\n")

    def write(self, answer: dict[str, Any]) -> None:
        """Store `answer` and the files it names; a cache that cannot take it is passed
        over (the answer stands)."""
        cache = self.folder.parent
        making = Path(tempfile.mkdtemp(prefix=f".{self.folder.name}-", dir=cache))
        try:
            if (answer.get("gate") or {}).get("trace_file"):
                shutil.copyfile(answer["gate"]["trace_file"], making / "trace.itf.json")
            if answer.get("graph"):
                shutil.copyfile(answer["graph"], making / "graph.json")
            (making / "answer.json").write_text(json.dumps(seal(answer), sort_keys=True) + "\n")
            os.rename(making, self.folder)
        except OSError:
            shutil.rmtree(making, ignore_errors=True)

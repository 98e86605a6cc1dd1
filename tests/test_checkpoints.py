"""Checkpoints of the local BFS: a stopped, crashed or timed-out run resumes to exactly
what an uninterrupted run reports; a damaged or foreign checkpoint is refused, naming
the file or the key, and nothing the user had is touched."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from checker.engines.durable import seal
from checker.engines.explicit import checkpoint as checkpoint_module
from checker.engines.explicit.bfs import BfsOptions, check
from checker.engines.result import UNKNOWN
from checker.errors import CheckerError
from checker.models import build_machine, load_model
from tests.specs import liveness_spin
from tests.test_bfs import GRID

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


class _Model:
    """A model file as a (spec, params) pair, like the specs below."""

    def __init__(self, name: str):
        self.model = load_model(name, MODELS_DIR)

    def instantiate(self, params: dict):
        return build_machine(self.model, {k: str(v) for k, v in params.items()})


CASES = {
    "exact": (GRID, {"n": 12}),  # 169 states in one 64-bit word: fingerprints are states
    "hashed": (GRID, {"n": 12, "pad": 1}),  # past 64 bits: a frontier file of packed words
    "violation": (GRID, {"n": 12, "bad_x": 6, "bad_y": 5}),
    "liveness": (_Model("v1_mutation_epoch_pollution"), {}),  # a lasso, on 29,676 states
    "liveness holds": (liveness_spin.SPIN, {"fair_finish": True}),
}
# what describes a run rather than the model (the visited set's encoding, so its bytes,
# depends on how it was filled: all at once on a resume)
TIMING = ("seconds", "states_per_second", "peak_rss_mb", "liveness_seconds", "bytes_per_state",
          "resumed", "peak_rss_mb_workers")


def figures(result) -> dict:
    """Everything a run reports except how long it took and how much memory it used."""
    out = {"outcome": result.outcome, "complete": result.complete,
           "stats": {k: v for k, v in result.stats.items() if k not in TIMING},
           "coverage": result.coverage}
    v = result.violation
    if v is not None:
        out["violation"] = (v.kind, v.name, v.message, v.trace.states,
                            [a and a.label for a in v.trace.actions], v.trace.loop,
                            v.trace.loop_action and v.trace.loop_action.label)
    return out


def options(folder: Path, batch_size: int = 3, **more) -> BfsOptions:
    """Small chunks, so levels have a middle to stop in, and a save at every level."""
    return BfsOptions(deadlock=False, checkpoint_dir=str(folder), batch_size=batch_size,
                      checkpoint_every=0, progress_seconds=0, **more)


def uninterrupted(spec, params) -> dict:
    return figures(check(spec.instantiate(params), BfsOptions(deadlock=False)))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


class _SignalMidLevel:
    """A progress callback that sends this process SIGINT at the `n`th line reporting a
    level half expanded: the search must stop at the next chunk, save, and raise."""

    def __init__(self, n: int):
        self.n = n

    def __call__(self, line: str) -> None:
        if "expanded" in line:
            self.n -= 1
            if self.n == 0:
                os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("case", ["exact", "hashed", "violation", "liveness"])
def test_sigint_mid_level_then_resume_reports_every_figure_alike(case, tmp_path):
    spec, params = CASES[case]
    want = uninterrupted(spec, params)
    folder = tmp_path / "ckpt"
    batch = 400 if case == "liveness" else 3
    stops = 0
    for n in (2, 5, 9, 14):  # several interrupts, each resumed from the last
        try:
            got = check(spec.instantiate(params), options(
                folder, batch, resume=folder.exists(), progress=_SignalMidLevel(n)))
        except KeyboardInterrupt:
            stops += 1
            continue
        break
    else:
        got = check(spec.instantiate(params), options(folder, batch, resume=True))
    assert stops >= 2
    assert figures(got) == want


class _Killed(BaseException):
    """The process dies here: nothing after it runs, no handler sees it."""


@pytest.mark.parametrize("case", ["exact", "hashed", "violation"])
def test_death_at_every_file_replacement_resumes_alike(case, tmp_path, monkeypatch):
    """Every checkpoint write ends in an os.replace (a level file, the frontier, the
    manifest). Die at the k-th of them, for every k the run makes, then resume."""
    spec, params = CASES[case]
    params = {**params, "n": 7}
    want = uninterrupted(spec, params)
    real_replace = os.replace
    k = 0
    while True:
        k += 1
        folder = tmp_path / f"k{k}"
        calls = 0

        def replace(src, dst, _k=k):
            nonlocal calls
            calls += 1
            if calls == _k:
                raise _Killed
            real_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        try:
            check(spec.instantiate(params), options(folder))
        except _Killed:
            monkeypatch.setattr(os, "replace", real_replace)
            if not (folder / "ctmc-checkpoint.json").exists():  # died creating the folder:
                with pytest.raises(CheckerError, match="holds no ctmc checkpoint"):
                    check(spec.instantiate(params), options(folder, resume=True))
                resumed = check(spec.instantiate(params), options(folder))  # start it again
            else:
                resumed = check(spec.instantiate(params), options(folder, resume=True))
            assert figures(resumed) == want, f"death at replacement {k}"
            continue
        monkeypatch.setattr(os, "replace", real_replace)
        break
    assert k > 5  # the run replaced files many times, and each death was survived


def test_timeout_stops_inconclusive_and_resumes_alike(tmp_path):
    spec, params = CASES["hashed"]
    folder = tmp_path / "ckpt"
    stopped = check(spec.instantiate(params), options(folder, timeout=1e-9))
    assert stopped.outcome == UNKNOWN and not stopped.complete
    assert "timeout" in stopped.stats["unknown"]
    assert figures(check(spec.instantiate(params), options(folder, resume=True))) == \
        uninterrupted(spec, params)


def test_a_finished_run_resumes_to_its_result_at_once(tmp_path):
    spec, params = CASES["liveness holds"]
    folder = tmp_path / "ckpt"
    first = figures(check(spec.instantiate(params), options(folder)))
    assert figures(check(spec.instantiate(params), options(folder, resume=True))) == first


def _stopped_run(tmp_path: Path, case: str = "hashed", n: int = 9) -> tuple[Path, object]:
    spec, params = CASES[case]
    folder = tmp_path / "ckpt"
    with pytest.raises(KeyboardInterrupt):
        check(spec.instantiate(params), options(folder, progress=_SignalMidLevel(n)))
    return folder, spec.instantiate(params)


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def _level_file(folder: Path, kind: str) -> Path:
    return folder / next(n for n in sorted(_manifest(folder)["files"]) if n.endswith(kind))


def _forge(folder: Path, edit: Callable[[dict], object]) -> None:
    """Edit the manifest and seal it again, as a forger who knows the checksum would."""
    body = {k: v for k, v in _manifest(folder).items() if k != "checksum"}
    edit(body)
    (folder / "manifest.json").write_text(json.dumps(seal(body)))


CORRUPTIONS = {
    "fingerprints overwritten": (lambda f: _flip_last_byte(_level_file(f, ".fps.npy")),
                                 "fps.npy: checksum mismatch"),
    "half a parents file": (lambda f: (p := _level_file(f, ".parents.npy")).write_bytes(
        p.read_bytes()[:len(p.read_bytes()) // 2]), "parents.npy: checksum mismatch"),
    "an actions file deleted": (lambda f: _level_file(f, ".actions.npy").unlink(),
                                "actions.npy: missing"),
    "the frontier overwritten": (lambda f: _flip_last_byte(_level_file(f, ".words.npy")),
                                 "words.npy: checksum mismatch"),
    "a counter edited in the manifest": (
        lambda f: (f / "manifest.json").write_text(
            (f / "manifest.json").read_text().replace('"generated": ', '"generated": 1')),
        "manifest.json: checksum mismatch"),
    "the manifest truncated": (lambda f: (f / "manifest.json").write_text("{"),
                               "manifest.json: cannot read"),
    "the marker deleted": (lambda f: (f / "ctmc-checkpoint.json").unlink(),
                           "holds no ctmc checkpoint"),
    # what would block a read, or never end it, is refused before it is opened
    "a level file swapped for a FIFO": (
        lambda f: (p := _level_file(f, ".fps.npy")).unlink() or os.mkfifo(p),
        "fps.npy: not a regular file (a FIFO)"),
    "the manifest a link to /dev/zero": (
        lambda f: (f / "manifest.json").unlink() or (f / "manifest.json").symlink_to(
            "/dev/zero"), "manifest.json: not a regular file (a character device)"),
    "the marker a FIFO": (lambda f: (f / "ctmc-checkpoint.json").unlink() or os.mkfifo(
        f / "ctmc-checkpoint.json"), "ctmc-checkpoint.json: not a regular file (a FIFO)"),
    # edited and sealed again: the checksum holds, the contents must still make sense
    "a file entry forged as a number": (
        lambda f: _forge(f, lambda m: m["files"].update({next(iter(m["files"])): 5})),
        "manifest.json: not a ctmc BFS checkpoint manifest"),
    "the counters forged to another length": (
        lambda f: _forge(f, lambda m: m.update(enabled=[1])),
        "manifest.json: its counters do not fit the spec's"),
    "a counter forged negative": (
        lambda f: _forge(f, lambda m: m.update(generated=-5)),
        "manifest.json: its counters do not fit the spec's"),
    "the manifest nested too deeply": (
        lambda f: (f / "manifest.json").write_text("[" * 100_000 + "]" * 100_000),
        "manifest.json: cannot read: JSON nested too deeply"),
}


@pytest.mark.parametrize("damage", CORRUPTIONS)
def test_a_damaged_checkpoint_is_refused_naming_the_file_and_kept(damage, tmp_path):
    folder, machine = _stopped_run(tmp_path)
    hurt, message = CORRUPTIONS[damage]
    hurt(folder)
    before = snapshot(folder)
    with pytest.raises(CheckerError, match=re.escape(message)) as refused:
        check(machine, options(folder, resume=True))
    assert "\n" not in str(refused.value)
    assert snapshot(folder) == before


def _keep_an_early_manifest(folder: Path, early: Path):
    """A progress callback copying the manifest of an early save aside."""
    def keep(line: str) -> None:
        if line.startswith("checkpoint: levels 0-") and not early.exists() \
                and int(line.split()[2].split("-")[1]) >= 5 \
                and (folder / "manifest.json").exists():
            shutil.copy(folder / "manifest.json", early)
    return keep


def test_a_stale_manifest_is_refused_when_its_frontier_is_gone(tmp_path):
    """The manifest of an earlier save names a frontier file that a later save removed."""
    spec, params = CASES["hashed"]
    folder = tmp_path / "ckpt"
    early = tmp_path / "early-manifest.json"
    check(spec.instantiate(params), options(folder, progress=_keep_an_early_manifest(
        folder, early)))
    shutil.copy(early, folder / "manifest.json")
    with pytest.raises(CheckerError, match=r"level-\d+\.words\.npy: missing"):
        check(spec.instantiate(params), options(folder, resume=True))


def test_an_older_but_whole_manifest_resumes_from_its_level(tmp_path):
    """With exact fingerprints an earlier manifest names only files that still exist
    unchanged: it is a sound, older checkpoint, and resuming it gives the same result."""
    spec, params = CASES["exact"]
    folder = tmp_path / "ckpt"
    early = tmp_path / "early-manifest.json"
    check(spec.instantiate(params), options(folder, progress=_keep_an_early_manifest(
        folder, early)))
    shutil.copy(early, folder / "manifest.json")
    assert figures(check(spec.instantiate(params), options(folder, resume=True))) == \
        uninterrupted(spec, params)


@pytest.mark.parametrize("change, key", [
    (dict(params={"n": 13}), "params"),
    (dict(deadlock=True), "deadlock"),
    (dict(max_depth=30), "max_depth"),
    (dict(label="other_model"), "model"),
    (dict(properties=[]), "invariants"),
])
def test_a_checkpoint_of_another_search_is_refused_naming_the_key(change, key, tmp_path):
    folder, machine = _stopped_run(tmp_path, "exact")
    before = snapshot(folder)
    spec, params = CASES["exact"]
    machine = spec.instantiate(change.get("params", params))
    if "properties" in change:
        machine.invariants = []
    more = {k: v for k, v in change.items() if k in ("max_depth", "label")}
    opts = options(folder, resume=True, **more)
    opts.deadlock = change.get("deadlock", False)
    with pytest.raises(CheckerError, match=rf"another search \({key} is "):
        check(machine, opts)
    assert snapshot(folder) == before


def test_the_spec_digest_tells_a_changed_spec(tmp_path):
    """Same name and parameters, another guard: the spec's digest differs."""
    folder, machine = _stopped_run(tmp_path, "exact")
    changed = GRID.instantiate({"n": 12})
    changed.actions[0] = changed.actions[1]
    with pytest.raises(CheckerError, match=r"spec_digest is "):
        check(changed, options(folder, resume=True))


def test_a_new_checkpoint_never_takes_a_folder_with_files(tmp_path):
    spec, params = CASES["exact"]
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    for sibling in ("work.old", "work.tmp"):
        (tmp_path / sibling).mkdir()
        (tmp_path / sibling / "keep.txt").write_text(sibling)
    before = snapshot(tmp_path)
    with pytest.raises(CheckerError, match="is not empty and holds no ctmc checkpoint"):
        check(spec.instantiate(params), options(folder))
    assert snapshot(tmp_path) == before


def test_a_new_run_never_overwrites_a_checkpoint(tmp_path):
    folder, machine = _stopped_run(tmp_path, "exact")
    before = snapshot(folder)
    with pytest.raises(CheckerError, match="already holds a checkpoint: continue it with"):
        check(machine, options(folder))
    assert snapshot(folder) == before


def test_a_checkpoint_path_that_is_a_file_is_refused(tmp_path):
    spec, params = CASES["exact"]
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(CheckerError, match="is a file"):
        check(spec.instantiate(params), options(path))
    assert path.read_text() == "x"


def test_saving_writes_only_the_new_levels(tmp_path, monkeypatch):
    """Each save writes the levels since the last one (plus the frontier), never the
    whole visited set again: the bytes written grow linearly with the states."""
    spec, params = CASES["exact"]
    written: list[str] = []

    class Spy(checkpoint_module._NpyWriter):
        def __enter__(self):
            written.append(self.path.name)
            return super().__enter__()

    monkeypatch.setattr(checkpoint_module, "_NpyWriter", Spy)
    check(spec.instantiate(params), options(tmp_path / "ckpt"))
    levels = 2 * 12 + 1
    assert sorted(written) == sorted(f"level-{k}.{kind}.npy" for k in range(levels)
                                     for kind in ("fps", "parents", "actions"))


def test_a_save_that_ran_out_of_memory_is_tried_again():
    """A background save can run out of memory while a level is being built; when the
    search then runs out of memory itself, it frees the level and saves again what
    that save was saving (`bfs._out_of_memory`), so the checkpoint is not left empty."""
    from checker.engines.explicit.checkpoint import BackgroundSaves

    class Flaky:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def save(self, *args) -> None:
            self.calls.append(args)
            if len(self.calls) == 1:
                raise MemoryError

    flaky = Flaky()
    saves = BackgroundSaves(flaky)  # type: ignore[arg-type]
    saves.start(0, ["level 0"])
    with pytest.raises(MemoryError):
        saves.wait()
    saves.retry()
    assert flaky.calls == [(0, ["level 0"]), (0, ["level 0"])]
    saves.retry()  # nothing failed since: nothing to do
    assert len(flaky.calls) == 2

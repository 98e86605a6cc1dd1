"""Faults a user meets, injected on small models: the checker never gives a wrong verdict
and never loses a file.

- Liveness on Spark: the same verdict and lasso as the local engine.
- Processes killed (SIGKILL) at random points, interrupted (SIGINT) mid level, then
  resumed: every figure equals an uninterrupted run's.
- Damaged checkpoints and run directories: refused with one line naming the file,
  exit 2, nothing deleted.
- Folders and files the user had: byte-identical after every refused command.

`bench/faults.py` runs the same kills at larger sizes, many times, and prints a table.
`tests/test_checkpoints.py` holds the in-process checkpoint cases (a death at every
file write, each kind of damage, each identity key).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checker.engines.explicit.bfs import BfsOptions
from checker.engines.explicit.bfs import check as local_check
from checker.errors import CheckerError
from checker.lang.machine import Machine
from checker.models import build_machine, load_model
from tests.specs import liveness_spin, liveness_stop
from tests.test_spark_engine import assert_same, run_spark

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
BENCH_MODELS = ROOT / "bench" / "models"
# what describes a run rather than the model: time, memory (the visited set's encoding
# depends on how it was filled, e.g. all at once on a resume), where its files went, and
# how many processes shared it (workers start only at a frontier big enough to pay, so a
# run resumed after the widest level finishes on one)
TIMING = ("seconds", "states_per_second", "peak_rss_mb", "liveness_seconds",
          "parquet_bytes", "parquet_bytes_per_state", "run_dir", "bytes_per_state", "resumed",
          "peak_rss_mb_workers", "workers")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# --- 1. liveness on Spark ------------------------------------------------------------------

LIVENESS_SPECS = {
    f"{spec.name}-{i}": (spec, params)
    for spec, module in ((liveness_spin.SPIN, liveness_spin), (liveness_stop.STOP, liveness_stop))
    for i, (params, _, _) in enumerate(module.LIVENESS)}
LIVENESS_MODELS = ["v1_tiny_close_liveness", "v1_mutation_epoch_pollution"]


def _model_machine(name: str) -> Machine:
    return build_machine(load_model(name, MODELS_DIR))


@pytest.mark.parametrize("name", LIVENESS_SPECS)
def test_spark_liveness_equals_the_local_engine_on_hand_specs(name, spark, tmp_path):
    spec, params = LIVENESS_SPECS[name]
    machine = spec.instantiate(params)
    local = local_check(machine, BfsOptions(deadlock=False))
    assert_same(local, run_spark(machine, tmp_path / "run", spark))


@pytest.mark.parametrize("name", LIVENESS_MODELS)
def test_spark_liveness_equals_the_local_engine_on_models(name, spark, tmp_path):
    machine = _model_machine(name)
    local = local_check(machine, BfsOptions(deadlock=False))
    spark_result = run_spark(machine, tmp_path / "run", spark)
    assert_same(local, spark_result)
    assert spark_result.stats["liveness_states"] == spark_result.stats["distinct_states"]


def test_engines_that_cannot_check_liveness_refuse_it(tmp_path):
    """bmc and prove reason about states and steps, not behaviours: a model naming a
    liveness property is refused before any work, whoever calls them."""
    from checker.engines.symbolic.bmc import bmc
    from checker.engines.symbolic.induction import prove
    from checker.run import BmcOptions, ProveOptions

    machine = _model_machine("v1_mutation_epoch_pollution")
    for engine, run in (("bmc", lambda: bmc(machine, BmcOptions(depth=3))),
                        ("prove", lambda: prove(machine, ProveOptions()))):
        with pytest.raises(CheckerError, match=f"{engine} does not check liveness properties, "
                                               "and the model names CloseEventuallySucceeds"):
            run()
    with pytest.raises(CheckerError, match="needs the whole state graph, but the search is "
                                           "bounded to depth 5"):
        local_check(machine, BfsOptions(deadlock=False, max_depth=5))


# --- running ctmc as a process ------------------------------------------------------------

def ctmc(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "cli.py"), *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(proc: subprocess.Popen, timeout: float = 600) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def figures(report: dict, trace_dir: Path) -> dict:
    """What a --json report says, but for time and memory, with the trace's states."""
    out = {k: v for k, v in report.items() if k not in ("engine", "stats")}
    out["stats"] = {k: v for k, v in report["stats"].items() if k not in TIMING}
    violation = report.get("violation")
    if violation:
        trace = json.loads((trace_dir / Path(violation["trace_file"]).name).read_text())
        out["violation"] = {**violation, "trace_file": None, "states": trace["states"],
                            "loop": trace.get("loop")}
    return out


def kill_and_resume(model: str, engine_args: list[str], folder_flag: str, tmp_path: Path,
                    seed: int, kills: int, window: tuple[float, float],
                    sig: int = signal.SIGKILL) -> tuple[dict, int]:
    """Run MODEL, sending `sig` at a random moment of each of the first `kills` runs and
    resuming each time; the figures of the run that finished, and how many were hit."""
    rng = random.Random(seed)
    folder = tmp_path / f"state-{seed}"
    hit = 0
    for attempt in range(kills + 1):
        resume = folder.exists() and any(folder.glob("*.json"))
        args = ["check", model, "--json", "--trace-out", str(tmp_path / "cex.itf.json"),
                *engine_args, "--resume" if resume else folder_flag, str(folder)]
        proc = ctmc(*args, cwd=tmp_path)
        if attempt < kills:
            try:
                proc.wait(timeout=rng.uniform(*window))
            except subprocess.TimeoutExpired:
                proc.send_signal(sig)
        code, out, err = finished(proc)
        if code in (-signal.SIGKILL, 130):
            hit += 1
            if sig == signal.SIGINT:
                assert err.strip().splitlines()[-1].startswith("interrupted; to resume"), err
            continue
        assert code in (0, 1), err
        return figures(json.loads(out), tmp_path), hit
    raise AssertionError("the last run must not be killed")


def uninterrupted(model: str, engine_args: list[str], tmp_path: Path) -> dict:
    code, out, err = finished(ctmc("check", model, "--json", "--trace-out",
                                   str(tmp_path / "cex.itf.json"), *engine_args, cwd=tmp_path))
    assert code in (0, 1), err
    return figures(json.loads(out), tmp_path)


# --- 2. local: killed, interrupted, resumed ------------------------------------------------

LOCAL_MODELS = [
    str(MODELS_DIR / "log_driven_core.toml"),  # holds: 978,364 states, 18 levels, hashed
    # a stale read at depth 15, after 1.5 million states
    str(MODELS_DIR / "log_driven_mutation_merge_without_timestamp_cache_bump.toml"),
    str(MODELS_DIR / "v1_lagging_follower.toml"),  # a lasso, found after the safety search
]


@pytest.mark.parametrize("model", LOCAL_MODELS, ids=lambda m: Path(m).stem)
def test_sigkill_at_random_points_then_resume_equals_an_uninterrupted_run(model, tmp_path):
    want = uninterrupted(model, [], tmp_path)
    got, hit = kill_and_resume(model, ["--checkpoint-every", "0"], "--checkpoint", tmp_path,
                               seed=1, kills=3, window=(0.4, 2.4))
    assert got == want
    assert hit >= 1


def test_sigint_mid_level_then_resume_equals_an_uninterrupted_run(tmp_path):
    model = str(BENCH_MODELS / "tracker_bench_medium.toml")  # 2.1 million states, 19 levels
    every_state = ["--no-symmetry"]  # under symmetry: 26,615 orbits, done before a signal
    started = time.perf_counter()
    want = uninterrupted(model, every_state, tmp_path)
    took = time.perf_counter() - started  # signals land within it, with any worker count
    got, hit = kill_and_resume(model, every_state, "--checkpoint", tmp_path, seed=2, kills=2,
                               window=(0.3 * took, 0.8 * took), sig=signal.SIGINT)
    assert got == want
    assert hit >= 1


@pytest.mark.parametrize("args, solving", [
    (["bmc", "tracker_small", "--depth", "30"], "depth   6 | solving"),
    (["bmc", "tracker_small", "--depth", "30", "--timeout", "600"], "depth   6 | solving"),
    (["prove", "tracker_small", "--workers", "1"], "inductive step (k=1) | goal"),
], ids=["bmc", "bmc with a time limit", "prove"])
def test_ctrl_c_while_z3_solves_is_an_interrupt_not_a_timeout(args, solving, tmp_path):
    """Z3 takes SIGINT while it solves and cancels the check, so the engine sees an
    `unknown` it must not take for its time limit running out."""
    proc = ctmc(*args, cwd=tmp_path)
    seen = []
    while not any(solving in line for line in seen[-1:]):
        line = proc.stderr.readline()
        assert line, f"the command ended before it was solving: {seen}"
        seen.append(line)
    # Z3 takes the signal while it solves; one that lands as a check ends anyway is
    # lost with it, so the test presses Ctrl-C again, as a user would
    for _ in range(50):
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            continue
    code, out, err = finished(proc, timeout=60)
    assert (code, err.strip().splitlines()[-1]) == (130, "interrupted"), out + err


# --- 3. damaged state, refused and kept ------------------------------------------------------

def _refused(args: list[str], cwd: Path, header: bool = False) -> str:
    """The one error line of a refused command; `header`: it may have started (said what
    it checks on stdout) before it found the problem. A run that took over two seconds
    before failing printed progress lines first (a loaded machine): they say nothing of
    an error, and the error is the last line."""
    code, out, err = finished(ctmc(*args, cwd=cwd))
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert (header or out == "") and lines, err
    assert not any("error" in line.lower() for line in lines[:-1]), err
    assert "Traceback" not in err
    return lines[-1]


def test_a_damaged_local_checkpoint_is_refused_by_the_command_line(tmp_path):
    folder = tmp_path / "ckpt"
    model = str(MODELS_DIR / "tracker_small.toml")
    finished(ctmc("check", model, "--checkpoint", str(folder), "--checkpoint-every", "0",
                  cwd=tmp_path))
    victim = folder / "level-3.fps.npy"
    victim.write_bytes(victim.read_bytes()[:-8] + b"\0" * 8)
    before = snapshot(folder)
    line = _refused(["check", model, "--resume", str(folder)], tmp_path, header=True)
    assert line == f"error: {victim}: checksum mismatch: the file changed since it was " \
                   "written; this checkpoint cannot be resumed"
    assert snapshot(folder) == before
    line = _refused(["check", model, "--resume", str(folder), "--deadlock"], tmp_path)
    assert "it was written for another search (deadlock is false there, true here)" in line


def _durable_run(spark, tmp_path: Path) -> tuple[Path, Machine, object]:
    machine = _model_machine("tracker_small")
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_spark(machine, run_dir, spark, progress=_stop_after(6))
    return run_dir, machine, local_check(machine, BfsOptions(deadlock=False))


def _stop_after(level: int):
    def progress(line: str) -> None:
        if line.startswith(f"level {level:>3} "):
            raise KeyboardInterrupt
    return progress


def _flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _a_data_file(run_dir: Path, level: int) -> Path:
    return sorted(p for p in (run_dir / f"level={level}").iterdir()
                  if not p.name.startswith(("_", ".")))[0]


SPARK_DAMAGE = {
    "a Parquet file of the last durable level deleted": (
        lambda d: _a_data_file(d, 6).unlink(), "missing (level 6's record names it)"),
    "a byte of a Parquet file overwritten": (lambda d: _flip_middle_byte(_a_data_file(d, 3)),
                                             "checksum mismatch"),
    "a Parquet file added": (
        lambda d: (d / "level=2" / "part-99999.parquet").write_bytes(
            _a_data_file(d, 2).read_bytes()), "not in level 2's record"),
    "a visited run deleted": (
        lambda d: (d / "visited" / "bucket=00001" / "L4-5.u64").unlink(),
        "L4-5.u64: missing (level 5's record names it)"),
    "a visited run truncated": (
        lambda d: (r := d / "visited" / "bucket=00000" / "L0-3.u64").write_bytes(
            r.read_bytes()[:-8]), "L0-3.u64: changed (level 3's record names it)"),
    "a level's record edited": (
        lambda d: (r := d / "level=4" / "_ctmc_level.json").write_text(
            r.read_text().replace('"generated": ', '"generated": 9')),
        "_ctmc_level.json: checksum mismatch"),
    "a level's record malformed": (
        lambda d: (d / "level=4" / "_ctmc_level.json").write_text("{"),
        "_ctmc_level.json: cannot read"),
    "a middle level's record deleted": (
        lambda d: (d / "level=4" / "_ctmc_level.json").unlink(),
        "level 4 has no record"),
}


@pytest.mark.parametrize("damage", SPARK_DAMAGE)
def test_a_damaged_spark_run_directory_is_refused_and_kept(damage, spark, tmp_path):
    run_dir, machine, _ = _durable_run(spark, tmp_path)
    hurt, message = SPARK_DAMAGE[damage]
    hurt(run_dir)
    before = snapshot(run_dir)
    with pytest.raises(CheckerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_spark(machine, run_dir, spark, resume=True)
    assert snapshot(run_dir) == before


def test_a_spark_level_killed_before_its_record_is_redone(spark, tmp_path):
    """The driver died after Spark committed level 6 and before recording it: the one
    unrecorded level is what resume discards, and the run ends as an uninterrupted one."""
    run_dir, machine, local = _durable_run(spark, tmp_path)
    (run_dir / "level=6" / "_ctmc_level.json").unlink()
    kept = {k: v for k, v in snapshot(run_dir).items()  # visited runs merge as the run goes on
            if not k.startswith(("level=6/", "visited/"))}
    assert_same(local, run_spark(machine, run_dir, spark, resume=True))
    after = snapshot(run_dir)
    assert all(after[k] == v for k, v in kept.items())


def _address_space_of_a_started_ctmc() -> int:
    """Bytes of address space a ctmc process has mapped before it starts searching."""
    probe = ("import cli, numpy, checker.engines.explicit.bfs, checker.models\n"
             "print(next(int(l.split()[1]) for l in open('/proc/self/status') "
             "if l.startswith('VmPeak')) * 1024)")
    return int(subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("workers", [1, 2])
def test_running_out_of_memory_is_one_line_and_keeps_the_checkpoint(tmp_path, workers):
    """Under a cap on address space the search runs out of memory: it says how far it
    got, saves the levels it finished, and a resume without the cap ends as usual.

    No timed save runs (`--checkpoint-every` far beyond the run): when saves happen
    depends on the machine's speed, and so does what the search holds at each level
    (the levels not saved yet), hence where, and whether, memory runs out under the
    cap. Without them the run is the same on a busy machine as on an idle one; the
    save on running out of memory is what is tested. With two workers, whichever
    process runs out first (a worker, its receiving thread, the coordinator), the line
    says so, not that a worker its end took down ended; the resume is as with one."""
    import resource

    model = str(MODELS_DIR / "log_driven_duplicates.toml")  # 5.5 million states
    # two workers each hold half of the visited set: a lower cap keeps them short of it
    cap = _address_space_of_a_started_ctmc() + (120 if workers == 1 else 100) * 2**20

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    folder = tmp_path / "ckpt"
    proc = subprocess.run([sys.executable, str(ROOT / "cli.py"), "check", model, "--quiet",
                           "--no-symmetry", "--workers", str(workers), "--checkpoint", str(folder),
                           "--checkpoint-every", "1e9"],
                          cwd=tmp_path, capture_output=True, text=True, preexec_fn=limited)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and line.startswith("error: out of memory at depth "), line
    assert f"the checkpoint in {folder} holds levels 0-" in line
    if workers > 1:
        return
    code, out, err = finished(ctmc("check", model, "--resume", str(folder), "--json",
                                   "--no-symmetry", cwd=tmp_path))
    stats = json.loads(out)["stats"]
    baseline = load_model(model, MODELS_DIR).expect_states  # the uninterrupted search
    assert (code, stats["distinct_states"], stats["generated"]) == (0, baseline, 16_910_235)


# --- 4. the user's files ---------------------------------------------------------------------

def test_checkpoint_never_touches_a_folder_it_did_not_make(tmp_path):
    model = str(MODELS_DIR / "tracker_small.toml")
    work = tmp_path / "work"
    work.mkdir()
    (work / "results.csv").write_text("precious")
    for sibling in ("work.old", "work.tmp"):
        (tmp_path / sibling).mkdir()
        (tmp_path / sibling / "notes.txt").write_text(sibling)
    before = snapshot(tmp_path)
    line = _refused(["check", model, "--checkpoint", str(work)], tmp_path)
    assert "is not empty and holds no ctmc checkpoint" in line
    line = _refused(["check", model, "--resume", str(work)], tmp_path)
    assert "holds no ctmc checkpoint" in line
    assert snapshot(tmp_path) == before


def test_a_trace_that_cannot_be_written_is_refused_before_the_search(tmp_path):
    model = str(MODELS_DIR / "mutation_reset_cur_on_prev_exit.toml")
    (tmp_path / "file").write_text("mine")
    before = snapshot(tmp_path)
    for target, message in ((str(tmp_path / "file" / "t.json"), "which is a file"),
                            ("", "is not a file name"), (str(tmp_path), "is a directory")):
        line = _refused(["check", model, "--trace-out", target], tmp_path)
        assert message in line, line
    assert snapshot(tmp_path) == before


def test_a_trace_write_failing_after_the_search_still_gives_the_verdict(tmp_path,
                                                                       monkeypatch):
    """The disk fills up as the trace is written: the verdict and the violated property
    are printed all the same, then why the trace is missing."""
    import checker.traces.itf as itf
    from tests.model_folders import run_cli

    def full_disk(trace, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(itf, "write_trace", full_disk)
    monkeypatch.chdir(tmp_path)
    result = run_cli(MODELS_DIR, "check", "mutation_reset_cur_on_prev_exit")
    assert result.exit_code == 1
    assert "invariant NoWriteBelowClosed violated" in result.stdout
    assert "(not written: see below)" in result.stdout
    assert result.stderr.strip().splitlines()[-1] == (
        "error: cannot write trace traces/mutation_reset_cur_on_prev_exit-NoWriteBelowClosed-bfs"
        ".itf.json: No space left on device")


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KB file system (tmpfs), unmounted at the end; the test skips, saying why,
    where it cannot be mounted (not root, or no mount permission in this container)."""
    import os

    folder = tmp_path / "small-disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _fill(folder: Path, leave: int) -> None:
    """Fill the small disk at `folder` until fewer than `leave` bytes are free."""
    import os

    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    with open(folder / f"filler-{leave}", "wb") as f:
        try:
            f.write(b"x" * max(0, free - leave))
        except OSError:
            pass


def _trace(tmp_path: Path) -> Path:
    trace = tmp_path / "t.itf.json"
    model = str(MODELS_DIR / "mutation_reset_cur_on_prev_exit.toml")
    code, out, err = finished(ctmc("check", model, "-q", "--trace-out", str(trace),
                                   cwd=tmp_path))
    assert code == 1, out + err
    return trace


@pytest.mark.parametrize("kind", ["device", "fifo", "symlink", "the user's file",
                                  "a note naming the marks"])
def test_no_output_replaces_what_ctmc_did_not_write(kind, tmp_path):
    """A device, a FIFO, a link or the user's file where an output would go is refused
    before any work; it is left as it was (run as root, a rename would replace even
    /dev/null)."""
    import os
    import stat

    trace = _trace(tmp_path)
    if kind == "device":
        target, check = Path("/dev/null"), lambda: stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    elif kind == "fifo":
        target = tmp_path / "fifo"
        os.mkfifo(target)
        check = lambda: stat.S_ISFIFO(os.lstat(target).st_mode)  # noqa: E731
    elif kind == "symlink":
        target = tmp_path / "link"
        target.symlink_to(tmp_path / "elsewhere")
        check = lambda: target.is_symlink() and not (tmp_path / "elsewhere").exists()  # noqa
    else:
        target = tmp_path / "notes.txt"
        text = "precious" if kind == "the user's file" else NOTE_NAMING_THE_MARKS
        target.write_text(text)
        check = lambda: target.read_text() == text  # noqa: E731
    message = {"device": "is not a regular file (a character device)",
               "fifo": "is not a regular file (a FIFO)", "symlink": "is a symbolic link",
               "the user's file": "exists and was not written by ctmc",
               "a note naming the marks": "exists and was not written by ctmc"}[kind]
    for args in (["check", str(MODELS_DIR / "mutation_reset_cur_on_prev_exit.toml"),
                  "--trace-out", str(target)],
                 ["trace", "html", str(trace), "-o", str(target)],
                 ["graph", str(MODELS_DIR / "tracker_small.toml"), "-o", str(target)],
                 ["gate", str(MODELS_DIR / "tracker_small.toml"), "--junit", str(target)]):
        line = _refused(args, tmp_path)
        assert message in line and str(target) in line, line
        assert check()


# A document about ctmc's outputs: it names every mark, but carries none as ctmc does
NOTE_NAMING_THE_MARKS = (
    "# notes\nThe \"spec_ref\" key names the spec; outputs say written by ctmc.\n"
    + "\n" * 8 + "<!-- written by ctmc -->\n// written by ctmc\n"
    + '{"#meta": {"format": "ITF", "format-description": "u", "spec": "s", "spec_ref": 1}}\n'
    + "the end\n")


@pytest.mark.parametrize("text, ctmcs", [
    ("", True),  # reserved with touch
    ('{\n  "#meta": {\n    "format": "ITF",\n    "format-description": "https://x",\n'
     '    "spec": "tracker \\"v2\\"",\n    "spec_ref": "spec.tracker:TRACKER"', True),
    ('{"#meta":{"format":"ITF","format-description":"u","spec":"s","spec_ref":"r"}}', True),
    ('<?xml version="1.0" encoding="utf-8"?>\n<!-- written by ctmc -->\n<testsuites/>', True),
    ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
     '<meta name="generator" content="written by ctmc">\n', True),
    ("// written by ctmc\ndigraph states {\n}\n", True),
    ("## ctmc diff\n" + "| a | b |\n" * 1000 + "<!-- written by ctmc -->\n", True),
    (NOTE_NAMING_THE_MARKS, False),
    ('{"#meta": {"format": "ITF", "description": "Created by Apalache"}, "spec_ref": 1}', False),
    ("x\n" * 8 + "<!-- written by ctmc -->\nmore\n", False),
], ids=["empty", "trace", "compact trace", "junit", "page", "dot", "long markdown report",
        "note", "apalache trace", "mark too far down"])
def test_what_counts_as_a_file_ctmc_wrote(text, ctmcs, tmp_path):
    from checker.outputs import written_by_ctmc

    path = tmp_path / "out"
    path.write_text(text)
    assert written_by_ctmc(path) is ctmcs


def test_a_page_is_not_written_over_the_trace_it_shows(tmp_path):
    trace = _trace(tmp_path)
    before = trace.read_bytes()
    (tmp_path / "link.itf.json").symlink_to(trace)
    for source in (trace, tmp_path / "link.itf.json"):
        line = _refused(["trace", "html", str(source), "-o", str(trace)], tmp_path)
        assert line == f"error: -o: {trace} is the file being read; choose another name"
    assert trace.read_bytes() == before


def test_an_output_ctmc_wrote_is_replaced(tmp_path):
    trace = _trace(tmp_path)
    first = trace.read_text()
    trace.write_text(first.replace('"engine": "bfs"', '"engine": "older"'))
    assert _trace(tmp_path) == trace and trace.read_text() == first
    page = tmp_path / "t.html"
    for _ in range(2):
        code, out, err = finished(ctmc("trace", "html", str(trace), "-o", str(page),
                                       cwd=tmp_path))
        assert code == 0, err


def test_a_trace_folder_that_cannot_be_made_is_refused_before_the_search(tmp_path):
    line = _refused(["check", str(MODELS_DIR / "mutation_reset_cur_on_prev_exit.toml"),
                     "--trace-out", "/proc/ctmc-cannot-be-made/t.itf.json"], tmp_path)
    assert line.startswith("error: --trace-out: cannot write in /proc/ctmc-cannot-be-made: ")


def test_a_full_disk_is_one_line_and_leaves_nothing_behind(tmp_path, full_disk):
    trace = _trace(tmp_path)
    earlier = full_disk / "g.dot"
    earlier.write_text("// written by ctmc\n// an earlier graph\n")
    _fill(full_disk, leave=12_000)  # room for the checks' probe, not for a page or graph
    before = snapshot(full_disk)
    line = _refused(["trace", "html", str(trace), "-o", str(full_disk / "t.html")], tmp_path)
    assert line == f"error: cannot write {full_disk / 't.html'}: No space left on device"
    line = _refused(["graph", str(MODELS_DIR / "tracker_small.toml"), "-o", str(earlier)],
                    tmp_path)
    assert line == f"error: cannot write {earlier}: No space left on device"
    assert snapshot(full_disk) == before  # the earlier graph, and no temporary file
    _fill(full_disk, leave=0)
    line = _refused(["check", str(MODELS_DIR / "tracker_small.toml"), "--checkpoint",
                     str(full_disk / "ckpt")], tmp_path)
    assert line == (f"error: --checkpoint: cannot write in {full_disk / 'ckpt'}: No space "
                    "left on device")
    assert not (full_disk / "ckpt").exists()  # no empty folder left behind
    from checker.engines.explicit.checkpoint import Checkpoint

    with pytest.raises(CheckerError, match="No space left on device"):  # filled since
        Checkpoint.create(full_disk / "ckpt", {})
    assert not (full_disk / "ckpt").exists()
    line = _refused(["check", str(MODELS_DIR / "mutation_reset_cur_on_prev_exit.toml"),
                     "--trace-out", str(full_disk / "out" / "t.itf.json")], tmp_path)
    assert line == (f"error: --trace-out: cannot write in {full_disk / 'out'}: No space left "
                    "on device") and not (full_disk / "out").exists()


def test_resume_says_when_the_checkpoint_holds_no_save(tmp_path):
    """A deleted manifest leaves nothing to resume from: the run starts over and says so
    (on stderr, and in its statistics), and still reports the right figures."""
    model = str(MODELS_DIR / "tracker_small.toml")
    folder = tmp_path / "ckpt"
    code, out, _ = finished(ctmc("check", model, "--checkpoint", str(folder), "--json",
                                 cwd=tmp_path))
    want = json.loads(out)["stats"]["distinct_states"]
    (folder / "manifest.json").unlink()
    code, out, err = finished(ctmc("check", model, "--resume", str(folder), "--json",
                                   cwd=tmp_path))
    assert code == 0, err
    stats = json.loads(out)["stats"]
    assert stats["distinct_states"] == want
    assert stats["resumed"].startswith(f"nothing: {folder} has no manifest.json (no save "
                                       "finished, or it was deleted)")
    assert f"checkpoint: resumed nothing: {folder} has no manifest.json" in err
    code, out, _ = finished(ctmc("check", model, "--resume", str(folder), "--json",
                                 cwd=tmp_path))
    assert json.loads(out)["stats"]["resumed"].startswith("from level ")


def test_spark_resume_deletes_nothing_it_did_not_write(tmp_path):
    """A file the user put in the level a killed run left unrecorded (or in the
    exchange, or among the visited runs) stops the resume, and nothing is deleted."""
    from checker.engines.spark import run_dir

    identity = {"model": "x"}
    run = run_dir.create(tmp_path / "run", identity, 2)
    level = run.level_path(0)
    level.mkdir()
    (level / "part-00000.parquet").write_bytes(b"half a level")
    for place in (level, run.path / "exchange" / "level=0", run.path / "visited" / "bucket=00001"):
        place.mkdir(parents=True, exist_ok=True)
        (place / "notes.txt").write_text("mine")
        before = snapshot(run.path)
        with pytest.raises(CheckerError, match=f"{place / 'notes.txt'}: not written by ctmc"):
            run_dir.resume(run.path, identity, None, n_actions=1)
        assert snapshot(run.path) == before
        (place / "notes.txt").unlink()
    run_dir.resume(run.path, identity, None, n_actions=1)  # only ctmc's files: cleared
    assert not level.exists() and not (run.path / "exchange").exists()


# --- 5. Spark: the driver killed at random points, then resumed ---------------------------

def test_spark_driver_killed_at_random_points_then_resumed(tmp_path):
    """Each kill lands somewhere in Spark's startup or a level; the run that finishes
    reports what the local engine does (one local[2] Spark per process: slow, so few).
    The kills fall within the time an uninterrupted Spark run takes on this machine."""
    model = str(MODELS_DIR / "tracker_small.toml")
    want = uninterrupted(model, [], tmp_path)  # one state per orbit, on both engines
    spark_args = ["--engine", "spark", "--master", "local[2]", "--partitions", "2"]
    started = time.perf_counter()
    uninterrupted(model, [*spark_args, "--run-dir", str(tmp_path / "timed")], tmp_path)
    took = time.perf_counter() - started
    got, hit = kill_and_resume(model, spark_args, "--run-dir", tmp_path, seed=3, kills=1,
                               window=(0.4 * took, 0.9 * took))
    for key in ("distinct_states", "generated", "diameter", "fingerprint",
                "collision_probability", "action_instances"):
        assert got["stats"][key] == want["stats"][key], key
    got.pop("stats"), want.pop("stats")
    assert got == want
    assert hit >= 1

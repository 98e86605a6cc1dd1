"""The examples under examples/ run as a user would run them: from a folder outside the
repository, with their specs loaded from the model files' folders (one by file path,
one by module name), and their counterexamples checked from yet another folder."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checker.models import build_machine, load_model
from tests.naive_bfs import naive_bfs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def ctmc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed `ctmc` command, as a user runs it (a process of its own)."""
    return subprocess.run([sys.executable, "-m", "ctmc", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def user_folder(tmp_path: Path) -> Path:
    """The examples copied to a folder outside the repository."""
    for name in ("mutex", "two_phase_commit"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
    return tmp_path


def test_the_examples_meet_their_expectations_from_a_user_folder(user_folder: Path):
    run = ctmc("gate", "mutex", "two_phase_commit", "--json", "--trace-dir", "cex",
               cwd=user_folder)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    got = {r["model"]: (r["got"], r["ok"]) for r in report["results"]}
    assert got == {
        "mutex": ("holds", True),
        "mutex_check_then_set": ("violates MutualExclusion", True),
        "tpc": ("holds", True),
        "tpc_commit_on_any_prepared": ("violates Consistent", True),
    }


@pytest.mark.parametrize("model, trace", [
    ("mutex/mutex_check_then_set.toml", "MutualExclusion"),  # spec = "mutex.py:MUTEX"
    ("two_phase_commit/tpc_commit_on_any_prepared.toml", "Consistent"),  # spec = "tpc:TPC"
])
def test_a_counterexample_of_a_user_spec_checks_from_another_folder(model, trace,
                                                                     user_folder: Path):
    found = ctmc("check", model, "--trace-out", "cex.itf.json", cwd=user_folder)
    assert found.returncode == 1, found.stderr
    elsewhere = user_folder / "elsewhere"
    elsewhere.mkdir()
    checked = ctmc("trace", "check", str(user_folder / "cex.itf.json"), cwd=elsewhere)
    assert checked.returncode == 0, checked.stderr
    assert f"violates {trace}" in checked.stdout


def test_the_mutex_counts_agree_with_the_naive_oracle(user_folder: Path):
    machine = build_machine(load_model(user_folder / "mutex" / "mutex.toml", user_folder))
    assert naive_bfs(machine).distinct == 45


def test_an_error_while_building_a_user_spec_is_one_line(user_folder: Path):
    spec = user_folder / "mutex" / "mutex.py"
    spec.write_text(spec.read_text().replace(
        '    m.var("pc", Array(Pc, 2), init=Pc.idle, doc="each process\'s place")',
        '    m.var("pc", Array(Pc, 2), init=Pc.idle, doc="each process\'s place")\n'
        '    [].pop()'))
    run = ctmc("check", "mutex/mutex.toml", cwd=user_folder)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr
    assert "mutex.py:" in lines[0] and "IndexError: pop from empty list" in lines[0], lines

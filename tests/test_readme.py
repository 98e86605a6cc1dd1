"""The README runs as written: its shell blocks are extracted and every cheap command is
run from a fresh folder, in order, as a newcomer would paste them; each must exit as its
comment says (`exit N`, or 0). A command that is too slow, needs a cluster or would change
the checkout is skipped for a reason listed here, and each reason must still match a
command, so the list cannot rot. The Python snippet runs too, and prints what its comment
says."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent

# what is not run, and why: (a regular expression a command matches, the reason)
SKIPPED = [
    (r"^python3 -m venv", "installs the project (the install is what the tests run in)"),
    (r"python -m pytest", "runs this test suite"),
    (r"--engine spark|spark-submit", "starts Spark (tests/test_spark_engine.py runs it)"),
    (r"^ctmc gate( --html pages| --json|$| models/| --trace-dir)",
     "runs every model, about 11 minutes (tests/test_gate.py runs the gate on small folders)"),
    (r"--update-baselines", "rewrites the checkout's model files"),
    (r"--timeout 60", "runs for a minute on purpose"),
    (r"^ctmc prove tracker_small", "proves at 8 requests, about 20 s each "
                                   "(tests/test_z3_engines.py proves smaller ones)"),
]


def _blocks(lang: str) -> list[str]:
    """The README's fenced code blocks in `lang`, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", README.read_text(), re.S | re.M)


def commands() -> list[tuple[str, str]]:
    """Every shell command of the README: (command, its comment), continuation lines
    joined."""
    out = []
    for block in _blocks("sh"):
        block = re.sub(r"\\\n\s*", " ", block)
        for line in block.splitlines():
            command, _, comment = re.split(r"(\s#\s|$)", line.strip(), maxsplit=1)
            if command.strip() and not command.startswith("#"):
                out.append((command.strip(), comment.strip()))
    return out


def _skip_reason(command: str) -> str | None:
    return next((reason for pattern, reason in SKIPPED if re.search(pattern, command)), None)


def expected_exit(comment: str) -> int:
    """`exit N` in a command's comment, or 0."""
    found = re.search(r"\bexit (\d+)", comment)
    return int(found.group(1)) if found else 0


RUN = [(c, comment) for c, comment in commands() if _skip_reason(c) is None]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh working folder holding what a clone holds at its top (models, examples),
    where the README's commands run one after another."""
    here = tmp_path_factory.mktemp("readme")
    for name in ("models", "examples"):
        shutil.copytree(ROOT / name, here / name)
    return here


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "100"}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_every_skip_reason_still_matches_a_command() -> None:
    listed = [c for c, _ in commands()]
    for pattern, reason in SKIPPED:
        assert any(re.search(pattern, c) for c in listed), (pattern, reason)
    assert len(RUN) >= 20, RUN


@pytest.mark.parametrize("command, comment", RUN, ids=[c for c, _ in RUN])
def test_the_readme_command_runs_as_written(command: str, comment: str, folder: Path) -> None:
    done = _shell(command, folder)
    assert done.returncode == expected_exit(comment), done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_the_showcase_makes_its_page(folder: Path) -> None:
    """The command after the screenshot's caption writes the page it promises (run after
    the commands above, in this module's folder)."""
    showcase = [c for c, _ in commands() if c.startswith("ctmc trace html traces/log_driven")]
    assert showcase, "the README shows no counterexample page command"
    page = folder / showcase[0].split()[-1].replace(".itf.json", ".html")
    assert page.is_file() and "trace-data" in page.read_text()

"""Helpers shared by the tests that drive the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cli


def write_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, models: dict[str, str]) -> Path:
    """A models folder holding `models` (name -> TOML text); the working directory
    becomes tmp_path, so traces written by default land there."""
    folder = tmp_path / "models"
    folder.mkdir()
    for name, text in models.items():
        (folder / f"{name}.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    return folder


def ctmc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The installed `ctmc` command run in `cwd`, as a user runs it (a process of its
    own)."""
    return subprocess.run([sys.executable, "-m", "ctmc", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def run_cli(models: Path, *args: str) -> Result:
    """`ctmc --models-dir MODELS ARGS...`, in process."""
    return CliRunner().invoke(cli.main, ["--models-dir", str(models), *args])


def one_error_line(result: Result) -> str:
    """The single stderr line of a refused command (which must print nothing else)."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def paste_lemmas(spec: Path, imports: str, lemmas: str) -> None:
    """Paste printed `@m.lemma` functions at the end of an example spec's build function
    (before its first invariant), with the import line they need, as the output says to."""
    text = spec.read_text()
    build_end = text.index("\n    @m.invariant")
    body = "".join(f"    {line}\n" if line else "\n" for line in lemmas.splitlines())
    spec.write_text(imports + "\n" + text[:build_end] + "\n" + body + text[build_end:])

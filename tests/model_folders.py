"""Helpers shared by the CLI and gate tests."""

from __future__ import annotations

from pathlib import Path

import pytest


def write_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, models: dict[str, str]) -> Path:
    """A models folder holding `models` (name -> TOML text); the working directory
    becomes tmp_path, so traces written by default land there."""
    folder = tmp_path / "models"
    folder.mkdir()
    for name, text in models.items():
        (folder / f"{name}.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    return folder

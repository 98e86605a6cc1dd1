"""Lemmas a command finds are pasted into the spec; found again from that spec, the new
ones paste beside them. Names must not clash (the spec refuses a name declared twice),
so the second round is numbered past the first, and every pasted round still proves."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from checker.engines.symbolic.induction import PROVED
from tests.model_folders import ctmc, paste_lemmas

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ALL_IMPORTS = "from checker.lang import And, Implies, Not, Or"


def _found(command: list[str], work: Path) -> str:
    """The lemma blocks `command` prints for the mutex, ready to paste."""
    found = ctmc(*command, "mutex.toml", cwd=work)
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "@m.lemma")
    indent = lines[start].index("@")  # pdr indents the block under its verdict
    block = []
    for line in lines[start:]:
        if line.strip() and (len(line) - len(line.lstrip()) < indent or
                             line.lstrip().startswith("#")):
            break
        block.append(line[indent:])
    lemmas = "\n".join(block)
    # a clause only the slots' ranges make true is left out, not printed as `return True`
    assert "return True" not in lemmas
    return lemmas


@pytest.mark.parametrize("command", [["prove", "--engine", "pdr"],
                                     ["prove", "--engine", "pdr", "--mine"],
                                     ["infer"]], ids=["pdr", "pdr-mine", "infer"])
def test_lemmas_found_twice_paste_twice(tmp_path: Path, command: list[str]) -> None:
    work = tmp_path / "mutex"
    shutil.copytree(EXAMPLES / "mutex", work)
    first = _found(command, work)
    paste_lemmas(work / "mutex.py", ALL_IMPORTS, first)
    second = _found(command, work)
    names = [re.findall(r"^def (\w+)\(s\)", text, re.M) for text in (first, second)]
    assert names[0] and names[1] and not set(names[0]) & set(names[1])
    paste_lemmas(work / "mutex.py", ALL_IMPORTS, second)
    proved = ctmc("prove", "mutex.toml", "--json", cwd=work)
    assert proved.returncode == 0, proved.stderr
    assert json.loads(proved.stdout)["outcome"] == PROVED

"""The README runs as written: its shell blocks are extracted and every cheap command is
run from a fresh folder, in order, as a newcomer would paste them; each must exit as its
comment says (`exit N`, or 0). A command that is too slow, needs a cluster or would change
the checkout is skipped for a reason listed here, and each reason must still match a
command, so the list cannot rot. The Python snippet runs too, and prints what its comment
says."""

from __future__ import annotations

import json
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
    (r"^ctmc gate( --html pages| --json|$| models/| --trace-dir| --prove)",
     "runs every model, about 11 minutes (tests/test_gate.py runs the gate on small folders)"),
    (r"--update-baselines", "rewrites the checkout's model files"),
    (r"--timeout 60", "runs for a minute on purpose"),
    (r"^ctmc prove tracker_small", "proves at 8 requests, about 20 s each "
                                   "(tests/test_z3_engines.py proves smaller ones)"),
    (r"^ctmc diff (HEAD~3|origin/main)", "diffs every model, minutes, and needs history or a "
                                         "remote (tests/test_diff.py diffs a throwaway "
                                         "repository)"),
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


@pytest.fixture(scope="module")
def showcase(folder: Path) -> Path:
    """Run the README's showcase, the block under "What a counterexample looks like":
    `check` exits 1, then `trace html` writes the page; the trace file it reads."""
    block = next(b for b in _blocks("sh") if "ctmc trace html traces/log_driven" in b)
    lines = [line.split("  #")[0].strip() for line in block.strip().splitlines()]
    assert [_shell(line, folder).returncode for line in lines] == [1, 0]
    return folder / lines[-1].split()[-1]


def test_the_showcase_makes_its_page(showcase: Path) -> None:
    page = showcase.with_name(showcase.name.replace(".itf.json", ".html"))
    assert page.is_file() and "trace-data" in page.read_text()


def test_the_first_command_installs_the_tool_and_the_second_the_tests() -> None:
    first, second = (block.strip() for block in _blocks("sh")[:2])
    assert "pip install -e . " in first and "[test]" not in first, first
    assert first.endswith("ctmc check models/tracker_small.toml"), first
    assert "pip install -e '.[test]'" in second and second.endswith("python -m pytest -q")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -e '.[test]'" in ci and "python -m pytest -q" in ci
    # the first command's check, as its last step runs it
    done = _shell("ctmc check models/tracker_small.toml", ROOT)
    assert done.returncode == 0 and "holds" in done.stdout, done.stdout + done.stderr


def readme_snippet() -> tuple[str, str]:
    """The README's Python snippet (the one that runs a model) and what its last line's
    comment says it prints."""
    snippet = next(b for b in _blocks("python") if "import ctmc" in b)
    printed = snippet.strip().splitlines()[-1].partition("#")[2].strip()
    return snippet, printed


def test_the_python_snippet_prints_what_it_says(tmp_path: Path) -> None:
    snippet, printed = readme_snippet()
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == printed.split()


def test_the_quoted_explanation_is_the_showcases(showcase: Path) -> None:
    """The README quotes what the viewers say about the showcase's counterexample."""
    import ctmc  # noqa: F401 - checker on the path, as from a wheel
    from checker.traces.replay import load_trace
    from checker.traces.why import explain

    quoted = re.search(r"\(for a\s+`ForAll`, the instance: `(.*?)`\)", README.read_text(), re.S)
    assert quoted, "the README quotes no explanation"
    why = explain(load_trace(showcase))
    assert why is not None
    assert " ".join(quoted.group(1).split()) == why.headline(why.clauses[0])


def _text() -> str:
    return " ".join(README.read_text().split())


def test_the_model_file_shown_is_the_default_model() -> None:
    import tomllib

    block = next(b for b in _blocks("toml") if b.startswith("# models/tracker_small.toml"))
    shown = tomllib.loads(block)
    real = tomllib.loads((ROOT / "models" / "tracker_small.toml").read_text())
    assert shown == {key: real[key] for key in shown}


def test_the_readme_figures_are_the_tools() -> None:
    """Every count the README states is computed here from the models, the specs and
    the tools, so none can drift."""
    import ctmc  # noqa: F401 - checker on the path
    from checker.models import build_machine, list_models, load_model

    text = _text()
    small = load_model("tracker_small")
    assert f"{small.expect_states:,} states, stored as {small.expect_orbits:,} orbits" in text
    files = list_models(ROOT / "models")
    orbits_only = [f for f in files if not load_model(f).engine["full_search"]]
    from tests.test_model_suite import SUITE_STATE_LIMIT, large_models

    large = large_models()
    assert (f"`ctmc gate` runs the {len(files)} models in `models/`; the tests run "
            f"{len(files) - len(orbits_only) - len(large)} of them: not the "
            f"{len(orbits_only)} searched under symmetry only") in text
    assert (f"nor the {len(large)} past {SUITE_STATE_LIMIT:,} states, which `.ci/run` "
            "checks with `ctmc gate` after the tests") in text
    words = {6: "six", 12: "twelve"}
    tracker = build_machine(small)
    core = build_machine(load_model("log_driven_core"))
    assert f"`spec/tracker.py` has the {words[len(tracker.lemmas)]} lemmas" in text
    assert f"the {words[len(core.lemmas)]} in `core.py` make the single-range" in text
    proof = small.proof["params"]
    assert (f"proves them with {proof['requests']} requests and a clock up to "
            f"{proof['max_now']:,}") in text


def test_the_inferred_lemma_counts_are_infers() -> None:
    found = {}
    for folder, name in (("mutex", "mutex"), ("two_phase_commit", "tpc")):
        done = _shell(f"ctmc --models-dir examples/{folder} infer {name} --json", ROOT)
        assert done.returncode == 0, done.stderr
        found[name] = json.loads(done.stdout)
    assert (f"the mutex example infers a proof needing {len(found['mutex']['needed'])} "
            f"lemmas, 2PC one needing {len(found['tpc']['needed'])} "
            f"({found['tpc']['made']} clauses made from counterexamples on the way)") in _text()

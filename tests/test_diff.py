"""`ctmc diff` on a throwaway git repository holding the two-phase-commit example.

Commit `good` is the example as it ships. On top of it, three commits each change one
thing: `bug` makes the TM commit once any RM is prepared (the model that held now
violates), `blind` makes the mutation switch do nothing (the mutation model is no
longer caught), `renamed` only renames an action and a helper. `diff` runs from the
repository's checkout of each, as a pull request's CI would, against `good`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from checker.diff import behaviours
from checker.diff.compare import POLICIES, ModelDiff, compare_runs
from checker.diff.run import SAME_MEANING
from checker.diff.walk import walk
from checker.errors import CheckerError
from checker.traces.replay import load_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "two_phase_commit"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}, check=True)
    return done.stdout.strip()


def ctmc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ctmc", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _commit(repo: Path, message: str, old: str, new: str, count: int = 1) -> str:
    spec = repo / "tpc" / "tpc.py"
    text = spec.read_text()
    assert text.count(old) == count, old
    spec.write_text(text.replace(old, new))
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    repo = tmp_path_factory.mktemp("diff") / "repo"
    (repo / "tpc").mkdir(parents=True)
    for name in ("tpc.py", "tpc.toml", "tpc_commit_on_any_prepared.toml"):
        shutil.copyfile(EXAMPLE / name, repo / "tpc" / name)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "good")
    good = git(repo, "rev-parse", "HEAD")
    bug = _commit(repo, "bug", "ForAll(rms, lambda r: s.told[r])",
                  "Exists(rms, lambda r: s.told[r])")
    git(repo, "checkout", "-q", good)
    blind = _commit(repo, "blind", 'if m.mutated("CommitOnAnyPrepared")', "if False")
    git(repo, "checkout", "-q", good)
    renamed = _commit(repo, "renamed", "hear_prepared", "receive_prepared")
    renamed = _commit(repo, "renamed", "ready", "all_told", count=2)
    return {"path": repo, "good": good, "bug": bug, "blind": blind, "renamed": renamed}


def _diff_at(repo: dict, commit: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    path = repo["path"]
    assert isinstance(path, Path)
    git(path, "checkout", "-q", commit)
    status_before = git(path, "status", "--porcelain", "--ignored")
    run = ctmc("diff", str(repo["good"]), "tpc", "--json", "--trace-dir", "../out",
               *extra, cwd=path)
    assert git(path, "status", "--porcelain", "--ignored") == status_before  # untouched
    assert git(path, "rev-parse", "HEAD") == commit
    assert run.stdout, run.stderr
    return run, json.loads(run.stdout)


def _model(report: dict, name: str) -> dict:
    return next(m for m in report["models"] if m["model"] == name)


def test_a_bug_is_a_regression_with_the_behaviour_it_allows(repo: dict) -> None:
    run, report = _diff_at(repo, repo["bug"])
    assert run.returncode == 1, run.stderr
    tpc = _model(report, "tpc")
    assert tpc["status"] == "regression"
    assert tpc["base"]["got"] == "holds" and tpc["head"]["got"].startswith("violates ")
    assert any(f["policy"] == "verdict" and f["regression"] for f in tpc["findings"])
    new = tpc["new_behaviour"]
    assert new["trace_file"] and new["steps"] >= 1
    # the new behaviour replays against the head spec, and base cannot take its last step
    path = repo["path"]
    assert isinstance(path, Path)
    trace = load_trace(path.parent / "out" / Path(new["trace_file"]).name)
    assert trace.violation["kind"] == "new behaviour"
    assert trace.actions[-1] is not None and trace.actions[-1].name == "commit"
    assert tpc["lost_behaviour"]["note"] == "none"  # the bug only adds behaviours
    # the mutation model means the same in both versions (its mutation already committed
    # on any prepared RM): not searched for new behaviours, not a regression
    caught = _model(report, "tpc_commit_on_any_prepared")
    assert caught["status"] == "same" and caught["new_behaviour"]["note"] == SAME_MEANING


def test_a_mutation_switch_gone_vacuous_is_no_longer_caught(repo: dict) -> None:
    run, report = _diff_at(repo, repo["blind"])
    assert run.returncode == 1, run.stderr
    caught = _model(report, "tpc_commit_on_any_prepared")
    texts = [f["text"] for f in caught["findings"]]
    assert any(t.startswith("no longer caught") for t in texts), texts
    assert any("vacuous" in t for t in texts), texts
    assert _model(report, "tpc")["status"] == "same"
    # the wrong design's behaviour is gone; its trace, and the base's counterexample, are
    # traces of the base spec that a checkout of BASE shows
    lost = Path(caught["lost_behaviour"]["trace_file"]).name
    path = repo["path"]
    assert isinstance(path, Path)
    git(path, "checkout", "-q", str(repo["good"]))
    for trace in (path.parent / "out" / lost,
                  path.parent / "out" / "base" / "tpc_commit_on_any_prepared-Consistent-bfs"
                                                 ".itf.json"):
        shown = ctmc("trace", "show", str(trace), cwd=path)
        assert shown.returncode == 0, shown.stderr


def test_renaming_changes_no_behaviour_and_is_no_regression(repo: dict) -> None:
    run, report = _diff_at(repo, repo["renamed"], "--fail-on", "states,behaviours,proofs")
    assert run.returncode == 0, run.stderr
    tpc = _model(report, "tpc")
    assert tpc["base"]["states"] == tpc["head"]["states"] == 288
    assert tpc["new_behaviour"]["note"] == tpc["lost_behaviour"]["note"] == "none"
    texts = [f["text"] for f in tpc["findings"]]
    assert texts == ["actions only in base: hear_prepared",
                     "actions only in head: receive_prepared"]
    assert report["regressions"] == 0


def test_the_ci_outputs(repo: dict, tmp_path: Path) -> None:
    markdown, junit = tmp_path / "diff.md", tmp_path / "diff.xml"
    path = repo["path"]
    assert isinstance(path, Path)
    git(path, "checkout", "-q", str(repo["bug"]))
    run = ctmc("diff", str(repo["good"]), "tpc", "--markdown", str(markdown), "--junit",
               str(junit), "--trace-dir", str(tmp_path / "traces"), cwd=path)
    assert run.returncode == 1, run.stderr
    assert "REGRESSION" in run.stdout and "1 with regressions" in run.stdout
    text = markdown.read_text()
    assert text.index("**regression** `tpc`") < text.index("<summary>1 unchanged</summary>")
    assert "| `commit` | 1 -> 3 | 1 -> 0 |" in text  # coverage per action, before -> after
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert {c.get("name") for c in cases} == {"tpc", "tpc_commit_on_any_prepared"}
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["tpc"]


def test_the_cache_answers_the_second_run_alike(repo: dict, tmp_path: Path) -> None:
    cache = ("--cache", str(tmp_path / "cache"))
    first_run, first = _diff_at(repo, repo["bug"], *cache)
    second_run, second = _diff_at(repo, repo["bug"], *cache)
    assert first_run.returncode == second_run.returncode == 1
    # (the mutation model means the same in both versions: its second side to run may
    # already find the first's entry)
    assert _model(first, "tpc")["cache"] == {"base": "miss", "head": "miss"}
    assert {m["cache"][side] for m in second["models"] for side in ("base", "head")} == {"hit"}
    for a, b in zip(first["models"], second["models"], strict=True):
        assert (a["status"], a["findings"], a["new_behaviour"]) == \
            (b["status"], b["findings"], b["new_behaviour"])


@pytest.mark.parametrize("damage", ["garbage", "an empty object", "an edited count",
                                    "a trace cut short"])
def test_a_damaged_cache_entry_is_a_miss_and_stored_anew(damage: str, repo: dict,
                                                        tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first_run, first = _diff_at(repo, repo["bug"], "--cache", str(cache))
    entries = [e for e in cache.iterdir() if e.is_dir() and not e.name.startswith(".")]
    assert entries
    damaged = set()
    for entry in entries:
        answer = entry / "answer.json"
        before = {f.name: f.read_bytes() for f in entry.iterdir()}
        if damage == "garbage":
            answer.write_text("garbage")
        elif damage == "an empty object":
            answer.write_text("{}")
        elif damage == "an edited count":
            answer.write_text(answer.read_text().replace('"states": ', '"states": 1', 1))
        elif (entry / "trace.itf.json").exists():
            text = (entry / "trace.itf.json").read_text()
            (entry / "trace.itf.json").write_text(text[:len(text) // 2])
        if {f.name: f.read_bytes() for f in entry.iterdir()} != before:
            damaged.add(entry.name)
    assert damaged
    again_run, again = _diff_at(repo, repo["bug"], "--cache", str(cache))
    assert again_run.returncode == first_run.returncode == 1, again_run.stderr
    for a, b in zip(first["models"], again["models"], strict=True):
        assert (a["status"], a["findings"], a["new_behaviour"]) == \
            (b["status"], b["findings"], b["new_behaviour"])
    assert {e.name for e in cache.iterdir() if e.name.endswith(".damaged")} == {
        f".{name}.damaged" for name in damaged}
    _, third = _diff_at(repo, repo["bug"], "--cache", str(cache))  # stored anew
    assert {m["cache"][side] for m in third["models"] for side in ("base", "head")} == {"hit"}


@pytest.mark.parametrize("base, message", [
    ("no-such-revision", "BASE 'no-such-revision' is not a git revision nor a folder"),
    ("--oops", "No such option"),
    ("", "BASE is empty: give a git revision or a folder"),
])
def test_a_bad_base_is_one_line(repo: dict, base: str, message: str) -> None:
    path = repo["path"]
    assert isinstance(path, Path)
    run = ctmc("diff", base, "tpc", cwd=path)
    assert run.returncode == 2
    assert message in run.stderr and len(run.stderr.strip().splitlines()) == 1


def test_a_model_in_one_version_and_a_spec_that_fails_to_import(repo: dict,
                                                               tmp_path: Path) -> None:
    path = repo["path"]
    assert isinstance(path, Path)
    work = tmp_path / "work"
    shutil.copytree(path, work)
    git(work, "checkout", "-q", str(repo["good"]))
    shutil.copyfile(work / "tpc" / "tpc.toml", work / "tpc" / "tpc_new.toml")
    (work / "tpc" / "tpc.py").write_text("raise RuntimeError('half-edited')\n")
    run = ctmc("diff", "HEAD", "tpc", "--json", "--trace-dir", str(tmp_path / "t"), cwd=work)
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    assert _model(report, "tpc_new")["findings"][0]["text"] == "only in head"
    broken = _model(report, "tpc")["findings"]
    assert broken[0]["policy"] == "broken" and "half-edited" in broken[0]["text"]


def _graph(names: list[str], states: list[dict], initial: list[int],
           edges: list[tuple[int, int, str]]) -> dict:
    """A graph document as `side.write_graph` writes it, from readable parts."""
    values: dict[str, list] = {v: [] for v in names}
    rows = []
    for state in states:
        for v in names:
            if state[v] not in values[v]:
                values[v].append(state[v])
        rows.append([values[v].index(state[v]) for v in names])
    actions = sorted({name for _, _, name in edges})
    return {"vars": names, "values": values, "states": rows, "initial": initial,
            "actions": [[a, {}] for a in actions],
            "edges": [[src, dst, actions.index(name)] for src, dst, name in edges]}


def test_behaviours_are_compared_up_to_stuttering() -> None:
    """Hand-made graphs: B adds a variable `y` and a step that only changes it; over `x`,
    B's behaviours are A's, and A's are B's, until B takes a step A cannot."""
    a = _graph(["x"], [{"x": 0}, {"x": 1}], [0], [(0, 1, "inc")])
    b = _graph(["x", "y"], [{"x": 0, "y": 0}, {"x": 0, "y": 1}, {"x": 1, "y": 1},
                            {"x": 2, "y": 1}], [0],
               [(0, 1, "tick"), (1, 2, "inc"), (2, 3, "inc")])
    shared = behaviours.shared_variables(b, a)
    assert shared == ["x"]
    assert behaviours.compare(a, b, shared, 100).difference is None
    found = behaviours.compare(b, a, shared, 100)
    assert found.decided and found.difference is not None
    assert found.difference.path == [0, 1, 2, 3] and found.difference.edges[-1] == 2
    assert found.difference.changed == ["x"]
    doc = behaviours.trace_document(b | {"#meta": {}}, found.difference, "base", {})
    assert [s["x"] for s in doc["states"]] == [0, 0, 1, 2]
    assert [s["#meta"]["action"] for s in doc["states"]] == [None, "tick", "inc", "inc"]
    assert not behaviours.compare(b, a, shared, 1).decided  # the budget: never "none"
    # a state A starts in that B has no initial state for: a behaviour of length 0
    c = _graph(["x"], [{"x": 5}], [0], [])
    assert behaviours.compare(c, a, ["x"], 100).difference == behaviours.Difference([0],
                                                                                   [None], [])


@pytest.mark.parametrize("model", ["tpc", "tpc_commit_on_any_prepared", "tracker_small",
                                   "v1_tiny", "log_driven_tiny_split", "constrained"])
def test_the_batch_walk_is_the_scalar_walk(model: str) -> None:
    """The diff's state graph (NumPy levels) equals `ctmc graph`'s (the scalar
    interpreter, a state at a time): the same nodes in the same order, the same edges."""
    from checker.graph import explore
    from checker.models import build_machine, load_model
    from tests.specs.constrained import CONSTRAINED

    if model == "constrained":
        machine = CONSTRAINED.instantiate({"n": 4})
    else:
        machine = build_machine(load_model(model, EXAMPLE if model.startswith("tpc")
                                           else ROOT / "models"))
    fast = walk(machine, 10_000)
    slow = explore(machine, 10_000)
    assert fast.states == [n.state for n in slow.nodes]
    assert fast.initial == sum(n.initial for n in slow.nodes)
    assert fast.edges == [(e.src, e.dst, e.action.id) for e in slow.edges]
    for depth in (0, 3):  # a depth bound stops both at the same level
        bounded, scalar = walk(machine, 10_000, depth), explore(machine, 10_000, depth)
        assert bounded.states == [n.state for n in scalar.nodes]
        assert bounded.edges == [(e.src, e.dst, e.action.id) for e in scalar.edges]
    with pytest.raises(CheckerError, match="more than 3 reachable states"):
        walk(machine, 3)


def test_a_folder_base_brings_its_own_spec_package(tmp_path: Path) -> None:
    """BASE as a folder holding an older copy of this repository: its `spec` package is the
    one its models run with (here the tracker's clock stops one tick earlier), while the
    checker stays the running one."""
    old = tmp_path / "old"
    shutil.copytree(ROOT / "spec", old / "spec")
    (old / "models").mkdir()
    shutil.copyfile(ROOT / "models" / "tracker_small.toml", old / "models" / "tracker_small.toml")
    tracker = old / "spec" / "tracker.py"
    text = tracker.read_text()
    assert text.count("require(s.now < p.max_now)") == 1
    tracker.write_text(text.replace("require(s.now < p.max_now)",
                                    "require(s.now < p.max_now - 1)"))
    run = ctmc("diff", str(old), "tracker_small", "--json", "--trace-dir",
               str(tmp_path / "traces"), cwd=ROOT)
    assert run.returncode == 0, run.stderr  # more states: not a regression unless asked
    tpc = _model(json.loads(run.stdout), "tracker_small")
    assert tpc["head"]["states"] == 4742 and tpc["base"]["states"] < 4742
    assert tpc["new_behaviour"]["trace_file"] and tpc["lost_behaviour"]["note"] == "none"
    assert [f["policy"] for f in tpc["findings"]].count("states") >= 1
    strict = ctmc("diff", str(old), "tracker_small", "--fail-on", "states", "--trace-dir",
                  str(tmp_path / "traces"), cwd=ROOT)
    assert strict.returncode == 1, strict.stderr


def _row(got: str, expected: str, proof: str | None = None, **counts: object) -> dict:
    row = {"got": got, "expected": expected, "broken": False, "complete": True,
           "surprises": [], "states": 10, "orbits": None, "diameter": 3, "trace_length": None,
           "coverage": {"tick": [5, 4]},
           "proof": None if proof is None else {"outcome": proof, "message": "lemma L fails"}}
    return {"gate": row | counts, "mutations_change_states": None}


@pytest.mark.parametrize("base, head, fail_on, regressions", [
    (_row("holds", "holds"), _row("holds", "holds"), POLICIES, []),
    (_row("holds", "holds"), _row("violates Inv", "holds"), (), ["verdict"]),
    (_row("violates Inv", "violates Inv"), _row("holds", "violates Inv"), (), ["verdict"]),
    (_row("violates Inv", "holds"), _row("holds", "holds"), POLICIES, []),  # fixed
    (_row("holds", "holds", "proved"), _row("holds", "holds", "not inductive"), ("proofs",),
     ["proofs"]),
    (_row("holds", "holds", "proved"), _row("holds", "holds", "not inductive"), (), []),
    (_row("holds", "holds"), _row("holds", "holds", states=11), ("states",), ["states"]),
    (_row("holds", "holds"), _row("holds", "holds", coverage={"tick": [5, 0]}),
     ("coverage",), ["coverage"]),
])
def test_which_findings_count_is_the_policy(base: dict, head: dict, fail_on: tuple,
                                            regressions: list[str]) -> None:
    diff = ModelDiff("m", base, head)
    compare_runs(diff)
    assert [f.policy for f in diff.regressions(fail_on)] == regressions


@pytest.mark.parametrize("name", ["github-actions.yml", "gitlab-ci.yml"])
def test_the_ci_examples_run_commands_that_parse(name: str) -> None:
    import shlex
    import string

    import click

    import cli

    lines = [line.split("ctmc ", 1)[1] for line in
             (ROOT / "examples" / "ci" / name).read_text().splitlines()
             if line.lstrip().startswith(("- run: ctmc ", "- ctmc "))]
    values = {"MODELS": "models", "GITHUB_BASE_REF": "main",
              "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"}
    commands = [shlex.split(string.Template(line).substitute(values)) for line in lines]
    assert sorted(c[2] for c in commands) == ["diff", "gate"]
    for args in commands:
        assert args[0] == "--models-dir"  # the group's one option, then the command's
        command = cli.main.get_command(click.Context(cli.main), args[2])
        assert command is not None
        with click.Context(command, info_name=args[2], obj=Path(args[1])) as ctx:
            command.parse_args(ctx, args[3:])  # raises on an unknown option or bad value


def test_an_interrupted_diff_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """Ctrl-C while both sides search: exit 130, one line, no side process left, and the
    temporary export of BASE removed."""
    import signal
    import time

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "ctmc", "diff", "HEAD", "log_driven_core",
                            "--trace-dir", str(tmp_path / "t")], cwd=ROOT, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env={**os.environ, "TMPDIR": str(scratch)},
                           # as from a terminal: a suite run as a background job ignores
                           # SIGINT, and its children would inherit that
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert run.stderr is not None
    for line in run.stderr:  # the first progress line: the sides are searching
        if "distinct" in line:
            break
    time.sleep(0.5)
    run.send_signal(signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 130
    assert err.strip().splitlines()[-1] == "interrupted: nothing of the user's was changed"
    time.sleep(0.5)
    assert not list(scratch.iterdir())  # the export and the sides' files are gone
    assert subprocess.run(["pgrep", "-f", str(tmp_path / "t")],
                          capture_output=True).returncode == 1  # no side is left

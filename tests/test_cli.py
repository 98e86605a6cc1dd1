"""The `ctmc` command line: exit codes, one-line errors, JSON output, listings, traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import cli
from tests.model_folders import one_error_line, write_models
from tests.model_folders import run_cli as run

COUNTER = "tests.cli_specs:COUNTER"
MODELS = {
    "holds": f"""
description = "the counter stays small"
spec = "{COUNTER}"
[engine]
deadlock = false
[expect]
outcome = "holds"
states = 4
""",
    "caught": f"""
description = "overshoot is caught"
spec = "{COUNTER}"
mutations = ["overshoot"]
invariants = ["WithinLimit"]
[engine]
deadlock = false
[expect]
outcome = "violates WithinLimit"
""",
}


@pytest.fixture
def models(tmp_path, monkeypatch) -> Path:
    """A models folder with the two models above; the working directory is tmp_path."""
    return write_models(tmp_path, monkeypatch, MODELS)


# --- bad input: one line, exit 2 --------------------------------------------------

def write_model(models: Path, name: str, text: str) -> str:
    (models / f"{name}.toml").write_text(text)
    return name


BAD_MODELS = {
    "unknown_spec": ('spec = "no_such_spec"\n', "unknown spec 'no_such_spec'"),
    "unknown_invariant": (f'spec = "{COUNTER}"\ninvariants = ["Nope"]\n',
                          "no invariant 'Nope' (known: Small, WithinLimit, Monotone)"),
    "unknown_param": (f'spec = "{COUNTER}"\n[params]\nnope = 2\n', "no parameter 'nope'"),
    "unknown_mutation": (f'spec = "{COUNTER}"\nmutations = ["nope"]\n', "no mutation 'nope'"),
    "malformed": (f'spec = "{COUNTER}"\n[params\n', "malformed TOML"),
    "out_of_bounds": (f'spec = "{COUNTER}"\n[params]\nlimit = 99\n', "above its maximum 8"),
}


@pytest.mark.parametrize("command", ["check", "simulate"])
@pytest.mark.parametrize("name", sorted(BAD_MODELS))
def test_bad_model_file(models, command, name):
    text, message = BAD_MODELS[name]
    line = one_error_line(run(models, command, write_model(models, name, text)))
    assert line.startswith("error: ") and message in line
    assert f"{name}.toml" in line


BAD_ARGS = [
    (["check", "nosuch"], "unknown model 'nosuch'"),
    (["check", "holds", "--set", "limit"], "'limit' is not NAME=VALUE"),
    (["check", "holds", "--set", "=3"], "'=3' is not NAME=VALUE"),
    (["check", "holds", "--set", "nope=1"], "--set: spec cli_counter has no parameter 'nope'"),
    (["check", "holds", "--set", "limit=99"], "--set: parameter limit=99 is above its maximum"),
    (["check", "holds", "--set", "limit=x"], "--set: parameter limit wants an integer"),
    (["simulate", "holds", "--set", "limit=0"], "below its minimum 1"),
    (["check", "holds", "--max-depth", "-1"], "--max-depth"),
    (["check", "holds", "--checkpoint", "a", "--resume", "."], "different folders"),
    (["check"], "Missing argument 'MODEL'"),
    (["bogus"], "No such command 'bogus'"),
    (["trace", "show", "missing.itf.json"], "does not exist"),
    (["trace", "check", "missing.itf.json"], "does not exist"),
    (["list", "params"], "list params needs --spec NAME"),
    (["list", "models", "--spec", COUNTER], "--spec applies to"),
    (["list", "params", "--spec", "no_such_spec"], "unknown spec 'no_such_spec'"),
    (["--models-dir", "/nonexistent", "list"], "--models-dir: /nonexistent does not exist"),
    (["--models-dir", "/nonexistent", "list", "models"], "--models-dir: /nonexistent does not"),
    (["--models-dir", "/nonexistent", "gate"], "--models-dir: /nonexistent does not exist"),
    (["--models-dir", "/nonexistent", "check", "x"], "--models-dir: /nonexistent does not"),
    (["list", "--models-dir", "/etc/hostname"], "Directory '/etc/hostname' is a file"),
]


@pytest.mark.parametrize("args, message", BAD_ARGS)
def test_bad_arguments(models, args, message):
    line = one_error_line(run(models, *args))
    assert line.startswith("error: ") and message in line


@pytest.mark.parametrize("text", ['{"states": [', '{"states": []}', "\xff"])
def test_trace_that_does_not_parse(models, text):
    Path("bad.itf.json").write_text(text, encoding="latin-1")
    for command in ("show", "check"):
        line = one_error_line(run(models, "trace", command, "bad.itf.json"))
        assert line.startswith("error: bad.itf.json")


def test_internal_error_is_one_line_unless_debugging(models, monkeypatch):
    import checker.models

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(checker.models, "load_model", broken)
    line = one_error_line(run(models, "check", "holds"))
    assert line.startswith("internal error: RuntimeError: boom")
    assert "CTMC_DEBUG=1" in line
    monkeypatch.setenv("CTMC_DEBUG", "1")
    result = run(models, "check", "holds")
    assert result.exit_code == 2 and "Traceback" in result.stderr


def test_help_and_no_arguments(models):
    assert run(models, "--help").exit_code == 0
    result = CliRunner().invoke(cli.main, [])
    assert result.exit_code == 2 and "Usage:" in result.output
    assert one_error_line(run(models)) == "error: Missing command."


# --- check -------------------------------------------------------------------------

def test_check_holds(models):
    result = run(models, "check", "holds")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "holds" in out and "as expected" in out
    assert "distinct states" in out and "coverage" in out and "inc()" in out


def test_check_violation_writes_trace(models):
    result = run(models, "check", "caught")
    assert result.exit_code == 1, result.output
    trace = Path("traces/caught-WithinLimit-bfs.itf.json")
    assert trace.is_file()
    assert "invariant WithinLimit violated" in result.stdout
    assert f"ctmc trace show {trace}" in result.stdout
    assert "as expected" in result.stdout


def test_unexpected_outcome_keeps_exit_code(models, tmp_path):
    out = tmp_path / "out" / "t.json"
    result = run(models, "check", str(models / "holds.toml"), "--set", "limit=5",
                 "--trace-out", str(out), "--quiet")
    assert result.exit_code == 1, result.output
    assert "UNEXPECTED" in result.stdout and "violates Small" in result.stdout
    assert out.is_file()
    assert "statistics" not in result.stdout and result.stderr == ""


def test_deadlock_flag_overrides_model(models):
    result = run(models, "check", "holds", "--deadlock", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["violation"]["kind"] == "deadlock"
    assert report["outcome"] == "violates Deadlock" and report["as_expected"] is False


def test_check_json(models):
    result = run(models, "check", "holds", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report) >= {"model", "spec", "params", "mutations", "engine", "outcome",
                           "expected", "as_expected", "violation", "stats", "coverage"}
    assert report["model"] == "holds" and report["spec"] == "cli_counter"
    assert report["params"] == {"limit": 3, "mode": "up"}
    assert report["engine"] == {"name": "bfs", "max_depth": 0, "deadlock": False}
    assert (report["outcome"], report["expected"], report["as_expected"]) == \
        ("holds", "holds", True)
    assert report["violation"] is None
    assert report["stats"]["distinct_states"] == 4
    assert [row["action"] for row in report["coverage"]] == ["inc()"]


def test_check_json_violation(models):
    result = run(models, "check", "caught", "--json")
    assert result.exit_code == 1, result.output
    violation = json.loads(result.stdout)["violation"]
    assert violation["kind"] == "invariant" and violation["name"] == "WithinLimit"
    assert violation["length"] == 4
    assert Path(violation["trace_file"]).is_file()


def test_depth_bound_is_not_a_proof(models):
    result = run(models, "check", "holds", "--max-depth", "1", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["complete"] is False and report["engine"]["max_depth"] == 1
    assert "not a proof" in run(models, "check", "holds", "--max-depth", "1").stdout


def test_interrupt_says_how_to_resume(models, monkeypatch):
    from checker.engines.explicit import bfs

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bfs, "check", interrupted)
    result = run(models, "check", "holds", "--checkpoint", "ckpt", "--quiet")
    assert result.exit_code == 130
    assert result.stderr.strip().splitlines()[-1] == \
        "interrupted; to resume, run the same command with --resume ckpt"


# --- simulate ------------------------------------------------------------------------

def test_simulate(models):
    result = run(models, "simulate", "caught", "--seed", "3", "--runs", "5", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["engine"] == {"name": "simulate", "seed": 3, "steps": 100, "runs": 5,
                                "deadlock": False}
    assert report["as_expected"] is True
    assert Path(report["violation"]["trace_file"]).is_file()
    held = run(models, "simulate", "holds", "--runs", "3", "--steps", "10")
    assert held.exit_code == 0 and "as expected" in held.stdout


# --- traces ------------------------------------------------------------------------------

def test_trace_show_and_check(models):
    assert run(models, "check", "caught", "--quiet").exit_code == 1
    trace = "traces/caught-WithinLimit-bfs.itf.json"
    shown = run(models, "trace", "show", trace)
    assert shown.exit_code == 0, shown.output
    assert "inc()" in shown.stdout
    assert run(models, "trace", "show", trace, "--step", "2", "--full").exit_code == 0
    checked = run(models, "trace", "check", trace)
    assert checked.exit_code == 0, checked.output
    assert "replays" in checked.stdout and "WithinLimit" in checked.stdout
    line = one_error_line(run(models, "trace", "show", trace, "--step", "99"))
    assert "out of range" in line


# --- list ---------------------------------------------------------------------------------

def test_list_models_and_specs(models):
    result = run(models, "list")
    assert result.exit_code == 0, result.output
    assert "specs" in result.stdout
    for text in ("holds", "caught", "violates WithinLimit", "overshoot is caught"):
        assert text in result.stdout


def test_list_models_reports_broken_files(models):
    write_model(models, "broken", "spec = \n")
    result = run(models, "list", "models")
    assert result.exit_code == 2
    assert "caught" in result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "broken.toml" in lines[0]


@pytest.mark.parametrize("what, expected", [
    ("invariants", ["Small", "WithinLimit", "Monotone", "step invariant", "x never decreases"]),
    ("mutations", ["overshoot", "inc ignores the limit by one"]),
    ("params", ["limit", "1..8", "up | flat", "the largest value inc reaches"]),
])
def test_list_spec_details(models, what, expected):
    result = run(models, "list", what, "--spec", COUNTER)
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.stdout


def test_ctrl_c_before_the_engine_starts_is_one_line(monkeypatch, tmp_path):
    """Click would print an empty line before its own Abort."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_load", interrupted)
    result = run(tmp_path, "check", "tracker_small")
    assert (result.exit_code, result.stdout, result.stderr) == (130, "", "interrupted\n")


def test_ctrl_c_while_python_loads_the_command_is_one_line(monkeypatch, capsys):
    import sys
    import types

    import ctmc

    class Loading(types.ModuleType):
        def __getattr__(self, name):
            raise KeyboardInterrupt  # as if it arrived during `from cli import main`

    monkeypatch.setitem(sys.modules, "cli", Loading("cli"))
    with pytest.raises(SystemExit) as ended:
        ctmc.main()
    assert ended.value.code == 130 and capsys.readouterr().err == "interrupted\n"


def test_columns_zero_still_prints_the_verdict(monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "0")  # Rich would draw every line zero columns wide
    result = run(Path(__file__).resolve().parent.parent / "models", "check", "tracker_small",
                 "-q")
    assert result.exit_code == 0 and "holds: no violation" in result.stdout, result.output


@pytest.mark.parametrize("args", [["check", "tracker_small"],
                                  ["check", "mutation_reset_cur_on_prev_exit", "-q"],
                                  ["list"]], ids=["holds", "violated", "list"])
def test_a_reader_that_goes_away_ends_ctmc_with_141_not_a_verdict(args, tmp_path):
    """`ctmc check | head`: exit 1 would say a property is violated."""
    import subprocess
    import sys

    command = [sys.executable, str(Path(__file__).resolve().parent.parent / "cli.py"), *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=tmp_path) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before ctmc writes anything
        err = proc.stderr.read().decode()
    assert proc.returncode == 141 and "Traceback" not in err, err


def test_a_run_that_checks_no_property_says_so_in_its_verdict(tmp_path):
    (tmp_path / "no_props_spec.py").write_text(
        "from checker.lang import Int, Spec, require\n"
        "S = Spec('np', '')\n"
        "@S.build\n"
        "def _(m, p):\n"
        "    m.var('c', Int(0, 2), init=0)\n"
        "    @m.action()\n"
        "    def inc(s):\n"
        "        require(s.c < 2)\n"
        "        s.c = s.c + 1\n")
    (tmp_path / "m.toml").write_text('spec = "no_props_spec.py:S"\n[engine]\ndeadlock = false\n')
    result = run(tmp_path, "check", str(tmp_path / "m.toml"))
    assert result.exit_code == 0, result.output
    assert "checking no property (the model selects none, and deadlocks are not checked)" \
        in result.stdout
    assert "holds: no evaluation error in any reachable state, but the run checked no " \
        "property" in result.stdout
    with_deadlock = run(tmp_path, "check", str(tmp_path / "m.toml"), "--deadlock")
    assert "checking Deadlock" in with_deadlock.stdout

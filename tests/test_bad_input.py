"""Input that used to end in `internal error: ...` or in silence: each is now one line
saying what to change (exit 2), or progress and an inconclusive verdict (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checker import progress as progress_module
from tests.model_folders import one_error_line, run_cli

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def ctmc(*args: str):
    return run_cli(MODELS_DIR, *args)


@pytest.mark.parametrize("args, message", [
    (["--set", f"max_now={2**70}"],
     f"now ranges over 1..{2**70}, beyond the 64-bit integers the explicit engines store"),
    (["--set", "max_ts=99999999999999999999999"],
     "action arrive has 299,999,999,999,999,999,999,997 parameter instances (r: 3 values, "
     "c: 99,999,999,999,999,999,999,999 values); at most 1,000,000 can be traced"),
    (["--timeout", "nan"], "Invalid value for '--timeout': nan is not a number of seconds"),
    (["--timeout", "inf"], "Invalid value for '--timeout': inf is not a number of seconds"),
    (["--trace-out", ""], "--trace-out: '.' is not a file name"),
])
def test_check_refuses_with_one_line(args, message):
    assert message in one_error_line(ctmc("check", "tracker_small", *args))


@pytest.mark.parametrize("command", ["simulate", "bmc", "prove"])
def test_every_timeout_must_be_a_number_of_seconds(command):
    line = one_error_line(ctmc(command, "tracker_small", "--timeout", "nan"))
    assert "nan is not a number of seconds" in line


def test_a_trace_path_under_a_file_is_refused_before_the_search(tmp_path):
    (tmp_path / "plain").write_text("mine")
    line = one_error_line(ctmc("check", "mutation_reset_cur_on_prev_exit", "--trace-out",
                               str(tmp_path / "plain" / "t.itf.json")))
    assert line == f"error: --trace-out: {tmp_path / 'plain' / 't.itf.json'} lies under " \
                   f"{tmp_path / 'plain'}, which is a file"
    assert (tmp_path / "plain").read_text() == "mine"


SPEC_MODULES = {
    "raises": ("raise RuntimeError('boom')\n", "failed while being imported: {file}:1: "
                                               "RuntimeError: boom"),
    "quits": ("import sys\nsys.exit(3)\n", "failed while being imported: {file}:2: "
                                           "SystemExit(3)"),
    "syntax": ("def broken(:\n", "{file}:1: syntax error"),
}


@pytest.mark.parametrize("case", SPEC_MODULES)
def test_a_spec_module_that_fails_to_import_is_one_line(case, tmp_path, monkeypatch):
    source, message = SPEC_MODULES[case]
    module = f"user_spec_{case}"
    (tmp_path / f"{module}.py").write_text(source)
    (tmp_path / "m.toml").write_text(f'spec = "{module}:SPEC"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    line = one_error_line(ctmc("check", str(tmp_path / "m.toml")))
    assert message.format(file=f"{module}.py") in line, line


@pytest.mark.parametrize("ref", [":X", "spec:", "spec.tracker:", "a b:X"])
def test_a_spec_reference_that_is_not_module_attribute_is_one_line(ref, tmp_path):
    (tmp_path / "m.toml").write_text(f'spec = "{ref}"\n')
    line = one_error_line(ctmc("check", str(tmp_path / "m.toml")))
    assert f"spec reference {ref!r} is not module:attribute" in line


def test_check_stopped_by_its_timeout_is_inconclusive():
    result = ctmc("check", "log_driven_core", "--timeout", "0.001", "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "unknown" and report["complete"] is False
    assert "stopped by the timeout after 0.001 s" in report["stats"]["unknown"]
    assert report["stats"]["distinct_states"] >= 1


def test_simulate_stopped_by_its_timeout_is_inconclusive():
    result = ctmc("simulate", "log_driven_core", "--timeout", "0.001", "--runs", "100000",
                  "--json")
    assert result.exit_code == 3, result.output
    assert "stopped by the timeout" in json.loads(result.stdout)["stats"]["unknown"]


def test_a_big_machine_reports_progress_while_it_is_built_and_compiled(monkeypatch):
    """Tracing and compiling thousands of action instances takes a while: both say how
    far they are (here at every step, instead of every two seconds)."""
    monkeypatch.setattr(progress_module, "PROGRESS_SECONDS", 0.0)
    result = ctmc("check", "tracker_small", "--set", "max_ts=300", "--max-depth", "1")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert "building tracker: 600 of 907 action instances traced (66%)" in lines
    assert any(line.startswith("compiling tracker for NumPy: ") for line in lines)


SCALARSET_SPEC = '''
from checker.lang import Array, Int, Spec, require

SPEC = Spec("user_scalarset")

@SPEC.build
def _(m, p):
    m.var("x", Array(Int(0, 2), 2), init=0)
    m.var("first", Int(0, 1), init=0)
    m.scalarset("Node", 2, index={INDEX: 0})

    @m.action(i=range(2))
    def bump(s, i):
        require(s.x[i] < 2)
        s.x[i] = s.x[i] + 1
        if i == 0:  # node 0 is special: not a symmetry
            s.first = 1
'''


@pytest.mark.parametrize("index, args, message", [
    ('"nodes"', [], "scalarset Node: no state variable named 'nodes'"),
    ('"x"', ["--check-symmetry"],
     "scalarset Node is not a symmetry: swapping its members 0 and 1 changes the successors "
     "of action bump"),
])
def test_a_bad_scalarset_is_one_line(index, args, message, tmp_path, monkeypatch):
    module = f"user_scalarset_{len(args)}"
    (tmp_path / f"{module}.py").write_text(SCALARSET_SPEC.replace("INDEX", index))
    (tmp_path / "m.toml").write_text(f'spec = "{module}:SPEC"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    line = one_error_line(ctmc("check", str(tmp_path / "m.toml"), *args))
    assert message in line, line

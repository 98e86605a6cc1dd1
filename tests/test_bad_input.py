"""Input that used to end in `internal error: ...` or in silence: each is now one line
saying what to change (exit 2), or progress and an inconclusive verdict (exit 3)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
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
    (["--set", "requests=\u0663"], "parameter requests wants an integer, got '\u0663'"),
    (["--set", "requests=\uff13"], "parameter requests wants an integer, got '\uff13'"),
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


# (the spec builds in a small part of a second: a timeout shorter than that stops the
# build, test_a_spec_that_loops_while_it_builds_is_stopped_by_the_timeout)
def test_check_stopped_by_its_timeout_is_inconclusive():
    result = ctmc("check", "tracker_bench_large", "--no-symmetry", "--timeout", "1", "--json")
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "unknown" and report["complete"] is False
    assert "stopped by the timeout after 1 s" in report["stats"]["unknown"]
    assert report["stats"]["distinct_states"] >= 1


def test_simulate_stopped_by_its_timeout_is_inconclusive():
    result = ctmc("simulate", "log_driven_core", "--timeout", "1", "--runs", "10000000",
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
    # not asked for: every search that stores orbits checks the declaration first
    ('"x"', [], "scalarset Node is not a symmetry: swapping its members 0 and 1 changes the "
     "successors of action bump in an initial state; correct the declaration, or search "
     "every state with --no-symmetry"),
    ('"x"', ["--engine", "spark"], "scalarset Node is not a symmetry"),
])
def test_a_bad_scalarset_is_one_line(index, args, message, tmp_path, monkeypatch):
    module = "user_scalarset" + re.sub(r"\W", "_", "_".join([index, *args]))  # one per case
    (tmp_path / f"{module}.py").write_text(SCALARSET_SPEC.replace("INDEX", index))
    (tmp_path / "m.toml").write_text(f'spec = "{module}:SPEC"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    line = one_error_line(ctmc("check", str(tmp_path / "m.toml"), *args))
    assert message in line, line


OUT_OF_RANGE_SPEC = '''
from checker.lang import Array, Int, Spec, require

SPEC = Spec("user_out_of_range")

@SPEC.build
def _(m, p):
    m.var("a", Array(Int(0, 3), 3), init=0)
    m.var("i", Int(0, 5), init=0)

    @m.action()
    def step(s):
        require(s.i < 3)
        s.i = s.i + 1

    @m.action(k=range(2))
    def poke(s, k):
        require(s.i >= 2)
        ACCESS
'''


@pytest.mark.parametrize("engine", ["check", "simulate", "bmc"])
@pytest.mark.parametrize("access, message", [
    ("s.a[k] = s.a[s.i] + k",
     "action poke(k=0) (assigning a[0]) reads a[i] at index 3: a has indexes 0 to 2"),
    ("s.a[s.i] = k", "action poke(k=0) writes a[i] at index 3: a has indexes 0 to 2"),
])
def test_an_access_out_of_range_names_the_failing_action_the_index_and_the_bound(
        engine, access, message, tmp_path, monkeypatch):
    """The error belongs to the action that fails, one step after the last legal one:
    the trace says which, and the viewers show it as a step of its own."""
    module = f"user_oor_{len(access)}"
    (tmp_path / f"{module}.py").write_text(OUT_OF_RANGE_SPEC.replace("ACCESS", access))
    (tmp_path / "m.toml").write_text(f'spec = "{module}:SPEC"\n[engine]\ndeadlock = false\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    args = ["--seed", "3"] if engine == "simulate" else []
    result = ctmc(engine, str(tmp_path / "m.toml"), "--json", *args)
    assert result.exit_code == 2, result.output
    report = json.loads(result.stdout)["violation"]
    assert report["name"] == "EvalError" and report["message"] == message
    itf = json.loads(Path(report["trace_file"]).read_text())
    assert itf["#meta"]["violation"]["action"] == {"action": "poke", "params": {"k": 0}}
    assert [s["i"] for s in itf["states"]][-1] == 3  # the last legal state
    checked = ctmc("trace", "check", report["trace_file"])
    assert checked.exit_code == 0 and "violates EvalError" in checked.stdout, checked.output
    shown = ctmc("trace", "show", report["trace_file"]).stdout
    n = len(itf["states"]) - 1
    failing = shown[shown.index(f"Step {n + 1}: poke(k=0) fails"):]
    assert " ".join(failing.replace("│", " ").split()).startswith(
        f"Step {n + 1}: poke(k=0) fails ─")
    assert "violation: error EvalError: " + message in " ".join(
        failing.replace("│", " ").split())
    last_legal = shown[shown.index(f"Step {n}: step()"):shown.index(f"Step {n + 1}:")]
    assert f"then: poke(k=0) fails (step {n + 1})" in last_legal
    assert "violation:" not in last_legal


VIEW_SPEC = '''
from checker.lang import Int, Spec, require
from checker.views import Event, Table

SPEC = Spec("user_view")

@SPEC.build
def _(m, p):
    m.var("x", Int(0, 2), init=0)

    @m.action()
    def send(s):
        require(s.x < 2)
        s.x = s.x + 1

    def lanes(state):
        return LANES

    def tables(state):
        return TABLES

    def events(step):
        return EVENTS

    m.view(lanes, tables, events)

    @m.narrate
    def narration(NARRATE_ARGS):
        return NARRATION
'''
VIEW_OK = {"LANES": '["n1", "n2"]', "TABLES": '{"n1": [Table.of("t", ["x"], [[state["x"]]])]}',
           "EVENTS": '[Event("n1", "send", ("n2",))]', "NARRATE_ARGS": "a, p, b, c",
           "NARRATION": '"sends"'}


@pytest.mark.parametrize("change, message", [
    ({"EVENTS": '[Event("n1", "send", "n2")]'},
     "the view's events (user_view_0.py:22) on step send() from the initial state: "
     "Event(source='n1', label='send', targets='n2'): targets must be a tuple of lane "
     "names, got 'n2' (a string: write (name,))"),
    ({"EVENTS": '[Event("n3", "send")]'}, "source 'n3' is not one of the lanes ['n1', 'n2']"),
    ({"EVENTS": '[Event("n1", "send", ("n9",))]'}, "target 'n9' is not one of the lanes"),
    ({"EVENTS": '["send"]'}, "events must return a list of Event, got 'send'"),
    ({"LANES": '["n1", 2]'}, "the view's lanes (user_view_4.py:16) on the initial state: a "
                             "lane must be a non-empty string, got 2"),
    ({"LANES": '"n1"'}, "lanes must be a list of names, got 'n1'"),
    ({"TABLES": '{"n7": []}'}, "tables name lane 'n7', which is not one of the lanes"),
    ({"TABLES": '{"n1": [Table.of("t", ["x", "y"], [[1]])]}'},
     "table 't' has 2 columns but a row of 1 cells: [1]"),
    ({"TABLES": '{"n1": Table.of("t", ["x"], [])}'}, "tables['n1'] must be a list of Table"),
    ({"NARRATION": "3"}, "the narration (user_view_9.py:27) on step send() from the initial "
                         "state: it must return a string, got 3"),
    ({"NARRATION": "state"}, "the narration (user_view_10.py:27) fails on step send() from "
                             "the initial state: NameError: name 'state' is not defined"),
    ({"NARRATE_ARGS": "a, p"}, "the narration (user_view_11.py:27) must take 4 arguments"),
    ({"TABLES": '{"n1": [Table.of("t", [], [[]])]}'}, "table 't' has no columns"),
    ({"TABLES": '{"n1": [Table.of("t", ["k", "v"], [[[state["x"]], 1]])]}'},
     "table 't': a row's first cell names the row, so it must be a value like a number or a "
     "string, got [0]"),
])
def test_a_malformed_view_or_narration_is_refused_when_the_spec_builds(
        change, message, tmp_path, monkeypatch, request):
    module = f"user_view_{request.node.callspec.indices['change']}"
    source = VIEW_SPEC
    for key, value in {**VIEW_OK, **change}.items():
        source = source.replace(key, value)
    (tmp_path / f"{module}.py").write_text(source)
    (tmp_path / "m.toml").write_text(f'spec = "{module}:SPEC"\n[engine]\ndeadlock = false\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    line = one_error_line(ctmc("check", "m.toml"))
    assert line.startswith("error: spec user_view: the ") and message in line, line


def test_a_well_formed_view_builds(tmp_path, monkeypatch):
    source = VIEW_SPEC
    for key, value in VIEW_OK.items():
        source = source.replace(key, value)
    (tmp_path / "user_view_ok.py").write_text(source)
    (tmp_path / "m.toml").write_text('spec = "user_view_ok:SPEC"\n[engine]\ndeadlock = false\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert ctmc("check", "m.toml", "-q").exit_code == 0


# --- hostile or huge input: one line each, nothing read that should not be ---------------

@pytest.fixture
def a_trace(tmp_path, monkeypatch) -> Path:
    """A real counterexample's ITF file, in tmp_path (the working folder)."""
    monkeypatch.chdir(tmp_path)
    assert ctmc("check", "mutation_reset_cur_on_prev_exit", "-q", "--trace-out",
                "t.itf.json").exit_code == 1
    return tmp_path / "t.itf.json"


def _edited(trace: Path, name: str, change: Callable[[dict], object]) -> Path:
    doc = json.loads(trace.read_text())
    change(doc)
    out = trace.with_name(name)
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("command", ["show", "html", "check"])
def test_a_trace_input_that_is_not_a_regular_file_is_refused_unread(command, tmp_path,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "fifo")  # reading it would wait forever
    for source, kind in (("/dev/zero", "a character device"), ("fifo", "a FIFO")):
        line = one_error_line(ctmc("trace", command, source))
        assert line == f"error: {source}: not a regular file ({kind}); give a trace file"
    assert not list(tmp_path.glob("*.html"))


def test_a_trace_file_bigger_than_the_limit_is_refused_before_it_is_read(a_trace):
    big = _edited(a_trace, "big.itf.json", lambda d: d["#meta"].update(pad="x" * 2**21))
    line = one_error_line(ctmc("trace", "html", str(big), "--max-mb", "1"))
    assert line == f"error: {big}: 2 MB, above the limit of 1 MB (raise it with --max-mb)"
    assert ctmc("trace", "check", str(big), "--max-mb", "3").exit_code == 0


def test_a_trace_longer_than_the_limit_is_refused_and_the_limit_can_be_raised(a_trace):
    steps = len(json.loads(a_trace.read_text())["states"]) - 1
    line = one_error_line(ctmc("trace", "html", str(a_trace), "--max-steps", str(steps - 1)))
    assert line == (f"error: {a_trace}: {steps} steps, above the limit of {steps - 1} (raise "
                    "it with --max-steps)")
    assert not a_trace.with_suffix("").with_suffix(".html").exists()
    done = ctmc("trace", "html", str(a_trace), "--max-steps", str(steps))
    assert done.exit_code == 0, done.output


def test_json_nested_too_deeply_is_one_line(a_trace):
    text = a_trace.read_text().replace('"#meta": {', '"#meta": {"deep": '
                                       + "[" * 100_000 + "]" * 100_000 + ",", 1)
    (a_trace.parent / "deep.itf.json").write_text(text)
    shallow = _edited(a_trace, "nested.itf.json",
                      lambda d: d["#meta"].update(deep=json.loads("[" * 70 + "]" * 70)))
    for path in (a_trace.parent / "deep.itf.json", shallow):
        line = one_error_line(ctmc("trace", "html", str(path)))
        assert line.startswith(f"error: {path}: JSON nested ") and "64" in line, line


@pytest.mark.parametrize("change, message", [
    (lambda d: (d["vars"].append("ghost"), [s.update(ghost=1) for s in d["states"]]),
     "\"vars\" names 'ghost', which spec tracker does not declare"),
    (lambda d: d["states"][2].update(stray=1),
     "state 2 has 'stray', which is not a variable of spec tracker"),
])
def test_trace_check_refuses_a_variable_the_spec_does_not_have(change, message, a_trace):
    edited = _edited(a_trace, "edited.itf.json", change)
    assert one_error_line(ctmc("trace", "check", str(edited))) == f"error: {edited}: {message}"


def test_an_absurdly_long_model_name_is_one_short_line():
    line = one_error_line(ctmc("check", "x" * 5000))
    assert line.startswith(f"error: unknown model '{'x' * 40}... (5,000 characters)': no such "
                           "file") and len(line) < 300


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_checkpoint_every_must_be_a_number_of_seconds(value, tmp_path):
    line = one_error_line(ctmc("check", "tracker_small", "--checkpoint", str(tmp_path / "c"),
                               "--checkpoint-every", value))
    assert f"Invalid value for '--checkpoint-every': {value} is not a number of seconds" in line
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("text, message", [
    ('spec = "tracker"\n[params]\nrequests = ' + "9" * 5000 + "\n",
     "malformed TOML: a number with too many digits"),
    ('spec = "tracker"\nx = ' + "[" * 5000 + "]" * 5000 + "\n",
     "malformed TOML: arrays or tables nested too deeply"),
    ('spec = "tracker"\nx = ' + "{a=" * 5000 + "1" + "}" * 5000 + "\n",
     "malformed TOML: arrays or tables nested too deeply"),
], ids=["long number", "nested arrays", "nested tables"])
def test_a_model_file_python_cannot_parse_is_one_line(text, message, tmp_path):
    model = tmp_path / "m.toml"
    model.write_text(text)
    for command in ("check", "gate"):
        result = ctmc(command, str(model))
        assert result.exit_code == 2 and f"{model}: {message}" in result.output, result.output


@pytest.mark.parametrize("change, message", [
    (lambda text: text.replace('"index": 1,', '"index": ' + "9" * 5000 + ",", 1),
     "not JSON ctmc reads: a number with too many digits"),
    (lambda text: text.replace('"engine": "bfs"', '"engine": "b\\ud800"', 1),
     "a string holds half a UTF-16 surrogate pair"),
    (lambda text: re.sub(r'"action": "[^"]*"', '"action": 5', text, count=1),
     "step 1: the action must be a name, got 5"),
], ids=["long number", "lone surrogate", "action not a name"])
def test_a_trace_python_cannot_read_or_print_is_one_line(change, message, a_trace):
    text = a_trace.read_text()
    bad = a_trace.with_name("bad.itf.json")
    bad.write_text(change(text))
    assert bad.read_text() != text
    for command in ("show", "check", "html"):
        line = one_error_line(ctmc("trace", command, str(bad)))
        assert line.startswith(f"error: {bad}: {message}"), line


def test_trace_show_prints_a_traces_control_characters_as_escapes(a_trace):
    hostile = _edited(a_trace, "hostile.itf.json", lambda d: (
        d["#meta"].update(model="\x1b[31mRED\x1b[0m"),
        d["#meta"]["violation"].update(message="\x1b]0;retitled\x07")))
    result = ctmc("trace", "show", str(hostile))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b[31mRED\\x1b[0m" in result.output and "\\x1b]0;retitled\\x07" in result.output


@pytest.mark.parametrize("command", [["infer", "--workers", "1"], ["prove", "--engine", "pdr",
                                                                   "--mine"]])
def test_values_beyond_64_bits_are_one_line_for_the_state_searches_of_proofs(command):
    """(pdr finds them when it starts mining, after its header)"""
    result = ctmc(command[0], "tracker_small", *command[1:], "--set", f"max_now={10**20}")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1] == (
        f"error: the spec's expressions reach values from -1 to {10**20:,}, beyond the "
        "64-bit integers a search of states computes with (check, simulate, infer, --mine); "
        "lower the parameter that bounds them")


def test_a_model_path_that_is_not_a_file_says_what_it_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder.toml").mkdir()
    os.mkfifo(tmp_path / "fifo.toml")  # reading it would wait forever
    for given, kind in (("folder.toml", "a folder"), ("fifo.toml", "a FIFO"),
                        ("/dev/zero", "a character device")):
        assert one_error_line(ctmc("check", given)) == f"error: {given}: {kind}, not a model file"
    (tmp_path / "tracker_small").mkdir()  # a folder named like a model: the model is meant
    assert ctmc("check", "tracker_small", "-q").exit_code == 0


def test_a_checkpoint_folder_under_a_file_names_the_option(tmp_path):
    (tmp_path / "afile").write_text("mine")
    line = one_error_line(ctmc("check", "tracker_small", "--checkpoint",
                               str(tmp_path / "afile" / "sub")))
    assert line == f"error: --checkpoint: cannot write in {tmp_path / 'afile' / 'sub'}: " \
        "Not a directory"
    assert (tmp_path / "afile").read_text() == "mine"


def test_more_workers_than_descriptors_for_their_pipes_is_one_line(monkeypatch):
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda which: (256, 4096))
    line = one_error_line(ctmc("check", "tracker_small", "--workers", "12"))
    assert line == ("error: --workers 12: their pipes need 312 open files, and this process "
                    "may open 256 (ulimit -n); use at most 9 workers, or raise the limit")
    assert ctmc("check", "tracker_small", "-q", "--workers", "9").exit_code == 0


@pytest.mark.parametrize("args", [
    ["check", "tracker_small", "--checkpoint", ""],
    ["check", "tracker_small", "--engine", "spark", "--run-dir", " "],
    ["gate", "tracker_small", "--trace-dir", ""],
    ["gate", "tracker_small", "--html", ""],
    ["diff", "HEAD", "tracker_small", "--cache", ""],
], ids=["checkpoint", "run-dir", "trace-dir", "html", "cache"])
def test_an_empty_folder_name_is_refused_not_taken_for_none_or_here(args):
    option = args[-2]
    assert one_error_line(ctmc(*args)) == \
        f"error: Invalid value for '{option}': an empty name is not a folder"


@pytest.mark.parametrize("change, message", [
    (lambda d: d["#meta"]["params"].update(requests="x"),
     "#meta: parameter requests wants an integer, got 'x'"),
    (lambda d: d["#meta"].update(spec_ref="nope.mod:X"),
     "cannot import spec module 'nope.mod': No module named 'nope'"),
], ids=["a parameter", "the spec"])
def test_a_bad_meta_names_the_trace_once(change, message, a_trace):
    edited = _edited(a_trace, "edited.itf.json", change)
    assert one_error_line(ctmc("trace", "check", str(edited))) == f"error: {edited}: {message}"


QUITTING_SPEC = '''\
import sys
from checker.lang import Int, Spec, require
S = Spec("quits", "")
@S.build
def _(m, p):
    m.var("c", Int(0, 2), init=0)
    if p.where == "build":
        sys.exit(0)
    @m.action()
    def inc(s):
        if p.where == "action":
            sys.exit(0)
        require(s.c < 2)
        s.c = s.c + 1
    @m.invariant
    def Ok(s):
        if p.where == "invariant":
            sys.exit(0)
        return s.c < 3
S.param("where", "action")
'''


@pytest.mark.parametrize("where, message", [
    ("build", "spec quits: SystemExit: 0 (quits_spec.py:8)"),
    ("action", "inc(): SystemExit: 0 (quits_spec.py:12)"),
    ("invariant", "invariant Ok: SystemExit: 0 (quits_spec.py:18)"),
])
def test_spec_code_that_quits_is_one_line_not_a_silent_exit(where, message, tmp_path):
    """sys.exit(0) in a spec's code would end ctmc with exit 0 and no verdict."""
    (tmp_path / "quits_spec.py").write_text(QUITTING_SPEC)
    model = tmp_path / "m.toml"
    model.write_text(f'spec = "quits_spec.py:S"\n[params]\nwhere = "{where}"\n')
    shown = message.replace("quits_spec.py", str(tmp_path / "quits_spec.py"))
    assert one_error_line(ctmc("check", str(model))) == f"error: {shown}"
    result = ctmc("gate", str(model))  # a gate reports it and goes on
    assert result.exit_code == 2 and "1 models, 0 as expected, 1 surprise" in result.output


@pytest.mark.parametrize("args, message", [
    (["simulate", "tracker_small", "--seed", "-1"], "Invalid value for '--seed': -1 is not in "
                                                    "the range x>=0."),
    (["infer", "tracker_small", "--seed", "-5"], "Invalid value for '--seed': -5 is not in "
                                                 "the range x>=0."),
    (["check", "tracker_small", "--engine", "spark", "--master", ""],
     "the Spark master is empty (expected local[N], local-cluster[N,CORES,MB], "
     "spark://HOST:PORT, yarn or k8s://URL)"),
    (["check", "tracker_small", "--engine", "spark", "--master", "local[0]"],
     "Spark master local[0]: a local master needs at least one core"),
])
def test_seeds_and_masters_are_refused_in_one_line(args, message):
    assert one_error_line(ctmc(*args)) == f"error: {message}"


@pytest.mark.parametrize("value", ["abc", "nan", "-3", "0"])
def test_a_bad_executor_wait_is_one_line_before_spark_starts(value, monkeypatch):
    monkeypatch.setenv("CTMC_SPARK_EXECUTOR_WAIT", value)
    line = one_error_line(ctmc("check", "tracker_small", "--engine", "spark"))
    assert line == f"error: $CTMC_SPARK_EXECUTOR_WAIT is {value!r}, not a number of seconds"


def test_trace_show_interactive_with_standard_input_closed_is_one_line(a_trace):
    import subprocess
    import sys

    cli = Path(__file__).resolve().parent.parent / "cli.py"
    done = subprocess.run(["bash", "-c", f'"{sys.executable}" "{cli}" trace show -i '
                           f'"{a_trace}" <&-'], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("error: --interactive waits for Enter on standard input, which "
                           "is closed\n")


def test_what_a_spec_prints_goes_to_stderr_so_json_stays_json(tmp_path):
    (tmp_path / "chatty_spec.py").write_text(
        "from checker.lang import Int, Spec\n"
        "print('hello from the import')\n"
        "S = Spec('chatty', '')\n"
        "@S.build\n"
        "def _(m, p):\n"
        "    print('hello from the build')\n"
        "    m.var('c', Int(0, 1), init=0)\n"
        "    @m.action()\n"
        "    def inc(s):\n"
        "        s.c = 1\n")
    model = tmp_path / "m.toml"
    model.write_text('spec = "chatty_spec.py:S"\n[engine]\ndeadlock = false\n')
    result = ctmc("check", str(model), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["outcome"] == "holds"
    assert "hello from the import" in result.stderr and "hello from the build" in result.stderr


def test_a_helper_named_like_a_python_module_beside_the_spec_does_not_replace_it(tmp_path):
    """The model's folder is first on the import path only while the spec imports (in a
    process of its own: this one imported Python's modules long ago)."""
    import subprocess
    import sys

    folder = tmp_path / "project"
    folder.mkdir()
    examples = Path(__file__).resolve().parent.parent / "examples"
    (folder / "my_mutex_spec.py").write_text((examples / "mutex" / "mutex.py").read_text())
    (folder / "numbers.py").write_text("LIMIT = 3\n")  # numpy imports Python's numbers
    (folder / "fractions.py").write_text("X = 1\n")  # the simulator imports Python's
    model = folder / "m.toml"
    model.write_text('spec = "my_mutex_spec:MUTEX"\n[engine]\ndeadlock = false\n')
    cli = Path(__file__).resolve().parent.parent / "cli.py"
    for command in (["check"], ["simulate", "--runs", "3"]):
        done = subprocess.run([sys.executable, str(cli), *command, str(model), "-q"],
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr


LOOPING_SPEC = '''\
from checker.lang import Int, Spec, require
S = Spec("loops", "")
@S.build
def _(m, p):
    m.var("c", Int(0, 2), init=0)
    @m.action()
    def inc(s):
        try:
            while True:  # a spec's bug; its own except cannot swallow the time limit
                pass
        except Exception:
            pass
'''


@pytest.mark.parametrize("command", ["check", "simulate", "bmc", "prove"])
def test_a_spec_that_loops_while_it_builds_is_stopped_by_the_timeout(command, tmp_path):
    (tmp_path / "loops_spec.py").write_text(LOOPING_SPEC)
    model = tmp_path / "m.toml"
    model.write_text('spec = "loops_spec.py:S"\n')
    result = ctmc(command, str(model), "--timeout", "0.5")
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines()[-1] == (
        "unknown: timeout (0.5 s) while loading the model and building its spec; this is "
        "not a proof")

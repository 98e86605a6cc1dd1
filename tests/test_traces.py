"""ITF traces: writing, reading, replaying (and refusing) them, and the viewer."""

from __future__ import annotations

import builtins
import copy
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from checker.backends.scalar import ScalarMachine
from checker.errors import TraceError
from checker.lang import Array, Bool, Enum, If, Int, Record, Spec, require
from checker.lang.machine import Machine
from checker.traces.itf import (
    FORMAT_URL,
    from_itf_value,
    read_itf,
    to_itf_value,
    trace_to_itf,
    write_trace,
)
from checker.traces.replay import check_trace, load_trace
from checker.traces.trace import Trace
from checker.traces.view import show_trace, show_trace_interactive
from checker.views import Event, Table, View

COUNTER = Spec("counter")
COUNTER.param("limit", 5)


@COUNTER.build
def _counter(m, p):
    m.var("x", Int(0, p.limit), init=0)

    @m.action()
    def inc(s):
        require(s.x < p.limit)
        s.x = s.x + 1

    @m.action()
    def reset(s):
        require(s.x == p.limit)
        s.x = 0

    @m.invariant
    def NotThree(s):  # noqa: N802 - property names read like TLA+
        return s.x != 3


Color = Enum("Color", "red green blue")
MIX = Spec("mix")
MIX.param("n", 2)
MIX.mutation("sloppy", "close without recording the first element")


@MIX.build
def _mix(m, p):
    m.var("color", Color, init=Color.red)
    m.var("a", Array(Int(0, 3), p.n), init=0)
    m.var("rec", Record("Rec", lai=Int(0, 3), closed=Bool()), init={"lai": 0, "closed": False})
    m.var("ticks", Int(0, 9), init=0, ghost=True)

    @m.action(i=range(p.n), col=list(Color))
    def bump(s, i, col):
        require(s.a[i] < 3)
        s.a[i] = s.a[i] + 1
        s.color = col
        s.ticks = If(s.ticks < 9, s.ticks + 1, s.ticks)

    @m.action()
    def close(s):
        require(~s.rec.closed)
        s.rec.closed = True
        s.rec.lai = 0 if m.mutated("sloppy") else s.a[0]

    @m.step_invariant
    def LaiKept(s, t):  # noqa: N802
        return If(s.rec.closed, t.rec.lai == s.rec.lai, True)

    @m.narrate
    def _story(action, params, before, after):
        return f"{action} with {params}: a was {before['a']}, is {after['a']}"


def walk(machine: Machine, labels: list[str], violation: dict | None = None) -> Trace:
    """The trace taking the action instances with these labels from the first initial state."""
    scalar = ScalarMachine(machine)
    by_label = {a.label: a for a in machine.actions}
    states, actions = [machine.init_states[0]], [None]
    for label in labels:
        nxt = scalar.step(states[-1], by_label[label])
        assert nxt is not None, f"{label} is not enabled"
        states.append(nxt)
        actions.append(by_label[label])
    return Trace(machine, states, actions, violation=violation or {},
                 meta={"engine": "test", "model": "models/x.toml"})


@pytest.fixture
def mix_trace() -> Trace:
    return walk(MIX.instantiate({"n": 2}), ["bump(i=1, col=green)", "bump(i=0, col=blue)",
                                            "close()", "bump(i=1, col=red)"])


@pytest.fixture
def counter_trace() -> Trace:
    violation = {"kind": "invariant", "name": "NotThree", "message": "x is 3"}
    return walk(COUNTER.instantiate(), ["inc()"] * 3, violation)


def labels(trace: Trace) -> list[str | None]:
    return [a.label if a else None for a in trace.actions]


# --- ITF ------------------------------------------------------------------

def test_itf_document_shape(mix_trace: Trace):
    doc = trace_to_itf(mix_trace)
    meta = doc["#meta"]
    assert meta["format"] == "ITF" and meta["format-description"] == FORMAT_URL
    assert meta["spec"] == "mix" and meta["spec_ref"] == "tests.test_traces:MIX"
    assert meta["params"] == {"n": 2} and meta["mutations"] == []
    assert meta["engine"] == "test" and meta["model"] == "models/x.toml"
    assert doc["vars"] == ["color", "a", "rec", "ticks"]
    assert doc["states"][0] == {"#meta": {"index": 0, "action": None, "params": {}},
                                "color": "red", "a": [0, 0],
                                "rec": {"lai": 0, "closed": False}, "ticks": 0}
    assert doc["states"][1]["#meta"] == {"index": 1, "action": "bump",
                                         "params": {"i": 1, "col": "green"}}
    assert doc["states"][3]["rec"] == {"lai": 1, "closed": True}


def test_round_trip(tmp_path: Path, mix_trace: Trace):
    path = tmp_path / "deep" / "dir" / "t.itf.json"
    write_trace(mix_trace, path)
    text = path.read_text()
    write_trace(mix_trace, path)
    assert path.read_text() == text, "writing is deterministic"
    assert [p.name for p in path.parent.iterdir()] == ["t.itf.json"], "no temp file left"
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask, "usual permissions, not mkstemp's"
    assert read_itf(path) == json.loads(text) == trace_to_itf(mix_trace)
    loaded = load_trace(path)
    assert loaded.states == mix_trace.states
    assert [a.id if a else None for a in loaded.actions] == \
        [a.id if a else None for a in mix_trace.actions]
    assert loaded.meta == {"engine": "test", "model": "models/x.toml"}
    assert trace_to_itf(loaded) == trace_to_itf(mix_trace)


def test_round_trip_with_mutation_and_given_machine(mix_trace: Trace):
    machine = MIX.instantiate({"n": 2}, mutations=["sloppy"])
    trace = walk(machine, ["bump(i=0, col=red)", "close()"])
    doc = trace_to_itf(trace)
    assert doc["#meta"]["mutations"] == ["sloppy"]
    assert load_trace(doc).machine.mutations == ("sloppy",)
    assert load_trace(doc).states == trace.states
    # the same trace does not replay against the unmutated spec
    with pytest.raises(TraceError, match=r"step 2: close\(\) leads to a different state: "
                                         r"rec.lai is 1, trace says 0"):
        load_trace(doc, MIX.instantiate({"n": 2}))


def test_bigint_values():
    assert to_itf_value([2**60, -(2**53), 5, True]) == \
        [{"#bigint": str(2**60)}, {"#bigint": str(-(2**53))}, 5, True]
    assert from_itf_value(to_itf_value({"v": [2**60, 7]}), "x") == {"v": [2**60, 7]}
    with pytest.raises(TraceError, match="here: bad #bigint"):
        from_itf_value({"#bigint": "1.5"}, "here")


# --- refusing bad traces ----------------------------------------------------

def refused(doc: dict) -> str:
    with pytest.raises(TraceError) as info:
        load_trace(doc)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_refuses_tampered_state(counter_trace: Trace):
    doc = trace_to_itf(counter_trace)
    doc["states"][2]["x"] = 3
    assert refused(doc) == "trace: step 2: inc() leads to a different state: x is 2, trace says 3"


def test_refuses_unknown_action(counter_trace: Trace):
    doc = trace_to_itf(counter_trace)
    doc["states"][1]["#meta"]["action"] = "jump"
    assert refused(doc) == "trace: step 1: unknown action 'jump' (known: inc, reset)"


def test_refuses_disabled_action(counter_trace: Trace):
    doc = trace_to_itf(counter_trace)
    doc["states"][3]["#meta"]["action"] = "reset"
    assert refused(doc) == "trace: step 3: reset() is not enabled"


def test_refuses_unknown_parameters(mix_trace: Trace):
    doc = trace_to_itf(mix_trace)
    doc["states"][1]["#meta"]["params"] = {"i": 1, "col": "purple"}
    assert refused(doc) == 'trace: step 1: bump(i=1, col="purple") is not an action instance of mix'
    doc["states"][1]["#meta"]["params"] = {"i": True, "col": "green"}
    assert "is not an action instance" in refused(doc), "true is not the parameter 1"


def test_refuses_bad_initial_state_and_values(counter_trace: Trace):
    doc = trace_to_itf(counter_trace)
    doc["states"][0]["x"] = 1
    assert refused(doc) == ("trace: state 0 is not an initial state of counter: "
                            "x is 0, trace says 1")
    doc["states"][0]["x"] = 9
    assert refused(doc) == "trace: state 0.x: 9 is outside Int(0..5)"
    doc["states"][0]["x"] = "zero"
    assert "expected an int" in refused(doc)


def test_refuses_unknown_spec(counter_trace: Trace):
    doc = trace_to_itf(counter_trace)
    doc["#meta"]["spec_ref"] = "tests.no_such_module:X"
    assert "cannot import spec module" in refused(doc)
    doc["#meta"]["spec_ref"] = "tests.test_traces:COUNTER"
    doc["#meta"]["params"] = {"width": 3}
    assert "has no parameter 'width'" in refused(doc)


def test_foreign_trace_without_action_meta(mix_trace: Trace):
    doc = trace_to_itf(mix_trace)
    for state in doc["states"]:
        del state["#meta"]
    loaded = load_trace(doc, mix_trace.machine)
    assert loaded.states == mix_trace.states
    assert labels(loaded) == labels(mix_trace)
    doc["states"][2]["a"] = [3, 3]
    with pytest.raises(TraceError, match=r"step 2: no action leads to the next state "
                                         r"\(enabled: bump\(i=0, col=red\), "):
        load_trace(doc, mix_trace.machine)


@pytest.mark.parametrize("text, problem", [
    ('{"vars": [], "states": [', "not JSON: Expecting value at line 1 column 25"),
    ("[1, 2]", "not an ITF trace: the top level is not a JSON object"),
    ('{"vars": ["x"]}', "not an ITF trace: missing 'states'"),
    ('{"states": [{}]}', "not an ITF trace: missing 'vars'"),
    ('{"vars": ["x"], "states": []}', '"states" is not a non-empty list'),
    ('{"vars": ["x"], "states": [{"x": 0}, 3]}', "state 1 is not an object"),
    ('{"vars": ["x"], "states": [{"y": 0}]}', "state 0 lacks x"),
    ('{"vars": ["x"], "states": [{"x": 0}]}', '"#meta" names no spec'),
])
def test_malformed_files(tmp_path: Path, text: str, problem: str):
    path = tmp_path / "bad.itf.json"
    path.write_text(text)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == f"{path}: {problem}" + \
        (" (spec_ref or spec)" if "names no spec" in problem else "")


def test_unreadable_file(tmp_path: Path):
    with pytest.raises(TraceError, match=r"missing.json: cannot read: No such file"):
        read_itf(tmp_path / "missing.json")


# --- check_trace ------------------------------------------------------------

def test_check_trace_reports_violations(tmp_path: Path, counter_trace: Trace, mix_trace: Trace):
    path = tmp_path / "counter.itf.json"
    write_trace(counter_trace, path)
    trace, violated = check_trace(path)
    assert violated == ["NotThree"] and len(trace) == 3
    assert trace.violation == counter_trace.violation
    assert check_trace(trace_to_itf(walk(counter_trace.machine, ["inc()"])))[1] == []
    sloppy = walk(MIX.instantiate(mutations=["sloppy"]), ["bump(i=0, col=red)", "close()",
                                                           "bump(i=0, col=red)"])
    assert check_trace(trace_to_itf(sloppy))[1] == []
    assert check_trace(trace_to_itf(mix_trace))[1] == []


def test_check_trace_refuses_a_deadlock_it_does_not_show(counter_trace: Trace):
    deadlock = {"kind": "deadlock", "name": "Deadlock", "message": "no action is enabled"}
    trace = walk(counter_trace.machine, ["inc()"] * 2, deadlock)
    with pytest.raises(TraceError, match=r"claims Deadlock is violated at its last step "
                                         r"\(step 2\), but its replay violates nothing there"):
        check_trace(trace_to_itf(trace))


def test_check_trace_refuses_a_claim_its_replay_does_not_confirm(counter_trace: Trace):
    """Edits that leave a replayable trace but no longer the counterexample it claims:
    the violated property renamed, the last state deleted, the parameters changed."""
    doc = trace_to_itf(counter_trace)
    renamed = copy.deepcopy(doc)
    renamed["#meta"]["violation"]["name"] = "NotFour"
    with pytest.raises(TraceError, match="claims NotFour is violated at its last step "
                                         r"\(step 3\), but its replay violates NotThree"):
        check_trace(renamed)
    shortened = copy.deepcopy(doc)
    shortened["states"].pop()
    with pytest.raises(TraceError, match=r"claims NotThree .* violates nothing there"):
        check_trace(shortened)
    other_params = copy.deepcopy(doc)
    other_params["#meta"]["params"]["limit"] = 2
    with pytest.raises(TraceError, match=r"state 3\.x: 3 is outside Int\(0\.\.2\)"):
        check_trace(other_params)


# --- the viewer ---------------------------------------------------------------

def render(trace: Trace, **kwargs) -> tuple[str, str]:
    """The viewer's plain text and its text with ANSI styles."""
    console = Console(record=True, width=120, force_terminal=True, color_system="standard")
    show_trace(trace, console, **kwargs)
    styled = console.export_text(styles=True, clear=False)
    return console.export_text(), styled


def test_viewer_shows_actions_changes_and_narration(mix_trace: Trace):
    plain, styled = render(mix_trace)
    for text in ("mix", "n=2", "Step 0: initial state", "Step 1: bump(i=1, col=green)",
                 "Step 3: close()", "Step 4: bump(i=1, col=red)", "steps      4",
                 "engine     test", "ticks (ghost)", "{lai: 0, closed: false}",
                 "bump with {'i': 1, 'col': 'green'}: a was [0, 0], is [0, 1]",
                 "[0, 0] -> [0, 1]", "red -> green",
                 "{lai: 0, closed: false} -> {lai: 1, closed: true}"):
        assert text in plain, text
    step3 = plain[plain.index("Step 3"):plain.index("Step 4")]
    assert "rec" in step3 and "color" not in step3, "only changed variables"
    assert "\x1b[1;33m1\x1b[0m" in styled, "changed element highlighted"
    assert "violation  none" in plain


def test_viewer_full_step_and_violation(counter_trace: Trace, mix_trace: Trace):
    plain, _ = render(mix_trace, full=True)
    step3 = plain[plain.index("Step 3"):plain.index("Step 4")]
    assert "color" in step3 and "ticks (ghost)" in step3
    plain, styled = render(counter_trace, step=2)
    assert "Step 2: inc()" in plain and "Step 1" not in plain and "Trace" not in plain
    assert "1 -> 2" in plain
    plain, styled = render(counter_trace)
    last = plain[plain.index("Step 3"):]
    assert "violation: invariant NotThree: x is 3" in last
    assert "\x1b[1;31mviolation: " in styled
    with pytest.raises(TraceError, match="step 9 is out of range: the trace has 3 steps"):
        render(counter_trace, step=9)


def test_viewer_interactive_quits(monkeypatch: pytest.MonkeyPatch, counter_trace: Trace):
    answers = iter(["", "q"])
    monkeypatch.setattr(builtins, "input", lambda *args: next(answers))
    console = Console(record=True, width=120)
    show_trace_interactive(counter_trace, console)
    plain = console.export_text()
    assert "Step 1: inc()" in plain and "Step 2: inc()" not in plain
    assert plain.count("Enter: next step, q: quit") == 2


def test_viewer_survives_a_failing_narrator(counter_trace: Trace):
    machine = copy.copy(counter_trace.machine)
    machine.narrator = lambda *args: 1 / 0
    trace = Trace(machine, counter_trace.states, counter_trace.actions)
    plain, _ = render(trace)
    assert "(narrator failed: ZeroDivisionError: division by zero)" in plain


# --- the viewer through a protocol view ------------------------------------------------

def _viewed(trace: Trace, view: View) -> Trace:
    machine = copy.copy(trace.machine)
    machine.view = view
    return Trace(machine, trace.states, trace.actions, violation=trace.violation)


COUNTER_VIEW = View(
    lanes=lambda s: ["left", "right"],
    tables=lambda s: {"left": [Table.of("counter", ["name", "x"], [["x", s["x"]]])],
                      "right": [Table.of("parity", ["name", "even"], [["x", s["x"] % 2 == 0]])]},
    events=lambda step: [Event("left", f"x becomes {step.after['x']}", ("right",))])


def test_a_view_opens_with_each_lanes_tables_and_shows_what_each_step_changed(
        counter_trace: Trace):
    plain, styled = render(_viewed(counter_trace, COUNTER_VIEW))
    start = plain[plain.index("Step 0"):plain.index("Step 1")]
    assert "left" in start and "counter" in start and "right" in start and "parity" in start
    step2 = plain[plain.index("Step 2"):plain.index("Step 3")]
    assert "left -> right: x becomes 2" in step2
    assert "counter" in step2 and "parity" in step2 and "yes" in step2  # 1 -> 2: both change
    assert "\x1b[1;33m2\x1b[0m" in styled, "the changed cell is highlighted"
    last = plain[plain.index("Step 3"):]
    assert "violation: invariant NotThree: x is 3" in last and "it reads: x = 3" in last


def test_raw_keeps_the_variables_and_a_failing_view_is_a_note(counter_trace: Trace):
    plain, _ = render(_viewed(counter_trace, COUNTER_VIEW), raw=True)
    assert "parity" not in plain and "1 -> 2" in plain
    broken = View(lanes=lambda s: 1 / 0, tables=lambda s: {})
    plain, _ = render(_viewed(counter_trace, broken))
    assert "(the view failed: ZeroDivisionError: division by zero)" in plain
    assert "Step 3: inc()" in plain and "violation: invariant NotThree" in plain

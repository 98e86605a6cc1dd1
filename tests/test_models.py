"""Model files: loading, validation (one line naming file and key), building, expectations."""

from __future__ import annotations

from pathlib import Path

import pytest

from checker.engines.result import HOLDS, VIOLATED, CheckResult, Violation
from checker.errors import ModelError
from checker.models import (
    ENGINE_DEFAULTS,
    build_machine,
    list_models,
    load_model,
    outcome_matches,
)
from checker.traces.trace import Trace

COUNTER = "tests.cli_specs:COUNTER"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def model_from(folder: Path, text: str, name: str = "m"):
    return load_model(write(folder, name, text), folder)


def test_load_reads_every_key(tmp_path):
    path = write(tmp_path, "full", f"""
description = "a full model"
spec = "{COUNTER}"
mutations = ["overshoot"]
invariants = ["WithinLimit"]
[params]
limit = 2
mode = "flat"
[engine]
max_depth = 5
[expect]
outcome = "violates   WithinLimit"
states = 4
""")
    m = load_model(path, tmp_path)
    assert (m.path, m.name, m.description, m.spec_name) == (path, "full", "a full model", COUNTER)
    assert m.params == {"limit": 2, "mode": "flat"}
    assert m.mutations == ("overshoot",) and m.invariants == ("WithinLimit",)
    assert m.engine == {"deadlock": True, "max_depth": 5, "full_search": True}
    assert m.expect_outcome == "violates WithinLimit"
    assert m.expect_states == 4


def test_minimal_model_gets_defaults(tmp_path):
    m = model_from(tmp_path, f'spec = "{COUNTER}"\n')
    assert m.engine == ENGINE_DEFAULTS and m.params == {} and m.invariants == ()
    assert m.expect_outcome == "holds" and m.expect_states is None


def test_bare_name_resolves_in_models_dir(tmp_path, monkeypatch):
    write(tmp_path, "small", f'spec = "{COUNTER}"\n')
    monkeypatch.chdir(tmp_path.parent)
    assert load_model("small", tmp_path).path == tmp_path / "small.toml"


def test_unknown_model_suggests_the_closest_one(tmp_path):
    write(tmp_path, "small", f'spec = "{COUNTER}"\n')
    with pytest.raises(ModelError, match=r"unknown model 'smal': .*; did you mean 'small'\? "
                                         r"\(`ctmc list` shows the 1 models\)"):
        load_model("smal", tmp_path, also=())
    with pytest.raises(ModelError, match=r"unknown model 'nosuch': no such file, and no model "
                                         r"of that name in .* \(`ctmc list`"):
        load_model("nosuch", tmp_path)


def test_a_bare_name_is_also_looked_up_in_the_extra_folders(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    write(bench, "big", f'spec = "{COUNTER}"\n')
    assert load_model("big", tmp_path, also=(bench,)).path == bench / "big.toml"


BAD_FILES = [
    ("[params\n", "malformed TOML.*line 1, column 8"),
    (f'spec = "{COUNTER}"\nfoo = 1\n', "unknown key 'foo'"),
    (f'spec = "{COUNTER}"\n[engine]\nbogus = 1\n', "unknown key 'engine.bogus'"),
    (f'spec = "{COUNTER}"\n[expect]\nbogus = 1\n', "unknown key 'expect.bogus'"),
    ('description = "no spec"\n', "missing key 'spec'"),
    ("spec = 3\n", "key spec must be a string"),
    (f'spec = "{COUNTER}"\nmutations = "overshoot"\n', "key mutations must be a list"),
    (f'spec = "{COUNTER}"\ninvariants = [1]\n', "key invariants must be a list"),
    (f'spec = "{COUNTER}"\nparams = 3\n', "key params must be a table"),
    (f'spec = "{COUNTER}"\n[params]\nlimit = 1.5\n', "key params.limit must be"),
    (f'spec = "{COUNTER}"\n[engine]\ndeadlock = "no"\n', "key engine.deadlock must be true"),
    (f'spec = "{COUNTER}"\n[engine]\nmax_depth = true\n', "key engine.max_depth must be an int"),
    (f'spec = "{COUNTER}"\n[engine]\nmax_depth = -1\n', "key engine.max_depth must be 0"),
    (f'spec = "{COUNTER}"\n[expect]\noutcome = "breaks X"\n', "key expect.outcome must be"),
    (f'spec = "{COUNTER}"\n[expect]\noutcome = "violates"\n', "key expect.outcome must be"),
    (f'spec = "{COUNTER}"\n[expect]\nstates = 0\n', "key expect.states must be positive"),
    (f'spec = "{COUNTER}"\n[expect]\nproof = "prove"\n',
     "key expect.proof must be one of 'proved', 'not inductive', 'counterexample', got "
     "'prove'; did you mean 'proved'\\?"),
    (f'spec = "{COUNTER}"\n[expect]\nproof = true\n', "key expect.proof must be a string"),
]


@pytest.mark.parametrize("text, message", BAD_FILES)
def test_bad_file_is_one_line_naming_file_and_key(tmp_path, text, message):
    with pytest.raises(ModelError, match=message) as info:
        model_from(tmp_path, text, name="bad")
    assert str(info.value).startswith(str(tmp_path / "bad.toml"))
    assert "\n" not in str(info.value)


def test_non_utf8_file_is_refused(tmp_path):
    (tmp_path / "bin.toml").write_bytes(b"spec = \"\xff\"\n")
    with pytest.raises(ModelError, match="not UTF-8"):
        load_model(tmp_path / "bin.toml", tmp_path)


def test_build_uses_file_params_then_overrides(tmp_path):
    m = model_from(tmp_path, f'spec = "{COUNTER}"\nmutations = ["overshoot"]\n'
                             "[params]\nlimit = 2\n")
    assert build_machine(m).params["limit"] == 2
    machine = build_machine(m, {"limit": "5"})
    assert machine.params == {"limit": 5, "mode": "up"}
    assert machine.mutations == ("overshoot",)


def test_build_selects_invariants(tmp_path):
    m = model_from(tmp_path, f'spec = "{COUNTER}"\ninvariants = ["Monotone", "Small"]\n')
    machine = build_machine(m)
    assert [p.name for p in machine.invariants] == ["Small"]
    assert [p.name for p in machine.step_invariants] == ["Monotone"]
    everything = build_machine(model_from(tmp_path, f'spec = "{COUNTER}"\n', name="all"))
    assert [p.name for p in everything.invariants] == ["Small", "WithinLimit"]


BAD_BUILDS = [
    ('spec = "no_such_spec"\n', {}, r"m\.toml: key spec: unknown spec 'no_such_spec'"),
    ('spec = "tests.no_such_module:X"\n', {}, r"m\.toml: key spec: cannot import"),
    (f'spec = "{COUNTER}"\ninvariants = ["Nope"]\n', {},
     r"m\.toml: key invariants: .*no invariant 'Nope' \(known: Small, WithinLimit, Monotone\)"),
    (f'spec = "{COUNTER}"\n[params]\nnope = 1\n', {}, r"m\.toml \[params\]: .*no parameter"),
    (f'spec = "{COUNTER}"\n[params]\nlimit = 9\n', {}, r"m\.toml \[params\]: .*above its max"),
    (f'spec = "{COUNTER}"\n[params]\nmode = "down"\n', {}, r"\[params\]: .*not one of up, flat"),
    (f'spec = "{COUNTER}"\nmutations = ["nope"]\n', {}, r"m\.toml mutations: .*no mutation 'nope'"),
    (f'spec = "{COUNTER}"\n', {"nope": "1"}, r"^--set: spec cli_counter has no parameter 'nope'"),
    (f'spec = "{COUNTER}"\n', {"limit": "0"}, r"^--set: parameter limit=0 is below its minimum"),
    (f'spec = "{COUNTER}"\n', {"limit": "x"}, r"^--set: parameter limit wants an integer"),
    (f'spec = "{COUNTER}"\ninvariants = ["Small"]\n[expect]\noutcome = "violates Monotone"\n',
     {}, r"expect\.outcome names 'Monotone', which is not checked"),
    (f'spec = "{COUNTER}"\n[engine]\ndeadlock = false\n[expect]\noutcome = "violates Deadlock"\n',
     {}, r"expects a deadlock, but engine\.deadlock is false"),
]


@pytest.mark.parametrize("text, overrides, message", BAD_BUILDS)
def test_bad_build_is_one_line(tmp_path, text, overrides, message):
    m = model_from(tmp_path, text)
    with pytest.raises(ModelError, match=message) as info:
        build_machine(m, overrides)
    assert "\n" not in str(info.value)


def test_outcome_matches(tmp_path):
    m = model_from(tmp_path, f'spec = "{COUNTER}"\n[expect]\noutcome = "violates Small"\n')
    machine = build_machine(m)
    trace = Trace(machine, [machine.init_states[0]], [None])
    small = CheckResult("test", VIOLATED, Violation("invariant", "Small", "", trace))
    other = CheckResult("test", VIOLATED, Violation("invariant", "WithinLimit", "", trace))
    assert outcome_matches(m, small)
    assert not outcome_matches(m, other)
    assert not outcome_matches(m, CheckResult("test", HOLDS))


def test_list_models_sorted_toml_only(tmp_path):
    for name in ("b", "a"):
        write(tmp_path, name, "")
    (tmp_path / "notes.txt").write_text("")
    assert [p.name for p in list_models(tmp_path)] == ["a.toml", "b.toml"]
    assert list_models(tmp_path / "missing") == []

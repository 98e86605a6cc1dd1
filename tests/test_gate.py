"""`ctmc gate`: a folder of models run against their expectations, for CI."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cli
from checker.errors import ModelError
from checker.gate import update_baseline
from tests.model_folders import run_cli, write_models

CLI_COUNTER = "tests.cli_specs:COUNTER"  # 0..limit (limit 3: 4 states); overshoot mutation
COUNTER = "tests.specs.counter:COUNTER"  # 0..n: n + 1 states, diameter n, deadlock at n

MODELS = {
    "a_holds": f"""description = "the counter stays small"
spec = "{CLI_COUNTER}"
[engine]
deadlock = false
[expect]
outcome = "holds"
states = 4
""",
    "b_caught": f"""spec = "{CLI_COUNTER}"
mutations = ["overshoot"]
invariants = ["WithinLimit"]
[engine]
deadlock = false
[expect]
outcome = "violates WithinLimit"
""",
    "c_counter": f"""spec = "{COUNTER}"
[params]
n = 5
[engine]
deadlock = false
[expect]
outcome = "holds"
states = 6
""",
    "d_deadlock": f"""spec = "{COUNTER}"
[params]
n = 2
[expect]
outcome = "violates Deadlock"
""",
}


@pytest.fixture
def models(tmp_path, monkeypatch) -> Path:
    """A models folder with the four models above; the working directory is tmp_path."""
    return write_models(tmp_path, monkeypatch, MODELS)


def gate(models: Path, *args: str) -> Result:
    return run_cli(models, "gate", *args)


def junit(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    return root


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name"): case for case in root.iter("testcase")}


# --- everything as expected ----------------------------------------------------------

def test_all_as_expected(models, tmp_path):
    report = tmp_path / "reports" / "gate.xml"
    result = gate(models, "--junit", str(report), "--trace-dir", "cex")
    assert result.exit_code == 0, result.output
    for name in MODELS:
        assert name in result.stdout
    assert "SURPRISE" not in result.stdout
    assert "4 models, 4 as expected, 0 surprises" in result.stdout
    # one progress line per model, in name order
    progress = result.stderr.splitlines()
    assert len(progress) == 4
    assert [line.split()[1] for line in progress] == sorted(MODELS)
    assert all(" ok (" in line for line in progress)

    root = junit(report)
    assert root.get("tests") == "4" and root.get("failures") == "0"
    found = cases(root)
    assert set(found) == set(MODELS)
    assert not list(root.iter("failure"))
    assert found["a_holds"].get("classname") == "cli_counter"
    assert found["c_counter"].get("classname") == "counter"
    assert float(found["c_counter"].get("time")) >= 0
    out = found["c_counter"].find("system-out").text
    assert "states: 6" in out and "diameter: 5" in out and "trace: -" in out
    out = found["d_deadlock"].find("system-out").text
    assert "trace: cex/d_deadlock-Deadlock-bfs.itf.json" in out and "trace length: 2" in out

    # every counterexample is written, as ITF
    traces = sorted(p.name for p in Path("cex").iterdir())
    assert traces == ["b_caught-WithinLimit-bfs.itf.json", "d_deadlock-Deadlock-bfs.itf.json"]
    doc = json.loads(Path("cex/b_caught-WithinLimit-bfs.itf.json").read_text())
    assert doc["#meta"]["model"] == "b_caught" and len(doc["states"]) == 5


def test_default_trace_dir_and_explicit_files(models):
    result = gate(models, str(models / "d_deadlock.toml"), "a_holds")
    assert result.exit_code == 0, result.output
    assert [line.split()[1] for line in result.stderr.splitlines()] == ["a_holds", "d_deadlock"]
    assert Path("traces/gate/d_deadlock-Deadlock-bfs.itf.json").is_file()


def test_json(models):
    result = gate(models, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["models"] == 4 and report["surprises"] == 0
    rows = {r["model"]: r for r in report["results"]}
    assert list(rows) == sorted(MODELS)
    assert rows["c_counter"]["states"] == 6 and rows["c_counter"]["diameter"] == 5
    assert rows["c_counter"]["baseline"] == 6 and rows["c_counter"]["trace_file"] is None
    assert rows["b_caught"]["got"] == "violates WithinLimit"
    assert rows["b_caught"]["trace_length"] == 4
    assert Path(rows["b_caught"]["trace_file"]).is_file()
    assert all(r["ok"] and r["surprises"] == [] for r in rows.values())


# --- surprises --------------------------------------------------------------------------

def test_wrong_expectation(models, tmp_path):
    (models / "e_wrong.toml").write_text(
        MODELS["b_caught"].replace('"violates WithinLimit"', '"holds"'))
    report = tmp_path / "gate.xml"
    result = gate(models, "--junit", str(report))
    assert result.exit_code == 1, result.output
    assert "SURPRISE" in result.stdout and "1 surprise" in result.stdout
    root = junit(report)
    assert root.get("tests") == "5" and root.get("failures") == "1"
    failures = [(case.get("name"), case.find("failure")) for case in root.iter("testcase")
                if case.find("failure") is not None]
    assert len(failures) == 1
    name, failure = failures[0]
    assert name == "e_wrong"
    assert failure.get("message") == "expected holds, got violates WithinLimit"
    # the unexpected counterexample is kept too
    assert Path("traces/gate/e_wrong-WithinLimit-bfs.itf.json").is_file()
    json_report = json.loads(gate(models, "--json").stdout)
    assert json_report["ok"] is False and json_report["surprises"] == 1


def test_wrong_baseline(models, tmp_path):
    (models / "c_counter.toml").write_text(MODELS["c_counter"].replace("states = 6",
                                                                       "states = 7"))
    report = tmp_path / "gate.xml"
    result = gate(models, "--junit", str(report))
    assert result.exit_code == 1, result.output
    assert "6 (baseline 7)" in result.stdout
    failure = cases(junit(report))["c_counter"].find("failure")
    assert failure is not None and failure.get("message") == "6 states, baseline 7"


@pytest.mark.parametrize("text, message", [
    (f'spec = "{CLI_COUNTER}"\n[params\n', "malformed TOML"),
    ('spec = "no_such_spec"\n', "unknown spec 'no_such_spec'"),
])
def test_broken_model_file(models, tmp_path, text, message):
    (models / "b_broken.toml").write_text(text)
    report = tmp_path / "gate.xml"
    result = gate(models, "--junit", str(report))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert len(result.stderr.splitlines()) == 5  # the others still ran
    found = cases(junit(report))
    assert set(found) == set(MODELS) | {"b_broken"}
    failure = found["b_broken"].find("failure")
    assert failure is not None and message in failure.get("message")
    assert failure.get("type") == "broken"
    assert all(found[name].find("failure") is None for name in MODELS)
    rows = {r["model"]: r for r in json.loads(gate(models, "--json").stdout)["results"]}
    assert rows["b_broken"]["broken"] is True and rows["a_holds"]["ok"] is True


def test_crashing_spec_is_a_broken_row(models, monkeypatch):
    import checker.gate

    real = checker.gate.build_machine

    def crash_on_counter(model, overrides=None):
        if model.name == "c_counter":
            raise RuntimeError("boom")
        return real(model, overrides)

    monkeypatch.setattr(checker.gate, "build_machine", crash_on_counter)
    result = gate(models, "--json")
    assert result.exit_code == 2, result.output
    rows = {r["model"]: r for r in json.loads(result.stdout)["results"]}
    assert rows["c_counter"]["surprises"] == ["internal error: RuntimeError: boom"]
    assert rows["d_deadlock"]["ok"] is True


@pytest.mark.parametrize("arg, message", [
    ("nowhere", "error: nowhere: no such folder or model file"),
    ("empty", "no model files"),
])
def test_bad_folder_is_one_line(models, arg, message):
    Path("empty").mkdir()
    result = gate(models, arg)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


# --- baselines ------------------------------------------------------------------------------

def test_update_baselines(models):
    wrong = MODELS["c_counter"].replace("states = 6", "states   =  7   # before the change")
    (models / "c_counter.toml").write_bytes(wrong.encode())
    mismatched = MODELS["b_caught"].replace('"violates WithinLimit"', '"holds"')
    (models / "e_wrong.toml").write_bytes(mismatched.encode())
    before = {p.name: p.read_bytes() for p in models.iterdir()}

    result = gate(models, "--update-baselines", "--json")
    assert result.exit_code == 1, result.output  # e_wrong is still a surprise
    rows = {r["model"]: r for r in json.loads(result.stdout)["results"]}
    assert rows["c_counter"]["ok"] and rows["c_counter"]["baseline_updated"]
    assert (rows["c_counter"]["baseline_was"], rows["c_counter"]["baseline"]) == (7, 6)

    after = {p.name: p.read_bytes() for p in models.iterdir()}
    # the states line only: value replaced, spacing and comment kept
    assert after["c_counter.toml"] == wrong.replace("7   #", "6   #").encode()
    # an existing, matching baseline: untouched
    assert after["a_holds.toml"] == before["a_holds.toml"]
    # no baseline yet: one line added to [expect]
    # (a violation stops the search: the states seen before the violating one)
    assert after["b_caught.toml"] == (MODELS["b_caught"] + "states = 4\n").encode()
    assert after["d_deadlock.toml"] == (MODELS["d_deadlock"] + "states = 3\n").encode()
    # an outcome that did not match: not touched
    assert after["e_wrong.toml"] == before["e_wrong.toml"]

    (models / "e_wrong.toml").unlink()
    again = gate(models, "--update-baselines")
    assert again.exit_code == 0, again.output
    assert {p.name: p.read_bytes() for p in models.iterdir()} == {
        k: v for k, v in after.items() if k != "e_wrong.toml"}
    assert gate(models).exit_code == 0


def test_update_baseline_edits_one_line(tmp_path):
    path = tmp_path / "m.toml"
    crlf = 'spec = "x"\r\n[expect]\r\noutcome = "holds"\r\n\r\n[params]\r\nn = 1\r\n'
    path.write_bytes(crlf.encode())
    update_baseline(path, 12)
    assert path.read_bytes() == crlf.replace('"holds"\r\n', '"holds"\r\nstates = 12\r\n').encode()
    update_baseline(path, 13)
    assert b"states = 13\r\n" in path.read_bytes() and b"12" not in path.read_bytes()

    no_table = 'spec = "x"  # no expect table'
    path.write_text(no_table)
    update_baseline(path, 3)
    assert path.read_text() == no_table + "\n[expect]\nstates = 3\n"

    inline = 'spec = "x"\nexpect = { outcome = "holds" }\n'
    path.write_text(inline)
    with pytest.raises(ModelError, match="set expect.states = 3 by hand"):
        update_baseline(path, 3)
    assert path.read_text() == inline


# --- the real suite ---------------------------------------------------------------------------

# every model's own outcome is checked by test_model_suite; this gates a real mix of them
# (holds, violates, liveness; three specs) through the command line
REAL_MIX = ["tracker_small", "mutation_reset_cur_on_prev_exit", "log_driven_tiny",
            "log_driven_mutation_side_close_with_inflight", "v1_tiny_close_liveness"]


def test_real_models_pass_the_gate(tmp_path, monkeypatch):
    models = Path(cli.__file__).resolve().parent / "models"
    folder = tmp_path / "mix"
    folder.mkdir()
    for name in REAL_MIX:
        shutil.copy(models / f"{name}.toml", folder)
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "gate.xml"
    result = CliRunner().invoke(cli.main, ["gate", str(folder), "--junit", str(report)])
    assert result.exit_code == 0, result.output
    root = junit(report)
    assert int(root.get("tests")) == len(REAL_MIX) and root.get("failures") == "0"
    assert len(list(Path("traces/gate").iterdir())) == 2  # the two counterexamples


# --- proofs (--prove) ---------------------------------------------------------------------

LOCKSTEP = "tests.z3_specs:LOCKSTEP"  # YSmall is 1-inductive with the lemma InStep only
PROOF_MODELS = {
    "kept": f"""spec = "{LOCKSTEP}"
[engine]
deadlock = false
[expect]
outcome = "holds"
proof = "proved"
""",
    # selecting YSmall alone leaves the lemmas out: the proof that needed InStep is lost
    "lost": f"""spec = "{LOCKSTEP}"
invariants = ["YSmall"]
[engine]
deadlock = false
[expect]
outcome = "holds"
proof = "proved"
""",
    # a [proof] table and no expectation: proved (4 steps need no lemma), reported only
    "table": f"""spec = "{LOCKSTEP}"
[engine]
deadlock = false
[proof]
k = 4
""",
    "no_proof": f"""spec = "{LOCKSTEP}"
[engine]
deadlock = false
""",
}


@pytest.fixture
def proof_models(tmp_path, monkeypatch) -> Path:
    return write_models(tmp_path, monkeypatch, PROOF_MODELS)


def test_gate_prove_reports_each_proof_and_a_lost_one_is_a_surprise(proof_models, tmp_path):
    report_file = tmp_path / "gate.xml"
    result = gate(proof_models, "--prove", "--json", "--junit", str(report_file))
    assert result.exit_code == 1, result.output
    rows = {r["model"]: r for r in json.loads(result.stdout)["results"]}
    assert rows["kept"]["ok"] and rows["kept"]["proof"] == {
        "expected": "proved", "outcome": "proved", "k": 1, "lemmas_used": 1,
        "lemmas_stated": 2, "seconds": rows["kept"]["proof"]["seconds"],
        "message": "every invariant holds in every reachable state (1-induction)"}
    lost = rows["lost"]
    assert not lost["ok"] and lost["got"] == "holds"  # BFS still finds nothing wrong
    assert lost["proof"]["outcome"] == "not inductive" and lost["proof"]["lemmas_stated"] == 0
    assert lost["surprises"][0].startswith("expected proof proved, got not inductive (")
    assert rows["table"]["ok"] and rows["table"]["proof"]["outcome"] == "proved"
    assert rows["table"]["proof"]["k"] == 4 and rows["table"]["proof"]["expected"] is None
    assert rows["no_proof"]["ok"] and rows["no_proof"]["proof"] is None
    cases = {c.get("name"): c for c in junit(report_file).iter("testcase")}
    assert cases["lost"].find("failure") is not None
    assert "expected proof proved, got not inductive" in cases["lost"].find("failure").get(
        "message")
    assert "proof: proved, k=1, 1/2 lemmas" in cases["kept"].find("system-out").text
    table = gate(proof_models, "--prove")
    assert table.exit_code == 1
    assert "proof" in table.stdout and "proved, k=1, 1/2 lemmas" in table.stdout
    assert "lost ... SURPRISE: expected proof proved, got not inductive" in table.stderr


def test_gate_without_prove_runs_no_proof(proof_models):
    result = gate(proof_models, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["results"]
    assert all(r["proof"] is None and r["ok"] for r in rows)


def test_update_baseline_writes_through_a_link_and_keeps_the_mode(tmp_path):
    real = tmp_path / "shared" / "m.toml"
    real.parent.mkdir()
    real.write_text('spec = "x"\n[expect]\noutcome = "holds"\n')
    real.chmod(0o640)
    link = tmp_path / "m.toml"
    link.symlink_to(real)
    update_baseline(link, 5)
    assert link.is_symlink() and link.resolve() == real
    assert real.read_text() == 'spec = "x"\n[expect]\noutcome = "holds"\nstates = 5\n'
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["m.toml"]  # no temporary left

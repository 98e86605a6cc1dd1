"""The HTML trace viewer (`ctmc trace html`, `gate --html`), checked in a real browser.

The pages are rendered by headless Chromium through Selenium; the tests read the
rendered DOM: every lane and every step of the trace is drawn, the slider, the
arrow keys and a click move the selection, the selected step's tables and the
violation show, and the page asks the network for nothing. Chromium and its driver
come from Debian's `chromium` and `chromium-driver` packages (`.ci/run` installs
them); where they are missing the browser tests skip and say why.

Set CTMC_SCREENSHOTS=DIR to keep the screenshots (the README's come from here:
`CTMC_SCREENSHOTS=docs python -m pytest tests/test_html_viewer.py`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from checker.backends.scalar import ScalarMachine
from checker.models import build_machine, load_model
from checker.run import BfsOptions, run
from checker.traces.html import page, page_data
from checker.traces.itf import write_counterexample, write_trace
from checker.traces.replay import load_trace
from checker.traces.trace import Trace
from checker.traces.why import explain, unused_slots
from cli import main
from tests.viewer_specs import RELAY

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
# a log-driven safety counterexample, a 2018 one, and a 2018 lasso (liveness)
CASES = {
    "log_driven": "log_driven_mutation_lease_request_carries_start",
    "follower_reads_2018": "v1_mutation_no_gap_reset",
    "lasso": "v1_mutation_epoch_pollution",
    "side_transport": "log_driven_mutation_side_close_with_inflight",
    "no_view": "mutation_carry_own_bucket_ts",
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each case's counterexample, found by BFS and written as ITF."""
    folder = tmp_path_factory.mktemp("traces")
    out = {}
    for case, name in CASES.items():
        model = load_model(name, MODELS_DIR)
        result = run(build_machine(model), BfsOptions(deadlock=model.engine["deadlock"]))
        assert result.violation is not None, name
        out[case] = folder / f"{name}.itf.json"
        write_trace(result.violation.trace, out[case])
    return out


@pytest.fixture(scope="module")
def pages(traces: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each case's page, written by `ctmc trace html`."""
    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for case, trace in traces.items():
        out[case] = folder / f"{case}.html"
        result = CliRunner().invoke(main, ["trace", "html", str(trace), "-o", str(out[case])],
                                    standalone_mode=False)
        assert result.exit_code == 0 and result.return_value in (None, 0), result.output
        assert f"wrote {out[case]}" in result.output
    return out


# --- the page's data and its self-containment (no browser needed) ----------------------

def test_the_page_needs_no_network(pages: dict[str, Path]) -> None:
    text = pages["log_driven"].read_text()
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    # the only URL is the SVG namespace, a name rather than a fetch
    assert set(re.findall(r"https?://[^\s\"')]+", text)) <= {"http://www.w3.org/2000/svg"}


def test_the_data_tells_the_same_story_as_the_terminal(traces: dict[str, Path]) -> None:
    trace = load_trace(traces["log_driven"])
    data = page_data(trace)
    assert data["lanes"] == ["n1", "n2"]
    assert len(data["steps"]) == len(trace) + 1
    assert [s["action"] for s in data["steps"][1:]] == [a.label for a in trace.actions[1:]]
    assert data["violation"].startswith("invariant NoStaleRead")
    assert any(r.startswith("wts[0] = ") for r in data["reads"])
    last = data["steps"][-1]
    # the step that breaks the read changes cells in n1's tables, and says so
    assert any(t["changed"] for t in last["tables"]["n1"])
    assert data["loop"] is None and data["cti"] == ""


def test_the_why_of_a_real_counterexample_is_consistent_with_its_trace(
        traces: dict[str, Path]) -> None:
    """Whatever the spec's current counterexample, its explanation agrees with the
    trace: each value read is the last state's, set by the step it names (and no later
    one), and the steps named as setting values are exactly those origins."""
    trace = load_trace(traces["log_driven"])
    why = explain(trace)
    assert why is not None and why.name == "NoStaleRead" and why.clauses
    names = [s.name for s in trace.machine.slots]
    origins = set()
    for clause in why.clauses:
        assert why.headline(clause).startswith("NoStaleRead fails for iw=(")
        for r in clause.readings:
            slot = names.index(r.name)
            assert r.name in clause.text
            values = [state[slot] for state in trace.states]
            assert all(v == values[-1] for v in values[r.since:])
            if r.since:
                assert values[r.since - 1] != values[r.since]
                origins.add(r.since)
    assert set(why.sets) == origins and why.matters >= origins
    data = page_data(trace)
    assert data["why"]["clauses"][0]["headline"] == why.headline(why.clauses[0])
    assert [s["step"] for s in data["why"]["sets"]] == sorted(origins)
    assert all(s["narration"] for s in data["why"]["sets"])  # in the spec's words


def relay_trace(tick_first: bool = False) -> Trace:
    """RELAY's shortest counterexample (relay along the line, then write), found by BFS;
    with `tick_first`, a clock tick that leads to nothing is put before it."""
    machine = RELAY.instantiate()
    found = run(machine, BfsOptions(deadlock=False)).violation
    assert found is not None
    trace = found.trace
    if tick_first:
        tick = next(a for a in machine.actions if a.name == "tick")
        scalar = ScalarMachine(machine)
        states = [trace.states[0]]
        for action in [tick, *trace.actions[1:]]:
            assert action is not None
            states.append(scalar.apply(states[-1], action))
        trace = Trace(machine, states, [None, tick, *trace.actions[1:]], trace.violation,
                      trace.meta)
    return trace


def test_the_why_names_the_clause_the_values_and_the_steps_that_set_them() -> None:
    trace = relay_trace()
    assert [a.label for a in trace.actions[1:]] == \
        ["relay(i=0)", "relay(i=1)", "relay(i=2)", "write(w=0)"]
    why = explain(trace)
    assert why is not None
    (clause,) = why.clauses
    assert why.headline(clause) == \
        "Delivered fails for w=0: if acked[0] and hop == 3 then value[0] == value[3]"
    assert [(r.name, r.value, r.since) for r in clause.readings] == [
        ("value[0]", "1", 4), ("value[3]", "0", 0), ("hop", "3", 3), ("acked[0]", "yes", 4)]
    assert why.sets == {3: ("hop",), 4: ("value[0]", "acked[0]")}
    assert why.matters == {1, 2, 3, 4} and why.hidden == 0
    data = page_data(trace)
    assert data["reads"] == ["value[0] = 1", "value[3] = 0", "hop = 3", "acked[0] = yes"]
    assert [s["role"] for s in data["steps"]] == ["", "matters", "matters", "sets", "sets"]
    assert data["why"]["sets"][0]["narration"] == "n3 relays value 0 to n4"
    assert data["why"]["slice"] == "Every step leads to these values."


def test_a_step_that_leads_to_nothing_is_dimmed() -> None:
    trace = relay_trace(tick_first=True)
    why = explain(trace)
    assert why is not None and why.matters == {2, 3, 4, 5}
    data = page_data(trace)
    assert [s["role"] for s in data["steps"]] == ["", "other", "matters", "matters", "sets",
                                                  "sets"]
    assert data["why"]["slice"] == "4 of 5 steps lead to these values; the other 1 is dimmed."


def test_a_slot_the_trace_never_touches_is_not_shown_as_a_value() -> None:
    """`acked` has a slot for the control message, which this trace never sends: it
    shows as `·`, while the slots the trace touches show their values."""
    trace = relay_trace(tick_first=True)
    machine = trace.machine
    assert [machine.slots[s].name for s in sorted(unused_slots(trace))] == ["acked[1]"]
    last = {v["name"]: v for v in page_data(trace)["steps"][-1]["vars"]}
    assert last["acked"]["value"] == "[yes, \u00b7]" and last["acked"]["was"] == "[no, \u00b7]"
    assert last["value"]["value"] == "[1, 0, 0, 0]" and last["now"]["value"] == "1"
    assert page_data(trace)["untouched"] == "\u00b7"


def test_the_page_carries_no_local_path(tmp_path: Path) -> None:
    trace = relay_trace()
    model_file = tmp_path / "models" / "relay.toml"
    itf = tmp_path / "relay.itf.json"
    write_counterexample(trace, itf, model="relay", model_file=str(model_file))
    out = tmp_path / "relay.html"
    assert _cli("trace", "html", str(itf), "-o", str(out)).return_value in (None, 0)
    text = out.read_text()
    assert str(tmp_path) not in text and str(Path(__file__).resolve().parent.parent) not in text
    assert page_data(load_trace(itf))["meta"]["model_file"] == "relay.toml"


def test_trace_show_says_why_too(tmp_path: Path) -> None:
    itf = tmp_path / "relay.itf.json"
    write_trace(relay_trace(tick_first=True), itf)
    shown = CliRunner().invoke(main, ["trace", "show", str(itf)],
                               env={"COLUMNS": "120"}).output
    why = shown[shown.index("Why"):]
    assert "Delivered fails for w=0: if acked[0] and hop == 3 then value[0] == value[3]" \
        in why
    assert "hop = 3" in why and "set at step 4" in why and "from the first state" in why
    assert "step 5 write(w=0): n1 writes value 1 (write 1) \u2014 sets value[0], acked[0]" \
        in why
    assert "4 of 5 steps lead to these values; the other 1 is dimmed." in why
    assert "Step 4: relay(i=2)  \u25c6 sets hop" in shown
    assert "it reads: value[0] = 1; value[3] = 0; hop = 3; acked[0] = yes" in shown
    raw = CliRunner().invoke(main, ["trace", "show", str(itf), "--raw", "--step", "5"],
                             env={"COLUMNS": "120"}).output
    assert "[false, \u00b7] -> [true, \u00b7]" in raw


def test_a_lasso_marks_its_loop(traces: dict[str, Path]) -> None:
    trace = load_trace(traces["lasso"])
    data = page_data(trace)
    assert trace.loop is not None and data["loop"] == trace.loop
    assert "leads back to step" in data["loop_sentence"] or "stays" in data["loop_sentence"]


def test_a_counterexample_to_induction_is_labelled(tmp_path: Path) -> None:
    import dataclasses

    from checker.engines.symbolic.induction import ProveOptions, prove
    from tests.z3_specs import LOCKSTEP

    machine = dataclasses.replace(LOCKSTEP.instantiate(), lemmas=[])
    violation = prove(machine, ProveOptions(k=1)).violation
    assert violation is not None
    data = page_data(violation.trace)
    assert "unreachable or unknown" in data["cti"]
    assert data["steps"][0]["title"].startswith("Step 0: start (satisfies the invariants")


def test_a_spec_without_a_view_gets_one_lane_and_the_whole_state(
        traces: dict[str, Path]) -> None:
    data = page_data(load_trace(traces["no_view"]))
    assert data["lanes"] == ["system"] and not data["has_view"]
    assert all(s["tables"] == {} for s in data["steps"])
    assert data["steps"][1]["events"] == [{"source": "system", "label": data["steps"][1]["action"],
                                           "targets": []}]
    assert any(v["changed"] for v in data["steps"][1]["vars"])


def test_text_in_the_data_cannot_close_the_script(traces: dict[str, Path]) -> None:
    trace = load_trace(traces["no_view"])
    trace.meta["note"] = "</script><script>alert(1)</script>"
    text = page(trace)
    payload = text.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(payload)["meta"]["note"] == trace.meta["note"]


# --- the CLI: bad input is one line, exit 2, nothing overwritten ----------------------------

def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), standalone_mode=False)


def test_trace_html_writes_beside_the_trace_by_default(traces: dict[str, Path],
                                                       tmp_path: Path) -> None:
    copy = tmp_path / "mine.itf.json"
    shutil.copy(traces["no_view"], copy)
    result = _cli("trace", "html", str(copy))
    assert result.return_value in (None, 0) and (tmp_path / "mine.html").is_file()


def test_trace_html_dash_writes_the_page_to_standard_output(traces: dict[str, Path],
                                                            tmp_path: Path) -> None:
    copy = tmp_path / "mine.itf.json"
    shutil.copy(traces["no_view"], copy)
    result = _cli("trace", "html", str(copy), "-o", "-")
    assert result.return_value in (None, 0) and result.exception is None, result.output
    assert _cli("trace", "html", str(copy), "-o", str(tmp_path / "p.html")).exception is None
    assert result.stdout == (tmp_path / "p.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.itf.json", "p.html"]


@pytest.mark.parametrize("problem", ["not json", "not a trace", "missing folder", "a folder"])
def test_trace_html_refuses_bad_input_with_one_line(problem: str, traces: dict[str, Path],
                                                    tmp_path: Path) -> None:
    trace, out = traces["no_view"], tmp_path / "out.html"
    out.write_text("keep me")
    if problem == "not json":
        trace = tmp_path / "bad.itf.json"
        trace.write_text("{ not json")
    elif problem == "not a trace":
        trace = tmp_path / "bad.itf.json"
        trace.write_text('{"states": 3}')
    elif problem == "missing folder":
        out = tmp_path / "nowhere" / "out.html"
    else:
        out = tmp_path
    result = _cli("trace", "html", str(trace), "-o", str(out))
    assert result.return_value == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    assert (tmp_path / "out.html").read_text() == "keep me"
    assert not (tmp_path / "nowhere").exists()


def test_gate_html_writes_a_page_per_counterexample_and_an_index(tmp_path: Path) -> None:
    models = [str(MODELS_DIR / f"{CASES['no_view']}.toml"),
              str(MODELS_DIR / "tracker_small.toml")]
    result = _cli("gate", *models, "--trace-dir", str(tmp_path / "traces"),
                  "--html", str(tmp_path / "html"))
    assert result.return_value == 0, result.output
    pages = sorted(p.name for p in (tmp_path / "html").iterdir())
    assert pages == ["index.html", f"{CASES['no_view']}-NoWriteBelowClosed-bfs.html"]
    assert f"{CASES['no_view']}-NoWriteBelowClosed-bfs.html" in \
        (tmp_path / "html" / "index.html").read_text()
    assert f"HTML pages: {tmp_path / 'html' / 'index.html'}" in result.output


def test_gate_html_keeps_a_users_file_in_a_pages_place_and_writes_the_rest(
        tmp_path: Path) -> None:
    page = f"{CASES['no_view']}-NoWriteBelowClosed-bfs.html"
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / page).write_text("mine")
    result = _cli("gate", str(MODELS_DIR / f"{CASES['no_view']}.toml"),
                  str(MODELS_DIR / "tracker_small.toml"), "--trace-dir",
                  str(tmp_path / "traces"), "--html", str(tmp_path / "html"))
    assert result.return_value == 2, result.output
    assert "2 models, 2 as expected" in result.output  # the gate's table and verdict
    assert result.output.strip().splitlines()[-1] == (
        f"error: --html: cannot write: {tmp_path / 'html' / page} exists and was not "
        "written by ctmc; ctmc replaces only its own files (move it, or choose another name)")
    assert (tmp_path / "html" / page).read_text() == "mine"
    assert "(not written: " in (tmp_path / "html" / "index.html").read_text()


def test_gate_html_refuses_a_file_before_running(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    result = _cli("gate", str(MODELS_DIR / "tracker_small.toml"), "--html", str(taken))
    assert result.return_value == 2 and "is a file, not a folder" in result.output
    assert taken.read_text() == "keep me"
    assert "tracker_small ... ok" not in result.output


# --- in the browser -----------------------------------------------------------------

def _chromium() -> tuple[str, str] | None:
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                    "(pip install -e '.[test]')")
    found = _chromium()
    if found is None:
        pytest.skip("Chromium or chromedriver is not installed (Debian: apt-get install "
                    "chromium chromium-driver; .ci/run does this)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1500,950"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, path: Path) -> dict[str, Any]:
    browser.get(path.as_uri())
    return json.loads(browser.find_element("id", "trace-data").get_attribute("textContent"))


def _selected(browser: Any) -> list[int]:
    return [int(g.get_attribute("data-step"))
            for g in browser.find_elements("css selector", "g.step.selected")]


def _screenshot(browser: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("CTMC_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / f"trace-{name}.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


@pytest.mark.parametrize("case", ["log_driven", "follower_reads_2018"])
def test_the_page_draws_every_lane_and_step_and_the_slider_moves(
        case: str, pages: dict[str, Path], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.keys import Keys

    data = _open(browser, pages[case])
    n = len(data["steps"]) - 1
    heads = [g.get_attribute("data-lane") for g in
             browser.find_elements("css selector", "svg.heads g.lane-head")]
    assert heads == data["lanes"] and len(heads) >= 2
    steps = [int(g.get_attribute("data-step")) for g in
             browser.find_elements("css selector", "svg.lanes g.step")]
    assert steps == list(range(n + 1))
    assert _selected(browser) == [0]
    assert browser.find_element("id", "step-title").text.startswith("Step 0")
    # every lane has its card of tables at the selected step
    cards = [c.get_attribute("data-lane")
             for c in browser.find_elements("css selector", "#details section.lane-card")]
    assert set(data["lanes"]) <= set(cards)

    # the slider moves the selection (as a user dragging it: input events)
    slider = browser.find_element("id", "step-slider")
    slider.send_keys(Keys.END)
    assert _selected(browser) == [n] and slider.get_attribute("value") == str(n)
    assert browser.find_element("id", "position").text == f"step {n} of {n}"
    violation = browser.find_element("id", "violation")
    assert data["violation_name"] in violation.text and "it reads:" in violation.text
    assert "violating" in browser.find_element(
        "css selector", f'g.step[data-step="{n}"]').get_attribute("class")
    assert browser.find_elements("css selector", "#details td.changed")
    _screenshot(browser, case, tmp_path)

    slider.send_keys(Keys.HOME)
    assert _selected(browser) == [0]
    # left/right keys on the page, and a click on a step's row
    browser.find_element("css selector", "header h1").click()  # the slider loses focus
    browser.find_element("tag name", "body").send_keys(Keys.ARROW_RIGHT)
    assert _selected(browser) == [1] and slider.get_attribute("value") == "1"
    assert browser.find_element("id", "step-title").text == data["steps"][1]["title"]
    browser.find_element("tag name", "body").send_keys(Keys.ARROW_LEFT)
    assert _selected(browser) == [0]
    browser.find_element("css selector", 'g.step[data-step="2"] .num').click()
    assert _selected(browser) == [2] and slider.get_attribute("value") == "2"
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []


def test_messages_are_arrows_between_lanes(pages: dict[str, Path], browser: Any) -> None:
    data = _open(browser, pages["side_transport"])
    arrows = browser.find_elements("css selector", "line.arrow")
    expected = sum(len([t for t in e["targets"] if t != e["source"]])
                   for s in data["steps"] for e in s["events"])
    assert expected > 0 and len(arrows) == expected
    for arrow in arrows:
        assert arrow.get_attribute("data-source") != arrow.get_attribute("data-target")


def test_the_lasso_loop_is_marked_in_the_browser(pages: dict[str, Path], browser: Any,
                                                 tmp_path: Path) -> None:
    data = _open(browser, pages["lasso"])
    assert browser.find_element("id", "loop").is_displayed()
    in_loop = [int(g.get_attribute("data-step"))
               for g in browser.find_elements("css selector", "g.step.in-loop")]
    assert in_loop == list(range(data["loop"], len(data["steps"])))
    browser.get(pages["lasso"].as_uri() + f"#step={len(data['steps']) - 1}")
    assert "then:" in browser.find_element("id", "details").text
    _screenshot(browser, "lasso", tmp_path)


@pytest.fixture(scope="module")
def relay_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of RELAY's counterexample on four nodes, with a tick that leads nowhere."""
    folder = tmp_path_factory.mktemp("relay")
    write_trace(relay_trace(tick_first=True), folder / "relay.itf.json")
    result = _cli("trace", "html", str(folder / "relay.itf.json"))
    assert result.return_value in (None, 0), result.output
    return folder / "relay.html"


def test_four_lanes_fit_a_1200_pixel_window(relay_page: Path, browser: Any) -> None:
    from selenium.webdriver.support.wait import WebDriverWait

    browser.set_window_size(1200, 900)
    try:
        data = _open(browser, relay_page)
        assert data["lanes"] == ["n1", "n2", "n3", "n4"]
        diagram = browser.find_element("id", "diagram")
        shown = browser.execute_script(
            "const d = arguments[0]; return [d.clientWidth, d.scrollWidth, "
            "d.getBoundingClientRect().right];", diagram)
        assert shown[1] <= shown[0], shown  # nothing to scroll sideways
        for head in browser.find_elements("css selector", "svg.heads g.lane-head rect"):
            assert head.rect["x"] + head.rect["width"] <= shown[2]
        width = browser.find_element("css selector", "svg.heads").get_attribute("width")
        browser.set_window_size(1600, 900)  # the lanes follow the window
        WebDriverWait(browser, 5).until(lambda b: b.find_element(
            "css selector", "svg.heads").get_attribute("width") != width)
        assert browser.execute_script(
            "const d = arguments[0]; return d.scrollWidth <= d.clientWidth;", diagram)
    finally:
        browser.set_window_size(1500, 950)


def test_the_page_says_why_and_dims_what_does_not_matter(relay_page: Path, browser: Any,
                                                         tmp_path: Path) -> None:
    data = _open(browser, relay_page)
    why = browser.find_element("id", "why")
    assert why.is_displayed()
    assert data["why"]["clauses"][0]["headline"] in why.text
    assert "hop = 3 (set at step 4)" in why.text and "value[3] = 0 (from the first state)" \
        in why.text
    assert "4 of 5 steps lead to these values" in browser.find_element("id", "why-slice").text
    classes = {int(g.get_attribute("data-step")): g.get_attribute("class").split()
               for g in browser.find_elements("css selector", "svg.lanes g.step")}
    assert "dim" in classes[1] and not any("dim" in classes[i] for i in (2, 3, 4, 5))
    assert [i for i, c in classes.items() if "sets" in c] == [4, 5]
    # a step named in the explanation is a link to it
    browser.find_element("css selector", '#why-sets a[data-step="4"]').click()
    # the link changes the address's #step, whose hashchange event selects the step once
    # the click has returned: wait for it
    from selenium.webdriver.support.wait import WebDriverWait

    WebDriverWait(browser, 5).until(lambda b: _selected(b) == [4])
    assert _selected(browser) == [4]
    assert browser.find_element("id", "step-title").text == "Step 4: relay(i=2)"
    browser.find_element("id", "raw").click()  # open the whole state
    assert "marks an element this trace never touches" in \
        browser.find_element("id", "details").text
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == []
    _screenshot(browser, "relay", tmp_path)


def test_an_action_failing_to_evaluate_is_its_own_step_on_the_page() -> None:
    """The error belongs to the action that fails after the last legal step: the page
    shows it as a last, failed step, with the state it fails in."""
    from checker.lang import Array, Int, Spec, require

    spec = Spec("poke")

    @spec.build
    def _(m: Any, p: Any) -> None:
        m.var("a", Array(Int(0, 3), 3), init=0)
        m.var("i", Int(0, 3), init=0)

        @m.action()
        def step(s: Any) -> None:
            require(s.i < 3)
            s.i = s.i + 1

        @m.action()
        def poke(s: Any) -> None:
            s.a[0] = s.a[s.i]

    result = run(spec.instantiate(), BfsOptions(deadlock=False))
    assert result.violation is not None
    data = page_data(result.violation.trace)
    assert data["length"] == 3 and len(data["steps"]) == 5
    failed = data["steps"][-1]
    assert failed["failed"] and failed["title"] == "Step 4: poke() fails"
    assert failed["vars"] == [{**v, "was": v["value"], "changed": False}
                              for v in data["steps"][-2]["vars"]]
    assert data["violation"] == ("error EvalError: action poke() (assigning a[0]) reads a[i] "
                                 "at index 3: a has indexes 0 to 2")


HOSTILE = "<!-- </script><script>document.title='pwned'</script> & \u2028 -->"


def test_hostile_text_in_a_trace_is_shown_as_text(tmp_path: Path, browser: Any) -> None:
    """`<!--`, `</script>` and friends in a trace's #meta or violation message neither
    blank the page nor run: the data is JSON escaped for HTML (`\\u003c`), and read back
    exactly."""
    trace = relay_trace()
    trace.meta["note"] = HOSTILE
    trace.violation["message"] = HOSTILE
    itf = tmp_path / "hostile.itf.json"
    write_trace(trace, itf)
    page_file = tmp_path / "hostile.html"
    assert _cli("trace", "html", str(itf), "-o", str(page_file)).return_value in (None, 0)
    text = page_file.read_text()
    payload = text.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in payload and json.loads(payload)["meta"]["note"] == HOSTILE
    data = _open(browser, page_file)
    assert data["meta"]["note"] == HOSTILE
    assert browser.title != "pwned"
    assert HOSTILE.split("\u2028")[0] in browser.find_element("css selector", "header").text
    assert browser.find_elements("css selector", "svg.lanes g.step")  # the page is drawn
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_gate_html_links_cannot_carry_a_scheme(tmp_path: Path, browser: Any) -> None:
    """A model whose file name reads as a URL scheme gets a relative link to its page:
    clicking it opens the page, and runs nothing."""
    models = tmp_path / "models"
    models.mkdir()
    name = "javascript:void(document.title='pwned');<!--"  # the rest of the name: a comment
    (models / f"{name}.toml").write_text(
        'spec = "tests.cli_specs:COUNTER"\nmutations = ["overshoot"]\n'
        'invariants = ["WithinLimit"]\n[engine]\ndeadlock = false\n'
        '[expect]\noutcome = "violates WithinLimit"\n')
    result = _cli("gate", str(models), "--trace-dir", str(tmp_path / "traces"),
                  "--html", str(tmp_path / "html"))
    assert result.return_value == 0, result.output
    index = (tmp_path / "html" / "index.html").read_text()
    (href,) = re.findall(r'href="([^"]*)"', index)
    assert href.startswith("./javascript%3A") and ":" not in href
    browser.get((tmp_path / "html" / "index.html").as_uri())
    browser.find_element("css selector", "td a").click()
    assert browser.title != "pwned"
    assert browser.current_url.split("#")[0].endswith("-WithinLimit-bfs.html")
    assert browser.find_element("id", "trace-data")

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

from checker.models import build_machine, load_model
from checker.run import BfsOptions, run
from checker.traces.html import page, page_data
from checker.traces.itf import write_trace
from checker.traces.replay import load_trace
from cli import main

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
    assert any(r.startswith("wts = ") for r in data["reads"])
    last = data["steps"][-1]
    # the step that breaks the read changes cells in n1's tables, and says so
    assert any(t["changed"] for t in last["tables"]["n1"])
    assert data["loop"] is None and data["cti"] == ""


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

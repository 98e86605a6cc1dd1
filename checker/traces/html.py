"""A counterexample as one self-contained HTML page: a swimlane diagram with a lane per
process and arrows for messages, a step slider (and left/right keys), each lane's
tables at the selected step with the changed cells marked, the narration, the
violated property on the last step, the whole state, and a lasso's loop.

The page is a fixed viewer (`page/viewer.css`, `page/viewer.js`) and the trace's story
(`story`) as JSON, inlined into one file: no network, no CDN, opened from disk. The
data is built here, in Python, from the same facts as the terminal viewer; the
script only lays it out. A spec without a protocol view gets one lane, "system",
with each step's action on it, and the whole state per step.
"""

from __future__ import annotations

import html
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from checker.outputs import MARK, OutputError, replace_text
from checker.traces.story import (
    CTI,
    UNTOUCHED,
    failing_title,
    loop_sentence,
    masked,
    property_values,
    set_steps,
    slice_sentence,
    start_label,
    step_story,
    violation_sentence,
)
from checker.traces.trace import Trace
from checker.traces.why import Why, explain, unused_slots
from checker.views import Event, Rendered, show

SYSTEM_LANE = "system"


def write_html(trace: Trace, path: str | os.PathLike, source: str = "") -> None:
    """Write the page of `trace` to `path` atomically; `source` names the trace file."""
    replace_text(path, page(trace, source), make_folders=False)


def write_pages(trace_files: list[Path], folder: Path) -> tuple[Path, list[str]]:
    """A page per trace file in `folder` (made if missing), and an `index.html` linking
    them; returns the index and why any page could not be written (a name taken by a
    file ctmc did not write, say: the other pages and the index are written all the
    same, the index saying which is missing)."""
    from checker.traces.replay import load_trace

    folder.mkdir(parents=True, exist_ok=True)
    rows, problems = [], []
    for file in trace_files:
        trace = load_trace(file)
        out = folder / html_name(file)
        try:
            write_html(trace, out, source=file.name)
            link = f'<a href="{page_link(out.name)}">{html.escape(out.stem)}</a>'
        except OutputError as exc:
            problems.append(str(exc))
            link = f"{html.escape(out.stem)} (not written: {html.escape(str(exc))})"
        rows.append(f"<tr><td>{link}"
                    f"</td><td>{html.escape(trace.machine.spec_name)}</td>"
                    f"<td>{html.escape(violation_sentence(trace) or '-')}</td>"
                    f"<td>{len(trace)}</td></tr>")
    index = folder / "index.html"
    replace_text(index, '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                 f'<meta name="generator" content="{MARK}">\n'
                 "<title>ctmc counterexamples</title>\n<style>body{font:14px system-ui,"
                 "sans-serif;margin:16px}td,th{padding:3px 12px 3px 0;text-align:left;"
                 "border-bottom:1px solid #d0d7de}</style>\n</head>\n<body>\n"
                 f"<h1>ctmc counterexamples ({len(rows)})</h1>\n<table>\n<tr><th>trace</th>"
                 "<th>spec</th><th>violation</th><th>steps</th></tr>\n" + "\n".join(rows)
                 + "\n</table>\n</body>\n</html>\n")
    return index, problems


def page_link(name: str) -> str:
    """An href to the page `name` beside the index: a relative path that cannot carry a
    scheme (`javascript:...` becomes `./javascript%3A...`), escaped for the attribute."""
    return html.escape("./" + quote(name), quote=True)


def html_name(trace_file: Path) -> str:
    """`x.itf.json` -> `x.html`."""
    name = trace_file.name
    for suffix in (".itf.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)] + ".html"
    return name + ".html"


def page(trace: Trace, source: str = "") -> str:
    """The whole HTML page of `trace`."""
    data = page_data(trace, source)
    folder = resources.files("checker.traces") / "page"
    css = (folder / "viewer.css").read_text(encoding="utf-8")
    script = (folder / "viewer.js").read_text(encoding="utf-8")
    payload = script_json(data)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="generator" content="{MARK}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(data['title'])}</title>\n<style>\n{css}</style>\n</head>\n"
            f'<body>\n<noscript>This page draws the trace with JavaScript; enable it to '
            f'see the trace.</noscript>\n<div id="app"></div>\n'
            f'<script type="application/json" id="trace-data">{payload}</script>\n'
            f"<script>\n{script}</script>\n</body>\n</html>\n")


def script_json(data: Any) -> str:
    """`data` as JSON that can sit inside <script>: no `<`, `>` or `&` appears (each is
    written as its JSON escape \\u003c...), so no text in it can close the element or
    open a comment, and JSON.parse still reads it back exactly."""
    text = json.dumps(data, ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def page_data(trace: Trace, source: str = "") -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data (every value already text)."""
    machine = trace.machine
    why = explain(trace)
    untouched = unused_slots(trace)
    steps: list[dict[str, Any]] = []
    previous: Rendered | None = None
    lanes: list[str] = []
    for i in range(len(trace) + 1):
        story = step_story(trace, i, previous)
        previous = story.view
        if story.view is not None:
            lanes += [lane for lane in story.view.lanes if lane not in lanes]
        action = trace.actions[i]
        happened = list(story.events)
        if story.view is None and action is not None:
            happened = [Event(SYSTEM_LANE, action.label)]
        for lane in [lane for e in happened for lane in (e.source, *e.targets)]:
            if lane not in lanes:
                lanes.append(lane)
        steps.append({
            "index": i,
            "title": story.title,
            "action": action.label if action is not None else start_label(trace),
            "narration": story.narration,
            "role": _role(why, i),
            "events": [{"source": e.source, "label": e.label, "targets": list(e.targets)}
                       for e in happened],
            "tables": _tables(story.view, story.changed) if story.view is not None else {},
            "note": story.view.note if story.view is not None else "",
            "vars": [{"name": v.name, "value": show(masked(v, story.after[v.name], untouched)),
                      "was": show(masked(v, story.before[v.name], untouched)),
                      "changed": story.before[v.name] != story.after[v.name],
                      "ghost": v.ghost} for v in machine.vars],
        })
    if trace.failing_action is not None:  # the error is this step's, not the last one's
        steps.append({**steps[-1], "index": len(trace) + 1, "title": failing_title(trace),
                      "action": trace.failing_action.label, "narration": "", "role": "",
                      "events": [] if machine.view is not None else [{
                          "source": SYSTEM_LANE, "label": f"{trace.failing_action.label} "
                                                          "fails", "targets": []}],
                      "failed": True,
                      "tables": {lane: [{**table, "changed": []} for table in tables]
                                 for lane, tables in steps[-1]["tables"].items()},
                      "vars": [{**v, "was": v["value"], "changed": False}
                               for v in steps[-1]["vars"]]})
    kind = str(trace.violation.get("kind", ""))
    return {
        "length": len(trace),
        "title": f"{trace.meta.get('model') or machine.spec_name}: "
                 + (violation_sentence(trace).split(":")[0] or "trace"),
        "source": source,
        "spec": machine.spec_name,
        "params": ", ".join(f"{k}={v}" for k, v in machine.params.items()) or "none",
        "mutations": ", ".join(machine.mutations) or "none",
        "meta": {str(k): _no_local_path(v) for k, v in sorted(trace.meta.items())},
        "violation": violation_sentence(trace),
        "violation_kind": kind,
        "violation_name": str(trace.violation.get("name", "")),
        "cti": "counterexample to induction: the start state satisfies every invariant "
               "and lemma but may be unreachable (unreachable or unknown)"
               if kind == CTI else "",
        "reads": property_values(why),
        "why": _why(trace, why),
        "untouched": UNTOUCHED if untouched else "",
        "loop": trace.loop,
        "loop_sentence": loop_sentence(trace),
        "lanes": lanes or [SYSTEM_LANE],
        "has_view": machine.view is not None,
        "steps": steps,
    }


def _role(why: Why | None, i: int) -> str:
    """How step i bears on the violation: it sets a value the failing clause reads,
    it leads to one, or neither (the page dims it)."""
    if why is None or i == 0:
        return ""
    return "sets" if i in why.sets else "matters" if i in why.matters else "other"


def _why(trace: Trace, why: Why | None) -> dict[str, Any] | None:
    """The explanation as the page shows it: each failing clause with its values (and
    the step that set each), the steps that set them in the spec's words, and how many
    steps matter."""
    if why is None:
        return None
    return {
        "doc": " ".join(why.doc.split()),
        "clauses": [{"headline": why.headline(c),
                     "readings": [{"name": r.name, "value": r.value, "since": r.since}
                                  for r in c.readings]} for c in why.clauses],
        "hidden": why.hidden,
        "sets": [{"step": s.index, "names": list(s.names), "action": s.label,
                  "narration": s.narration} for s in set_steps(trace, why)],
        "slice": slice_sentence(why, len(trace)),
    }


def _no_local_path(value: Any) -> str:
    """Provenance as text, an absolute path cut to its file name: a page is shared, and
    must not carry the layout of the machine that wrote it."""
    text = str(value)
    return Path(text).name if os.path.isabs(text) else text


def _tables(view: Rendered, changed: set[tuple[str, str, int, int]]) -> dict[str, Any]:
    """Each lane's tables ("" for the whole system) with cells as text and the cells
    this step changed."""
    return {lane: [{"title": t.title, "columns": list(t.columns),
                    "rows": [[show(cell) for cell in row] for row in t.rows],
                    "changed": sorted([r, c] for (ln, title, r, c) in changed
                                      if ln == lane and title == t.title)}
                   for t in tables]
            for lane, tables in view.tables.items()}

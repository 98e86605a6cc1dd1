"""`ctmc diff`'s outputs: a terminal table, Markdown for a pull request, JSON and JUnit.

Every output puts changed models first, says which findings count as regressions
under the run's `fail_on` policies, and leaves unchanged models to one line (in
Markdown, a collapsed list).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from rich.table import Table

from checker.diff.compare import ModelDiff
from checker.diff.run import SAME_MEANING, DiffReport
from checker.outputs import MARK, replace_text
from checker.reporting.cells import add_row
from checker.reporting.console import Console


def status(model: ModelDiff, fail_on: tuple[str, ...]) -> str:
    """`regression`, `changed` or `same`."""
    if model.regressions(fail_on):
        return "regression"
    return "changed" if model.changed else "same"


def _ordered(report: DiffReport, fail_on: tuple[str, ...]) -> list[ModelDiff]:
    rank = {"regression": 0, "changed": 1, "same": 2}
    return sorted(report.models, key=lambda m: rank[status(m, fail_on)])


def _pair(model: ModelDiff, key: str) -> str:
    """`base -> head` for one of the gate row's fields, one value when equal."""
    def cell(side: str) -> str:
        row = model.row(side)
        if not row:
            return "absent"
        if row.get("broken"):
            return "broken"
        value = row.get(key)
        if key == "proof":
            value = (value or {}).get("outcome")
        if value is None:
            return "-"
        return f"{value:,}" if isinstance(value, int) else str(value)
    was, now = cell("base"), cell("head")
    return now if was == now else f"{was} -> {now}"


def _behaviour(model: ModelDiff) -> str:
    """`same`, why the behaviours were not compared, or each direction's finding."""
    new, lost = model.new_behaviour, model.lost_behaviour
    if new is None or lost is None:
        return "-"
    if not new.trace_file and not lost.trace_file and new.note == lost.note:
        return "same" if new.note in ("none", SAME_MEANING) else new.note
    return "; ".join(f"{word}: {found.steps} steps" if found.trace_file
                     else f"{word}: {found.note}" for word, found in (("new", new),
                                                                      ("lost", lost)))


def coverage_changes(model: ModelDiff) -> list[tuple[str, str, str]]:
    """(action, enabled, new states) for each action whose counts differ, `was -> now`."""
    was, now = model.row("base").get("coverage") or {}, model.row("head").get("coverage") or {}

    def cell(before: list[int] | None, after: list[int] | None, k: int) -> str:
        old = "-" if before is None else f"{before[k]:,}"
        new = "-" if after is None else f"{after[k]:,}"
        return new if old == new else f"{old} -> {new}"

    return [(action, cell(was.get(action), now.get(action), 0),
             cell(was.get(action), now.get(action), 1))
            for action in [*was, *(a for a in now if a not in was)]
            if was.get(action) != now.get(action)]


def _findings(model: ModelDiff, fail_on: tuple[str, ...]) -> list[str]:
    counted = model.regressions(fail_on)
    return [("REGRESSION: " if f in counted else "") + f.text for f in model.findings]


def summary_line(report: DiffReport, fail_on: tuple[str, ...]) -> str:
    counts = {"regression": 0, "changed": 0, "same": 0}
    for m in report.models:
        counts[status(m, fail_on)] += 1
    return (f"{len(report.models)} models against {report.base}: {counts['regression']} "
            f"with regressions, {counts['changed']} changed, {counts['same']} unchanged "
            f"in {report.seconds:.2f} s")


# --- terminal ----------------------------------------------------------------------

def print_diff(report: DiffReport, fail_on: tuple[str, ...], outputs: list[str]) -> None:
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, 160)
    table = Table(title=f"diff against {report.base}", title_justify="left")
    for column in ("model", "verdict", "states", "proof", "behaviours", "findings"):
        table.add_column(column, justify="right" if column == "states" else "left",
                         overflow="fold")
    for m in _ordered(report, fail_on):
        kind = status(m, fail_on)
        add_row(table, m.name, _pair(m, "got"), _pair(m, "states"), _pair(m, "proof"),
                _behaviour(m), "\n".join(_findings(m, fail_on)) or "same",
                style="red" if kind == "regression" else None)
    console.print(table)
    console.print(summary_line(report, fail_on),
                  style="red bold" if report.regressions(fail_on) else "green", markup=False)
    for line in outputs:
        console.print(line, markup=False)


# --- Markdown --------------------------------------------------------------------------

def to_markdown(report: DiffReport, fail_on: tuple[str, ...]) -> str:
    """A pull-request comment: the changed models' table, the unchanged ones collapsed."""
    lines = [f"### ctmc diff against `{report.base}`", "", summary_line(report, fail_on), ""]
    changed = [m for m in _ordered(report, fail_on) if m.changed]
    if changed:
        lines += ["| model | verdict | states | proof | behaviours | findings |",
                  "|---|---|---|---|---|---|"]
        for m in changed:
            marker = "**regression** " if status(m, fail_on) == "regression" else ""
            cells = [f"{marker}`{m.name}`", _pair(m, "got"), _pair(m, "states"),
                     _pair(m, "proof"), _behaviour(m),
                     "<br>".join(_findings(m, fail_on))]
            lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
        lines.append("")
    for m in changed:
        rows = coverage_changes(m)
        if rows:
            lines += [f"<details><summary><code>{m.name}</code>: coverage per action, base "
                      f"-> head</summary>", "", "| action | enabled | new states |",
                      "|---|---|---|"]
            lines += [f"| `{action}` | {enabled} | {found} |" for action, enabled, found in rows]
            lines += ["", "</details>", ""]
    same = [m for m in report.models if not m.changed]
    if same:
        lines += [f"<details><summary>{len(same)} unchanged</summary>", ""]
        lines += [f"- `{m.name}`: {_md(_pair(m, 'got'))}, {_md(_pair(m, 'states'))} states"
                  for m in same]
        lines += ["", "</details>", ""]
    lines.append(f"<!-- {MARK} -->")
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


# --- JSON and JUnit ----------------------------------------------------------------------

def to_json(report: DiffReport, fail_on: tuple[str, ...]) -> dict[str, Any]:
    def behaviour(found: Any) -> dict[str, Any] | None:
        return None if found is None else {"trace_file": found.trace_file,
                                           "steps": found.steps, "note": found.note}
    return {
        "base": report.base, "root": str(report.root), "fail_on": list(fail_on),
        "seconds": report.seconds,
        "regressions": len(report.regressions(fail_on)),
        "models": [{
            "model": m.name, "status": status(m, fail_on),
            "base": m.row("base") or None, "head": m.row("head") or None,
            "findings": [{"policy": f.policy, "text": f.text,
                          "regression": f in m.regressions(fail_on)} for f in m.findings],
            "new_behaviour": behaviour(m.new_behaviour),
            "lost_behaviour": behaviour(m.lost_behaviour),
            "cache": {side: (getattr(m, side) or {}).get("cache", "")
                      for side in ("base", "head")},
        } for m in _ordered(report, fail_on)],
    }


def write_junit(report: DiffReport, fail_on: tuple[str, ...], path: Path) -> None:
    """A <testcase> per model, a <failure> per regression; replaced atomically."""
    regressions = [m for m in report.models if m.regressions(fail_on)]
    root = ET.Element("testsuites", name="ctmc diff", tests=str(len(report.models)),
                      failures=str(len(regressions)), errors="0",
                      time=f"{report.seconds:.3f}")
    suite = ET.SubElement(root, "testsuite", name=f"ctmc diff {report.base}",
                          tests=str(len(report.models)), failures=str(len(regressions)),
                          errors="0", skipped="0", time=f"{report.seconds:.3f}")
    for m in report.models:
        case = ET.SubElement(suite, "testcase", classname="diff", name=m.name)
        for f in m.regressions(fail_on):
            failure = ET.SubElement(case, "failure", message=f.text, type=f.policy)
            failure.text = f.text
        ET.SubElement(case, "system-out").text = "\n".join(
            [f"verdict: {_pair(m, 'got')}", f"states: {_pair(m, 'states')}",
             f"proof: {_pair(m, 'proof')}", f"behaviours: {_behaviour(m)}"]
            + _findings(m, fail_on))
    ET.indent(root)
    xml = ET.tostring(root, encoding="unicode")
    replace_text(path, f'<?xml version="1.0" encoding="utf-8"?>\n<!-- {MARK} -->\n{xml}\n')

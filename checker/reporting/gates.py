"""The CI gate's table: a row per model file (expected, got, states against the
baseline and orbits under symmetry, diameter, counterexample length, with --prove the
proof's outcome, k, lemmas used of those stated and seconds, time, verdict),
then a summary line and where the counterexamples, JUnit report and HTML pages went."""

from __future__ import annotations

import os
from pathlib import Path

from rich.table import Table

from checker.gate import GateReport
from checker.reporting.cells import add_row
from checker.reporting.console import Console

_COLUMNS = ("model", "expected", "got", "states", "diameter", "cex steps", "seconds",
            "verdict")
_LEFT = ("model", "expected", "got", "proof", "verdict")


def print_gate(report: GateReport, trace_dir: Path, junit: Path | None,
               html_index: Path | None) -> None:
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, 160)  # CI logs: a table, not a column of wraps
    table = Table(title="gate", title_justify="left")
    proofs = any(r.proof is not None for r in report.results)
    columns = list(_COLUMNS)
    if proofs:  # --prove: the proof's column before the time
        columns.insert(columns.index("seconds"), "proof")
    for column in columns:
        table.add_column(column, justify="left" if column in _LEFT else "right",
                         overflow="fold")
    for r in report.results:
        states = "-" if r.states is None else f"{r.states:,}"
        if r.baseline_updated:
            was = "none" if r.baseline_was is None else f"{r.baseline_was:,}"
            states += f" (baseline was {was})"
        elif r.states is not None and r.baseline is not None and r.states != r.baseline:
            states += f" (baseline {r.baseline:,})"
        if r.orbits is not None:
            states += f" / {r.orbits:,} orbits"
        got = (r.got or "-") + ("" if r.complete else " (bounded)")
        cells: list[object] = [r.name, r.expected or "-", got, states,
                               "-" if r.diameter is None else r.diameter,
                               "-" if r.trace_length is None else r.trace_length]
        if proofs:
            cells.append("-" if r.proof is None else r.proof.cell())
        add_row(table, *cells, f"{r.seconds:.2f}", "ok" if r.ok else f"SURPRISE: {r.reason}",
                style=None if r.ok else "red")
    console.print(table)
    surprises, broken = len(report.surprises), len(report.broken)
    summary = (f"{len(report.results)} models, {len(report.results) - surprises} as expected, "
               f"{surprises} {'surprise' if surprises == 1 else 'surprises'}"
               + (f" ({broken} broken)" if broken else "") + f" in {report.seconds:.2f} s")
    console.print(summary, style="green" if report.ok else "red bold", markup=False)
    if any(r.trace_file for r in report.results):
        console.print(f"counterexamples in {trace_dir}", markup=False)
    if junit:
        console.print(f"JUnit report: {junit}", markup=False)
    if html_index:
        console.print(f"HTML pages: {html_index}", markup=False)

"""What a run of `check`, `simulate` or `bmc` prints: a header naming what is checked
and how, the engine's statistics and per-action coverage, and the verdict with the
trace file; or all of it as one JSON object."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from checker.engines.result import CheckResult
from checker.lang.machine import Machine
from checker.models import Model, property_names
from checker.reporting.cells import add_row, formatted
from checker.reporting.console import Console

_STAT_FORMATS = {
    "distinct_states": ("distinct states", "{:,}"),
    "generated": ("states generated", "{:,}"),
    "diameter": ("diameter", "{:,}"),
    "seconds": ("time", "{:.2f} s"),
    "states_per_second": ("rate", "{:,.0f} states/s"),
    "peak_rss_mb": ("peak memory", "{:,.1f} MB"),
}
_VIOLATION_HEADS = {"invariant": "invariant {} violated", "step_invariant":
                    "step invariant {} violated", "deadlock": "deadlock",
                    "liveness": "liveness property {} violated",
                    "error": "evaluation error"}


_NOTHING_SELECTED = "no property (the model selects none, and deadlocks are not checked)"


def print_header(console: Console, model: Model, machine: Machine,
                 engine: dict[str, Any]) -> None:
    """The model, its spec, parameters and mutations; what is checked, with what."""
    params = ", ".join(f"{k}={v}" for k, v in machine.params.items()) or "no parameters"
    console.print(f"[bold]{escape(model.name)}[/]: "
                  + escape(f"spec {machine.spec_name} ({params}); "
                           f"mutations: {', '.join(machine.mutations) or 'none'}"))
    checked = property_names(machine) + (["Deadlock"] if engine["deadlock"] else [])
    settings = ", ".join(f"{k}={v}" for k, v in engine.items() if k != "name")
    console.print(f"checking {', '.join(checked) or _NOTHING_SELECTED} with "
                  f"{engine['name']} ({settings})", markup=False)


def print_stats(console: Console, stats: dict[str, Any]) -> None:
    """Known figures first, in a fixed order, then whatever else the engine reported."""
    table = Table(title="statistics", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    workers = stats.get("peak_rss_mb_workers")
    for key, (label, fmt) in _STAT_FORMATS.items():
        if key == "peak_rss_mb" and workers:  # the search's process and its workers
            label = f"peak memory, {len(workers) + 1} processes"
        if key in stats:
            add_row(table, label, formatted(fmt, stats[key]))
    if workers:
        add_row(table, "each worker's peak", ", ".join(f"{mb:,.1f}" for mb in workers) + " MB")
    if "fingerprint" in stats:
        mode = str(stats["fingerprint"])
        if mode == "hashed" and "collision_probability" in stats:
            mode += (f" (collision probability "
                     f"{formatted('{:.1e}', stats['collision_probability'])})")
        add_row(table, "fingerprints", mode)
    shown = set(_STAT_FORMATS) | {"fingerprint", "collision_probability", "peak_rss_mb_workers"}
    for key in sorted(set(stats) - shown):
        add_row(table, key.replace("_", " "), formatted("{:,}", stats[key]))
    console.print(table)


def print_coverage(console: Console, coverage: list[dict[str, Any]]) -> None:
    """One row per action with the engine's counts; an action whose first count is 0
    (never enabled, never taken) is a likely spec bug, so it stands out."""
    if not coverage:
        return
    counts = [k for k, v in coverage[0].items()
              if isinstance(v, int | float) and not isinstance(v, bool)]
    table = Table(title="coverage", title_justify="left")
    table.add_column("action")
    for key in counts:
        table.add_column(key.replace("_", " "), justify="right")
    for row in coverage:
        never = bool(counts) and row.get(counts[0]) == 0
        add_row(table, row.get("action"), *(formatted("{:,}", row.get(k)) for k in counts),
                style="yellow" if never else None)
    console.print(table)


def print_verdict(console: Console, model: Model, result: CheckResult,
                  trace_file: Path | None, matches: bool | None,
                  nothing_selected: bool = False) -> None:
    """holds / no violation found (bounded) / what was violated and where its trace
    is; then whether that is what the model file expects. With `nothing_selected` (no
    property, no deadlock check), "holds" says how little that means."""
    v = result.violation
    if result.outcome == "unknown":
        console.print("[yellow bold]unknown[/]: " + escape(
            f"{result.stats.get('unknown', 'the solver gave up')}; this is not a proof"))
        return
    if v is None and result.complete and nothing_selected:
        console.print("[green]holds[/]: no evaluation error in any reachable state, but "
                      f"the run checked {_NOTHING_SELECTED}")
    elif v is None and result.complete:
        console.print("[green]holds[/]: no violation in any reachable state")
    elif v is None:
        console.print("[green]no violation found[/] (exploration was bounded: not a proof)")
    else:
        head = _VIOLATION_HEADS.get(v.kind, "{} violated").format(v.name)
        where = f"in {trace_file} ({how_to_view(trace_file)})" if trace_file \
            else "(not written: see below)"
        console.print(f"[red bold]{escape(head)}[/]: " + escape(
            f"{len(v.trace)}-step trace {where}"))
        if v.message:
            console.print(f"  {v.message}", style="dim", markup=False)
    if matches is None:
        console.print("the model file's expected outcome does not apply: --inv or --mutation "
                      "changed what this run checks", style="dim", markup=False)
    elif matches:
        console.print(f"[green]as expected[/] ({escape(model.expect_outcome)})")
    else:
        console.print("[red bold]UNEXPECTED[/]: " + escape(
            f"the model expects {model.expect_outcome!r}, got {result.expectation!r}"))


def how_to_view(trace_file: Path) -> str:
    """The commands that show a trace file, in the terminal and as a page."""
    quoted = shlex.quote(str(trace_file))
    return f"view it with: ctmc trace show {quoted}, or ctmc trace html {quoted}"


def json_report(model: Model, machine: Machine, engine: dict[str, Any], result: CheckResult,
                trace_file: Path | None, matches: bool | None) -> dict[str, Any]:
    """The whole report as one JSON object (`--json`)."""
    v = result.violation
    return {
        "model": model.name,
        "spec": machine.spec_name,
        "params": machine.params,
        "mutations": list(machine.mutations),
        "engine": engine,
        "outcome": result.expectation,
        "complete": result.complete,
        "expected": None if matches is None else model.expect_outcome,
        "as_expected": matches,
        "violation": None if v is None else {
            "kind": v.kind, "name": v.name, "message": v.message,
            "trace_file": trace_file and str(trace_file), "length": len(v.trace)},
        "stats": result.stats,
        "coverage": result.coverage,
    }

"""`ctmc list`: the registered specs, the model files, and a spec's properties,
mutations and parameters, as tables that wrap at the terminal's width and never cut."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from checker.errors import CheckerError
from checker.lang.spec import Spec
from checker.reporting.cells import add_row
from checker.reporting.console import Console


def list_specs(console: Console) -> None:
    from checker.registry import all_specs

    table = Table(title="specs", title_justify="left")
    table.add_column("name", style="bold", overflow="fold")
    table.add_column("description", overflow="fold")
    for name, spec in sorted(all_specs().items()):
        add_row(table, name, spec.doc)
    console.print(table if table.row_count else "no specs registered")


def list_models(console: Console, models_dir: Path) -> list[str]:
    """A row per model file; returns an error line per broken file (the caller prints
    them on stderr). Narrower than a table fits (120 columns), each model is a name
    on its own line and what it checks under it."""
    from checker.models import list_models as model_files
    from checker.models import load_model

    rows, errors = [], []
    for path in model_files(models_dir):
        try:
            m = load_model(path, models_dir)
        except CheckerError as exc:
            rows.append((path.stem, "", "broken (see below)", ""))
            errors.append(f"error: {exc}")
            continue
        states = f" ({m.expect_states:,} states)" if m.expect_states else ""
        rows.append((m.name, m.spec_name, m.expect_outcome + states, m.description))
    if not rows:
        console.print(f"no models in {models_dir}", markup=False)
    elif console.width >= 120:
        table = Table(title=escape(f"models in {models_dir}"), title_justify="left")
        for column in ("model", "spec", "expected", "description"):
            table.add_column(column, style="bold" if column == "model" else None,
                             overflow="fold")
        for row in rows:
            add_row(table, *row, style="red" if row[2].startswith("broken") else None)
        console.print(table)
    else:
        console.print(Text(f"models in {models_dir}", style="italic"))
        for name, spec, expected, description in rows:
            console.print(Text(name, style="bold"))
            console.print(Text(f"    {expected}; spec {spec}. {' '.join(description.split())}",
                               style="red" if expected.startswith("broken") else ""))
    return errors


def list_invariants(console: Console, spec: Spec) -> None:
    machine = spec.instantiate()
    table = Table(title=escape(f"properties of {spec.name} (built with default parameters)"),
                  title_justify="left")
    for column in ("name", "kind", "description"):
        table.add_column(column, style="bold" if column == "name" else None, overflow="fold")
    for kind, props in (("invariant", machine.invariants),
                        ("step invariant", machine.step_invariants),
                        ("lemma", machine.lemmas), ("liveness", machine.liveness)):
        for p in props:
            add_row(table, p.name, kind, p.doc)
    console.print(table if table.row_count else f"spec {spec.name} declares no properties",
                  markup=False)


def list_mutations(console: Console, spec: Spec) -> None:
    table = Table(title=escape(f"mutations of {spec.name}"), title_justify="left")
    table.add_column("name", style="bold", overflow="fold")
    table.add_column("description", overflow="fold")
    for name, doc in spec.mutations.items():
        add_row(table, name, doc)
    console.print(table if table.row_count else f"spec {spec.name} declares no mutations",
                  markup=False)


def list_params(console: Console, spec: Spec) -> None:
    table = Table(title=escape(f"parameters of {spec.name}"), title_justify="left")
    for column in ("name", "default", "allowed", "description"):
        table.add_column(column, style="bold" if column == "name" else None, overflow="fold")
    for p in spec.params.values():
        if p.choices is not None:
            allowed = " | ".join(p.choices)
        elif p.min is not None or p.max is not None:
            allowed = f"{'' if p.min is None else p.min}..{'' if p.max is None else p.max}"
        else:
            allowed = ""
        default = str(p.default).lower() if isinstance(p.default, bool) else p.default
        add_row(table, p.name, default, allowed, p.doc)
    console.print(table if table.row_count else f"spec {spec.name} declares no parameters",
                  markup=False)

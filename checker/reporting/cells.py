"""Table cells as data: what every report's rich tables share."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text


def add_row(table: Table, *cells: Any, style: str | None = None) -> None:
    """Cells are data, not markup ([brackets] print as written); a docstring's line
    breaks and indentation are folded so the table wraps it instead."""
    table.add_row(*(Text(" ".join(str(c).split())) for c in cells), style=style)


def formatted(fmt: str, value: Any) -> str:
    """`fmt.format(value)`, or the value as it is when it is not a number."""
    try:
        return fmt.format(value)
    except (TypeError, ValueError):
        return str(value)

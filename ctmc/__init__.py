"""ctmc, the closed-timestamp model checker, as an installed package.

The repository keeps the design card's layout: `checker/`, `spec/`, `models/` and
`cli.py` at its top. An installed wheel carries that tree inside this package
(`ctmc/_project/`) instead of putting generic names such as `cli`, `spec` and
`checker` into site-packages, where they would collide with other projects.
Importing `ctmc` puts the tree on the import path, so that in the processes that
use ctmc, `checker` and `spec` are ctmc's own; from a checkout or an editable
install the tree is the repository itself (`docs/decisions/0009-packaging.md`).

    import ctmc                       # first: makes checker and spec importable
    from checker.run import BfsOptions, run
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "closedts-model-checker"
_HERE = Path(__file__).resolve().parent
PROJECT = _HERE / "_project" if (_HERE / "_project").is_dir() else _HERE.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # a checkout that was never installed
    __version__ = "unknown"


def main() -> None:
    """The `ctmc` command."""
    from cli import main as cli_main

    cli_main()

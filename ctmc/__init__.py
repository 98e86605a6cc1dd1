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
from pathlib import Path

DISTRIBUTION = "closedts-model-checker"
_HERE = Path(__file__).resolve().parent
PROJECT = _HERE / "_project" if (_HERE / "_project").is_dir() else _HERE.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))


def __getattr__(name: str) -> str:
    """`__version__`, read from the installed metadata only when asked: importing
    `importlib.metadata` took most of this module's 19 ms, the command's first
    moments, when Ctrl-C still meets Python's own traceback."""
    if name != "__version__":
        raise AttributeError(f"module 'ctmc' has no attribute {name!r}")
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return "unknown"


def main() -> None:
    """The `ctmc` command; Ctrl-C while Python is still loading it is the same one line
    and exit code as later on."""
    try:
        from cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    cli_main()

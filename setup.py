"""Build hook: the wheel holds one package, `ctmc`, with the project's tree inside it.

The metadata is in setup.cfg. The repository keeps `checker/`, `spec/`, `models/`,
`bench/models/` and `cli.py` at its top; a built wheel carries them under
`ctmc/_project/`, which `import ctmc` puts on the import path
(`docs/decisions/0009-packaging.md`). An editable install needs no copy: there the
tree is the repository itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
TREE = {"cli.py": "cli.py", "checker": "checker", "spec": "spec", "models": "models",
        "bench/models": "bench/models"}
KEEP = ("*.py", "*.toml", "*.js", "*.css")  # the trace viewer's page is .js and .css


class BuildWithProject(build_py):
    """build_py, then the project's tree copied into ctmc/_project."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "ctmc" / "_project"
        for source, dest in TREE.items():
            path = ROOT / source
            if path.is_file():
                (target / dest).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target / dest)
                continue
            for file in sorted(p for pattern in KEEP for p in path.rglob(pattern)):
                if "__pycache__" in file.parts:
                    continue
                out = target / dest / file.relative_to(path)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, out)


setup(cmdclass={"build_py": BuildWithProject})

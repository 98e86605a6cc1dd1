"""Finding specs: by registered name, by `module:attribute`, or by `path/file.py:attribute`.

The checker knows no protocol: a project lists its specs in a package whose
`SPECS` dict maps names to `Spec` objects (here, `spec.SPECS`). Any other spec is
reachable by a reference:

- `module:attribute` imports `module`, looking in the folder given as `search`
  (the model file's folder) before the usual import path;
- `path/to/file.py:attribute` loads that file, relative to `search`.

A spec loaded from a file, or from a module found only in the model's folder,
remembers where it came from (`Spec.origin`), so traces, checkpoints and Spark
executors can load it again from any working folder. Whatever goes wrong while
importing the user's file is one line naming the file and the line.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import NoReturn, TypeVar

from checker.errors import ModelError, did_you_mean
from checker.lang.spec import Spec

T = TypeVar("T")  # what the user's code returns

SPEC_PACKAGES = ["spec"]


def all_specs() -> dict[str, Spec]:
    out: dict[str, Spec] = {}
    for package in SPEC_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        out.update(getattr(module, "SPECS", {}))
    return out


def find_spec(ref: str, search: str | os.PathLike | None = None) -> Spec:
    """A spec by registered name, `module:attribute` or `path.py:attribute`; `search`
    is the folder relative references start from (the model file's)."""
    if ":" not in ref:
        specs = all_specs()
        if ref not in specs:
            raise ModelError(f"unknown spec {ref!r}{did_you_mean(ref, specs)} (known: "
                             f"{', '.join(sorted(specs)) or 'none'})")
        return specs[ref]
    target, _, attr = ref.rpartition(":")
    if not attr.isidentifier():
        raise ModelError(f"spec reference {ref!r} is not module:attribute or "
                         "path/file.py:attribute (for example spec.tracker:TRACKER)")
    if target.endswith(".py") or "/" in target or os.sep in target:
        path = Path(target) if Path(target).is_absolute() else Path(search or ".") / target
        module = _load_file(path.resolve())
        origin = f"{path.resolve()}:{attr}"
    else:
        if not target or not all(part.isidentifier() for part in target.split(".")):
            raise ModelError(f"spec reference {ref!r} is not module:attribute or "
                             "path/file.py:attribute (for example spec.tracker:TRACKER)")
        module = _import(target, search)
        origin = _origin(module, attr, search)
    spec = getattr(module, attr, None)
    if not isinstance(spec, Spec):
        names = [n for n, v in vars(module).items() if isinstance(v, Spec)]
        raise ModelError(f"{ref!r} is not a Spec{did_you_mean(attr, names)}"
                         + (f" (the module's specs: {', '.join(names)})" if names else ""))
    if origin:
        spec.origin = origin
    return spec


def _origin(module: ModuleType, attr: str, search: str | os.PathLike | None) -> str:
    """How to load a spec imported from the model's folder again without that folder on
    the import path: by its file, if it is a plain module there."""
    file = getattr(module, "__file__", None)
    if search is None or file is None or "." in module.__name__:
        return ""
    folder = Path(search).resolve()
    return f"{Path(file).resolve()}:{attr}" if Path(file).resolve().parent == folder else ""


def _load_file(path: Path) -> ModuleType:
    """The module in `path`, loaded once per process under a name of its own."""
    if not path.is_file():
        raise ModelError(f"spec file {path} does not exist")
    name = f"_ctmc_spec_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
    if name in sys.modules:
        return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ModelError(f"spec file {path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    try:
        _run_user_code(str(path), lambda: loader_spec.loader.exec_module(module))  # type: ignore[union-attr]
    except ModelError:
        del sys.modules[name]
        raise
    return module


def _import(module_name: str, search: str | os.PathLike | None) -> ModuleType:
    """Import a spec module, the model's folder first on the import path while it is
    imported, and last afterwards: a helper module there named like one of Python's
    own (numbers.py, fractions.py) must not take its place when numpy or z3 imports
    it later, while the spec's own later imports of its helpers still find them."""
    folder = "" if search is None else str(Path(search).resolve())
    added = bool(folder) and folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        return _run_user_code(module_name, lambda: importlib.import_module(module_name))
    except ModuleNotFoundError as exc:
        where = f" (looked in {folder} and the import path)" if folder else ""
        raise ModelError(f"cannot import spec module {module_name!r}: {exc}{where}") from None
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
            sys.path.append(folder)


def _run_user_code(what: str, run: Callable[[], T]) -> T:
    """Run the import of the user's spec; any failure in it is one line with file:line.
    Only the spec module itself being absent is left to the caller to word. What it
    prints goes to stderr: stdout is the command's (its --json, say)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            return run()
    except ModuleNotFoundError as exc:
        if exc.name is not None and (what == exc.name or what.startswith(exc.name + ".")):
            raise
        _user_failure(what, exc)
    except (Exception, SystemExit) as exc:  # the module's own code failed or quit
        _user_failure(what, exc)


def _user_failure(what: str, exc: BaseException) -> NoReturn:
    if isinstance(exc, SyntaxError):
        raise ModelError(f"spec module {what!r}: {os.path.relpath(exc.filename or '?')}"
                         f":{exc.lineno}: syntax error: {exc.msg}") from None
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if "importlib" not in f.filename]
    where = f"{os.path.relpath(frames[-1].filename)}:{frames[-1].lineno}: " if frames else ""
    kind = f"SystemExit({exc.code!r})" if isinstance(exc, SystemExit) \
        else f"{type(exc).__name__}: {exc}"
    raise ModelError(f"spec module {what!r} failed while being imported: {where}{kind}") \
        from None

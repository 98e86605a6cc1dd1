"""Finding specs by name or by `module:attribute` reference.

The checker knows no protocol: a project lists its specs in a package whose
`SPECS` dict maps names to `Spec` objects (here, `spec.SPECS`). Any other spec
is reachable by its import reference, e.g. `tests.specs.counter:COUNTER`.
"""

from __future__ import annotations

import importlib
import os
import traceback

from checker.errors import ModelError
from checker.lang.spec import Spec

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


def find_spec(name_or_ref: str) -> Spec:
    """A spec by registered name, or by `module:attribute`."""
    if ":" in name_or_ref:
        module_name, _, attr = name_or_ref.partition(":")
        if not all(part.isidentifier() for part in module_name.split(".")) \
                or not attr.isidentifier():
            raise ModelError(f"spec reference {name_or_ref!r} is not module:attribute "
                             "(for example spec.tracker:TRACKER)")
        module = _import(module_name)
        spec = getattr(module, attr, None)
        if not isinstance(spec, Spec):
            raise ModelError(f"{name_or_ref!r} is not a Spec")
        return spec
    specs = all_specs()
    if name_or_ref not in specs:
        known = ", ".join(sorted(specs)) or "none"
        raise ModelError(f"unknown spec {name_or_ref!r} (known: {known})")
    return specs[name_or_ref]


def _import(module_name: str):  # noqa: ANN202 - a module
    """Import a spec module; whatever goes wrong in it is one line naming file and line."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModelError(f"cannot import spec module {module_name!r}: {exc}") from None
    except SyntaxError as exc:
        raise ModelError(f"spec module {module_name!r}: {os.path.relpath(exc.filename or '?')}"
                         f":{exc.lineno}: syntax error: {exc.msg}") from None
    except (Exception, SystemExit) as exc:  # the module's own code failed or quit
        frames = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.relpath(frames[-1].filename)}:{frames[-1].lineno}: " if frames else ""
        what = f"SystemExit({exc.code!r})" if isinstance(exc, SystemExit) \
            else f"{type(exc).__name__}: {exc}"
        raise ModelError(f"spec module {module_name!r} failed while being imported: "
                         f"{where}{what}") from None

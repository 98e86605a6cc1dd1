"""Finding specs by name or by `module:attribute` reference.

The checker knows no protocol: a project lists its specs in a package whose
`SPECS` dict maps names to `Spec` objects (here, `spec.SPECS`). Any other spec
is reachable by its import reference, e.g. `tests.specs.counter:COUNTER`.
"""

from __future__ import annotations

import importlib

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
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelError(f"cannot import spec module {module_name!r}: {exc}") from None
        spec = getattr(module, attr, None)
        if not isinstance(spec, Spec):
            raise ModelError(f"{name_or_ref!r} is not a Spec")
        return spec
    specs = all_specs()
    if name_or_ref not in specs:
        known = ", ".join(sorted(specs)) or "none"
        raise ModelError(f"unknown spec {name_or_ref!r} (known: {known})")
    return specs[name_or_ref]

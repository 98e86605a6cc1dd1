"""The closed-timestamp specs, written in the spec language (`checker.lang`).

`SPECS` maps each spec's name to its `Spec`; the checker's registry
(`checker.registry`) finds specs here by name, e.g. `spec = "tracker"` in a model file.

* `tracker` (`spec/tracker.py`): the 2020 log-driven RFC's two-bucket closed-timestamp
  tracker in the proposal buffer, with its min-heap alternative; its rules are exported
  as `TrackerRules` for reuse by the full log-driven protocol spec.
"""

from spec.tracker import TRACKER

SPECS = {"tracker": TRACKER}

__all__ = ["SPECS", "TRACKER"]

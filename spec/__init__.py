"""The closed-timestamp specs, written in the spec language (`checker.lang`).

`SPECS` maps each spec's name to its `Spec`; the checker's registry
(`checker.registry`) finds specs here by name, e.g. `spec = "tracker"` in a model file.

* `tracker` (`spec/tracker.py`): the 2020 log-driven RFC's two-bucket closed-timestamp
  tracker in the proposal buffer, with its min-heap alternative; its rules are exported
  as `TrackerRules` for reuse by the full log-driven protocol spec.
* `log_driven` (`spec/log_driven/`): the 2020 design end to end, assembled from
  components (tracker, proposal buffer, Raft log and application, follower reads).
* `follower_reads_2018` (`spec/follower_reads_2018/`): the 2018 design (min proposal
  tracker, closed-timestamp updates with epochs and MLAI maps), reusing the log-driven
  spec's Raft log, application and follower reads.
"""

from spec.follower_reads_2018 import FOLLOWER_READS_2018
from spec.log_driven import LOG_DRIVEN
from spec.tracker import TRACKER

SPECS = {"tracker": TRACKER, "log_driven": LOG_DRIVEN,
         "follower_reads_2018": FOLLOWER_READS_2018}

__all__ = ["FOLLOWER_READS_2018", "LOG_DRIVEN", "SPECS", "TRACKER"]

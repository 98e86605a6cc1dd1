"""A behaviour of a Machine: states and the action instance taken before each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checker.lang.machine import ActionInstance, Machine

State = tuple[int, ...]


@dataclass
class Trace:
    """`actions[i]` leads from `states[i-1]` to `states[i]`; `actions[0]` is None."""

    machine: Machine
    states: list[State]
    actions: list[ActionInstance | None]
    # what the trace shows: e.g. {"kind": "invariant", "name": "NoStaleRead"}
    violation: dict[str, Any] = field(default_factory=dict)
    # free-form provenance: engine, model file, seed, ...
    meta: dict[str, Any] = field(default_factory=dict)
    # a lasso (liveness counterexample): the last state is followed by states[loop],
    # through `loop_action`, or by itself forever (stuttering) when loop_action is None
    loop: int | None = None
    loop_action: ActionInstance | None = None

    def __len__(self) -> int:
        """Number of steps (transitions)."""
        return len(self.states) - 1

    @property
    def failing_action(self) -> ActionInstance | None:
        """The action instance that fails to evaluate at the last state (an evaluation
        error of an action, not of a property), as the violation names it."""
        named = self.violation.get("action")
        if not isinstance(named, dict):
            return None
        return next((a for a in self.machine.actions if a.name == named.get("action")
                     and a.params_json() == named.get("params")), None)


def failing(action: ActionInstance) -> dict[str, Any]:
    """How a trace's violation names the action that fails at its end."""
    return {"action": action.name, "params": action.params_json()}

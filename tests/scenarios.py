"""Scenario tests' one tool: take a spec's action instances by label, in order, on the
scalar backend, and look at the states they reach."""

from __future__ import annotations

from typing import Any

from checker.backends.scalar import ScalarMachine


def _start(spec: Any, params: dict, mutations: tuple[str, ...]) -> tuple[Any, Any, dict]:
    machine = spec.instantiate(params, mutations)
    return machine, ScalarMachine(machine), {a.label: a for a in machine.actions}


def play(spec: Any, params: dict, labels: list[str],
         mutations: tuple[str, ...] = ()) -> list[dict]:
    """Take the named action instances in order; every one must exist and be enabled.
    Returns the decoded states, the initial one first."""
    machine, sm, by_label = _start(spec, params, mutations)
    state = machine.init_states[0]
    out = [machine.decode(state)]
    for label in labels:
        assert label in by_label, f"no action instance {label}"
        action = by_label[label]
        assert sm.enabled(state, action), f"{label} is not enabled"
        state = sm.apply(state, action)
        out.append(machine.decode(state))
    return out


def enabled_after(spec: Any, params: dict, labels: list[str], label: str) -> bool:
    """Whether `label` is enabled after taking `labels` (each applied as is)."""
    machine, sm, by_label = _start(spec, params, ())
    state = machine.init_states[0]
    for step in labels:
        state = sm.apply(state, by_label[step])
    return sm.enabled(state, by_label[label])

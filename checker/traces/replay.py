"""Replaying ITF traces against a spec, step by step, with the reference evaluator.

A trace file is a claim ("this behaviour reaches a bad state"); replay turns
it back into a `Trace` only if every step is a real transition of the spec as
it is now, so a stale or hand-edited counterexample is refused with the step
that no longer holds instead of being shown as if it were true.
"""

from __future__ import annotations

import json
import os
from typing import Any

from checker.backends.scalar import ScalarMachine, State
from checker.errors import EvalError, ModelError, TraceError, did_you_mean, shown_path
from checker.lang.machine import ActionInstance, Machine
from checker.registry import find_spec
from checker.traces.itf import (
    DEFAULT_LIMITS,
    SPEC_KEYS,
    Limits,
    check_itf,
    from_itf_value,
    read_itf,
)
from checker.traces.trace import Trace

_SHOWN_DIFFERENCES = 3


def load_trace(source: str | os.PathLike | dict[str, Any], machine: Machine | None = None,
               limits: Limits = DEFAULT_LIMITS) -> Trace:
    """Rebuild a Trace from an ITF file (read within `limits`) or document, checking every
    step."""
    where = _where(source)
    if isinstance(source, dict):
        check_itf(source, where)
        doc = source
    else:
        doc = read_itf(source, limits)
    meta = from_itf_value(doc.get("#meta", {}), f"{where}: #meta")
    machine = machine or _machine_from_meta(meta, where)
    _refuse_foreign_variables(doc, machine, where)
    states = [machine.encode(from_itf_value(s, f"{where}: state {i}"), f"{where}: state {i}")
              for i, s in enumerate(doc["states"])]
    violation = meta.get("violation") or {}
    if not isinstance(violation, dict):
        raise TraceError(f"{where}: \"#meta\".violation is not an object")
    # a counterexample to induction (from `prove`) starts wherever the solver found it
    if states[0] not in machine.init_states and violation.get("kind") != "cti":
        raise TraceError(f"{where}: state 0 is not an initial state of {machine.spec_name}: "
                         f"{_closest_init_difference(machine, states[0])}")
    scalar = ScalarMachine(machine)
    actions: list[ActionInstance | None] = [None]
    for i in range(1, len(states)):
        try:
            actions.append(_replay_step(scalar, doc["states"][i].get("#meta", {}),
                                        states[i - 1], states[i]))
        except (EvalError, TraceError) as exc:
            raise TraceError(f"{where}: step {i}: {exc}") from None
    provenance = {k: v for k, v in meta.items() if k not in SPEC_KEYS}
    trace = Trace(machine, states, actions, violation=violation, meta=provenance)
    if doc.get("loop") is not None:
        _load_loop(trace, doc["loop"], meta.get("loop_action"), scalar, where)
    return trace


def _load_loop(trace: Trace, loop: int, step: Any, scalar: ScalarMachine, where: str) -> None:
    """A lasso's closing step: the last state goes back to states[loop] through the
    action `step` names, or (no action) stutters, which needs loop to be the last state."""
    trace.loop = loop
    last = len(trace.states) - 1
    if step is None:
        if loop != last:
            raise TraceError(f"{where}: the loop has no closing action, so it must start "
                             f"at the last state ({last}), not {loop}")
        return
    if not isinstance(step, dict):
        raise TraceError(f"{where}: \"#meta\".loop_action is not an object")
    try:
        trace.loop_action = _replay_step(scalar, step, trace.states[last], trace.states[loop])
    except (EvalError, TraceError) as exc:
        raise TraceError(f"{where}: the step closing the loop: {exc}") from None


def _refuse_foreign_variables(doc: dict[str, Any], machine: Machine, where: str) -> None:
    """A trace naming a variable the spec does not have is not a trace of this spec."""
    known = {v.name for v in machine.vars}
    foreign = [v for v in doc["vars"] if v not in known]
    if foreign:
        raise TraceError(f"{where}: \"vars\" names {foreign[0]!r}, which spec "
                         f"{machine.spec_name} does not declare{did_you_mean(foreign[0], known)}")
    for i, state in enumerate(doc["states"]):
        stray = [k for k in state if k != "#meta" and k not in known]
        if stray:
            raise TraceError(f"{where}: state {i} has {stray[0]!r}, which is not a variable "
                             f"of spec {machine.spec_name}")


def check_trace(source: str | os.PathLike | dict[str, Any],
                machine: Machine | None = None,
                limits: Limits = DEFAULT_LIMITS) -> tuple[Trace, list[str]]:
    """Replay a trace and name what its end violates; refuse it unless that confirms the
    violation it claims.

    Invariants (and lemmas) are checked at the last state and step invariants
    on the last step. A trace claiming a deadlock is confirmed by "Deadlock"
    (no action enabled at its end), a lasso claiming a liveness violation by the
    properties `confirm_lasso` finds it violates, one claiming an evaluation error by
    "EvalError" (its last state or step, its constraints or a step from it
    fail to evaluate). A trace that claims a violation (its `#meta` names one) which
    its replay does not show at the last step is refused, naming what it shows
    instead: a counterexample that no longer is one must not pass for one.
    """
    trace = load_trace(source, machine, limits)
    scalar = ScalarMachine(trace.machine)
    kind = trace.violation.get("kind")
    last = trace.states[-1]
    found: list[str] = []
    try:
        found += scalar.violated_invariants(last)
        if len(trace):
            found += scalar.violated_step_invariants(trace.states[-2], last)
        if kind == "error":  # evaluated for the EvalError they raise
            scalar.within_constraints(last)
            failing = trace.failing_action
            if "action" in trace.violation and failing is None:
                raise TraceError(f"{_where(source)}: \"#meta\".violation.action names no "
                                 f"action instance of {trace.machine.spec_name}")
            if failing is None:
                scalar.successors(last)
            elif scalar.enabled(last, failing):  # the action it names, and no other
                scalar.apply(last, failing)
        elif kind == "deadlock" and not scalar.successors(last):
            found.append("Deadlock")
        elif kind == "liveness":
            from checker.engines.explicit.liveness import confirm_lasso

            found += confirm_lasso(trace)
    except EvalError as exc:
        if kind != "error":
            raise TraceError(f"{_where(source)}: step {len(trace)}: {exc}") from None
        found.append("EvalError")
    _confirm_claim(trace, found, _where(source))
    return trace, found


def _confirm_claim(trace: Trace, found: list[str], where: str) -> None:
    """Refuse a trace whose claimed violation its replay does not show."""
    claim = trace.violation.get("name")
    if not claim or claim in found:
        return
    if trace.violation.get("kind") == "liveness" and trace.loop is None:
        raise TraceError(f"{where}: claims the liveness property {claim} is violated, but "
                         "it has no loop (a counterexample to liveness is a lasso)")
    shown = ", ".join(found) or "nothing"
    raise TraceError(f"{where}: claims {claim} is violated at its last step (step "
                     f"{len(trace)}), but its replay violates {shown} there")


def _where(source: str | os.PathLike | dict[str, Any]) -> str:
    return "trace" if isinstance(source, dict) else shown_path(source)


def _machine_from_meta(meta: dict[str, Any], where: str) -> Machine:
    ref = meta.get("spec_ref") or meta.get("spec")
    if not isinstance(ref, str) or not ref:
        raise TraceError(f"{where}: \"#meta\" names no spec (spec_ref or spec)")
    params, mutations = meta.get("params", {}), meta.get("mutations", [])
    if not isinstance(params, dict) or not isinstance(mutations, list):
        raise TraceError(f"{where}: \"#meta\" params must be an object and mutations a list")
    try:
        return find_spec(ref).instantiate(params, mutations, where=f"{where}: #meta")
    except ModelError as exc:  # the parameters' errors name `where` already
        text = str(exc)
        raise TraceError(text if text.startswith(f"{where}: ") else f"{where}: {text}") \
            from None


def _replay_step(scalar: ScalarMachine, meta: dict[str, Any], before: State,
                 after: State) -> ActionInstance:
    """The action instance that the step's #meta names and that leads from before to after."""
    machine = scalar.machine
    name = meta.get("action")
    if name is None:  # a foreign trace: any action that fits
        return _any_matching(scalar, machine.actions, before, after, "no action")
    if not isinstance(name, str):
        raise TraceError(f"the action must be a name, got {json.dumps(name)}")
    if name not in machine.action_names():
        raise TraceError(f"unknown action {name!r}{did_you_mean(name, machine.action_names())} "
                         f"(known: {', '.join(machine.action_names())})")
    params = meta.get("params")
    if params is None:
        named = [a for a in machine.actions if a.name == name]
        return _any_matching(scalar, named, before, after, f"no instance of {name}")
    wanted = _json_key(from_itf_value(params, "params"))
    match = next((a for a in machine.actions
                  if a.name == name and _json_key(a.params_json()) == wanted), None)
    if match is None:
        shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in params.items()) \
            if isinstance(params, dict) else json.dumps(params)
        raise TraceError(f"{name}({shown}) is not an action instance of {machine.spec_name}")
    if not scalar.enabled(before, match):
        raise TraceError(f"{match.label} is not enabled")
    got = scalar.apply(before, match)
    if got != after:
        raise TraceError(f"{match.label} leads to a different state: "
                         f"{_difference(machine, got, after)}")
    return match


def _any_matching(scalar: ScalarMachine, candidates: list[ActionInstance], before: State,
                  after: State, none: str) -> ActionInstance:
    """The first (by id) enabled candidate whose successor is `after`."""
    enabled = [a for a in candidates if scalar.enabled(before, a)]
    for a in enabled:
        if scalar.apply(before, a) == after:
            return a
    if not enabled:
        raise TraceError(f"{none} is enabled")
    raise TraceError(f"{none} leads to the next state "
                     f"(enabled: {', '.join(a.label for a in enabled)})")


def _json_key(value: Any) -> str:
    """Compare parameters as JSON values, so that 1 and true differ."""
    return json.dumps(value, sort_keys=True)


def _difference(machine: Machine, got: State, traced: State) -> str:
    """`now is 5, trace says 6`, for the first few differing slots."""
    diffs = [f"{s.name} is {s.show(g)}, trace says {s.show(t)}"
             for s, g, t in zip(machine.slots, got, traced, strict=True) if g != t]
    more = len(diffs) - _SHOWN_DIFFERENCES
    return ", ".join(diffs[:_SHOWN_DIFFERENCES]) + (f" and {more} more" if more > 0 else "")


def _closest_init_difference(machine: Machine, state: State) -> str:
    closest = min(machine.init_states,
                  key=lambda init: sum(a != b for a, b in zip(init, state, strict=True)))
    return _difference(machine, closest, state)

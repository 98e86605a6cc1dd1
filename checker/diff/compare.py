"""What a spec change did to one model: findings from its base and head runs.

Each side's answer is the gate's row for the model plus its coverage and state graph
(`side`). A finding names what changed and which policy it belongs to; a finding
counts as a regression when its policy is one the user fails on. Two kinds always
count: a verdict that got worse (a model that held now violates; a mutation model
that violated now holds, so the design no longer tells that wrong design apart) and
a model that no longer loads or runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# what a finding is about; the first two always count, the others when asked
VERDICT, BROKEN = "verdict", "broken"
STATES, BEHAVIOURS, PROOFS, COVERAGE = "states", "behaviours", "proofs", "coverage"
POLICIES = (STATES, BEHAVIOURS, PROOFS, COVERAGE)
ALWAYS = (VERDICT, BROKEN)
INFO = "info"  # shown, never counted


@dataclass(frozen=True)
class Finding:
    policy: str  # VERDICT, BROKEN, one of POLICIES, or INFO
    text: str


@dataclass(frozen=True)
class BehaviourDiff:
    """One direction of the behaviour diff: a trace file and its length, or why not."""

    trace_file: str | None = None
    steps: int | None = None
    note: str = ""  # "none", "undecided: ...", or why it was not computed


@dataclass
class ModelDiff:
    name: str
    base: dict[str, Any] | None  # the side's answer; None: the model is not in that version
    head: dict[str, Any] | None
    findings: list[Finding] = field(default_factory=list)
    new_behaviour: BehaviourDiff | None = None  # head allows, base does not
    lost_behaviour: BehaviourDiff | None = None  # base allows, head does not

    def regressions(self, fail_on: tuple[str, ...]) -> list[Finding]:
        return [f for f in self.findings if f.policy in ALWAYS or f.policy in fail_on]

    @property
    def changed(self) -> bool:
        return bool(self.findings)

    def row(self, side: str) -> dict[str, Any]:
        """The side's gate row ({} when the model is not in that version)."""
        answer = self.base if side == "base" else self.head
        return {} if answer is None else answer["gate"]


def compare_runs(diff: ModelDiff) -> None:
    """Fill `diff.findings` from its two runs (the behaviour diff adds its own)."""
    base, head = diff.row("base"), diff.row("head")
    if not base or not head:
        only = "head" if head else "base"
        diff.findings.append(Finding(INFO, f"only in {only}"))
        if head.get("broken"):
            diff.findings.append(Finding(BROKEN, f"does not run: {_why(head)}"))
        return
    if head["broken"]:
        was = " (it did not run in base either)" if base["broken"] else ""
        diff.findings.append(Finding(BROKEN, f"does not run: {_why(head)}{was}"))
        return
    if base["broken"]:
        diff.findings.append(Finding(INFO, f"runs now; in base it did not: {_why(base)}"))
        return
    _verdict(diff, base, head)
    for key, word in (("states", "distinct states"), ("orbits", "orbits"),
                      ("diameter", "diameter"), ("trace_length", "counterexample length")):
        if base[key] != head[key]:
            diff.findings.append(Finding(STATES, f"{word} {_n(base[key])} -> {_n(head[key])}"))
    _coverage(diff, base, head)
    _proof(diff, base, head)


def _verdict(diff: ModelDiff, base: dict[str, Any], head: dict[str, Any]) -> None:
    was, now = base["got"], head["got"]
    if was == now:
        return
    caught = str(base["expected"]).startswith("violates")
    if now == "holds":
        if caught:
            text = (f"no longer caught: was {was}, now holds (the design no longer tells "
                    f"this wrong design apart)")
            diff.findings.append(Finding(VERDICT, text))
        else:
            diff.findings.append(Finding(INFO, f"fixed: was {was}, now holds"))
    elif was == "holds":
        diff.findings.append(Finding(VERDICT, f"now {now} (held in base)"))
    else:
        diff.findings.append(Finding(INFO if caught else VERDICT, f"was {was}, now {now}"))
    if diff.head is not None and diff.head.get("mutations_change_states") is False:
        diff.findings.append(Finding(COVERAGE, "the model's mutations change no reachable "
                                               "state or step: the switch is vacuous"))


def _coverage(diff: ModelDiff, base: dict[str, Any], head: dict[str, Any]) -> None:
    """Actions that found new states in base and find none now (in a search that ran to
    the end), and actions only one version has."""
    was, now = base["coverage"], head["coverage"]
    whole = head["got"] == "holds" and head["complete"] and base["complete"]
    idle = [a for a in now if a in was and was[a][1] > 0 and now[a][1] == 0]
    if whole and idle:
        diff.findings.append(Finding(COVERAGE, "adds no state any more (vacuous): "
                                     + ", ".join(idle)))
    gone, new = sorted(set(was) - set(now)), sorted(set(now) - set(was))
    if gone:
        diff.findings.append(Finding(INFO, "actions only in base: " + ", ".join(gone)))
    if new:
        diff.findings.append(Finding(INFO, "actions only in head: " + ", ".join(new)))


def _proof(diff: ModelDiff, base: dict[str, Any], head: dict[str, Any]) -> None:
    was = (base["proof"] or {}).get("outcome")
    now = (head["proof"] or {}).get("outcome")
    if was == now:
        return
    if was == "proved":
        diff.findings.append(Finding(PROOFS, f"proof lost: proved in base, now {now or 'none'}"
                                     + (f" ({_first(head['proof']['message'])})"
                                        if now and head["proof"]["message"] else "")))
    else:
        diff.findings.append(Finding(INFO, f"proof {was or 'none'} -> {now or 'none'}"))


def _why(row: dict[str, Any]) -> str:
    return "; ".join(row["surprises"]) or "unknown"


def _first(text: str) -> str:
    return text.splitlines()[0] if text else ""


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"

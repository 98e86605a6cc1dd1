"""What `prove` and `infer` found, for a person or as JSON.

A proof's report says the outcome in one coloured line, which lemmas it used, where
a counterexample (or counterexample to induction) was written and what to try next.
An inference's report is spec source a user pastes into their spec: the lemmas the
proof needs first, then the other true and inductive ones, with a comment header
saying how they were found.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from checker.engines.result import UNKNOWN
from checker.engines.symbolic.induction import COUNTEREXAMPLE, NOT_INDUCTIVE, PROVED, ProofResult
from checker.engines.symbolic.infer import InferResult, as_source
from checker.lang.machine import Machine
from checker.models import Model
from checker.reporting.console import Console
from checker.reporting.verdicts import how_to_view


def proof_json(model: Model, machine: Machine, result: ProofResult,
               trace_file: Path | None) -> dict[str, Any]:
    v = result.violation
    return {
        "model": model.name, "spec": machine.spec_name, "params": machine.params,
        "mutations": list(machine.mutations), "outcome": result.outcome, "k": result.k,
        "message": result.message, "lemmas_used": result.lemmas_used,
        "lemmas_unused": result.lemmas_unused,
        "trace_file": None if trace_file is None else str(trace_file),
        "length": None if v is None else len(v.trace), "stats": result.stats,
        "invariant": result.invariant or None}


def print_proof(console: Console, machine: Machine, result: ProofResult,
                trace_file: Path | None) -> None:
    color = {PROVED: "green", COUNTEREXAMPLE: "red bold"}.get(result.outcome, "yellow bold")
    console.print(f"[{color}]{escape(result.outcome)}[/]: {escape(result.message)}")
    pdr = result.stats.get("engine") == "pdr"
    if result.outcome == PROVED and machine.lemmas and not pdr:
        console.print(f"  lemmas used: {', '.join(result.lemmas_used) or 'none'}; "
                      f"unused: {', '.join(result.lemmas_unused) or 'none'}", markup=False)
    if result.invariant:
        console.print("  the invariant, as lemmas to paste into the spec's build function "
                      "(each is checked by BFS and k-induction once pasted):", markup=False)
        console.print(textwrap.indent(result.invariant, "    "), markup=False,
                      highlight=False)
    if trace_file is not None and result.violation is not None:
        what = "counterexample to induction" if result.outcome == NOT_INDUCTIVE \
            else "counterexample"
        console.print(f"  {len(result.violation.trace)}-step {what} in {trace_file} "
                      f"({how_to_view(trace_file)})", markup=False)
        if "trace" in result.stats:  # the timeout stopped the search for the least one
            console.print(f"  the trace is {result.stats['trace']}", markup=False)
    if result.outcome == UNKNOWN:
        console.print("  inconclusive: nothing is proved", markup=False)
    if result.outcome == NOT_INDUCTIVE:
        console.print("  its first state may be unreachable: `ctmc bmc` looks for a real "
                      "trace; a lemma excluding that state, or a larger --k, may make the "
                      "proof go through", markup=False)
    seconds = ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in
                        result.stats.items() if key.endswith("seconds"))
    depth = "pdr (Spacer)" if pdr else f"k={result.k}"
    console.print(f"  {depth}; {seconds}", style="dim", markup=False)


def infer_json(model: Model, machine: Machine, result: InferResult) -> dict[str, Any]:
    return {
        "model": model.name, "params": machine.params, "candidates": result.candidates,
        "true_in_states": result.after_states, "states": result.states,
        "sampled": result.sampled, "search": result.search, "rounds": result.rounds,
        "made": result.made, "implied": result.implied, "proves": result.proves,
        "minimal": result.minimal,
        "stuck": None if result.stuck is None else
        {"goal": result.stuck.goal, "state": result.stuck.state, "why": result.stuck.why},
        "dropped": result.dropped_invariants,
        "needed": [c.source for c in result.needed],
        "others": [c.source for c in result.others] if result.proves
        else [c.source for c in result.survivors],
        "spec_lemmas_used": result.spec_lemmas_used,
        "spec_lemmas_dropped": result.spec_lemmas_dropped, "unknown": result.unknown,
        "alive_note": result.alive_note, "unfiltered": result.unfiltered or None,
        "stats": result.stats}


def print_inferred(result: InferResult, spec_lemmas: bool) -> None:
    """The lemmas as spec source on stdout, under comments saying what they prove."""
    if result.unknown:
        _print_stopped(result)
        return
    if spec_lemmas and result.proves and not result.candidates:
        click.echo(f"# the spec's lemmas already prove every invariant (1-induction); "
                   f"nothing to add. Used: {', '.join(result.spec_lemmas_used)}")
        return
    where = "sampled" if result.sampled else "reachable"
    click.echo(f"# {result.candidates:,} candidates; {result.after_states:,} true in all "
               f"{result.states:,} {where} states; {_how_found(result)}")
    if result.proves:
        which = "a minimal set: without any one it fails" if result.minimal else \
            "those its unsat cores used"
        click.echo(f"# they prove every invariant (1-induction, checked apart from the "
                   f"search). The proof needs these {len(result.needed)} ({which}):\n")
        click.echo(as_source(result.needed, result.first), nl=False)
        if result.others:
            click.echo(f"\n# also true and inductive, but not needed by the proof "
                       f"({len(result.others)}):\n")
            click.echo(as_source(result.others, result.first + len(result.needed)), nl=False)
    elif result.stuck is not None:
        state = ", ".join(f"{k}={v}" for k, v in result.stuck.state.items())
        click.echo(f"# no proof: no lemma rules out this state, from which one step breaks "
                   f"{result.stuck.goal} ({result.stuck.why}): {state}")
        click.echo(f"# the {len(result.survivors)} lemmas chosen until then:\n")
        click.echo(as_source(result.survivors, result.first), nl=False)
    else:
        which = "inductive ones" if result.search == "houdini" else "lemmas found"
        click.echo(f"# they do not prove {', '.join(result.dropped_invariants)}; the "
                   f"{len(result.survivors)} {which}:\n")
        click.echo(as_source(result.survivors, result.first), nl=False)
    if spec_lemmas:
        click.echo(f"# the spec's lemmas used: {', '.join(result.spec_lemmas_used) or 'none'}"
                   f"; not inductive with the rest: "
                   f"{', '.join(result.spec_lemmas_dropped) or 'none'}")


def _how_found(result: InferResult) -> str:
    plural = "s" if result.rounds != 1 else ""
    if result.search == "houdini":
        return (f"{len(result.survivors):,} inductive after {result.rounds} Houdini "
                f"round{plural}, once {result.implied:,} implied by the others are dropped")
    return (f"{len(result.survivors):,} chosen in {result.rounds} round{plural} of "
            f"counterexamples to induction, {result.made:,} of them clauses made from "
            f"counterexamples no template ruled out")


def _print_stopped(result: InferResult) -> None:
    """A search the timeout stopped: why, and the candidates still alive, if any."""
    click.echo(f"# inconclusive: {result.unknown}; nothing is proved")
    if not result.alive_note:
        return
    if result.unfiltered:  # mostly templates some reachable state falsifies: not worth listing
        click.echo(f"# {result.unfiltered:,} template candidates still alive (a clause and its "
                   f"contrapositive counted apart): {result.alive_note}. They are not a "
                   f"proof, and are not listed.")
        return
    click.echo(f"# {len(result.survivors):,} candidates still alive: {result.alive_note}. "
               f"They are not a proof.")
    click.echo()
    click.echo(as_source(result.survivors, result.first), nl=False)

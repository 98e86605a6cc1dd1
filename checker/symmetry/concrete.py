"""Concrete counterexamples from a search that stored one state per orbit.

A reduced search records, per state, the action taken from its canonical
parent; replaying those actions from the initial state is not a trace (each
step starts from a representative, not from where the last step ended). This
module lifts the canonical path to a real one of the same length:

1. the canonical path c0..cd (replaying each action and canonicalising);
2. a concrete path s0..sd with canon(sk) = ck: from sk, the successor of the
   smallest action id whose representative is c(k+1);
3. the whole path permuted by the element taking sd to cd, so the trace ends at
   the state the search reported and its last action is the one it recorded;
   each step's action is then the smallest id producing exactly the next state.

Symmetry of the transition relation (checked by `verify.py`) guarantees each
search succeeds; if one does not, the declaration is wrong and this says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from checker.backends.scalar import ScalarMachine
from checker.engines.explicit.successors import Kernel
from checker.errors import CheckerError
from checker.symmetry.canonical import Canonicalizer
from checker.traces.trace import Trace


def concrete_trace(kernel: Kernel, canon: Canonicalizer, init: tuple[int, ...],
                   action_ids: Sequence[int]) -> Trace:
    """The trace from an initial state to the end of the canonical path `init`,
    `action_ids` (each action taken from the previous step's representative)."""
    machine = kernel.machine
    scalar = ScalarMachine(machine)
    targets = [_words(kernel, init)]
    state = init
    for a in action_ids:
        state = _unpack(kernel, canon.canonical(_words(kernel, scalar.apply(
            state, machine.actions[a]))))
        targets.append(_words(kernel, state))
    path = [init]
    for target in targets[1:]:
        succ, _ = _successors(kernel, path[-1])
        reps = canon.canonical(succ)
        hit = np.flatnonzero(_equal(reps, target))
        if not len(hit):
            raise _broken(machine.spec_name)
        path.append(_unpack(kernel, [w[hit[0]:hit[0] + 1] for w in succ]))
    element = canon.element_to_representative(_words(kernel, path[-1]))
    states = [canon.group.apply(element, s) for s in path]
    steps: list = [None]
    for before, after in zip(states, states[1:], strict=False):
        succ, gen = _successors(kernel, before)
        hit = np.flatnonzero(_equal(succ, _words(kernel, after)))
        if not len(hit):
            raise _broken(machine.spec_name)
        steps.append(machine.actions[int(gen[hit[0]] % kernel.n_actions)])
    return Trace(machine, states, steps)


def _successors(kernel: Kernel, state: tuple[int, ...]) -> tuple[list[np.ndarray], np.ndarray]:
    """Every successor of one state (not reduced), in action id order."""
    exp = kernel.expand(_words(kernel, state), 0, False, reduce=False)
    order = np.argsort(exp.gen, kind="stable")
    return [w[order] for w in exp.words], exp.gen[order]


def _words(kernel: Kernel, state: tuple[int, ...]) -> list[np.ndarray]:
    return kernel.layout.pack_states([state])


def _unpack(kernel: Kernel, words: list[np.ndarray]) -> tuple[int, ...]:
    return kernel.layout.unpack(tuple(int(w[0]) for w in words))


def _equal(words: list[np.ndarray], target: list[np.ndarray]) -> np.ndarray:
    same = np.ones(len(words[0]), dtype=bool)
    for w, t in zip(words, target, strict=True):
        same &= w == t[0]
    return same


def _broken(spec: str) -> CheckerError:
    return CheckerError(f"spec {spec}: a counterexample found under symmetry does not lift "
                        "to a concrete trace, so a declared scalarset is not a symmetry; "
                        "run ctmc check --check-symmetry to see which variable or action "
                        "breaks it")

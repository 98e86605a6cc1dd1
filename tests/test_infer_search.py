"""`ctmc infer`'s candidates and its search from counterexamples to induction.

The candidate pool is checked against a naive oracle (every literal and clause
evaluated by the scalar backend on every state a plain breadth-first walk reaches),
and its counts by hand; a clause made from an unreachable state is false there, true
in every reachable state and minimal. End to end, the examples infer a proof with no
lemmas, and the lemmas printed, pasted into a copy of the spec, make `ctmc prove`
prove it and BFS check them.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from checker.backends.scalar import ScalarMachine, evaluate
from checker.backends.vector import slot_reader
from checker.engines.symbolic.induction import PROVED, prove
from checker.engines.symbolic.infer import InferOptions, infer
from checker.engines.symbolic.infer.cti_search import SEEN, WITHDRAWN, SearchStopped
from checker.engines.symbolic.infer.relations import related_pairs
from checker.engines.symbolic.infer.templates import Pool, judge
from checker.engines.symbolic.options import ProveOptions
from checker.lang import Array, If, Int, Max, Spec, require
from checker.lang.expr import BOOL
from checker.models import build_machine, load_model
from checker.reporting.proofs import print_inferred
from tests.model_folders import paste_lemmas
from tests.z3_specs import LOCKSTEP

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _example(folder: str, name: str):
    return build_machine(load_model(EXAMPLES / folder / f"{name}.toml", EXAMPLES / folder))


def _reachable(machine) -> list[tuple[int, ...]]:
    """Every state a plain breadth-first walk of the scalar backend reaches."""
    scalar = ScalarMachine(machine)
    seen = {s: None for s in machine.init_states if scalar.within_constraints(s)}
    frontier = list(seen)
    while frontier:
        nxt = []
        for state in frontier:
            for _, t in scalar.successors(state):
                if t not in seen and scalar.within_constraints(t):
                    seen[t] = None
                    nxt.append(t)
        frontier = nxt
    return list(seen)


def _values(machine, pool: Pool, rows: list[tuple[int, ...]]) -> np.ndarray:
    bools = {s.index for s in machine.slots if s.leaf.sort == BOOL}
    array = np.array(rows, dtype=np.int64)
    return pool.values(slot_reader(array, bools, np.dtype(np.int64)), len(rows))


def test_lockstep_has_the_literals_and_clauses_counted_by_hand() -> None:
    """x, y in 0..9 (wider than 8: constants 0, 1, 8, 9): per slot, == and != for 4
    constants and < and >= for 3 (those above the least) make 14 literals; x against y
    6 more: 34. Guards are the 28 one-slot literals; 986 = 34 + 28 x 34 candidates."""
    pool = Pool(LOCKSTEP.instantiate())
    assert len(pool.literals) == 34 and len(pool.guards) == 28 and pool.total == 986
    sources = [lit.source for lit in pool.literals]
    assert sources[:6] == ["s.x == 0", "s.x != 0", "s.x == 1", "s.x != 1", "s.x < 1",
                           "s.x >= 1"]
    assert sources[-6:] == ["s.x < s.y", "s.x >= s.y", "s.y < s.x", "s.y >= s.x",
                            "s.x == s.y", "s.x != s.y"]
    for i, j in enumerate(pool.negation):  # each literal's negation, and back
        assert pool.negation[j] == i
        assert pool.literals[j].slots == pool.literals[i].slots
    # a clause whose conclusion is about its guard's one slot is no candidate
    guard_x = [row for row, g in enumerate(pool.guards) if pool.literals[g].source == "s.x == 0"]
    assert not pool.clauses[guard_x[0], :14].any() and pool.clauses[guard_x[0], 14:].all()


RELATE = Spec("relate", "which slots the spec relates, counted by hand")


@RELATE.build
def _relate(m, p):
    for name in "abcde":
        m.var(name, Int(0, 3), init=0)
    m.var("far", Int(10, 12), init=10)
    m.var("log", Array(Int(0, 3), 3), init=0)
    m.var("i", Int(0, 2), init=0)

    @m.action()
    def compare(s):
        require(s.a < s.b)  # a ~ b
        s.e = 3

    @m.action()
    def copy(s):
        s.b = If(s.e == 0, s.c, 0)  # b ~ c (the value), not e (the condition)
        s.c = Max(s.c, s.log[s.i])  # c ~ every log[k], not the index i; b ~ c again

    @m.action()
    def together(s):
        require(s.d < 3)
        s.d = s.d + 1  # d ~ far: one action writes both (ranges apart: no literal)
        s.far = 10

    @m.invariant
    def Bounded(s):  # noqa: N802
        return s.e >= s.i  # e ~ i

    @m.lemma
    def Unused(s):  # noqa: N802
        return s.a <= s.d  # a lemma a person wrote relates nothing


def test_related_pairs_are_the_ones_the_spec_compares_copies_or_writes_together() -> None:
    machine = RELATE.instantiate()
    index = {s.name: s.index for s in machine.slots}
    expected = {("a", "b"), ("b", "c"), ("c", "log[0]"), ("c", "log[1]"), ("c", "log[2]"),
                ("d", "far"), ("e", "i"), ("log[0]", "log[1]"), ("log[0]", "log[2]"),
                ("log[1]", "log[2]")}
    assert related_pairs(machine) == {tuple(sorted((index[x], index[y]))) for x, y in expected}
    pool = Pool(machine)  # six literals per related pair whose ranges overlap: not d, far
    pair_sources = {lit.source for lit in pool.literals if len(lit.slots) == 2}
    assert len(pair_sources) == 6 * 9 and "s.a < s.b" in pair_sources
    assert not any("s.far" in text or "s.a < s.d" in text for text in pair_sources)


@pytest.mark.parametrize("folder, name", [("mutex", "mutex"), ("two_phase_commit", "tpc")])
def test_the_pool_keeps_exactly_what_the_naive_oracle_keeps(folder: str, name: str) -> None:
    machine = _example(folder, name)
    states = _reachable(machine)
    pool = Pool(machine)
    for lo in range(0, len(states), 7):  # batches of 7, as BFS levels come
        pool.see(_values(machine, pool, states[lo:lo + 7]))
    assert pool.states == len(states)
    naive = np.array([[bool(evaluate(lit.expr, s)) for s in states] for lit in pool.literals])
    assert (pool.units == naive.all(axis=1)).all()
    only = [next(iter(lit.slots)) if len(lit.slots) == 1 else -1 for lit in pool.literals]
    for row, g in enumerate(pool.guards):
        expected = (~naive[g] | naive).all(axis=1)
        expected[[j for j in range(len(only)) if only[j] == only[g]]] = False
        assert (pool.clauses[row] == expected).all(), pool.literals[g].source
    cands = pool.candidates()
    for c in cands:  # each one printed holds everywhere, by its own expression
        assert all(evaluate(c.expr, s) for s in states), c.source
    assert len({c.clause for c in cands}) == len(cands)
    # the count from bits alone: every candidate once, a clause's contrapositive again
    # when it is in the pool too
    mirrored = sum(1 for c in cands if len(c.clause) == 2
                   and (pool.negation[c.clause[1]] in pool.guards)
                   and not pool.units[c.clause[1]])
    assert pool.not_falsified() == len(cands) + mirrored


def test_judging_in_chunks_keeps_what_judging_at_once_keeps(monkeypatch) -> None:
    from checker.engines.symbolic.infer import templates

    machine = _example("two_phase_commit", "tpc")
    states = _reachable(machine)
    bools = {s.index for s in machine.slots if s.leaf.sort == BOOL}
    whole, chunked = Pool(machine, keep=True), Pool(machine, keep=True)
    whole.see(_values(machine, whole, states))
    monkeypatch.setattr(templates, "CHUNK", 5)
    chunked.see_all(slot_reader(np.array(states), bools, np.dtype(np.int64)), len(states))
    assert chunked.states == whole.states == len(states)
    assert (chunked.units == whole.units).all() and (chunked.clauses == whole.clauses).all()
    rng = random.Random(3)
    unreachable = next(t for t in (tuple(rng.randint(s.lo, s.hi) for s in machine.slots)
                                   for _ in range(1000)) if t not in set(states))
    bad = _values(machine, whole, [unreachable])[:, 0]
    assert chunked.generalize(bad) == whole.generalize(bad) is not None


def test_judge_agrees_with_each_candidates_expression_on_any_state() -> None:
    machine = _example("two_phase_commit", "tpc")
    pool = Pool(machine, keep=True)
    pool.see(_values(machine, pool, _reachable(machine)))
    cands = pool.candidates()
    rng = random.Random(7)
    rows = [tuple(rng.randint(s.lo, s.hi) for s in machine.slots) for _ in range(40)]
    judged = judge(cands, _values(machine, pool, rows))
    for i, c in enumerate(cands):
        assert list(judged[i]) == [bool(evaluate(c.expr, r)) for r in rows], c.source


def test_a_clause_made_from_an_unreachable_state_is_false_there_and_minimal() -> None:
    machine = _example("mutex", "mutex")
    states = _reachable(machine)
    pool = Pool(machine, keep=True)
    pool.see(_values(machine, pool, states))
    names = [s.name for s in machine.slots]
    both = list(states[0])  # both processes critical: mutual exclusion's bad state
    for i, name in enumerate(names):
        if name.startswith("pc["):
            both[i] = [m for m in machine.slots[i].leaf.sort].index(
                next(m for m in machine.slots[i].leaf.sort if m.member == "critical"))
    bad = tuple(both)
    assert bad not in states
    clause = pool.generalize(_values(machine, pool, [bad])[:, 0])
    assert clause is not None and not evaluate(clause.expr, bad)
    assert all(evaluate(clause.expr, s) for s in states)
    for drop in clause.clause:  # without any one literal, some reachable state breaks it
        rest = [j for j in clause.clause if j != drop]
        weaker = pool.clause(tuple(rest)) if rest else None
        assert weaker is None or not all(evaluate(weaker.expr, s) for s in states)
    assert pool.generalize(_values(machine, pool, [states[3]])[:, 0]) is None  # reachable


@pytest.mark.parametrize("folder, name, spec_file", [("mutex", "mutex", "mutex.py"),
                                                     ("two_phase_commit", "tpc", "tpc.py")])
def test_the_examples_infer_a_proof_with_no_lemmas_and_it_pastes(
        tmp_path: Path, folder: str, name: str, spec_file: str) -> None:
    work = tmp_path / folder
    shutil.copytree(EXAMPLES / folder, work)
    ran = subprocess.run([sys.executable, "-m", "ctmc", "infer", f"{name}.toml", "-q"],
                         cwd=work, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert "they prove every invariant" in ran.stdout
    lemmas = ran.stdout[ran.stdout.index("@m.lemma"):]
    lemmas = lemmas.split("\n# also true")[0]  # the ones the proof needs
    paste_lemmas(work / spec_file, "from checker.lang import And, Implies, Not", lemmas)
    proved = subprocess.run([sys.executable, "-m", "ctmc", "prove", f"{name}.toml", "--json",
                             "--set", "rms=3" if name == "tpc" else "rounds=2"],
                            cwd=work, capture_output=True, text=True, timeout=600)
    assert proved.returncode == 0, proved.stdout + proved.stderr
    assert json.loads(proved.stdout)["outcome"] == PROVED
    checked = subprocess.run([sys.executable, "-m", "ctmc", "check", f"{name}.toml"],
                             cwd=work, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # BFS checks them


def test_made_clauses_complete_a_proof_the_templates_cannot() -> None:
    machine = _example("two_phase_commit", "tpc")
    first = infer(machine, InferOptions())
    assert first.proves and first.made > 0 and first.minimal
    assert any(len(c.clause) > 2 for c in first.needed)  # a made clause is needed
    # the needed ones prove it on their own, checked here apart from infer
    lemmas = [dataclasses.replace(p, name=f"L{i}") for i, p in enumerate(
        _as_props(first.needed))]
    assert prove(dataclasses.replace(machine, lemmas=lemmas),
                 ProveOptions()).outcome == PROVED


def test_stopped_in_the_search_it_still_counts_the_clauses_made(monkeypatch) -> None:
    """The search grows the candidates by the clauses it makes; stopped by the deadline,
    the result says how many (it said 0 where the progress lines had said hundreds)."""
    from checker.engines.symbolic.infer import pipeline

    def made_two_then_stopped(machine, pool, cands, deadline, progress, fixed):
        cands += [pool.clause((0, 2)), pool.clause((0, 4))]
        raise SearchStopped("the search for lemmas", cands[-2:], 3)

    monkeypatch.setattr(pipeline, "strengthen", made_two_then_stopped)
    result = infer(_example("two_phase_commit", "tpc"), InferOptions(timeout=600))
    assert result.made == 2 and result.rounds == 3 and len(result.survivors) == 2
    assert result.unknown and not result.proves


def test_the_same_command_prints_the_same_lemmas_for_any_number_of_workers() -> None:
    """Z3 answers alike to the same questions asked in the same order, in a fresh
    process (within one process, earlier queries change its models)."""
    outs = {subprocess.run([sys.executable, "-m", "ctmc", "--models-dir",
                            str(EXAMPLES / "two_phase_commit"), "infer", "tpc", "-q",
                            "--workers", workers], capture_output=True, text=True,
                           timeout=600).stdout for workers in ("1", "2")}
    assert len(outs) == 1 and "they prove every invariant" in outs.pop()


def _as_props(cands):
    from checker.engines.symbolic.infer import as_properties

    return as_properties(cands)


def test_sampled_states_never_give_a_false_proof(capsys) -> None:
    """From a few short walks, many clauses hold only in the states sampled: the search
    may choose them, but the proof that checks the result then fails, and infer says
    it does not prove the invariants."""
    machine = _example("two_phase_commit", "tpc")
    result = infer(machine, InferOptions(max_states=1, walks=2, walk_steps=3))
    assert result.sampled and result.states < 10
    if result.proves:  # only if what was found is inductive for real
        lemmas = _as_props(result.needed)
        assert prove(dataclasses.replace(machine, lemmas=lemmas),
                     ProveOptions()).outcome == PROVED
    else:
        assert result.dropped_invariants and not result.needed
        print_inferred(result, spec_lemmas=False)
        out = capsys.readouterr().out
        if result.stuck is not None:
            assert result.stuck.why in (SEEN, WITHDRAWN)
            assert "# no proof: no lemma rules out this state, from which one step breaks " \
                   f"the invariants ({result.stuck.why}): rm[0]=" in out
        assert "they prove" not in out


def test_random_walks_reach_only_reachable_states_and_repeat() -> None:
    """The walks the filter samples when BFS would be too big, taken by the kernel a
    step at a time: every state they visit is one BFS reaches (the naive oracle's set),
    they visit more than the initial states, and the same seed visits the same ones.
    (The oracle is `_reachable`: the scalar backend's plain breadth-first walk.)"""
    from checker.engines.symbolic.deadline import Deadline
    from checker.engines.symbolic.infer.pipeline import _walk_states

    machine = _example("two_phase_commit", "tpc")
    reachable = set(_reachable(machine))

    def walked(seed: int) -> list[tuple[int, ...]]:
        read, n = _walk_states(machine, InferOptions(walks=50, walk_steps=12, seed=seed),
                               Deadline(None))
        columns = [read(s.index) for s in machine.slots]
        return [tuple(int(c[i]) for c in columns) for i in range(n)]

    states = walked(7)
    assert len(states) == len(set(states))
    assert set(states) <= reachable and len(states) > len(machine.init_states)
    assert walked(7) == states and walked(8) != states

"""Symmetry reduction: orbit counts by brute force, checked declarations, concrete traces.

The oracle for the reduced search: explore every state with the naive scalar BFS,
then map each state to its orbit by trying every permutation of the group (the
smallest image as a tuple) and count distinct orbits. The engine must store
exactly that many states, with the same diameter and verdict.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from checker.backends.scalar import ScalarMachine  # noqa: E402
from checker.engines.explicit.bfs import BfsOptions, check  # noqa: E402
from checker.engines.explicit.successors import Kernel  # noqa: E402
from checker.errors import SpecError  # noqa: E402
from checker.lang import Array, Int, Spec, require  # noqa: E402
from checker.lang.machine import Machine  # noqa: E402
from checker.models import build_machine, list_models, load_model  # noqa: E402
from checker.packing import Layout  # noqa: E402
from checker.symmetry.canonical import Canonicalizer  # noqa: E402
from checker.symmetry.group import SymmetryGroup  # noqa: E402
from checker.symmetry.signatures import least  # noqa: E402
from checker.symmetry.verify import check_symmetry  # noqa: E402
from checker.traces.itf import write_trace  # noqa: E402
from checker.traces.replay import check_trace  # noqa: E402
from tests.specs.locks import LOCKS, ONE_HOLDER, WRONG  # noqa: E402

MODELS = ROOT / "models"


def reachable(machine: Machine) -> tuple[set[tuple[int, ...]], int]:
    """Every reachable state (constraints kept) and the diameter, by plain BFS."""
    scalar = ScalarMachine(machine)
    seen = {s: 0 for s in machine.init_states if scalar.within_constraints(s)}
    queue = deque(seen)
    while queue:
        s = queue.popleft()
        for _, t in scalar.successors(s):
            if t not in seen and scalar.within_constraints(t):
                seen[t] = seen[s] + 1
                queue.append(t)
    return set(seen), max(seen.values())


def every_element(group: SymmetryGroup) -> list:
    return group.elements_permuting(list(range(len(group.scalarsets))))


def orbits(machine: Machine, states: set[tuple[int, ...]]) -> int:
    group = SymmetryGroup(machine)
    elements = every_element(group)
    return len({min(group.apply(e, s) for e in elements) for s in states})


def tracker_small() -> Machine:
    return build_machine(load_model("tracker_small", MODELS), {})


@pytest.mark.parametrize("make", [
    lambda: LOCKS.instantiate(),
    lambda: LOCKS.instantiate({"clients": 4, "servers": 2}),
    tracker_small,
    lambda: build_machine(load_model("tracker_heap", MODELS), {}),
], ids=["locks-3x2", "locks-4x2", "tracker_small", "tracker_heap"])
def test_reduced_count_is_the_brute_force_orbit_count(make):
    machine = make()
    states, diameter = reachable(machine)
    plain = check(machine, BfsOptions(deadlock=False))
    reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert plain.stats["distinct_states"] == len(states)
    assert reduced.stats["distinct_states"] == orbits(machine, states) < len(states)
    assert reduced.stats["diameter"] == plain.stats["diameter"] == diameter
    assert reduced.outcome == plain.outcome == "holds"


@pytest.mark.parametrize("method", ["sort", "search"])
@pytest.mark.parametrize("make", [
    tracker_small,
    lambda: build_machine(load_model("tracker_heap", MODELS), {"requests": 4}),
    lambda: LOCKS.instantiate(),
], ids=["tracker_small", "tracker_heap-4", "locks"])
def test_each_method_maps_reachable_states_to_one_per_orbit(make, method):
    """Reachable states have ties (members with equal data) that random ones rarely do."""
    machine = make()
    states, _ = reachable(machine)
    layout = Layout(machine)
    words = layout.pack_states(sorted(states))
    reps = Canonicalizer(SymmetryGroup(machine), layout, method).canonical(words)
    distinct = len(set(zip(*(w.tolist() for w in reps), strict=True)))
    assert distinct == orbits(machine, states)


@pytest.mark.parametrize("make", [
    lambda: LOCKS.instantiate({"clients": 4, "servers": 3}),
    lambda: build_machine(load_model("tracker_small", MODELS), {"requests": 5}),
    lambda: build_machine(load_model("log_driven_core", MODELS), {"reads": 2}),
], ids=["locks-searched", "tracker-sorted", "log_driven-sorted-and-searched"])
def test_the_representative_depends_only_on_the_orbit(make):
    """On random in-type states: every image of a state has the same representative,
    and it is one of those images."""
    machine = make()
    layout = Layout(machine)
    group = SymmetryGroup(machine)
    canon = Canonicalizer(group, layout)
    rng = np.random.default_rng(7)
    cols = np.stack([rng.integers(s.lo, s.hi + 1, size=200) for s in machine.slots], axis=1)
    words = layout.pack_batch(cols)
    reps = canon.canonical(words)
    images = [canon.permute(words, e) for e in every_element(group)]
    for image in images:
        assert all((a == b).all() for a, b in zip(canon.canonical(image), reps, strict=True))
    in_orbit = np.zeros(len(cols), dtype=bool)
    for image in images:
        in_orbit |= np.logical_and.reduce([a == b for a, b in zip(image, reps, strict=True)])
    assert in_orbit.all()
    for i in range(0, len(cols), 37):
        one = [w[i:i + 1] for w in words]
        element = canon.element_to_representative(one)
        assert [int(w[0]) for w in canon.permute(one, element)] == [int(w[i]) for w in reps]


def test_a_wrong_declaration_is_refused_naming_the_variable():
    with pytest.raises(SpecError, match="scalarset Server is not a symmetry: swapping its "
                                        "members 0 and 1 changes invariant OwnerHolds .*; "
                                        "it reads target, which"):
        check_symmetry(WRONG.instantiate())


def test_the_declarations_in_the_repository_hold():
    report = check_symmetry(LOCKS.instantiate())
    assert report.reachable > 0 and report.random > 0
    check_symmetry(tracker_small())


def test_an_undeclared_variable_is_one_line():
    spec = Spec("bad_scalarset")

    @spec.build
    def _(m, p):
        m.var("x", Array(Int(0, 1), 2), init=0)
        m.scalarset("Node", 2, index={"y": 0})

        @m.action()
        def step(s):
            s.x[0] = 1

    with pytest.raises(SpecError, match=r"scalarset Node: no state variable named 'y'") as exc:
        spec.instantiate()
    assert "\n" not in str(exc.value)


def test_counterexamples_are_concrete_shortest_and_deterministic(tmp_path):
    machine = build_machine(load_model("mutation_reset_cur_on_prev_exit", MODELS), {})
    plain = check(machine, BfsOptions(deadlock=False))
    reduced = [check(machine, BfsOptions(deadlock=False, symmetry=True)) for _ in range(2)]
    assert plain.violation is not None
    for r in reduced:
        assert r.violation is not None and r.violation.name == plain.violation.name
        assert len(r.violation.trace) == len(plain.violation.trace)
        assert r.stats["distinct_states"] < plain.stats["distinct_states"]
    a, b = (r.violation.trace for r in reduced)
    assert a.states == b.states and [x and x.label for x in a.actions] == \
        [x and x.label for x in b.actions]
    path = tmp_path / "trace.itf.json"
    write_trace(a, path)
    _, found = check_trace(path)
    assert plain.violation.name in found


def _declaring_models() -> list[Path]:
    return [p for p in list_models(MODELS)
            if build_machine(load_model(p, MODELS)).scalarsets]


@pytest.mark.parametrize("path", _declaring_models(), ids=lambda p: p.stem)
def test_every_declaration_in_the_models_is_a_symmetry(path: Path):
    report = check_symmetry(build_machine(load_model(path, MODELS)))
    assert report.reachable > 100 and report.random > 100


def test_a_reduced_search_stopped_mid_level_resumes_alike(tmp_path):
    """Checkpoints keep representatives; a resumed reduced search reports what an
    uninterrupted one does, counterexample included."""
    from tests.test_checkpoints import _SignalMidLevel, figures

    machine = lambda: build_machine(load_model("mutation_reset_cur_on_prev_exit", MODELS), {})  # noqa: E731
    want = figures(check(machine(), BfsOptions(deadlock=False, symmetry=True)))
    folder = tmp_path / "ckpt"

    def options(**more) -> BfsOptions:
        return BfsOptions(deadlock=False, symmetry=True, checkpoint_dir=str(folder),
                          batch_size=3, checkpoint_every=0, progress_seconds=0,
                          resume=folder.exists(), **more)

    stops = 0
    for n in (2, 4, 7):
        try:
            got = check(machine(), options(progress=_SignalMidLevel(n)))
        except KeyboardInterrupt:
            stops += 1
            continue
        break
    else:
        got = check(machine(), options())
    assert stops >= 2
    assert figures(got) == want


def test_a_checkpoint_without_symmetry_is_not_resumed_with_it(tmp_path):
    from checker.errors import CheckerError

    machine = tracker_small()
    folder = tmp_path / "ckpt"
    check(machine, BfsOptions(deadlock=False, checkpoint_dir=str(folder), max_depth=3))
    with pytest.raises(CheckerError, match=r"another search \(symmetry is "):
        check(machine, BfsOptions(deadlock=False, checkpoint_dir=str(folder), max_depth=3,
                                  resume=True, symmetry=True))


@pytest.mark.parametrize("symmetry", [False, True])
def test_successors_rebuilt_from_keys_equal_the_expansion(monkeypatch, symmetry):
    """A hashed search holds only its candidates' keys and rebuilds the survivors' words
    from their parents (`Kernel.successors_of`): on reachable multi-word states, every
    transition rebuilt from its key (in any order, in small batches) equals what the
    expansion gave, as orbit representatives when the search reduces."""
    machine = build_machine(load_model("log_driven_core", MODELS), {})
    kernel = Kernel(machine)
    layout = kernel.layout
    if symmetry:
        kernel.canonical = Canonicalizer(SymmetryGroup(machine), layout).canonical
    frontier = layout.pack_states(machine.init_states)
    for _ in range(6):  # a few levels of distinct reachable states
        exp = kernel.expand(frontier, 0, False)
        _, rows = np.unique(layout.fingerprints(exp.words), return_index=True)
        frontier = [w[rows] for w in exp.words]
    exp = kernel.expand(frontier, 0, False)
    assert not layout.exact and len(exp.gen) > 1_000
    monkeypatch.setattr("checker.engines.explicit.successors._REBUILD_SLICE", 500)
    rebuilt = kernel.successors_of(frontier, exp.gen[::-1].copy(), batch_size=97)
    for got, want in zip(rebuilt, exp.words, strict=True):
        assert np.array_equal(got, want[::-1])


def assert_one_representative_per_orbit(machine: Machine, canon: Canonicalizer,
                                        rng: np.random.Generator, permutations: int,
                                        lifted_every: int) -> list[np.ndarray]:
    """On 300 random in-type states: their images under random elements of the whole
    group have the same representatives, and the lifting element of every
    `lifted_every`-th state maps it onto its representative. Returns those."""
    layout, group = canon.layout, canon.group
    cols = np.stack([rng.integers(s.lo, s.hi + 1, size=300) for s in machine.slots], axis=1)
    words = layout.pack_batch(cols)
    reps = canon.canonical(words)
    for _ in range(permutations):
        element = group.element(tuple(tuple(int(i) for i in rng.permutation(len(s.members)))
                                      for s in group.scalarsets))
        image = canon.permute(words, element)
        assert all((a == b).all() for a, b in zip(canon.canonical(image), reps, strict=True))
    for i in range(0, len(cols), lifted_every):
        one = [w[i:i + 1] for w in words]
        element = canon.element_to_representative(one)
        assert [int(w[0]) for w in canon.permute(one, element)] == [int(w[i]) for w in reps]
    return reps


@pytest.mark.parametrize("requests", [7, 8])
def test_past_six_members_a_sorted_scalarset_needs_no_list_of_the_group(requests):
    """7 and 8 interchangeable requests (5,040 and 40,320 permutations): the canonical
    form sorts them, so no element is listed; on random in-type states, the image under
    random permutations has the same representative, and the lifting element maps each
    state onto it."""
    machine = build_machine(load_model("tracker_small", MODELS),
                            {"requests": str(requests), "max_now": "2", "max_ts": "1"})
    group = SymmetryGroup(machine)
    canon = Canonicalizer(group, Layout(machine))
    assert canon.method == "Request by sorted signature"
    assert group.size == math.factorial(requests)
    assert_one_representative_per_orbit(machine, canon, np.random.default_rng(requests),
                                        permutations=40, lifted_every=29)
    with pytest.raises(SpecError, match="40,320 permutations to try per state|5,040 "
                                        "permutations to try per state"):
        group.elements_permuting([0])  # what the smallest-image method would need
    # the orbit counts the README and decision 0016 quote
    reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert reduced.stats["distinct_states"] == {7: 5_410, 8: 11_388}[requests]


def test_past_six_members_counterexamples_lift_as_in_the_full_search():
    """A wrong design with 7 requests: the reduced search's concrete trace is as short as
    the full search's and replays."""
    machine = build_machine(load_model("mutation_reset_cur_on_prev_exit", MODELS),
                            {"requests": "7"})
    full = check(machine, BfsOptions(deadlock=False))
    reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert reduced.violation is not None and full.violation is not None
    assert reduced.violation.name == full.violation.name
    assert len(reduced.violation.trace) == len(full.violation.trace)
    assert reduced.stats["distinct_states"] < full.stats["distinct_states"]
    trace = reduced.violation.trace
    assert trace.states[0] in machine.init_states


def least_images(machine: Machine, words: list[np.ndarray], monkeypatch) -> int:
    """The number of orbits among packed states, by the smallest image under every
    element of the group (listed whatever its size), vectorised over the states."""
    monkeypatch.setattr("checker.symmetry.group.MAX_ELEMENTS", 10**6)
    group = SymmetryGroup(machine)
    canon = Canonicalizer(group, Layout(machine), "search")
    best = least(canon.images(words, every_element(group)))
    return len(set(zip(*(w.tolist() for w in best), strict=True)))


def test_past_six_members_an_unsortable_scalarset_is_refined(monkeypatch):
    """Clients and servers refer to each other, so neither can be sorted, and 6 clients
    and 2 servers make 1,440 permutations: the canonical form refines them instead of
    trying every one. The reduced search stores exactly the brute-force orbit count."""
    machine = LOCKS.instantiate({"clients": 6, "servers": 2})
    canon = Canonicalizer(SymmetryGroup(machine), Layout(machine))
    assert canon.method == "Server, Client by refined signature (tied members tried)"
    states, diameter = reachable(machine)
    words = Layout(machine).pack_states(sorted(states))
    reps = canon.canonical(words)
    refined = len(set(zip(*(w.tolist() for w in reps), strict=True)))
    reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert reduced.stats["distinct_states"] == refined == least_images(machine, words,
                                                                       monkeypatch) == 99
    assert reduced.stats["diameter"] == diameter and reduced.outcome == "holds"


@pytest.mark.parametrize("clients, servers", [(7, 2), (8, 3), (12, 2)])
def test_a_refined_representative_depends_only_on_the_orbit(clients, servers):
    """On random in-type states (members looking alike but named apart, as reachable
    states rarely have them): the image under random permutations of both scalarsets
    has the same representative, and the lifting element maps each state onto it."""
    machine = LOCKS.instantiate({"clients": clients, "servers": servers})
    canon = Canonicalizer(SymmetryGroup(machine), Layout(machine))
    assert "refined" in canon.method
    reps = assert_one_representative_per_orbit(
        machine, canon, np.random.default_rng(clients * 10 + servers), permutations=12,
        lifted_every=23)
    assert len(set(zip(*(w.tolist() for w in reps), strict=True))) > 1


def test_past_six_members_a_refined_counterexample_is_as_short_as_the_full_search():
    """7 clients wrongly claimed to hold at most one server between them: the reduced
    search's concrete trace is as long as the full search's and every step of it is a
    transition of the machine."""
    machine = ONE_HOLDER.instantiate({"clients": 7, "servers": 2})
    full = check(machine, BfsOptions(deadlock=False))
    reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert full.violation is not None and reduced.violation is not None
    assert reduced.violation.name == full.violation.name == "OneHolder"
    assert len(reduced.violation.trace) == len(full.violation.trace) == 4
    assert reduced.stats["distinct_states"] < full.stats["distinct_states"]
    trace = reduced.violation.trace
    scalar = ScalarMachine(machine)
    assert trace.states[0] in machine.init_states
    for before, after in zip(trace.states, trace.states[1:], strict=False):
        assert after in {t for _, t in scalar.successors(before)}


def test_past_six_members_an_unsortable_scalarset_is_still_checked():
    """The declaration is checked by neighbour swaps, whatever the group's size."""
    report = check_symmetry(LOCKS.instantiate({"clients": 7, "servers": 2}),
                            reachable=200, random=200)
    assert report.swaps == 7


def _members(lockstep: bool) -> Spec:
    """Three interchangeable counters up to 2: bumped one at a time (27 states, 10
    orbits: the multisets of three values), or all together (3 states, each its own
    representative: symmetry can reduce nothing)."""
    spec = Spec("lockstep" if lockstep else "members", "interchangeable counters")

    @spec.build
    def _build(m, p):
        m.var("x", Array(Int(0, 2), 3), init=0)
        m.scalarset("Member", 3, index={"x": 0})
        if lockstep:
            @m.action
            def bump_all(st):
                require(st.x[0] < 2)
                for i in range(3):
                    st.x[i] = st.x[i] + 1
        else:
            @m.action(i=range(3))
            def bump(st, i):
                require(st.x[i] < 2)
                st.x[i] = st.x[i] + 1

    return spec


@pytest.mark.parametrize("lockstep, states, orbits", [(False, 27, 10), (True, 3, 3)])
def test_a_search_says_when_symmetry_reduced_nothing(lockstep, states, orbits):
    """The successors the canonical form moved are counted: none exactly when every
    state is its own representative, and then the search says the reduction saved
    nothing."""
    machine = _members(lockstep).instantiate({})
    full = check(machine, BfsOptions(deadlock=False))
    reduced = check(machine, BfsOptions(deadlock=False, symmetry=True))
    assert (full.stats["distinct_states"], reduced.stats["distinct_states"]) == (states, orbits)
    assert "symmetry_moved" not in full.stats
    assert (reduced.stats["symmetry_moved"] == 0) == lockstep
    assert ("symmetry_note" in reduced.stats) == lockstep

"""`ctmc prove --engine pdr`: Spacer with no lemmas, never trusted as it answers.

The examples prove with no lemmas at all, and the invariant printed as spec source,
pasted into a copy of the spec, makes k-induction prove the model too (and BFS checks
it on every reachable state). A mutation model gives BFS's own shortest counterexample.
A wrong invariant fails the re-check; a timeout is inconclusive, on time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import z3

from checker.engines.symbolic.bmc import bmc
from checker.engines.symbolic.deadline import Deadline
from checker.engines.symbolic.houdini import NO_ERROR
from checker.engines.symbolic.induction import COUNTEREXAMPLE, PROVED
from checker.engines.symbolic.options import BmcOptions, ProveOptions
from checker.engines.symbolic.pdr import InitialStates, Seeds, SpacerEvents, pdr, recheck
from checker.engines.symbolic.source import SourceWriter, Unwritable
from checker.engines.symbolic.unroll import Unrolling
from checker.models import build_machine, load_model
from checker.run import BfsOptions, run
from tests.model_folders import ctmc, paste_lemmas

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _machine(folder: str, name: str):
    return build_machine(load_model(EXAMPLES / folder / f"{name}.toml", EXAMPLES / folder),
                         proof=True)


@pytest.mark.parametrize("mine", [[], ["--mine"]], ids=["plain", "mined"])
@pytest.mark.parametrize("folder, name, spec_file", [("mutex", "mutex", "mutex.py"),
                                                     ("two_phase_commit", "tpc", "tpc.py")])
def test_the_examples_prove_with_no_lemmas_and_the_invariant_pastes(
        tmp_path: Path, folder: str, name: str, spec_file: str, mine: list[str]) -> None:
    """Spacer's invariant (with --mine: the mined facts it needs, then Spacer's
    clauses) pasted as lemmas makes k-induction prove the model, using each of them."""
    work = tmp_path / folder
    shutil.copytree(EXAMPLES / folder, work)
    run_ = ctmc("prove", "--engine", "pdr", *mine, f"{name}.toml", "--json", cwd=work)
    assert run_.returncode == 0, run_.stderr
    report = json.loads(run_.stdout)
    assert report["outcome"] == PROVED and report["invariant"]
    # a clause only the slots' ranges make true is left out, not printed as `return True`
    assert "return True" not in report["invariant"]
    needs = report["invariant"].splitlines()[0]
    assert needs.startswith("# the spec module needs: from checker.lang import ")
    paste_lemmas(work / spec_file, needs.removeprefix("# the spec module needs: "),
                 report["invariant"])
    induction = ctmc("prove", f"{name}.toml", "--json", cwd=work)
    assert induction.returncode == 0, induction.stderr
    proved = json.loads(induction.stdout)
    assert proved["outcome"] == PROVED and proved["k"] == 1
    assert len(proved["lemmas_used"]) + len(proved["lemmas_unused"]) == \
        report["stats"]["invariant_clauses"] - report["stats"]["range_clauses"] + \
        report["stats"].get("mined_seeds_needed", 0)
    checked = ctmc("check", f"{name}.toml", cwd=work)  # BFS checks every pasted lemma
    assert checked.returncode == 0, checked.stderr


# lemmas pasted into a copy of the mutex for the seeds' tests: the first two (each
# process in its critical section holds the lock) are inductive with MutualExclusion;
# the third is false initially (the lock starts free); the fourth holds initially and
# falls after one step (a process enters)
MUTEX_LEMMAS = """\
@m.lemma
def HolderIsZero(s):  # noqa: N802
    return Implies(s.pc[0] == Pc.critical, s.lock == 0)

@m.lemma
def HolderIsOne(s):  # noqa: N802
    return Implies(s.pc[1] == Pc.critical, s.lock == 1)

@m.lemma
def FalseInitially(s):  # noqa: N802
    return s.lock == 0

@m.lemma
def FallsAfterAStep(s):  # noqa: N802
    return s.entries[0] == 0
"""


def _mutex_with_lemmas(tmp_path: Path) -> Path:
    work = tmp_path / "mutex"
    shutil.copytree(EXAMPLES / "mutex", work)
    paste_lemmas(work / "mutex.py", "from checker.lang import Implies", MUTEX_LEMMAS)
    return work


def test_the_spec_lemmas_seed_spacer_only_once_proved(tmp_path: Path) -> None:
    """--with-spec-lemmas: the lemmas false initially or not inductive with the others
    are left out; the two that prove MutualExclusion with it are the seeds, and what
    Spacer finds besides is checked with them. Without the flag the lemmas play no
    part."""
    work = _mutex_with_lemmas(tmp_path)
    seeded = ctmc("prove", "--engine", "pdr", "--with-spec-lemmas", "mutex.toml", "--json",
                  cwd=work)
    assert seeded.returncode == 0, seeded.stderr
    report = json.loads(seeded.stdout)
    assert report["outcome"] == PROVED
    # "no action errs" is no seed: these lemmas do not show that a trying process
    # has entered fewer than `rounds` times, so the count could overflow on entering
    assert report["stats"]["seeds"] == ["MutualExclusion", "HolderIsZero", "HolderIsOne"]
    assert "on top of the 3 spec lemmas and invariants proved first" in report["message"]
    plain = json.loads(ctmc("prove", "--engine", "pdr", "mutex.toml", "--json",
                            cwd=work).stdout)
    assert plain["outcome"] == PROVED and "seeds" not in plain["stats"]
    assert plain["stats"]["invariant_clauses"] > 0
    wrong = ctmc("prove", "--with-spec-lemmas", "mutex.toml", cwd=work)
    assert wrong.returncode == 2 and "--with-spec-lemmas seeds pdr" in wrong.stderr
    wrong = ctmc("prove", "--mine", "mutex.toml", cwd=work)
    assert wrong.returncode == 2 and "--mine seeds pdr" in wrong.stderr


def test_seeds_that_prove_everything_leave_spacer_nothing_to_add() -> None:
    """The tracker's own lemmas prove it (k-induction says so too): seeded with them,
    Spacer's invariant is empty and the verdict says the seeds did it."""
    machine = build_machine(load_model("tracker_small"), {"requests": "3", "max_now": "3",
                                                          "max_ts": "2"})
    result = pdr(machine, ProveOptions(seed=True))
    assert result.outcome == PROVED and not result.invariant
    assert result.stats["seeds"] == [p.name for p in machine.invariants + machine.lemmas] \
        + [NO_ERROR]
    assert result.stats["invariant_clauses"] == 0
    assert "prove every property: Spacer added nothing" in result.message


def test_a_seed_that_is_not_proved_fails_the_recheck(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The seeds join the re-check: were a false lemma ever taken as proved, Spacer's
    invariant under it would not check, and nothing would be proved."""
    import checker.engines.symbolic.pdr as pdr_module

    work = _mutex_with_lemmas(tmp_path)
    machine = build_machine(load_model(work / "mutex.toml", work), proof=True)
    falls = [p for p in machine.lemmas if p.name == "FallsAfterAStep"]
    monkeypatch.setattr(pdr_module, "proved_seeds", lambda *_: Seeds(falls, False))
    result = pdr(machine, ProveOptions(seed=True))
    assert result.outcome != PROVED
    assert "does not check: a step leaves it" in result.message


def test_mined_seeds_are_proved_first_and_a_mutation_still_fails() -> None:
    """--mine: the short clauses true in every reachable state that hold initially and
    that Houdini proves seed Spacer; on the mutex they prove it alone. On a mutation
    the mining BFS meets the violation, so Spacer runs unseeded and the trace is the
    one plain PDR gives."""
    machine = _machine("mutex", "mutex")
    result = pdr(machine, ProveOptions(mine=True))
    assert result.outcome == PROVED and result.stats["mined_seeds"] == 75
    assert "1 spec lemmas and invariants and 75 facts mined from reachable states" \
        in result.message
    mutated = _machine("two_phase_commit", "tpc_commit_on_any_prepared")
    lines: list[str] = []
    seeded = pdr(mutated, ProveOptions(mine=True, progress=lines.append))
    plain = pdr(mutated, ProveOptions())
    assert seeded.outcome == plain.outcome == COUNTEREXAMPLE
    assert seeded.violation is not None and plain.violation is not None
    assert seeded.violation.trace.states == plain.violation.trace.states
    assert any("violated; Spacer goes on unseeded" in line for line in lines)


def test_a_proof_stands_when_its_mined_facts_cannot_be_singled_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The proof was checked with every seed; failing to pick the ones it needs only
    leaves Spacer's clauses printed alone, and says so."""
    import checker.engines.symbolic.pdr as pdr_module

    def give_up(*_: object) -> None:
        raise pdr_module.Unsingled("Z3 said unknown")

    monkeypatch.setattr(pdr_module, "needed_mined", give_up)
    result = pdr(_machine("two_phase_commit", "tpc"), ProveOptions(mine=True))
    assert result.outcome == PROVED and result.invariant
    assert "not singled out (Z3 said unknown), so the lemmas printed are Spacer's alone" \
        in result.message
    assert "Mined" not in result.invariant


def test_only_members_true_in_every_initial_state_are_kept() -> None:
    """A member some initial state falsifies is dropped before Houdini sees it."""
    from checker.lang import expr as E
    from checker.lang.machine import Property

    machine = _machine("mutex", "mutex")
    held = machine.invariants[0]
    negated = Property("Negated", E.Not(held.expr), "not it")
    initial = InitialStates(Unrolling(machine), Deadline(None))
    assert initial.holding([negated, held]) == [held]
    assert initial.breaking(initial.u.prop_holds(negated, 0)) is not None


def test_a_mutation_gives_a_shortest_counterexample_as_bmc_does() -> None:
    """Spacer says a bad state is reachable; the trace is BMC's (the least path of the
    shortest length), as long as BFS's and breaking the same property."""
    machine = _machine("two_phase_commit", "tpc_commit_on_any_prepared")
    result = pdr(machine, ProveOptions())
    assert result.outcome == COUNTEREXAMPLE and result.violation is not None
    bfs = run(machine, BfsOptions(deadlock=False))
    assert bfs.violation is not None
    assert result.violation.name == bfs.violation.name
    assert len(result.violation.trace) == len(bfs.violation.trace)
    by_bmc = bmc(machine, BmcOptions(depth=len(bfs.violation.trace)))
    assert by_bmc.violation is not None
    assert result.violation.trace.states == by_bmc.violation.trace.states


def test_an_invariant_that_is_not_one_fails_the_recheck() -> None:
    machine = _machine("mutex", "mutex")
    u = Unrolling(machine)
    deadline = Deadline(None)
    assert "allows a bad state" in recheck(u, z3.BoolVal(True), False, deadline)
    assert "initial state" in recheck(u, z3.BoolVal(False), False, deadline)
    # the property alone is not inductive (that is why mutex needs more clauses)
    prop = z3.And([u.prop_holds(p, 0) for p in machine.invariants])
    assert "a step leaves it" in recheck(u, prop, False, deadline)


def test_a_timeout_is_inconclusive_and_on_time(tmp_path: Path) -> None:
    started = time.perf_counter()
    done = ctmc("prove", "--engine", "pdr", "log_driven_tiny", "--timeout", "5", cwd=tmp_path)
    elapsed = time.perf_counter() - started
    assert done.returncode == 3, done.stderr
    assert "inconclusive" in done.stdout and "proved" not in done.stdout.split("inconclusive")[0]
    assert elapsed < 30  # the interpreter's start and the encoding besides the 5 s


def test_pdr_refuses_what_it_does_not_check(tmp_path: Path) -> None:
    done = ctmc("prove", "--engine", "pdr", "v1_tiny_close_liveness", cwd=tmp_path)
    assert done.returncode == 2
    assert "prove does not check liveness properties" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    wrong = ctmc("prove", "--engine", "pdr", "--k", "2", "tracker_small", cwd=tmp_path)
    assert wrong.returncode == 2 and "--k is induction's depth" in wrong.stderr


def test_the_source_writer_says_what_the_spec_language_can() -> None:
    machine = _machine("two_phase_commit", "tpc")
    u = Unrolling(machine)
    s = {slot.name: v for slot, v in zip(machine.slots, u.state(0), strict=True)}
    writer = SourceWriter(machine, u.state(0))
    tm, rm0, sent0 = s["tm"], s["rm[0]"], s["sent[0]"]
    assert writer.clause(z3.Not(tm == 1)) == "s.tm != Tm.committed"
    assert writer.clause(rm0 >= 2) == "Or(s.rm[0] == Rm.committed, s.rm[0] == Rm.aborted)"
    assert writer.clause(z3.Implies(sent0, rm0 <= 0)) == \
        "Implies(s.sent[0], s.rm[0] == Rm.working)"
    # a comparison every member of the enum passes is True, and folds away
    assert writer.clause(z3.Or(tm <= 2, sent0)) == "True"
    assert writer.clause(z3.Or(tm > 2, sent0, rm0 == 1)) == \
        "Or(s.sent[0], s.rm[0] == Rm.prepared)"
    assert writer.clause(z3.And(tm >= 0, sent0)) == "s.sent[0]"
    assert writer.clause(z3.Not(tm >= 0)) == "False"
    assert writer.clause(z3.Implies(sent0, tm < 3)) == "True"
    assert writer.clause(z3.Implies(tm < 0, sent0)) == "True"
    mutex = _machine("mutex", "mutex")
    mu = Unrolling(mutex)
    m = {slot.name: v for slot, v in zip(mutex.slots, mu.state(0), strict=True)}
    w = SourceWriter(mutex, mu.state(0))
    lock, e0, e1 = m["lock"], m["entries[0]"], m["entries[1]"]
    assert w.clause(e0 + -1 * e1 <= 1) == "s.entries[0] - s.entries[1] <= 1"
    assert w.clause(2 * e0 >= lock) == "s.entries[0] + s.entries[0] >= s.lock"
    with pytest.raises(Unwritable):
        w.clause(7 * e0 >= lock)  # no multiplication in the spec language


def test_progress_reads_spacer_event_log_as_it_grows(tmp_path: Path) -> None:
    log = tmp_path / "spacer.trace"
    events = SpacerEvents(log)
    assert events.status() == "pdr: Spacer at level 0, 0 lemmas learned"  # no log yet
    log.write_bytes(b"** add-lemma: 0 exprID: 2\nquery!0\n\n* LEVEL 1\n** add-lem")
    assert events.status() == "pdr: Spacer at level 1, 1 lemmas learned"
    with open(log, "ab") as more:  # the half line is finished, and more comes
        more.write(b"ma: 1 exprID: 3\n* LEVEL 2\n** add-lemma: 2\n")
    assert events.status() == "pdr: Spacer at level 2, 3 lemmas learned"


def test_the_spacer_variants_bench_runs_each_form_to_a_checked_proof() -> None:
    """`bench/spacer_variants.py` (decision 0026's figures for bit-vectors and mined
    seeds): every form proves the mutex, each proof re-checked in its own encoding."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "spacer_variants.py"),
                          "--timeout", "120", "mutex"], capture_output=True, text=True,
                         timeout=600, check=True).stdout
    rows = [line.split() for line in out.splitlines()[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("mutex", form, "proved")
                                                  for form in ("int", "bv", "mined")]
    assert rows[2][-2:] == ["77", "seeds"]  # mined: facts Houdini proved, handed to Spacer


def test_the_lemma_needs_bench_leaves_out_each_lemma_in_turn() -> None:
    """`bench/spacer_lemma_needs.py` (decision 0026's table of what Spacer does not
    find): a row with every lemma, one without each, one without any. At 2 requests
    Spacer proves the tracker from any of them; with every lemma it adds nothing."""
    from checker.models import build_machine, load_model
    names = [p.name for p in build_machine(load_model("tracker_small"), {"requests": "2"},
                                           proof=True).lemmas]
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "spacer_lemma_needs.py"),
                          "tracker_small", "--set", "requests=2", "--timeout", "120"],
                         capture_output=True, text=True, timeout=900, check=True).stdout
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines()[2:]}
    assert list(rows) == ["nothing", *names, "every lemma"]
    assert all(row[0] == "proved" for row in rows.values()), out
    assert rows["nothing"][-1] == "0" and int(rows["every lemma"][-1]) > 0


def test_the_houdini_images_bench_finds_one_fixpoint_both_ways() -> None:
    """`bench/houdini_images.py` (decision 0026): with and without images, Houdini on
    the mined pool keeps the same members (the same digest), and with them it takes
    fewer rounds."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "houdini_images.py"),
                          "tracker_small", "--set", "requests=2", "--set", "max_ts=2"],
                         capture_output=True, text=True, timeout=900, check=True).stdout
    rows = [line.replace(",", "").split() for line in out.splitlines()[1:3]]
    (_, pool, images, rounds, survive, digest, _), plain = rows
    assert images == "8" and plain[2] == "0" and pool == plain[1]
    assert (survive, digest) == (plain[4], plain[5]) and int(survive) < int(pool)
    assert int(rounds) < int(plain[3]), out
    assert "as fast" in out.splitlines()[3]

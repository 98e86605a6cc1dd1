"""`--workers N`: the local BFS in N processes reports exactly what one process does,
checkpoints move between worker counts, and a worker that dies or fails ends the
search with one line and no process left behind."""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import shutil
import signal
import time
from pathlib import Path

import pytest

from checker.engines.explicit import bfs, parallel
from checker.engines.explicit.bfs import BfsOptions, check
from checker.errors import CheckerError
from checker.models import build_machine, list_models, load_model
from checker.packing import Layout
from tests.model_folders import one_error_line, run_cli
from tests.specs import liveness_spin
from tests.test_bfs import GRID, OVERFLOW
from tests.test_checkpoints import CASES, _SignalMidLevel, figures

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
CI_STATES = 300_000  # a model whose baseline is bigger runs in test_model_suite only
# counterexamples found after more than CI_STATES states (measured); no baseline says so
LATE_COUNTEREXAMPLES = {
    "log_driven_mutation_closed_from_eval_time",  # 5.9M states
    "log_driven_mutation_lease_request_carries_start",  # 0.4M
    "log_driven_mutation_merge_without_timestamp_cache_bump",  # 1.5M
    "log_driven_mutation_repropose_without_tracking",  # 1.7M
    "log_driven_mutation_sender_keeps_moved_range",  # 0.8M
}
PER_RUN = ("workers", "bytes_per_state", "resumed", "peak_rss_mb_workers")  # the run, not the model


def _ci_models() -> list[Path]:
    small = []
    for path in list_models(MODELS_DIR):
        model = load_model(path, MODELS_DIR)
        if model.engine["full_search"] and (model.expect_states or 0) <= CI_STATES \
                and path.stem not in LATE_COUNTEREXAMPLES:
            small.append(path)
    return small


CI_MODELS = _ci_models()


def same(result) -> dict:
    """What must not depend on the worker count: `figures` without the run's own stats."""
    out = figures(result)
    out["stats"] = {k: v for k, v in out["stats"].items() if k not in PER_RUN}
    return out


@pytest.fixture
def pools(monkeypatch) -> list[parallel.Pool]:
    """Every worker pool the searches start (so a test knows the workers really ran)."""
    started: list[parallel.Pool] = []

    class Recorded(parallel.Pool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(bfs, "Pool", Recorded)
    return started


def both(machine_of, pools, batch_size: int = 1 << 16, **options) -> tuple[dict, dict]:
    """One worker, then two from the first level on, in chunks of `batch_size` parents;
    each machine freshly built."""
    one = check(machine_of(), BfsOptions(**options))
    before = len(pools)
    two = check(machine_of(), BfsOptions(workers=2, workers_from=1, batch_size=batch_size,
                                         **options))
    if two.stats["generated"]:  # some level was expanded: by the workers
        assert len(pools) == before + 1
    assert two.stats["workers"] == (2 if len(pools) > before else 1)
    return same(one), same(two)


def test_the_ci_selection_covers_most_models():
    assert len(CI_MODELS) >= 0.6 * len(list_models(MODELS_DIR))


@pytest.mark.parametrize("path", CI_MODELS, ids=[p.stem for p in CI_MODELS])
def test_two_workers_report_what_one_does_on_every_model(path, pools):
    model = load_model(path, MODELS_DIR)
    one, two = both(lambda: build_machine(model), pools,
                    max_depth=model.engine["max_depth"] or None,
                    deadlock=model.engine["deadlock"])
    assert two == one


@pytest.mark.parametrize("spec, params, deadlock", [
    (GRID, {"n": 30}, False),  # exact fingerprints: parts merged by the coordinator
    (GRID, {"n": 30, "pad": 1}, False),  # hashed: parts concatenated in range order
    (GRID, {"n": 30, "bad_x": 17, "bad_y": 9}, False),  # an invariant, mid-level
    (GRID, {"n": 30}, True),  # a deadlock in the corner
    (OVERFLOW, {}, False),  # a value outside its type
    (liveness_spin.SPIN, {"fair_finish": False}, False),  # liveness after the search
], ids=["exact", "hashed", "invariant", "deadlock", "overflow", "liveness"])
def test_two_workers_report_what_one_does_on_every_kind_of_outcome(spec, params, deadlock,
                                                                   pools):
    # small chunks: a level's states come from several chunks of both workers
    one, two = both(lambda: spec.instantiate(params), pools, batch_size=16, deadlock=deadlock)
    assert two == one


@pytest.mark.parametrize("name", ["tracker_small", "mutation_reset_cur_on_prev_exit"])
def test_two_workers_report_what_one_does_under_symmetry(name, pools):
    model = load_model(name, MODELS_DIR)
    one, two = both(lambda: build_machine(model), pools, deadlock=model.engine["deadlock"],
                    symmetry=True)
    assert two == one


def test_a_depth_bound_and_on_level_see_the_same_levels(pools):
    seen: dict[int, list[list[int]]] = {1: [], 2: []}

    def run(workers: int):
        def on_level(read, count) -> None:  # every slot of every new state, in level order
            seen[workers].append([read(j).tolist() for j in range(2)])

        return same(check(GRID.instantiate({"n": 30, "pad": 1}), BfsOptions(
            max_depth=25, workers=workers, workers_from=1, on_level=on_level)))

    one, two = run(1), run(2)
    assert two == one and not one["complete"] and one["stats"]["diameter"] == 25
    assert seen[2] == seen[1] and len(seen[1]) == 26


@pytest.mark.parametrize("case", ["exact", "hashed"])
def test_the_coordinator_holds_only_keys_unless_a_checkpoint_needs_states(case, tmp_path,
                                                                         monkeypatch):
    """Without a checkpoint (or `on_level`) the workers' copies of a level's states are
    the only ones: the coordinator fetches the keys its records need, and still reports
    exactly what one process does; with a checkpoint it fetches the states to save."""
    spec, params = CASES[case]
    fetched: list[tuple[int, int, int]] = []
    fetch = parallel.Pool._fetch

    def counted(self, more):
        fps, gen, words = fetch(self, more)
        fetched.append((len(fps), len(gen), len(words)))
        return fps, gen, words

    monkeypatch.setattr(parallel.Pool, "_fetch", counted)
    want = same(check(spec.instantiate(params), BfsOptions(deadlock=False)))
    two = check(spec.instantiate(params), BfsOptions(deadlock=False, workers=2,
                                                     workers_from=1))
    assert same(two) == want
    # every state but GRID's one initial state comes from the workers
    assert fetched and sum(g for _, g, _ in fetched) == two.stats["distinct_states"] - 1
    assert all(f == 0 and w == 0 for f, _, w in fetched)
    fetched.clear()
    saved = check(spec.instantiate(params), BfsOptions(
        deadlock=False, workers=2, workers_from=1, checkpoint_dir=str(tmp_path / "c")))
    assert same(saved) == want
    n_words = Layout(spec.instantiate(params)).n_words
    assert fetched and all(f == g and w == n_words for f, g, w in fetched)


def test_workers_start_only_for_a_big_enough_frontier(pools):
    machine = GRID.instantiate({"n": 30})  # at most 31 states a level
    result = check(machine, BfsOptions(workers=2, workers_from=32))
    assert not pools and result.stats["distinct_states"] == 31 * 31
    check(machine, BfsOptions(workers=2, workers_from=31))
    assert len(pools) == 1


@pytest.mark.parametrize("case", ["exact", "hashed", "violation", "liveness"])
def test_checkpoint_with_two_workers_resumes_with_one_or_two(case, tmp_path, pools):
    spec, params = CASES[case]
    want = same(check(spec.instantiate(params), BfsOptions(deadlock=False)))
    folder = tmp_path / "ckpt"

    def run(workers: int, stop_at: int | None, resume: bool):
        return check(spec.instantiate(params), BfsOptions(
            deadlock=False, checkpoint_dir=str(folder), resume=resume, checkpoint_every=0,
            progress_seconds=0, workers=workers, workers_from=1, batch_size=64,
            progress=None if stop_at is None else _SignalMidLevel(stop_at)))

    with pytest.raises(KeyboardInterrupt):
        run(2, 4, resume=False)
    assert pools and not multiprocessing.active_children()
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    assert same(run(1, None, resume=True)) == want
    shutil.rmtree(folder)
    copy.rename(folder)
    assert same(run(2, None, resume=True)) == want


def test_a_timeout_with_two_workers_resumes_alike(tmp_path, pools):
    spec, params = CASES["hashed"]
    want = same(check(spec.instantiate(params), BfsOptions(deadlock=False)))
    folder = tmp_path / "ckpt"
    stopped = check(spec.instantiate(params), BfsOptions(
        deadlock=False, checkpoint_dir=str(folder), timeout=1e-9, workers=2, workers_from=1))
    assert stopped.outcome == "unknown"
    assert pools
    got = check(spec.instantiate(params), BfsOptions(
        deadlock=False, checkpoint_dir=str(folder), resume=True, workers=2, workers_from=1))
    assert same(got) == want


def test_a_killed_worker_is_one_line_and_leaves_no_process(pools):
    machine = GRID.instantiate({"n": 30})
    seen: list[int] = []

    def kill_one(read, count) -> None:
        children = multiprocessing.active_children()
        if children and not seen:
            seen.extend(p.pid for p in children if p.pid is not None)
            os.kill(children[-1].pid, signal.SIGKILL)

    with pytest.raises(CheckerError) as error:
        check(machine, BfsOptions(workers=2, workers_from=1, on_level=kill_one))
    message = str(error.value)
    assert len(seen) == 2 and "\n" not in message
    assert "was killed by SIGKILL" in message and "BFS worker" in message
    assert not multiprocessing.active_children()
    for pid in seen:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_killed_worker_names_the_resume_and_the_checkpoint_resumes(tmp_path, pools):
    machine = GRID.instantiate({"n": 30})
    want = same(check(machine, BfsOptions()))
    folder = tmp_path / "ckpt"
    killed: list[int] = []

    def kill_one(read, count) -> None:
        children = multiprocessing.active_children()
        if children and not killed:
            killed.append(children[-1].pid)
            os.kill(children[-1].pid, signal.SIGKILL)

    with pytest.raises(CheckerError) as error:
        check(machine, BfsOptions(workers=2, workers_from=1, on_level=kill_one,
                                  checkpoint_dir=str(folder), checkpoint_every=0))
    assert f"to go on from the last checkpoint, run the same command with --resume {folder}" \
        in str(error.value)
    got = check(machine, BfsOptions(checkpoint_dir=str(folder), resume=True))
    assert same(got) == want


def test_a_failing_worker_is_one_line(pools, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no invariants today")

    monkeypatch.setattr(parallel, "first_bad", broken)  # in the workers only
    with pytest.raises(CheckerError, match=r"BFS worker \d of 2 failed: RuntimeError: "
                                           r"no invariants today$"):
        check(GRID.instantiate({"n": 30}), BfsOptions(workers=2, workers_from=1))
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("where", ["queuing", "sending", "receiving"])
def test_a_worker_out_of_memory_is_said_so_whichever_process_ends_first(pools, monkeypatch,
                                                                         where):
    """A worker that runs out of memory is reported as out of memory, not as a worker
    that ended, though another worker may end first: its main thread runs out queuing
    its states after its level's summary reached the coordinator (it tells after the
    summary), its sending thread runs out sending them (it exits with a status that
    says so), or its receiving thread runs out (the peer, its pipe closed, may end
    first; when the worker's main thread was blocked sending to it, only the thread's
    mark says why: `test_faults` runs out of memory for real)."""
    serve, receive = parallel._Worker.serve, parallel._receive

    class Outbox:  # worker 2 runs out at its states; worker 1 is slow to summarise
        def __init__(self, index: int):
            self.index, self.inner = index, queue.SimpleQueue()

        def put(self, message) -> None:
            tag = message[0] if message is not None else None
            if tag == "states" and self.index == 1 and where == "queuing":
                raise MemoryError
            if tag == "level" and self.index == 0:
                time.sleep(1.0)
            self.inner.put(message)

        def get(self):
            message = self.inner.get()
            if message is not None and message[0] == "states" and self.index == 1 \
                    and where == "sending":
                raise MemoryError
            return message

    class Starved:  # worker 1's receiving thread, at worker 2's first message
        def __init__(self, channel):
            self.channel = channel

        def recv(self):
            raise MemoryError

    def with_outbox(worker) -> None:
        worker.outbox = Outbox(worker.index)
        serve(worker)

    def receiving(peer, channel, inbox, ran_out) -> None:
        starved = where == "receiving" and peer == 1
        receive(peer, Starved(channel) if starved else channel, inbox, ran_out)

    monkeypatch.setattr(parallel._Worker, "serve", with_outbox)  # in the workers only
    monkeypatch.setattr(parallel, "_receive", receiving)
    with pytest.raises(CheckerError, match=r"^out of memory at depth \d+"):
        check(GRID.instantiate({"n": 30}), BfsOptions(workers=2, workers_from=1))
    assert not multiprocessing.active_children()


def test_cli_workers_option():
    result = run_cli(MODELS_DIR, "check", "tracker_small", "--workers", "2", "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)["stats"]  # no level reaches 50,000: none started
    assert stats["workers"] == 1 and "peak_rss_mb_workers" not in stats
    result = run_cli(MODELS_DIR, "check", "log_driven_mutation_lease_request_carries_start",
                     "--workers", "2", "--json")
    stats = json.loads(result.stdout)["stats"]  # levels of 50,000 and more: both ran
    assert stats["workers"] == 2 and len(stats["peak_rss_mb_workers"]) == 2
    assert all(mb > 0 for mb in stats["peak_rss_mb_workers"])
    assert stats["peak_rss_mb"] > sum(stats["peak_rss_mb_workers"])  # and this process
    assert "--workers" in one_error_line(run_cli(MODELS_DIR, "check", "tracker_small",
                                                 "--workers", "0"))
    assert "--workers" in one_error_line(run_cli(MODELS_DIR, "check", "tracker_small",
                                                 "--workers", "-3"))
    assert "--workers applies to --engine bfs" in one_error_line(run_cli(
        MODELS_DIR, "check", "tracker_small", "--engine", "spark", "--workers", "2"))

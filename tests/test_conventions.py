"""What a user of TLC, Apalache or Quint expects of a command line: a version, options in
either place, one run's properties and mutations without a file, trace names that say the
engine, suggestions for misspelt names, output that fits 80 columns, progress while long
work runs (and silence with --quiet), a refused non-master within seconds, and lemmas
that are neither implied by each other nor more than the proof needs."""

from __future__ import annotations

import http.server
import json
import socket
import socketserver
import struct
import threading
import time
from pathlib import Path

import pytest
import z3

from checker import progress as progress_module
from checker.engines.spark.session import check_master
from checker.engines.symbolic.induction import PROVED, prove
from checker.engines.symbolic.infer import InferOptions, infer
from checker.engines.symbolic.options import ProveOptions
from checker.engines.symbolic.unroll import Unrolling, new_solver
from checker.errors import CheckerError
from checker.lang.machine import Property
from checker.models import build_machine, load_model
from tests.model_folders import one_error_line, run_cli
from tests.z3_specs import LOCKSTEP

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def ctmc(*args: str):
    return run_cli(MODELS_DIR, *args)


def test_version():
    result = ctmc("--version")
    assert result.exit_code == 0 and result.stdout.startswith("ctmc ")


def test_models_dir_after_the_command(tmp_path):
    (tmp_path / "mine.toml").write_text((MODELS_DIR / "tracker_small.toml").read_text())
    result = run_cli(tmp_path / "nowhere", "check", "mine", "--models-dir", str(tmp_path),
                     "--quiet")
    assert result.exit_code == 0, result.output


def test_inv_and_mutation_choose_one_runs_properties(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = ctmc("check", "tracker_small", "--inv", "NoWriteBelowClosed", "--mutation",
                  "ResetCurOnPrevExit", "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["outcome"] == "violates NoWriteBelowClosed"
    assert report["mutations"] == ["ResetCurOnPrevExit"]
    assert report["expected"] is None and report["as_expected"] is None
    assert Path("traces/tracker_small-NoWriteBelowClosed-bfs.itf.json").is_file()
    line = one_error_line(ctmc("check", "tracker_small", "--mutation", "ResetCurOnPrevExt"))
    assert "--mutation: spec tracker has no mutation 'ResetCurOnPrevExt'; did you mean " \
           "'ResetCurOnPrevExit'?" in line
    line = one_error_line(ctmc("check", "tracker_small", "--inv", "NoWriteBelowClose"))
    assert "--inv: spec tracker has no invariant 'NoWriteBelowClose'; did you mean " \
           "'NoWriteBelowClosed'?" in line


@pytest.mark.parametrize("args, message", [
    (["check", "tracker_smal"], "unknown model 'tracker_smal': no such file, and no model of "
                                "that name in"),
    (["check", "tracker_small", "--set", "request=2"], "did you mean 'requests'?"),
    (["list", "invariants", "--spec", "trackr"], "did you mean 'tracker'?"),
])
def test_misspelt_names_get_a_suggestion(args, message):
    line = one_error_line(ctmc(*args))
    assert message in line and len(line) < 400, line


def test_default_trace_names_say_the_engine(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert ctmc("check", "mutation_reset_cur_on_prev_exit", "-q").exit_code == 1
    assert ctmc("bmc", "mutation_reset_cur_on_prev_exit", "--depth", "7", "-q").exit_code == 1
    assert ctmc("simulate", "mutation_reset_cur_on_prev_exit", "-q", "--runs", "200",
                "--seed", "1").exit_code == 1
    names = sorted(p.name for p in Path("traces").iterdir())
    assert names == [f"mutation_reset_cur_on_prev_exit-NoWriteBelowClosed-{e}.itf.json"
                     for e in ("bfs", "bmc", "simulate")]


def test_listings_and_traces_fit_80_columns_without_cutting(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    listing = ctmc("list", "models").stdout
    assert all(len(line) <= 80 for line in listing.splitlines())
    flat = "".join(listing.split())  # a folded name reads whole once the cells are joined
    assert "│log_driven_mutation_merge_without_timestamp_cache_bump" not in flat  # no ellipsis
    assert "…" not in listing
    ctmc("check", "mutation_reset_cur_on_prev_exit", "-q")
    shown = ctmc("trace", "show", "traces/mutation_reset_cur_on_prev_exit-"
                 "NoWriteBelowClosed-bfs.itf.json").stdout
    assert all(len(line) <= 80 for line in shown.splitlines())
    assert "NoWriteBelowClosedisviolatedafterflush(r=0)" in "".join(
        "".join(line.strip("│ ") for line in shown.splitlines()).split())


# --- progress -----------------------------------------------------------------------------

@pytest.fixture
def fast_progress(monkeypatch):
    """Reports every step instead of every two seconds."""
    monkeypatch.setattr(progress_module, "PROGRESS_SECONDS", 0.01)


def test_the_symbolic_engines_report_progress_and_quiet_silences_them(fast_progress):
    bmc_run = ctmc("bmc", "mutation_reset_cur_on_prev_exit", "--depth", "7")
    assert "depth   6 | solving" in bmc_run.stderr or "depth   7 | solving" in bmc_run.stderr
    assert "choosing the least trace: choice" in bmc_run.stderr
    proof = ctmc("prove", "log_driven_tiny", "--workers", "1")
    assert "inductive step (k=1) | goal 1 of 13: the invariants (" in proof.stderr
    assert "inductive step (k=1) | goal 13 of 13: ClaimIsAccepted (" in proof.stderr
    shared = ctmc("prove", "log_driven_tiny", "--workers", "2")
    assert "of 13 goals answered | asking " in shared.stderr
    quiet = ctmc("prove", "log_driven_tiny", "--quiet")
    assert quiet.stderr == ""


def test_a_heartbeat_speaks_while_a_call_blocks(fast_progress):
    lines: list[str] = []
    with progress_module.Heartbeat(lines.append, "waiting"):
        time.sleep(0.1)
    assert lines and all(line.startswith("waiting (") for line in lines)


# --- the Spark master probe -----------------------------------------------------------------

def _serve(handler) -> tuple[socketserver.TCPServer, int]:
    server = socketserver.TCPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


class _SparkLike(socketserver.BaseRequestHandler):
    """Answers any RPC request with an RpcFailure frame, as Spark's RPC server does."""

    def handle(self) -> None:
        head = self.request.recv(4096)
        request_id = struct.unpack(">q", head[9:17])[0]
        message = b"java.io.EOFException"
        body = struct.pack(">bqi", 5, request_id, len(message)) + message
        self.request.sendall(struct.pack(">q", 8 + len(body)) + body)


class _Silent(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        time.sleep(5)


@pytest.mark.parametrize("handler, accepted, message", [
    (_SparkLike, True, ""),
    (http.server.SimpleHTTPRequestHandler, False, "it answers HTTP"),
    (_Silent, False, "no answer within 3 s"),
])
def test_a_master_url_must_answer_spark_rpc(handler, accepted, message):
    server, port = _serve(handler)
    started = time.monotonic()
    try:
        if accepted:
            check_master(f"spark://127.0.0.1:{port}")
        else:
            with pytest.raises(CheckerError, match=message):
                check_master(f"spark://127.0.0.1:{port}")
    finally:
        server.shutdown()
    assert time.monotonic() - started < 10


def test_a_closed_port_is_refused_at_once():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = one_error_line(ctmc("check", "tracker_small", "--engine", "spark", "--master",
                               f"spark://127.0.0.1:{port}"))
    assert f"spark://127.0.0.1:{port} is not a Spark master that answers" in line


# --- infer's lemmas -----------------------------------------------------------------------

def test_infer_prints_a_minimal_set_for_the_proof_and_keeps_no_implied_lemma():
    machine = build_machine(load_model("tracker_small", MODELS_DIR), {"requests": "1"})
    result = infer(machine, InferOptions())
    assert result.proves and result.needed and result.minimal
    lemmas = [Property(f"L{i}", c.expr) for i, c in enumerate(result.needed)]
    assert prove(machine.__class__(**{**machine.__dict__, "lemmas": lemmas}),
                 ProveOptions()).outcome == PROVED
    for p in lemmas:  # each needed one is needed: without it the proof fails
        rest = [q for q in lemmas if q is not p]
        got = prove(machine.__class__(**{**machine.__dict__, "lemmas": rest}), ProveOptions())
        assert got.outcome != PROVED
    # Houdini's survivors, pruned of the implied ones (a pool small enough to prune whole)
    lockstep = LOCKSTEP.instantiate()
    houdini = infer(lockstep, InferOptions(search="houdini"))
    assert houdini.implied > 0
    kept = [Property(f"L{i}", c.expr) for i, c in enumerate(houdini.needed + houdini.others
                                                            or houdini.survivors)]
    u = Unrolling(lockstep)
    solver = new_solver()
    solver.add(u.enc.domain(u.state(0)), u.explored(0))
    solver.add(*[u.prop_holds(p, 0) for p in lockstep.invariants])
    for p in kept:  # none follows from the others
        others = [u.prop_holds(q, 0) for q in kept if q is not p]
        assert solver.check(*others, z3.Not(u.prop_holds(p, 0))) == z3.sat, p.expr

"""`ctmc`: the command line, a thin pipeline over `checker`.

Every command runs the same stages: load the model file, build its machine,
run an engine, report. The work lives in `checker`; this module only wires
and prints. Exit codes: 0 the properties hold (or are proved), 1 a violation was
found, 2 bad input or a spec error (one line on stderr, never a traceback), 3
inconclusive (a proof found its invariants not inductive, or a solver gave up),
130 interrupted, 141 standard output closed early (a broken pipe).
Engines and trace tools are imported inside commands, so `--help` and `list`
stay fast and keep working while one of them is broken.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from checker.errors import CheckerError, shown_path
from checker.models import BENCH_MODELS_DIR, MODELS_DIR
from checker.reporting.console import Console, reader_gone
from checker.reporting.live import ProgressDisplay

if TYPE_CHECKING:
    from checker.engines.result import CheckResult
    from checker.gate import GateResult
    from checker.lang.machine import Machine
    from checker.models import Model
    from checker.run import EngineOptions
    from checker.traces.itf import Limits

TRACE_DIR = Path("traces")
EXIT_HOLDS, EXIT_VIOLATION, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
EXIT_INCONCLUSIVE = 3  # prove: not inductive; bmc/prove: the solver gave up (unknown)
T = TypeVar("T")


class _Folder(click.Path):
    """A folder option: as click.Path, but an empty name, which would quietly mean no
    folder or the current one, is refused."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty name is not a folder", param, ctx)
        return super().convert(value, param, ctx)


class _Inconclusive(Exception):
    """The command stopped before it could answer (its --timeout ran out early)."""


class _Interrupted(Exception):
    """Ctrl-C during a run, carrying what to tell the user (e.g. how to resume)."""


class _Cli(click.Group):
    """Runs click without its own error printing, so every failure is one line."""

    def main(self, args: Any = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if os.environ.get("COLUMNS", "1").strip() == "0":  # Rich would print nothing at all
            del os.environ["COLUMNS"]
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            code = EXIT_ERROR
        except click.ClickException as exc:
            code = _fail(f"error: {exc.format_message()}", EXIT_ERROR)
        except CheckerError as exc:
            code = _fail(f"error: {exc}", EXIT_ERROR)
        except _Interrupted as exc:
            code = _fail(str(exc), EXIT_INTERRUPTED)
        except _Inconclusive as exc:
            code = _fail(str(exc), EXIT_INCONCLUSIVE)
        except click.Abort:
            code = _fail("interrupted", EXIT_INTERRUPTED)
        except OSError as exc:  # the file system refused: a name too long, a full disk...
            where = f": {shown_path(exc.filename)}" if exc.filename else ""
            code = _fail(f"error: {exc.strerror or exc}{where}", EXIT_ERROR)
        except MemoryError:  # outside a search, which says more (see bfs._out_of_memory)
            code = _fail("error: out of memory; lower the model's bounds, or check it with "
                         "--engine spark", EXIT_ERROR)
        except Exception as exc:
            code = _fail(f"internal error: {type(exc).__name__}: {exc} "
                         f"(re-run with CTMC_DEBUG=1 for a traceback)", EXIT_ERROR)
        finally:
            _progress.stop()
        code = code if isinstance(code, int) else EXIT_HOLDS
        if not standalone_mode:
            return code
        sys.exit(code)

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C before a command turns it into its own line: click would print an
        empty line first and raise Abort."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted("interrupted") from None
        except BrokenPipeError:  # click would exit with 1, which says "violation"
            reader_gone()


def _fail(message: str, code: int) -> int:
    """Print one line on stderr (after whatever stdout already holds)."""
    _progress.stop()
    if os.environ.get("CTMC_DEBUG", "0") not in ("", "0"):
        traceback.print_exc()
    sys.stdout.flush()
    click.echo(" ".join(line.strip() for line in message.splitlines()), err=True)
    return code


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="Exit codes: 0 holds (or proved), 1 violation found, 2 bad input or spec "
                    "error, 3 inconclusive (not inductive, or solver unknown), 130 interrupted, "
                    "141 standard output closed early.")
@click.option("--models-dir", type=_Folder(file_okay=False, path_type=Path),
              default=MODELS_DIR, show_default="the models folder that ships with ctmc",
              help="Where bare model names (like tracker_small) are looked up; the "
                   "benchmark models are found by name too.")
@click.version_option(None, "--version", package_name="closedts-model-checker",
                      prog_name="ctmc", message="%(prog)s %(version)s")
@click.pass_context
def main(ctx: click.Context, models_dir: Path) -> None:
    """Bounded model checker: check models, simulate them, read counterexample traces."""
    ctx.obj = models_dir


# --- options shared by check and simulate -------------------------------------

def _parse_sets(ctx: click.Context, param: click.Parameter,
                values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise click.BadParameter(f"{item!r} is not NAME=VALUE", ctx, param)
        out[name.strip()] = value
    return out


@dataclass(frozen=True)
class RunArgs:
    """What every engine command takes: the model, how to change it for this run, and
    how to report."""

    models_dir: Path
    model: str
    overrides: dict[str, str]
    invariants: tuple[str, ...]  # --inv: check only these (empty: the model's selection)
    mutations: tuple[str, ...]  # --mutation: switched on besides the model's
    deadlock: bool | None
    trace_out: Path | None
    as_json: bool
    quiet: bool

    @property
    def progress(self) -> Callable[[str], None] | None:
        return None if self.quiet else _progress

    @property
    def reshaped(self) -> bool:
        """The run changes which properties or mutations the model file names, so the
        file's expected outcome does not apply."""
        return bool(self.invariants or self.mutations)


def _models_dir_here(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    """--models-dir after the command name works as well as before it."""
    if value is not None:
        ctx.obj = value


_models_dir_option = click.option(
    "--models-dir", type=_Folder(file_okay=False, path_type=Path), expose_value=False,
    callback=_models_dir_here, help="Where bare model names are looked up (also accepted "
                                    "before the command).")


def _run_options(fn: Callable) -> Callable:
    """MODEL and the options every engine command shares, handed over as one RunArgs."""
    @functools.wraps(fn)
    def wrapper(models_dir: Path, model_arg: str, overrides: dict[str, str],
                invariants: tuple[str, ...], mutations: tuple[str, ...], deadlock: bool | None,
                trace_out: Path | None, as_json: bool, quiet: bool, **rest: Any) -> Any:
        return fn(RunArgs(models_dir, model_arg, overrides, invariants, mutations, deadlock,
                          trace_out, as_json, quiet), **rest)

    decorators: list[Callable[[Callable], Callable]] = [
        click.argument("model_arg", metavar="MODEL"),
        _models_dir_option,
        click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
                     callback=_parse_sets, help="Override a model parameter (repeatable)."),
        click.option("--inv", "invariants", multiple=True, metavar="NAME",
                     help="Check only this property (repeatable); replaces the model's "
                          "selection, and its expected outcome no longer applies."),
        click.option("--mutation", "mutations", multiple=True, metavar="NAME",
                     help="Switch this mutation on too (repeatable); the model's expected "
                          "outcome no longer applies."),
        click.option("--deadlock/--no-deadlock", default=None,
                     help="Report states without successors  [default: the model's]"),
        click.option("--trace-out", type=click.Path(dir_okay=False, path_type=Path),
                     help="Where to write a counterexample  "
                          "[default: traces/MODEL-VIOLATION-ENGINE.itf.json]"),
        click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON object on stdout instead of tables."),
        click.option("--quiet", "-q", is_flag=True,
                     help="No progress, statistics or coverage: only the verdict."),
        click.pass_obj,
    ]
    decorated: Callable = wrapper
    for decorate in reversed(decorators):
        decorated = decorate(decorated)
    return decorated


_progress = ProgressDisplay()


# --- check and simulate --------------------------------------------------------

_timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
    callback=lambda ctx, param, value: _finite(param, value),
    help="Give up after SECONDS; the verdict is then inconclusive (exit 3), never holds.")
# bmc, prove and infer: one deadline for the whole command (decision 0022)
_deadline_option = click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
    callback=lambda ctx, param, value: _finite(param, value),
    help="Wall-clock limit for the whole command, every solver call included; when it "
         "passes, the verdict is inconclusive (exit 3), never holds or proved.")


_workers_option = click.option(
    "--workers", type=click.IntRange(min=1), metavar="N",
    help="Processes sharing the search by fingerprint, from the first level big enough to "
         "pay; the results are the same for any N (bfs)  [default: every usable core]")


def _usable_cores() -> int:
    """The default of --workers."""
    return len(os.sched_getaffinity(0))


def _resume_folder(ctx: click.Context, param: click.Parameter, value: str | None
                   ) -> str | None:
    """A folder that exists, or a URL of a Spark run directory (checked by the engine)."""
    from checker.engines.spark.options import is_remote

    if value is None or is_remote(value):
        return value
    return str(click.Path(exists=True, file_okay=False).convert(value, param, ctx))


def _finite(param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds", param=param)
    return value


@main.command()
@_run_options
@click.option("--max-depth", type=click.IntRange(min=0), metavar="N",
              help="Explore at most N steps, 0 unbounded  [default: the model's]")
@click.option("--engine", "engine_name", type=click.Choice(("bfs", "spark")), default="bfs",
              show_default=True,
              help="bfs: in this process; spark: levels partitioned across Spark executors.")
@click.option("--checkpoint", type=_Folder(file_okay=False), metavar="DIR",
              help="Save progress in DIR (new or empty) so the run can be resumed (bfs).")
@click.option("--checkpoint-every", type=click.FloatRange(min=0), default=5.0,
              show_default=True, metavar="SECONDS",
              callback=lambda ctx, param, value: _finite(param, value),
              help="Save at the first level boundary SECONDS after the last save (bfs).")
@_workers_option
@_timeout_option
@click.option("--master", metavar="URL",
              help="Spark master: local[N], spark://HOST:PORT, yarn, ...  [default: local[*]]")
@click.option("--partitions", type=click.IntRange(min=1), metavar="N",
              help="Fingerprint partitions of a Spark run  [default: 2 per core, at least 8; "
                   "on --resume, the run's]")
@click.option("--run-dir", type=_Folder(file_okay=False), metavar="DIR",
              help="Where a Spark run writes its levels  [default: runs/MODEL-TIMESTAMP]")
@click.option("--resume", metavar="DIR", callback=_resume_folder,
              help="Resume from the checkpoint (bfs) or run directory (spark) in DIR (for "
                   "spark, also an hdfs:// or s3a:// URL).")
@click.option("--exchange", type=click.Choice(("auto", "files", "shuffle")),
              help="How Spark executors pass successors: files in the run directory (every "
                   "executor must see it), or Spark's shuffle (nothing shared: the driver "
                   "alone writes the run directory)  [default: auto, files when every "
                   "executor sees the run directory; on --resume, the run's]")
@click.option("--driver-levels/--no-driver-levels", default=None,
              help="Run a level whose frontier fits one Spark task (under 262,144 states) "
                   "in the driver, with no Spark job: a job's scheduling costs more than "
                   "such a level's work  [default: on, with the file exchange]")
@click.option("--spark-log", is_flag=True,
              help="Show Spark's own log lines (JVM, log4j, py4j) on the terminal  "
                   "[default: in a file in the system's temp folder, named in the header]")
@click.option("--symmetry/--no-symmetry", default=True, show_default=True,
              help="Store one state per orbit of the spec's scalarsets (bfs, and spark for a "
                   "model without liveness; liveness is still checked on every state).")
@click.option("--check-symmetry", is_flag=True,
              help="Test the spec's scalarsets first and print what was compared, even "
                   "with --no-symmetry (a search that stores orbits always tests them).")
def check(args: RunArgs, max_depth: int | None, engine_name: str, checkpoint: str | None,
          checkpoint_every: float, timeout: float | None, master: str | None,
          partitions: int | None, run_dir: str | None, resume: str | None,
          exchange: str | None, driver_levels: bool | None, spark_log: bool, symmetry: bool,
          check_symmetry: bool, workers: int | None) -> int:
    """Explore every reachable state of MODEL (a file, or a name in the models folder)."""
    started = time.perf_counter()  # a --timeout counts the spec's build too
    spark_only = {"--master": master, "--partitions": partitions, "--run-dir": run_dir,
                  "--exchange": exchange, "--spark-log": spark_log or None,
                  "--driver-levels" if driver_levels else "--no-driver-levels": driver_levels}
    if engine_name == "bfs" and any(v is not None for v in spark_only.values()):
        given = next(k for k, v in spark_only.items() if v is not None)
        raise click.UsageError(f"{given} applies to --engine spark")
    if engine_name == "spark" and workers is not None:
        raise click.UsageError("--workers applies to --engine bfs (a Spark run uses the "
                               "executors --master gives it)")
    if engine_name == "bfs" and resume:
        from checker.engines.spark.options import is_remote

        if is_remote(resume):
            raise click.UsageError("--resume with a URL applies to --engine spark (a bfs "
                                   "checkpoint is a local folder)")
    if engine_name == "spark" and checkpoint:
        raise click.UsageError("--checkpoint applies to --engine bfs (a Spark run keeps every "
                               "level in its --run-dir)")
    if engine_name == "spark" and timeout is not None:
        raise click.UsageError("--timeout applies to --engine bfs (a Spark run stops with "
                               "Ctrl-C and resumes with --resume)")
    folder = checkpoint or run_dir
    if folder and resume and Path(folder) != Path(resume):
        raise click.UsageError(f"{'--checkpoint' if checkpoint else '--run-dir'} and --resume "
                               "name different folders")
    _check_trace_out(args.trace_out)
    model, machine = _load(args, timeout=timeout, started=started)
    engine: dict[str, Any] = {
        "name": engine_name,
        "max_depth": model.engine["max_depth"] if max_depth is None else max_depth,
        "deadlock": model.engine["deadlock"] if args.deadlock is None else args.deadlock,
    }
    from checker.run import BfsOptions, SparkOptions, preflight, reduces_by_symmetry, run

    progress = args.progress
    options: EngineOptions
    if engine_name == "spark":
        from checker.engines.spark.options import DEFAULT_MASTER
        from checker.engines.spark.run_dir import default_path

        folder = resume or run_dir or str(default_path(model.name))
        log = None if spark_log else str(Path(tempfile.gettempdir())
                                          / f"ctmc-spark-{model.name}-{os.getpid()}.log")
        engine.update(master=DEFAULT_MASTER if master is None else master, run_dir=folder,
                      **({"partitions": partitions} if partitions else {}),
                      **({"exchange": exchange} if exchange else {}),
                      **({"spark_log": log} if log else {}))
        options = SparkOptions(
            master=engine["master"], partitions=partitions, run_dir=folder,
            resume=resume is not None, max_depth=engine["max_depth"] or None,
            deadlock=engine["deadlock"], label=model.name, progress=progress,
            symmetry=symmetry, log_file=log, exchange=exchange or "auto",
            driver_levels=driver_levels is not False)
    else:
        folder = resume or checkpoint
        if timeout is not None:
            engine["timeout"] = timeout
        options = BfsOptions(max_depth=engine["max_depth"] or None, deadlock=engine["deadlock"],
                             progress=progress, checkpoint_dir=folder, resume=resume is not None,
                             checkpoint_every=checkpoint_every, timeout=timeout,
                             label=model.name, symmetry=symmetry,
                             workers=workers or _usable_cores())
    if reduces_by_symmetry(machine, options):
        engine["symmetry"] = "+".join(s.name for s in machine.scalarsets)
    preflight(machine, options)  # bad input: one line, before the header
    if check_symmetry:
        _check_symmetry(args, machine)
    hint = f"; to resume, run the same command with --resume {folder}" if folder else ""
    result = _run_engine(args, model, machine, engine, lambda: run(machine, options), hint)
    return _report(args, model, machine, engine, result)


def _run_engine(args: RunArgs, model: Model, machine: Machine, engine: dict[str, Any],
                start: Callable[[], T], hint: str = "") -> T:
    """The header (unless --json or --quiet), then the engine: Ctrl-C is one line,
    ending with `hint` (how to resume, when the run can)."""
    if not (args.as_json or args.quiet):
        _print_header(model, machine, engine)
    try:
        return start()
    except KeyboardInterrupt:
        raise _Interrupted(f"interrupted{hint}") from None


def _check_symmetry(args: RunArgs, machine: Machine) -> None:
    """Test the spec's scalarset declarations; a wrong one is a SpecError (one line)."""
    from checker.symmetry.verify import check_symmetry

    report = check_symmetry(machine)
    if not (args.as_json or args.quiet):
        click.echo(report.describe(), err=True)


@main.command()
@_run_options
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Random seed.")
@click.option("--steps", type=click.IntRange(min=1), default=100, show_default=True,
              help="Length of each walk.")
@click.option("--runs", type=click.IntRange(min=1), default=100, show_default=True,
              help="Number of walks.")
@_timeout_option
def simulate(args: RunArgs, seed: int, steps: int, runs: int, timeout: float | None) -> int:
    """Random walks through MODEL, for models too big to explore fully; liveness is
    checked on the lassos the walks close."""
    from checker.run import SimulationOptions, preflight, run

    started = time.perf_counter()  # a --timeout counts the spec's build too
    _check_trace_out(args.trace_out)
    model, machine = _load(args, timeout=timeout, started=started)
    engine: dict[str, Any] = {
        "name": "simulate", "seed": seed, "steps": steps, "runs": runs,
        "deadlock": model.engine["deadlock"] if args.deadlock is None else args.deadlock,
    }
    if timeout is not None:
        engine["timeout"] = timeout
    options = SimulationOptions(seed=seed, steps=steps, runs=runs, deadlock=engine["deadlock"],
                                timeout=timeout, progress=args.progress)
    preflight(machine, options)
    result = _run_engine(args, model, machine, engine, lambda: run(machine, options))
    return _report(args, model, machine, engine, result)


def _check_trace_out(path: Path | None) -> None:
    """Refuse a --trace-out that could not be written, before any search."""
    if path is not None:
        from checker.outputs import check_writable

        check_writable(path, "--trace-out")


def _load(args: RunArgs, proof: bool = False, timeout: float | None = None,
          started: float | None = None) -> tuple[Model, Machine]:
    """The model file, changed by --inv and --mutation, and its machine; building a big
    one reports its progress, and a spec whose own code runs past `timeout` (seconds
    since `started`, the command's start) is stopped. Bare names are looked up among
    the models, then the benchmark models."""
    from checker.models import build_machine, load_model, reshape
    from checker.progress import Heartbeat
    from checker.time_limit import TimeLimitReached, time_limit

    spent = 0.0 if started is None else time.perf_counter() - started
    left = None if timeout is None else timeout - spent
    try:
        with Heartbeat(args.progress, "loading the model and building its spec"), \
                time_limit(left):
            model = load_model(args.model, args.models_dir, also=(BENCH_MODELS_DIR,))
            if args.reshaped:
                model = reshape(model, args.invariants, args.mutations)
            return model, build_machine(model, args.overrides, proof, args.progress)
    except TimeLimitReached:
        raise _Inconclusive(f"unknown: timeout ({timeout:g} s) while loading the model and "
                            "building its spec; this is not a proof") from None


# --- the Z3 engines ---------------------------------------------------------------

@main.command("bmc")
@_run_options
@click.option("--depth", type=click.IntRange(min=1), default=10, show_default=True,
              metavar="K", help="Look for violations on paths of at most K steps.")
@_deadline_option
def bmc_cmd(args: RunArgs, depth: int, timeout: float | None) -> int:
    """Bounded model checking with Z3: a shortest path of at most K steps from an
    initial state to a violation, or none. Progress per depth on stderr."""
    from checker.run import BmcOptions, preflight, run

    started = time.perf_counter()  # --timeout counts loading and encoding too
    _check_trace_out(args.trace_out)
    model, machine = _load(args, timeout=timeout, started=started)
    engine: dict[str, Any] = {
        "name": "bmc", "depth": depth, "timeout": timeout,
        "deadlock": model.engine["deadlock"] if args.deadlock is None else args.deadlock,
    }
    options = BmcOptions(depth=depth, deadlock=engine["deadlock"], timeout=timeout,
                         started=started, progress=args.progress)
    preflight(machine, options)
    result = _run_engine(args, model, machine, engine, lambda: run(machine, options))
    return _report(args, model, machine, engine, result)


@main.command("prove")
@_run_options
@click.option("--k", "k", type=click.IntRange(min=1), metavar="K",
              help="Induction depth  [default: the model's proof.k, else 1]")
@_deadline_option
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Processes sharing the inductive step's goals; the verdict and any "
                   "counterexample are the same for any N (induction)  [default: every "
                   "usable core]")
@click.option("--engine", "engine_name", type=click.Choice(["induction", "pdr"]),
              default="induction", show_default=True,
              help="induction: k-induction with the spec's lemmas; pdr: IC3/PDR on Z3's "
                   "Spacer, with no lemmas, printing the inductive invariant it finds.")
@click.option("--with-spec-lemmas", "seed", is_flag=True,
              help="pdr: seed Spacer with the spec's lemmas (and invariants) that hold "
                   "initially and are inductive together (Houdini proves which, first): "
                   "it then looks only for what they lack.")
@click.option("--mine", is_flag=True,
              help="pdr: seed Spacer with the clauses of one or two literals infer's "
                   "templates find true in every reachable state (at the proof's member "
                   "counts with [params]' ranges), those that hold initially and are "
                   "inductive together (Houdini proves which, first).")
def prove_cmd(args: RunArgs, k: int | None, timeout: float | None,
              workers: int | None, engine_name: str, seed: bool, mine: bool) -> int:
    """Prove MODEL's invariants for every reachable state with Z3, at the sizes of the
    model's [proof.params]: by k-induction with the spec's lemmas, or by PDR with none
    (--engine pdr). Outcomes: proved (exit 0), counterexample (a real trace, exit 1),
    not inductive (a counterexample to induction, which may be unreachable, exit 3),
    unknown (exit 3)."""
    from checker.engines.symbolic.induction import prove
    from checker.engines.symbolic.pdr import pdr
    from checker.lang.machine import changed_params
    from checker.models import mining_machine
    from checker.run import ProveOptions, preflight

    started = time.perf_counter()  # --timeout counts loading and encoding too
    if engine_name == "pdr" and k is not None:
        raise click.UsageError("--k is induction's depth; pdr has none")
    if engine_name == "induction" and seed:
        raise click.UsageError("--with-spec-lemmas seeds pdr; induction always uses the "
                               "spec's lemmas")
    if engine_name == "induction" and mine:
        raise click.UsageError("--mine seeds pdr; induction uses the spec's lemmas (ctmc "
                               "infer finds lemmas for it)")
    _check_trace_out(args.trace_out)
    model, machine = _load(args, proof=True, timeout=timeout, started=started)
    engine: dict[str, Any] = {
        "name": "prove" if engine_name == "induction" else "pdr",
        "timeout": timeout or model.proof["timeout"] or None,
        "deadlock": model.engine["deadlock"] if args.deadlock is None else args.deadlock,
    }
    if engine_name == "induction":
        engine["k"] = k or model.proof["k"]
    if seed or mine:
        engine["seeds"] = " and ".join(["spec lemmas"] * seed + ["mined facts"] * mine)
    mine_from = mining_machine(model, machine, args.overrides) if mine else None
    if mine_from is not None:
        engine["mined at"] = ", ".join(f"{name}={value}" for name, value in
                                       changed_params(machine, mine_from).items())
    options = ProveOptions(k=engine.get("k", 1), deadlock=engine["deadlock"],
                           timeout=engine["timeout"], started=started,
                           progress=args.progress, workers=workers or _usable_cores(),
                           seed=seed, mine=mine, mine_from=mine_from)
    preflight(machine, options)
    result = _run_engine(args, model, machine, engine, lambda: (
        prove if engine_name == "induction" else pdr)(machine, options))
    return _report_proof(model, machine, result, args.trace_out, args.as_json)


@main.command("infer")
@click.argument("model_arg", metavar="MODEL")
@click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
              callback=_parse_sets, help="Override a model parameter (repeatable).")
@click.option("--max-states", type=click.IntRange(min=1), default=2_000_000,
              show_default=True, help="Filter by every reachable state (BFS) up to this many; "
                                      "beyond it, by random walks.")
@click.option("--walks", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Random walks when the model is too big to exhaust.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the walks.")
@click.option("--with-spec-lemmas", "spec_lemmas", is_flag=True,
              help="Start from the spec's own lemmas: propose only what they lack.")
@click.option("--search", type=click.Choice(["cti", "houdini"]), default="cti",
              show_default=True,
              help="cti: from the invariants up, choosing lemmas that rule out "
                   "counterexamples to induction; houdini: the largest inductive subset "
                   "of every candidate.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Processes sharing the goals of the proof that checks what was found "
                   "(as `prove --workers`)  [default: every usable core]")
@_deadline_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@_models_dir_option
@click.pass_obj
def infer_cmd(models_dir: Path, model_arg: str, overrides: dict[str, str], max_states: int,
              walks: int, seed: int, spec_lemmas: bool, search: str, workers: int | None,
              timeout: float | None, as_json: bool, quiet: bool) -> int:
    """Propose lemmas for MODEL: clauses over its variables that every reachable state
    satisfies, chosen until the invariants are inductive (Z3 finds counterexamples to
    induction; a lemma rules each out). Prints them as spec source, and whether they
    prove the invariants (exit 0) or not (exit 3). The spec's own lemmas are left out
    unless --with-spec-lemmas."""
    from checker.engines.symbolic.infer import InferOptions, infer

    started = time.perf_counter()  # --timeout counts loading and encoding too
    model, machine = _load(RunArgs(models_dir, model_arg, overrides, (), (), None, None,
                                   as_json, quiet), timeout=timeout, started=started)
    try:
        result = infer(machine, InferOptions(max_states=max_states, walks=walks, seed=seed,
                                             timeout=timeout, started=started,
                                             spec_lemmas=spec_lemmas, search=search,
                                             workers=workers or _usable_cores(),
                                             progress=None if quiet else _progress))
    except KeyboardInterrupt:
        raise _Interrupted("interrupted") from None
    _progress.stop()
    from checker.reporting.proofs import infer_json, print_inferred

    if as_json:
        click.echo(json.dumps(infer_json(model, machine, result), indent=2))
    else:
        print_inferred(result, spec_lemmas)
    return EXIT_HOLDS if result.proves else EXIT_INCONCLUSIVE


def _report_proof(model: Model, machine: Machine, result: Any, trace_out: Path | None,
                  as_json: bool) -> int:
    from checker.engines.symbolic.induction import COUNTEREXAMPLE, NOT_INDUCTIVE, PROVED
    from checker.reporting.proofs import print_proof, proof_json

    _progress.stop()
    trace_file = None
    v = result.violation
    if v is not None:
        trace_file = _write_trace(v.trace, trace_out or TRACE_DIR / (
            f"{model.name}-{'cti-' if result.outcome == NOT_INDUCTIVE else ''}{v.name}"
            f"-prove.itf.json"), model)
    if as_json:
        click.echo(json.dumps(proof_json(model, machine, result, trace_file), indent=2,
                              default=str))
    else:
        print_proof(Console(highlight=False, soft_wrap=True), machine, result, trace_file)
    if result.outcome == PROVED:
        return EXIT_HOLDS
    if result.outcome == COUNTEREXAMPLE:
        return EXIT_ERROR if result.error else EXIT_VIOLATION
    return EXIT_INCONCLUSIVE


def _write_trace(trace: Any, path: Path, model: Model) -> Path:
    from checker.traces.itf import write_counterexample

    return write_counterexample(trace, path, model=model.name, model_file=str(model.path))


def _report(args: RunArgs, model: Model, machine: Machine, engine: dict[str, Any],
            result: CheckResult) -> int:
    from checker.engines.result import ERROR, HOLDS, UNKNOWN, VIOLATED
    from checker.models import outcome_matches
    from checker.reporting.verdicts import json_report, print_coverage, print_stats, print_verdict

    _progress.stop()
    console = Console(highlight=False, soft_wrap=True)  # a long verdict line stays whole
    if not (args.as_json or args.quiet):  # before the trace is saved, in case saving fails
        print_stats(console, result.stats)
        print_coverage(console, result.coverage)
    trace_file, unwritten = None, None
    if result.violation is not None:
        default = TRACE_DIR / f"{model.name}-{result.violation.name}-{engine['name']}.itf.json"
        try:
            trace_file = _write_trace(result.violation.trace, args.trace_out or default, model)
        except CheckerError as exc:  # the verdict still counts: say it, then why no file
            unwritten = str(exc)
    matches = None if args.reshaped else outcome_matches(model, result)
    if args.as_json:
        click.echo(json.dumps(json_report(model, machine, engine, result, trace_file, matches),
                              indent=2, default=str))
    else:
        from checker.models import property_names

        print_verdict(console, model, result, trace_file, matches,
                      nothing_selected=not property_names(machine) and not engine["deadlock"])
    if unwritten:
        _fail(f"error: {unwritten}", EXIT_ERROR)
    return {HOLDS: EXIT_HOLDS, VIOLATED: EXIT_VIOLATION, ERROR: EXIT_ERROR,
            UNKNOWN: EXIT_INCONCLUSIVE}[result.outcome]


def _print_header(model: Model, machine: Machine, engine: dict[str, Any]) -> None:
    from checker.reporting.verdicts import print_header

    print_header(Console(highlight=False, soft_wrap=True), model, machine, engine)


# --- traces ------------------------------------------------------------------------

@main.group()
def trace() -> None:
    """Read counterexample traces (ITF JSON files)."""


_trace_file = click.argument("file", type=click.Path(exists=True, dir_okay=False))


def _trace_limits(fn: Callable) -> Callable:
    """--max-steps and --max-mb, handed over as one `Limits`."""
    @functools.wraps(fn)
    def wrapper(max_steps: int, max_mb: int, **rest: Any) -> Any:
        from checker.traces.itf import Limits

        return fn(limits=Limits(max_steps=max_steps, max_bytes=max_mb * 2**20), **rest)

    from checker.traces.itf import DEFAULT_LIMITS

    wrapper = click.option(
        "--max-steps", type=click.IntRange(min=0), default=DEFAULT_LIMITS.max_steps,
        show_default=True, metavar="N", help="Refuse a trace of more steps (a long one takes "
        "minutes and gigabytes to replay and draw).")(wrapper)
    return click.option(
        "--max-mb", type=click.IntRange(min=1), default=DEFAULT_LIMITS.max_bytes // 2**20,
        show_default=True, metavar="MB", help="Refuse a bigger trace file before reading "
        "it.")(wrapper)


@trace.command("show")
@_trace_file
@_trace_limits
@click.option("--full", is_flag=True, help="Show every variable, not just the changed ones.")
@click.option("--step", type=click.IntRange(min=0), metavar="K", help="Show only step K.")
@click.option("--interactive", "-i", is_flag=True,
              help="Pause after each step (Enter: next, q: quit).")
@click.option("--raw", is_flag=True,
              help="Show the changed variables even when the spec declares a protocol view.")
def trace_show(file: str, full: bool, step: int | None, interactive: bool, raw: bool,
               limits: Limits) -> None:
    """Show the trace in FILE step by step: through the spec's protocol view (its lanes'
    tables, changed cells highlighted) when it declares one, else the changed variables."""
    if interactive and (full or step is not None):
        raise click.UsageError("--interactive cannot be combined with --full or --step")
    if interactive and sys.stdin is None:
        raise click.UsageError("--interactive waits for Enter on standard input, which is "
                               "closed")
    from checker.traces.replay import load_trace
    from checker.traces.view import show_trace, show_trace_interactive

    loaded = load_trace(file, limits=limits)
    console = Console(highlight=False)
    if interactive:
        show_trace_interactive(loaded, console, raw=raw)
    else:
        show_trace(loaded, console, full=full, step=step, raw=raw)


@trace.command("html")
@_trace_file
@_trace_limits
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              metavar="OUT.html",
              help="Where to write the page (default: FILE with .html; -: standard output).")
def trace_html(file: str, output: Path | None, limits: Limits) -> None:
    """Write the trace in FILE as one self-contained HTML page: swimlanes, a step slider
    (left/right keys), each lane's tables with the changed cells marked, the whole
    state, and the violation."""
    from checker.outputs import check_writable
    from checker.traces.html import html_name, page, write_html
    from checker.traces.replay import load_trace

    if output == Path("-"):
        click.echo(page(load_trace(file, limits=limits), Path(file).name), nl=False)
        return
    out = output or Path(file).with_name(html_name(Path(file)))
    check_writable(out, "-o", make_folders=False, reads=file)
    write_html(load_trace(file, limits=limits), out, source=Path(file).name)
    size = out.stat().st_size
    shown = f"{size / 2**20:,.1f} MB" if size >= 2**20 else f"{size / 2**10:,.0f} KB"
    click.echo(f"wrote {out} ({shown}; open it in a browser)")


@trace.command("check")
@_trace_file
@_trace_limits
def trace_check(file: str, limits: Limits) -> None:
    """Replay FILE against its spec; exit 0 if every step is a real transition."""
    from checker.traces.replay import check_trace

    loaded, violated = check_trace(file, limits=limits)
    click.echo(f"{file}: replays ({len(loaded)} steps of spec {loaded.machine.spec_name}); "
               f"violates {', '.join(violated) or 'nothing'}")


# --- gate ------------------------------------------------------------------------------

@main.command()
@click.argument("targets", nargs=-1, metavar="[DIR|FILES...]")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Also write a JUnit XML report (a testcase per model) to PATH.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object on stdout instead of the table.")
@click.option("--trace-dir", type=_Folder(file_okay=False, path_type=Path),
              default=TRACE_DIR / "gate", show_default=True,
              help="Where counterexamples are written (as ITF).")
@click.option("--html", "html_dir", type=_Folder(path_type=Path), metavar="DIR",
              help="Also write every counterexample as an HTML page in DIR, with an "
                   "index.html.")
@click.option("--update-baselines", is_flag=True,
              help="Rewrite the expect.states (and expect.orbits) line of every model whose "
                   "outcome matched.")
@click.option("--prove", is_flag=True,
              help="Also prove, as `ctmc prove` does, every holds model with a [proof] table "
                   "and every model with expect.proof; a lost proof is a surprise.")
@_workers_option
@_models_dir_option
@click.pass_obj
def gate(models_dir: Path, targets: tuple[str, ...], junit: Path | None, as_json: bool,
         trace_dir: Path, html_dir: Path | None, update_baselines: bool, prove: bool,
         workers: int | None) -> int:
    """Run every model file (in DIR, default the models folder, or the FILES given) and
    compare its outcome and state count with the file's expectation. For CI: exit 0 when
    all match, 1 on any surprise, 2 for a broken model file or bad arguments."""
    from checker.gate import collect_models, run_gate, to_json, write_junit
    from checker.outputs import check_folder, check_writable
    from checker.progress import PROGRESS_SECONDS

    paths = collect_models(targets, models_dir)
    if html_dir is not None:
        check_folder(html_dir, "--html")
    if junit is not None:
        check_writable(junit, "--junit")
    width = len(str(len(paths)))
    model = [""]  # the model being run, as its progress lines name it
    last = [time.monotonic()]

    def started(i: int, n: int, path: Path) -> None:
        model[0], last[0] = f"[{i:>{width}}/{n}] {path.stem}", time.monotonic()

    def progress(line: str) -> None:  # a long model says how far it is, every two seconds
        if time.monotonic() - last[0] >= PROGRESS_SECONDS:
            last[0] = time.monotonic()
            _progress(f"{model[0]} ... {line}")

    def done(i: int, n: int, r: GateResult) -> None:
        states = "" if r.states is None else f"{r.states:,} states, "
        proof = "" if r.proof is None else f"proof {r.proof.outcome}, "
        click.echo(f"{model[0]} ... {'ok' if r.ok else 'SURPRISE: ' + r.reason} "
                   f"({states}{proof}{r.seconds:.2f} s)", err=True)
        if r.detail and os.environ.get("CTMC_DEBUG", "0") not in ("", "0"):
            click.echo(r.detail, err=True)

    report = run_gate(paths, models_dir, trace_dir, update_baselines, started, done, progress,
                      workers or _usable_cores(), prove)
    if junit:
        write_junit(report, junit)
    index: Path | None = None
    unwritten: list[str] = []
    if html_dir is not None:
        from checker.traces.html import write_pages

        index, unwritten = write_pages([r.trace_file for r in report.results if r.trace_file],
                                       html_dir)
    if as_json:
        click.echo(json.dumps(to_json(report) | {"html_index": index and str(index)}, indent=2))
    else:
        from checker.reporting.gates import print_gate

        _progress.stop()
        print_gate(report, trace_dir, junit, index)
    for problem in unwritten:
        click.echo(f"error: --html: {problem}", err=True)
    if report.broken or unwritten:
        return EXIT_ERROR
    return EXIT_HOLDS if report.ok else EXIT_VIOLATION


# --- diff -----------------------------------------------------------------------------

def _parse_policies(ctx: click.Context, param: click.Parameter,
                    value: str) -> tuple[str, ...]:
    from checker.diff.compare import POLICIES

    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    if names == ("none",):
        return ()
    for name in names:
        if name not in POLICIES:
            raise click.BadParameter(f"{name!r} is not one of {', '.join(POLICIES)} or none",
                                     ctx, param)
    return names


@main.command()
@click.argument("base", metavar="BASE")
@click.argument("targets", nargs=-1, metavar="[MODELS...]")
@click.option("--fail-on", "fail_on", default="proofs", show_default=True,
              metavar="KINDS", callback=_parse_policies,
              help="Which changes count as regressions besides a worse verdict and a model "
                   "that no longer runs: a comma list of states (counts, diameter, "
                   "counterexample length), behaviours (a new behaviour), proofs (a lost "
                   "proof), coverage (an action or mutation gone vacuous); or none.")
@click.option("--prove", is_flag=True,
              help="Also prove, under both versions, the models `gate --prove` proves.")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Also write a Markdown summary (for a pull-request comment) to PATH.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), metavar="PATH",
              help="Also write a JUnit XML report (a testcase per model, a failure per "
                   "regression) to PATH.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object on stdout instead of the table.")
@click.option("--trace-dir", type=_Folder(file_okay=False, path_type=Path),
              default=TRACE_DIR / "diff", show_default=True,
              help="Where counterexamples (in base/ and head/) and behaviour traces go.")
@click.option("--behaviour-states", type=click.IntRange(min=0), default=100_000,
              show_default=True, metavar="N",
              help="Compare behaviours of models with at most N reachable states (0: never).")
@click.option("--cache", "cache_dir", type=_Folder(file_okay=False, path_type=Path),
              metavar="DIR", help="Keep each side's results in DIR, keyed by what the spec "
                                  "means, and reuse them when nothing it depends on changed.")
@click.option("--workers", type=click.IntRange(min=1), metavar="N",
              help="Runs at once (each side of each model is one)  [default: every usable "
                   "core]")
@_models_dir_option
@click.pass_obj
def diff(models_dir: Path, base: str, targets: tuple[str, ...], fail_on: tuple[str, ...],
         prove: bool, markdown: Path | None, junit: Path | None, as_json: bool,
         trace_dir: Path, behaviour_states: int, cache_dir: Path | None,
         workers: int | None) -> int:
    """Check every model (in the models folder, or the MODELS given: names, files or
    folders) under BASE (a git revision, or a folder holding an older copy of the
    repository) and as the files are now, and say what changed: verdicts, state counts,
    coverage, proofs, and the shortest behaviour each design allows that the other does
    not. Exit 0 without regressions, 1 with, 2 for bad input."""
    from checker.diff.run import DiffOptions, run_diff
    from checker.outputs import check_folder, check_writable
    from checker.reporting.diffs import print_diff, to_json, to_markdown, write_junit

    for path, what in ((markdown, "--markdown"), (junit, "--junit")):
        if path is not None:
            check_writable(path, what)
    check_folder(trace_dir, "--trace-dir")
    if cache_dir is not None:
        check_folder(cache_dir, "--cache")
    try:
        report = run_diff(DiffOptions(base, targets, models_dir, trace_dir, prove,
                                      workers or _usable_cores(), behaviour_states,
                                      cache_dir=cache_dir, progress=_progress))
    except KeyboardInterrupt:
        raise _Interrupted("interrupted: nothing of the user's was changed") from None
    written = []
    if markdown is not None:
        from checker.outputs import replace_text

        replace_text(markdown, to_markdown(report, fail_on))
        written.append(f"Markdown summary: {markdown}")
    if junit is not None:
        write_junit(report, fail_on, junit)
        written.append(f"JUnit report: {junit}")
    _progress.stop()
    if as_json:
        click.echo(json.dumps(to_json(report, fail_on), indent=2))
    else:
        print_diff(report, fail_on, written)
    return EXIT_VIOLATION if report.regressions(fail_on) else EXIT_HOLDS


# --- graph ----------------------------------------------------------------------------

@main.command("graph")
@click.argument("model_arg", metavar="MODEL")
@click.option("--set", "overrides", multiple=True, metavar="NAME=VALUE",
              callback=_parse_sets, help="Override a model parameter (repeatable).")
@click.option("--format", "fmt", type=click.Choice(("dot", "graphml")), default="dot",
              show_default=True, help="dot for Graphviz; graphml for networkx, Gephi, yEd.")
@click.option("--max-states", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Refuse a model with more reachable states than this.")
@click.option("--label", type=click.Choice(("view", "raw")), default="view",
              show_default=True, help="Label states by the spec's protocol view (when it "
                                      "declares one) or by their variables.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              metavar="OUT", help="Where to write the graph  [default: MODEL.dot or "
                                  "MODEL.graphml here]")
@_models_dir_option
@click.pass_obj
def graph_cmd(models_dir: Path, model_arg: str, overrides: dict[str, str], fmt: str,
              max_states: int, label: str, output: Path | None) -> int:
    """Write the reachable state graph of a small MODEL: a node per state, an edge per
    transition (action and parameters), the initial states, violating states and
    steps, and the BFS engine's counterexample marked."""
    from checker.graph import dot_text, explore, graphml_text, mark_path, to_networkx
    from checker.outputs import check_writable, replace_text
    from checker.run import BfsOptions, run

    model, machine = _load(RunArgs(models_dir, model_arg, overrides, (), (), None, None,
                                   False, False))
    out = output or Path(f"{model.name}.{fmt}")
    to_stdout = out == Path("-")  # the graph on stdout, what is said of it on stderr
    if not to_stdout:
        check_writable(out, "-o", make_folders=False)
    depth = model.engine["max_depth"] or None
    graph = explore(machine, max_states, depth, _progress)
    result = run(machine, BfsOptions(max_depth=depth, deadlock=model.engine["deadlock"]))
    _progress.stop()
    v = result.violation
    whole = True
    if v is not None:
        trace = v.trace
        states, actions = list(trace.states), list(trace.actions)
        if trace.loop is not None and trace.loop_action is not None:
            states.append(trace.states[trace.loop])
            actions.append(trace.loop_action)
        whole = mark_path(graph, states, actions)
    g = to_networkx(graph, machine, "raw" if label == "raw" else "view")
    text = (dot_text if fmt == "dot" else graphml_text)(g)
    if to_stdout:
        click.echo(text, nl=False)
    else:
        replace_text(out, text)
    violating = sum(1 for n in graph.nodes if n.violates)
    click.echo(f"wrote {'the graph' if to_stdout else out}: {len(graph.nodes):,} states "
               f"({violating:,} violating), {len(graph.edges):,} transitions", err=to_stdout)
    if v is None and result.complete:
        stats = result.stats
        agree = (stats["distinct_states"], stats["generated"]) == \
            (len(graph.nodes), len(graph.edges))
        click.echo(f"the bfs engine {'agrees' if agree else 'DISAGREES'}: "
                   f"{stats['distinct_states']:,} distinct states, {stats['generated']:,} "
                   f"transitions; no violation", err=to_stdout)
        if not agree:
            return _fail("error: the graph and the bfs engine disagree on the counts; "
                         "this is a bug in ctmc (please report it)", EXIT_ERROR)
    elif v is not None:
        click.echo(f"marked: the bfs engine's {len(v.trace)}-step counterexample ({v.kind} "
                   f"{v.name})" + ("" if whole else "; its last step leaves the constraints, "
                                   "so the graph shows it up to the step before"),
                   err=to_stdout)
    return EXIT_HOLDS


# --- list ----------------------------------------------------------------------------

_SPEC_LISTS = ("invariants", "mutations", "params")


@main.command("list")
@click.argument("what", required=False,
                type=click.Choice(("specs", "models") + _SPEC_LISTS))
@click.option("--spec", "spec_ref", metavar="NAME",
              help="The spec (name or module:attribute) for invariants, mutations, params.")
@_models_dir_option
@click.pass_obj
def list_cmd(models_dir: Path, what: str | None, spec_ref: str | None) -> int:
    """List specs and models (the default), or a spec's invariants, mutations or params."""
    from checker.models import check_models_dir
    from checker.reporting import listings

    if what in (None, "models"):
        check_models_dir(models_dir)  # before anything is printed
    console = Console(highlight=False)  # wrapped at the terminal's width, never cut
    if what in _SPEC_LISTS:
        if not spec_ref:
            raise click.UsageError(f"list {what} needs --spec NAME")
        from checker.registry import find_spec

        {"invariants": listings.list_invariants, "mutations": listings.list_mutations,
         "params": listings.list_params}[what](console, find_spec(spec_ref))
        return EXIT_HOLDS
    if spec_ref:
        raise click.UsageError(f"--spec applies to {', '.join(_SPEC_LISTS)}, not {what or 'list'}")
    if what in (None, "specs"):
        listings.list_specs(console)
    if what not in (None, "models"):
        return EXIT_HOLDS
    errors = listings.list_models(console, models_dir)
    for line in errors:
        click.echo(line, err=True)
    return EXIT_ERROR if errors else EXIT_HOLDS


if __name__ == "__main__":
    main()

"""What a Spark run is told: kept apart from the engine so that choosing it needs no
Spark import."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from checker.lang.machine import Machine

DEFAULT_MASTER = "local[*]"
EXCHANGES = ("auto", "files", "shuffle")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
LOCAL_SCHEMES = ("file",)  # a file:/// URL is the driver's own path


def is_remote(location: str) -> bool:
    """Whether a run directory is a URL of a filesystem other than the driver's
    (hdfs://, s3a://, ...), which the driver reaches through Spark (`remote.py`)."""
    match = _URL.match(location)
    return match is not None and match.group(1).lower() not in LOCAL_SCHEMES
  # auto: files if every executor sees the run directory


@dataclass
class SparkOptions:
    master: str = DEFAULT_MASTER
    partitions: int | None = None  # None: the run directory's on resume, else 2 per core (>= 8)
    run_dir: str | None = None  # None: runs/LABEL-TIMESTAMP
    resume: bool = False
    exchange: str = "auto"  # one of EXCHANGES; a resumed run keeps the one it chose
    max_depth: int | None = None
    deadlock: bool = True
    label: str = ""  # the model's name, recorded in run.json
    symmetry: bool = False  # one state per orbit (not for a model with liveness properties)
    driver_levels: bool = True  # file exchange: a level that fits one task runs in the driver
    log_file: str | None = None  # where Spark's own output goes; None: the terminal
    driver_memory: str | None = None  # e.g. "2g"; only when this call starts Spark
    progress: Callable[[str], None] | None = None
    batch_size: int = 1 << 16
    dedup_budget: int = 1 << 20


def reduces_by_symmetry(machine: Machine, options: SparkOptions) -> bool:
    """Whether the run stores one state per orbit: asked for, scalarsets declared, and no
    liveness property (its graph needs every state, and Spark's liveness pass reads the
    states from the level files)."""
    return options.symmetry and bool(machine.scalarsets) and not machine.liveness

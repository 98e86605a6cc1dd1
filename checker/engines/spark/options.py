"""What a Spark run is told: kept apart from the engine so that choosing it needs no
Spark import."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_MASTER = "local[*]"


@dataclass
class SparkOptions:
    master: str = DEFAULT_MASTER
    partitions: int | None = None  # None: the run directory's on resume, else 2 per core (>= 8)
    run_dir: str | None = None  # None: runs/LABEL-TIMESTAMP
    resume: bool = False
    max_depth: int | None = None
    deadlock: bool = True
    label: str = ""  # the model's name, recorded in run.json
    driver_memory: str | None = None  # e.g. "2g"; only when this call starts Spark
    progress: Callable[[str], None] | None = None
    batch_size: int = 1 << 16
    dedup_budget: int = 1 << 20

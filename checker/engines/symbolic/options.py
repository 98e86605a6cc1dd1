"""What the Z3 engines are told: kept apart from them so that choosing one needs no Z3."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from checker.lang.machine import Machine


@dataclass
class BmcOptions:
    depth: int
    deadlock: bool = False
    timeout: float | None = None  # seconds for the whole run; None: no limit
    started: float | None = None  # time.perf_counter() the timeout counts from; None: the call
    progress: Callable[[str], None] | None = None


@dataclass
class ProveOptions:
    k: int = 1
    deadlock: bool = False
    timeout: float | None = None  # seconds for the whole proof; None: no limit
    started: float | None = None  # time.perf_counter() the timeout counts from; None: the call
    progress: Callable[[str], None] | None = None
    workers: int = 1  # processes sharing the inductive step's goals
    seed: bool = False  # pdr: seed Spacer with the spec's lemmas it proves first
    mine: bool = False  # pdr: seed Spacer with facts mined from reachable states, proved first
    mine_from: Machine | None = None  # the machine mined, if not the one proved (same slots)

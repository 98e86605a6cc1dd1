"""Houdini with and without the images of its counterexamples under the symmetry.

Each Houdini round runs the states reachable from its counterexample's first state,
and from the successors of a few of that state's images under the spec's scalarsets
(`houdini.MOVED`), dropping whatever falls there. This bench builds each model's
pool as `prove --engine pdr --mine` does (the mined facts true in every initial
state, with the spec's invariants) once, then runs Houdini on it with images and
without, the two taking turns in processes of their own, and prints rounds,
survivors (which must be the same: one fixpoint), seconds and the ratio.

    python bench/houdini_images.py                       # the three models below
    python bench/houdini_images.py log_driven_tiny --repeat 3
    python bench/houdini_images.py tracker_small --set requests=2
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from checker.engines.symbolic import houdini as module  # noqa: E402
from checker.engines.symbolic.deadline import Deadline  # noqa: E402
from checker.engines.symbolic.pdr import initial_pool  # noqa: E402
from checker.lang.machine import Machine, Property  # noqa: E402
from checker.models import build_machine, load_model, mining_machine  # noqa: E402

MODELS = {  # name: overrides of its [proof.params]
    "tracker_small": {"requests": "4", "max_ts": "4"},
    "log_driven_tiny": {},
    "v1_tiny": {},
}


def mined_pool(name: str, overrides: dict[str, str]) -> tuple[Machine, list[Property]]:
    """What `prove --engine pdr --mine` hands Houdini: the machine (its invariants
    those true initially) and the mined facts true in every initial state."""
    model = load_model(name)
    machine = dataclasses.replace(build_machine(model, overrides or None, proof=True),
                                  lemmas=[])
    pool = initial_pool(machine, Deadline(None), None, spec=False, mine=True,
                        mine_from=mining_machine(model, machine, overrides))
    return pool.machine, pool.others


def one_run(machine: Machine, pool: list[Property], moved: int, out: multiprocessing.Queue
            ) -> None:
    module.MOVED = moved
    started = time.perf_counter()
    alive, rounds = module.houdini(machine, pool, None, None)
    digest = hashlib.sha1(" ".join(sorted(alive)).encode()).hexdigest()[:8]
    out.put((rounds, len(alive), digest, time.perf_counter() - started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--repeat", type=int, default=1, help="turns per variant")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override a parameter of every model named")
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.set)
    fork = multiprocessing.get_context("fork")
    print(f"{'model':<18}{'pool':>8}{'images':>8}{'rounds':>8}{'survive':>9}"
          f"{'digest':>10}{'seconds':>9}")
    for name in args.models:
        machine, pool = mined_pool(name, MODELS.get(name, {}) | sets)
        seconds: dict[int, list[float]] = {module.MOVED: [], 0: []}
        for _ in range(args.repeat):
            for moved in seconds:
                out: multiprocessing.Queue = fork.Queue()
                child = fork.Process(target=one_run, args=(machine, pool, moved, out))
                child.start()
                rounds, survive, digest, spent = out.get()
                child.join()
                seconds[moved].append(spent)
                print(f"{name:<18}{len(pool):>8,}{moved:>8}{rounds:>8}{survive:>9,}"
                      f"{digest:>10}{spent:>9.1f}", flush=True)
        with_images, without = (min(s) for s in seconds.values())
        print(f"{name}: with images {without / with_images:.2f}x as fast (best of "
              f"{args.repeat})", flush=True)


if __name__ == "__main__":
    main()

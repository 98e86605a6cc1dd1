"""The fixed cost of a Spark level: small levels run in the driver, or as a Spark job each.

A level whose frontier fits one task gains nothing from Spark's scheduling, which costs
a two-stage job (about 0.15-0.2 s here) whatever the level does; the engine runs such a
level in the driver (`--driver-levels`, the default with the file exchange). This bench
runs the model of `bench/scale.py` (the billion-state tracker, 128 partitions as there)
to depth 4, whose levels all expand fewer than 10,000 states (what `scale.py` counts as
fixed cost), on one `local[2]` session, the two settings taking turns, and prints each
level's wall seconds and the median per setting, side by side.

    python bench/level_cost.py                 # 3 rounds each
    python bench/level_cost.py --rounds 5 --partitions 64
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from scale import MODEL, SIZES, fixed_cost  # noqa: E402  (the sibling bench)
from spark_vs_local import level_records  # noqa: E402

DEPTH = 4  # the scale model's levels 1-4 expand 1, 25, 547 and 6,013 states


def one_run(spark_master: str, partitions: int, driver_levels: bool, work: Path) -> list[dict]:
    """One run to DEPTH on the session already started; its level records."""
    from checker.models import build_machine, load_model
    from checker.run import SparkOptions, run

    model = load_model(str(ROOT.parent / MODEL), ROOT.parent / "models")
    run_dir = work / f"run-{'driver' if driver_levels else 'executors'}"
    run(build_machine(model, SIZES),
        SparkOptions(master=spark_master, partitions=partitions, run_dir=str(run_dir),
                     deadlock=model.engine["deadlock"], label=model.name, max_depth=DEPTH,
                     driver_levels=driver_levels))
    levels = level_records(run_dir)
    shutil.rmtree(run_dir)
    return levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from checker.engines.spark.session import spark_session

    spark_session(args.master, "2g")  # `run` reuses it
    seconds: dict[bool, list[float]] = {True: [], False: []}
    print(f"tracker_bench_large {SIZES}, levels 1-{DEPTH}, {args.partitions} partitions, "
          f"{args.master}; wall seconds per level")
    print(f"{'round':>5} {'where':>10} " + " ".join(f"{'L' + str(k):>6}" for k in
                                                    range(1, DEPTH + 1)) + f" {'median':>7}")
    with tempfile.TemporaryDirectory(prefix="ctmc-level-cost-") as work:
        one_run(args.master, args.partitions, False, Path(work))  # warm the workers
        for r in range(1, args.rounds + 1):
            for in_driver in (True, False):
                levels = one_run(args.master, args.partitions, in_driver, Path(work))
                cost, _ = fixed_cost(levels)
                seconds[in_driver] += [lv["seconds"] for lv in levels[1:]]
                print(f"{r:>5} {'driver' if in_driver else 'spark job':>10} "
                      + " ".join(f"{lv['seconds']:>6.2f}" for lv in levels[1:])
                      + f" {cost:>7.2f}")
    driver, job = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(f"median level: {driver:.2f} s in the driver, {job:.2f} s as a Spark job "
          f"({job / driver:.2f}x); over {args.rounds} rounds of {DEPTH} levels each")


if __name__ == "__main__":
    main()

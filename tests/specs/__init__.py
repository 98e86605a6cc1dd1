"""Small specs whose reachable state spaces are derived by hand.

Each module exposes its `Spec` objects as module-level globals and a dict

    EXPECTED = {spec_name: {"params": {...}, "states": N, "diameter": D,
                            "deadlock": L or None, "violation": {...} (optional)}}

with the facts derived in its docstring:

* `states`, `diameter`: distinct reachable states and the largest BFS depth, when the
  spec is explored with every invariant and step invariant switched off (constraints
  stay, they shape the state space);
* `deadlock`: with deadlock detection on, the length (steps) of the shortest trace to a
  state with no enabled action, or None if there is none;
* `violation`: `{"name": property, "kind": "invariant" | "step_invariant", "length": L}`,
  the shortest counterexample when the properties are checked.

`tests/test_state_counts.py` holds the BFS engine and the naive reference BFS
(`tests/naive_bfs.py`) to these numbers; the backend agreement test also evaluates
every expression of these specs.
"""

"""The state-graph export (`checker/graph.py`): counts derived by hand on tiny specs,
the BFS engine's `distinct_states` and `generated` on specs and real models, and the
DOT and GraphML files read back by Graphviz and networkx."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

from checker.errors import CheckerError, EvalError
from checker.graph import explore, mark_path, to_networkx, write_dot, write_graphml
from checker.lang import Array, Int, Spec, require
from checker.lang.machine import Machine
from checker.models import build_machine, load_model
from checker.run import BfsOptions, run
from checker.views import Table
from tests.naive_bfs import naive_bfs
from tests.specs.constrained import CONSTRAINED
from tests.specs.counter import COUNTER
from tests.specs.multi_init import MULTI_INIT

ROOT = Path(__file__).resolve().parent.parent
SPECS_DIR = ROOT / "tests" / "specs"
SVG = "{http://www.w3.org/2000/svg}"

LOOPS = Spec("loops", "a bit that stays (a self-loop) or flips by either of two hands")


@LOOPS.build
def _loops(m, p):
    m.var("x", Int(0, 1), init=0)

    @m.action()
    def stay(s):
        s.x = s.x

    @m.action(i=range(2))
    def flip(s, i):
        s.x = 1 - s.x


BAD = Spec("bad", "a counter 0..3 that breaks an invariant at 2, a lemma at 3, and a step "
                  "invariant on 2 -> 3")


@BAD.build
def _bad(m, p):
    m.var("x", Int(0, 3), init=0)

    @m.action()
    def inc(s):
        require(s.x < 3)
        s.x = s.x + 1

    @m.invariant
    def NotTwo(s):  # noqa: N802
        return s.x != 2

    @m.lemma
    def Small(s):  # noqa: N802
        return s.x <= 2

    @m.step_invariant
    def NoThree(before, after):  # noqa: N802
        return after.x != 3


VIEWED = Spec("viewed", "two processes' counters, with a protocol view")
VIEWED.param("fail", 0, "1: the view raises once both processes stepped (a view failing on "
             "the initial state or a step from it is refused when the spec builds)")


@VIEWED.build
def _viewed(m, p):
    m.var("pc", Array(Int(0, 1), 2), init=0)

    @m.action(i=range(2))
    def step(s, i):
        require(s.pc[i] == 0)
        s.pc[i] = 1

    def lanes(s):
        if p.fail and s["pc"] == [1, 1]:
            raise RuntimeError("no lanes today")
        return ["p0", "p1"]

    def tables(s):
        out = {f"p{i}": [Table.of("proc", ["name", "pc", "done"],
                                  [[f"p{i}", s["pc"][i], s["pc"][i] == 1]])]
               for i in range(2)}
        out[""] = [Table.of("notes", ["note", "text"], [["n", 'say "hi" \\ there']])]
        return out

    m.view(lanes, tables)


OVERFLOW = Spec("overflow", "a counter whose increment is not guarded")


@OVERFLOW.build
def _overflow(m, p):
    m.var("x", Int(0, 2), init=0)

    @m.action()
    def inc(s):
        s.x = s.x + 1


EMPTY = Spec("empty", "a counter whose constraint excludes its initial state")


@EMPTY.build
def _empty(m, p):
    m.var("x", Int(0, 1), init=0)

    @m.action()
    def inc(s):
        require(s.x < 1)
        s.x = s.x + 1

    @m.constraint
    def Positive(s):  # noqa: N802
        return s.x > 0


def _engine(machine: Machine, **options) -> tuple[int, int]:
    """(distinct_states, generated) from the BFS engine, every property off so that it
    explores everything."""
    unchecked = dataclasses.replace(machine, invariants=[], step_invariants=[], lemmas=[],
                                    liveness=[])
    stats = run(unchecked, BfsOptions(deadlock=False, **options)).stats
    return stats["distinct_states"], stats["generated"]


def _model(path: Path) -> Machine:
    return build_machine(load_model(path, path.parent))


def _render_svg(dot_file: Path) -> ET.Element:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's `dot` is not installed")
    done = subprocess.run(["dot", "-Tsvg", str(dot_file)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "Error" not in done.stderr, done.stderr
    return ET.fromstring(done.stdout)


def _svg_count(svg: ET.Element, kind: str) -> int:
    return sum(1 for g in svg.iter(f"{SVG}g") if g.get("class") == kind)


# -- exploration ----------------------------------------------------------------------

def test_a_counter_is_a_chain_with_its_depths():
    graph = explore(COUNTER.instantiate({"n": 3}), max_states=10)
    assert [(n.state, n.depth, n.initial) for n in graph.nodes] == [
        ((0,), 0, True), ((1,), 1, False), ((2,), 2, False), ((3,), 3, False)]
    assert [(e.src, e.dst, e.action.label) for e in graph.edges] == [
        (0, 1, "inc()"), (1, 2, "inc()"), (2, 3, "inc()")]


def test_every_initial_state_is_an_initial_node_in_the_machines_order():
    graph = explore(MULTI_INIT.instantiate({"n": 3}), max_states=10)
    assert [n.state for n in graph.nodes] == [(0,), (3,), (1,), (4,), (2,), (5,), (6,)]
    assert [n.initial for n in graph.nodes] == [True, True] + [False] * 5
    assert len(graph.edges) == 6  # inc from x = 0..5


def test_self_loops_and_parallel_edges_are_each_a_transition():
    machine = LOOPS.instantiate({})
    g = to_networkx(explore(machine, max_states=10), machine)
    # each of the 2 states: stay (a self-loop), flip(i=0) and flip(i=1) (parallel edges)
    assert (g.number_of_nodes(), g.number_of_edges()) == (2, 6)
    assert nx.number_of_selfloops(g) == 2
    assert g.number_of_edges("s0", "s1") == 2
    assert sorted(a["label"] for _, _, a in g.out_edges("s0", data=True)) == [
        "flip(i=0)", "flip(i=1)", "stay()"]
    assert _engine(machine) == (2, 6)


def test_constraints_drop_states_and_the_transitions_into_them():
    machine = CONSTRAINED.instantiate({"n": 4})
    graph = explore(machine, max_states=100)
    # kept: x + y <= 4, 15 states; reset from each (15), inc_x and inc_y from the 10
    # with x + y <= 3 each (20)
    assert (len(graph.nodes), len(graph.edges)) == (15, 35)
    assert _engine(machine) == (15, 35)
    # and so does the oracle, which does not count the 8 successors it drops
    assert naive_bfs(machine, check=False).generated == 35


def _hand_specs() -> list[tuple[str, Spec, dict]]:
    """Every spec of `tests/specs/` with its hand-derived facts (`EXPECTED`)."""
    out = []
    for info in sorted(pkgutil.iter_modules([str(SPECS_DIR)]), key=lambda i: i.name):
        found = vars(importlib.import_module(f"tests.specs.{info.name}"))
        specs = {v.name: v for v in found.values() if isinstance(v, Spec)}
        out += [(name, specs[name], facts) for name, facts in found.get("EXPECTED", {}).items()]
    return out


@pytest.mark.parametrize(("name", "spec", "facts"), _hand_specs(),
                         ids=[name for name, _, _ in _hand_specs()])
def test_nodes_and_edges_are_what_bfs_counts_on_every_hand_spec(name, spec, facts):
    machine = spec.instantiate(facts["params"])
    graph = explore(machine, max_states=100_000)
    assert len(graph.nodes) == facts["states"]
    assert max(n.depth for n in graph.nodes) == facts["diameter"]
    assert (len(graph.nodes), len(graph.edges)) == _engine(machine)


def test_nodes_and_edges_are_what_bfs_counts_on_tracker_small():
    machine = _model(ROOT / "models" / "tracker_small.toml")
    graph = explore(machine, max_states=10_000)
    assert (len(graph.nodes), len(graph.edges)) == (4742, 12355)
    assert _engine(machine) == (4742, 12355)
    assert max(n.depth for n in graph.nodes) == 11  # the engine's diameter


def test_a_depth_bound_keeps_the_states_within_it():
    machine = COUNTER.instantiate({"n": 5})
    graph = explore(machine, max_states=10, max_depth=2)
    assert (len(graph.nodes), len(graph.edges)) == (3, 2)
    assert _engine(machine, max_depth=2) == (3, 2)


def test_more_states_than_allowed_is_refused_in_one_line_and_writes_nothing(tmp_path):
    machine = COUNTER.instantiate({"n": 5})  # 6 states
    assert len(explore(machine, max_states=6).nodes) == 6
    out = tmp_path / "counter.dot"
    with pytest.raises(CheckerError) as refused:
        write_dot(to_networkx(explore(machine, max_states=5), machine), out)
    assert str(refused.value) == ("the model has more than 5 reachable states "
                                  "(--max-states 5); raise --max-states or shrink the model")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(CheckerError, match=r"more than 1,000 reachable states "
                                           r"\(--max-states 1,000\)"):
        explore(_model(ROOT / "models" / "tracker_small.toml"), max_states=1000)


def test_no_initial_state_within_the_constraints_is_refused_as_bfs_refuses_it():
    machine = EMPTY.instantiate({})
    with pytest.raises(CheckerError, match="^spec empty: no initial state satisfies") as ours:
        explore(machine, max_states=10)
    with pytest.raises(CheckerError) as engines:
        run(machine, BfsOptions())
    assert str(ours.value) == str(engines.value)


def test_evaluation_errors_propagate():
    with pytest.raises(EvalError, match="^action inc\\(\\) assigns x = 3, outside its type"):
        explore(OVERFLOW.instantiate({}), max_states=10)


# -- violations and the counterexample ------------------------------------------------

def test_violating_states_and_steps_and_the_engines_counterexample_are_marked(tmp_path):
    machine = BAD.instantiate({})
    graph = explore(machine, max_states=10)
    assert [n.violates for n in graph.nodes] == [(), (), ("NotTwo",), ("Small",)]
    assert [e.violates for e in graph.edges] == [(), (), ("NoThree",)]
    trace = run(machine, BfsOptions(deadlock=False)).violation.trace
    assert [s[0] for s in trace.states] == [0, 1, 2]
    mark_path(graph, trace.states, trace.actions)
    g = to_networkx(graph, machine)
    assert [a["on_path"] for _, a in g.nodes(data=True)] == [True, True, True, False]
    assert [a["on_path"] for _, _, a in g.edges(data=True)] == [True, True, False]
    assert [a["violates"] for _, a in g.nodes(data=True)] == ["", "", "NotTwo", "Small"]
    assert g.edges["s2", "s3", 0]["violates"] == "NoThree"
    write_dot(g, tmp_path / "bad.dot")
    lines = (tmp_path / "bad.dot").read_text().splitlines()
    s0, s2 = (next(line for line in lines if line.startswith(f'  "{n}" [')) for n in ("s0", "s2"))
    assert 'peripheries="2"' in s0 and 'color="blue"' in s0
    assert 'style="filled"' in s2 and 'color="red"' in s2 and "violates NotTwo" in s2
    step = next(line for line in lines if line.startswith('  "s2" -> "s3"'))
    assert 'color="red"' in step and "violates NoThree" in step
    _render_svg(tmp_path / "bad.dot")


def test_a_real_counterexample_is_marked_step_by_step(tmp_path):
    machine = _model(ROOT / "examples" / "mutex" / "mutex_check_then_set.toml")
    graph = explore(machine, max_states=1000)
    assert (len(graph.nodes), len(graph.edges)) == _engine(machine) == (28, 42)
    trace = run(machine, BfsOptions(deadlock=False)).violation.trace
    mark_path(graph, trace.states, trace.actions)
    on_path = [i for i, n in enumerate(graph.nodes) if n.on_path]
    assert len(on_path) == len(trace.states) == 7
    assert graph.nodes[graph.index[trace.states[-1]]].violates == ("MutualExclusion",)
    assert [e.action.label for e in graph.edges if e.on_path] == [
        a.label for a in trace.actions[1:]]
    write_dot(to_networkx(graph, machine), tmp_path / "mutex.dot")
    svg = _render_svg(tmp_path / "mutex.dot")
    assert (_svg_count(svg, "node"), _svg_count(svg, "edge")) == (28, 42)


def test_states_alone_mark_every_parallel_step_between_them():
    machine = LOOPS.instantiate({})
    graph = explore(machine, max_states=10)
    mark_path(graph, [(0,), (1,)])
    assert [e.action.label for e in graph.edges if e.on_path] == ["flip(i=0)", "flip(i=1)"]


def test_a_path_outside_the_graph_is_refused():
    machine = COUNTER.instantiate({"n": 5})
    graph = explore(machine, max_states=10, max_depth=1)
    with pytest.raises(CheckerError, match="^step 2 of the counterexample is not in the "):
        mark_path(graph, [(0,), (1,), (2,), (3,)])


def test_a_last_step_out_of_the_constraints_is_marked_up_to_the_step_before():
    """A step invariant is judged on every transition, also into a state the
    constraints discard (decision 0005): the counterexample's last state is no node."""
    from tests.specs.constrained import CONSTRAINED_EXIT

    machine = CONSTRAINED_EXIT.instantiate({"n": 3})
    graph = explore(machine, max_states=10)
    trace = run(machine, BfsOptions(deadlock=False)).violation.trace
    assert len(trace) == 3 and trace.states[-1] not in graph.index
    assert mark_path(graph, trace.states, trace.actions) is False
    assert [n.on_path for n in graph.nodes] == [True, True, True]
    assert [e.on_path for e in graph.edges] == [True, True]


# -- labels ---------------------------------------------------------------------------

def test_a_view_labels_each_state_by_lane_and_raw_labels_by_variable():
    machine = VIEWED.instantiate({})
    graph = explore(machine, max_states=10)
    assert (len(graph.nodes), len(graph.edges)) == (4, 4)
    viewed = to_networkx(graph, machine).nodes["s1"]["label"]
    assert viewed.splitlines() == [
        "p0", "  proc p0: pc=1, done=yes",
        "p1", "  proc p1: pc=0, done=no",
        "whole system", '  notes n: text=say "hi" \\ there']
    assert to_networkx(graph, machine, label="raw").nodes["s1"]["label"] == "pc = [1, 0]"
    plain = COUNTER.instantiate({"n": 1})
    assert to_networkx(explore(plain, max_states=10), plain).nodes["s1"]["label"] == "x = 1"


def test_a_failing_view_says_so_in_the_label():
    machine = VIEWED.instantiate({"fail": 1})
    labels = [a["label"] for _, a in
              to_networkx(explore(machine, max_states=10), machine).nodes(data=True)]
    assert labels[0].startswith("p0") and len(labels) == 4
    assert labels.count("(the view failed: RuntimeError: no lanes today)") == 1


def test_dot_labels_keep_quotes_and_backslashes(tmp_path):
    machine = VIEWED.instantiate({})
    write_dot(to_networkx(explore(machine, max_states=10), machine), tmp_path / "v.dot")
    svg = _render_svg(tmp_path / "v.dot")
    texts = [t.text or "" for t in svg.iter(f"{SVG}text")]
    assert any(t.strip() == 'notes n: text=say "hi" \\ there' for t in texts), texts
    assert (_svg_count(svg, "node"), _svg_count(svg, "edge")) == (4, 4)


# -- files ----------------------------------------------------------------------------

def test_graphml_reads_back_with_every_node_edge_and_attribute(tmp_path):
    machine = _model(ROOT / "models" / "tracker_small.toml")
    g = to_networkx(explore(machine, max_states=10_000), machine, label="raw")
    write_graphml(g, tmp_path / "t.graphml")
    back = nx.read_graphml(tmp_path / "t.graphml", force_multigraph=True)
    assert (back.number_of_nodes(), back.number_of_edges()) == (4742, 12355)
    assert back.nodes["s0"] == g.nodes["s0"]
    assert back.nodes["s0"]["initial"] is True and back.nodes["s0"]["depth"] == 0
    assert list(back.edges(keys=True, data=True)) == list(g.edges(keys=True, data=True))


@pytest.mark.parametrize(("write", "label", "error"), [
    (write_dot, "x = \udc80", UnicodeEncodeError),  # no UTF-8 for a lone surrogate
    (write_graphml, ["x", 1], nx.NetworkXError),  # GraphML has no list type
], ids=["dot", "graphml"])
def test_a_failed_write_leaves_the_file_that_was_there(tmp_path, write, label, error):
    machine = COUNTER.instantiate({"n": 2})
    g = to_networkx(explore(machine, max_states=10), machine)
    g.nodes["s1"]["label"] = label  # the writer fails midway
    out = tmp_path / "graph.out"
    out.write_text("// written by ctmc\n// the previous graph\n")
    with pytest.raises(error):
        write(g, out)
    assert out.read_text() == "// written by ctmc\n// the previous graph\n"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left



# -- the command: `ctmc graph` --------------------------------------------------------

def _ctmc(*args: str):
    from click.testing import CliRunner

    from cli import main

    return CliRunner().invoke(main, list(args), standalone_mode=False)


def test_the_command_writes_graphml_with_the_engines_counts(tmp_path):
    out = tmp_path / "tracker.graphml"
    result = _ctmc("graph", "tracker_small", "--format", "graphml", "-o", str(out))
    assert result.return_value == 0, result.output
    back = nx.read_graphml(out, force_multigraph=True)
    machine = build_machine(load_model("tracker_small", ROOT / "models"))
    assert (back.number_of_nodes(), back.number_of_edges()) == _engine(machine) == (4742, 12355)
    assert "the bfs engine agrees: 4,742 distinct states, 12,355 transitions" in result.output


@pytest.mark.parametrize("fmt", ["dot", "graphml"])
def test_dash_writes_the_graph_to_stdout_and_what_is_said_of_it_to_stderr(fmt, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / f"g.{fmt}"
    assert _ctmc("graph", "tracker_small", "--format", fmt, "-o", str(out)).return_value == 0
    result = _ctmc("graph", "tracker_small", "--format", fmt, "-o", "-")
    assert result.return_value == 0, result.output
    assert result.stdout == out.read_text()
    assert "wrote the graph: 4,742 states" in result.stderr
    assert "the bfs engine agrees" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"g.{fmt}"]


def test_the_command_writes_dot_that_graphviz_renders_with_the_counterexample(tmp_path):
    out = tmp_path / "mutex.dot"
    result = _ctmc("graph", "mutex_check_then_set", "--models-dir",
                   str(ROOT / "examples" / "mutex"), "-o", str(out))
    assert result.return_value == 0, result.output
    assert "marked: the bfs engine's 6-step counterexample (invariant MutualExclusion)" \
        in result.output
    svg = _render_svg(out)
    assert (_svg_count(svg, "node"), _svg_count(svg, "edge")) == (28, 42)
    assert out.read_text().count('penwidth="2.5"') == 7 + 6  # the path's states and steps


@pytest.mark.parametrize("problem", ["unknown format", "missing folder", "too many states",
                                     "unknown model"])
def test_the_command_refuses_bad_input_with_one_line(problem, tmp_path):
    out = tmp_path / "g.dot"
    out.write_text("// written by ctmc\n// keep me\n")  # an earlier graph, which it may replace
    args = ["graph", "tracker_small", "-o", str(out)]
    if problem == "unknown format":
        args += ["--format", "png"]
    elif problem == "missing folder":
        args[-1] = str(tmp_path / "nowhere" / "g.dot")
    elif problem == "too many states":
        args += ["--max-states", "100"]
    else:
        args[1] = "no_such_model"
    result = _ctmc(*args)
    assert result.return_value == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert out.read_text() == "// written by ctmc\n// keep me\n"
    assert not (tmp_path / "nowhere").exists()
    if problem == "too many states":
        assert "more than 100 reachable states (--max-states 100)" in lines[0]

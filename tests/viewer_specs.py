"""A tiny spec with a protocol view, for the trace viewers' tests (`tests.viewer_specs:RELAY`).

RELAY: a value written at node n1 is relayed hop by hop along a line of `nodes` nodes.
`Delivered` says that once the relay has reached the last node, every acknowledged
write's value is there; the shortest counterexample relays first and writes after:
relay(i=0), ..., relay(i=nodes-2), write(w=0), nodes steps. `acked` has a slot more
than there are writes (the control message's), which that counterexample never
touches; `tick` moves a clock no property or relay reads. The view draws a lane per
node, a message per relay, and a table per lane.
"""

from __future__ import annotations

from checker.lang import And, Array, Bool, ForAll, Implies, Int, Spec, require
from checker.views import Event, Table

RELAY = Spec("relay", "a value relayed along a line of nodes")
RELAY.param("nodes", 4, "nodes on the line", min=2, max=6)
RELAY.param("writes", 1, "writes at the first node", min=1, max=2)


@RELAY.build
def _relay(m, p):
    last = p.nodes - 1
    m.var("value", Array(Int(0, 2), p.nodes), init=0, doc="each node's copy")
    m.var("hop", Int(0, last), init=0, doc="the node the relay has reached")
    m.var("acked", Array(Bool(), p.writes + 1), init=False,
          doc="write w acknowledged; the last slot is the control message's")
    m.var("now", Int(0, 2), init=0)

    @m.action(w=range(p.writes))
    def write(s, w):
        require(And(s.acked[w] == False, s.value[0] < 2))  # noqa: E712 - symbolic
        s.value[0] = s.value[0] + 1
        s.acked[w] = True

    @m.action(i=range(last))
    def relay(s, i):
        require(s.hop == i)
        s.value[i + 1] = s.value[i]
        s.hop = i + 1

    @m.action()
    def control(s):
        require(s.now == 2)
        s.acked[p.writes] = True

    @m.action()
    def tick(s):
        require(s.now < 2)
        s.now = s.now + 1

    @m.invariant
    def Delivered(s):  # noqa: N802
        """Once the relay reaches the last node, every acknowledged write is there."""
        return ForAll(range(p.writes), lambda w: Implies(
            And(s.acked[w], s.hop == last), s.value[last] == s.value[0]))

    def lanes(state):
        return [f"n{i + 1}" for i in range(len(state["value"]))]

    def tables(state):
        return {f"n{i + 1}": [Table.of("copy", ["node", "value", "relay here"],
                                       [[f"n{i + 1}", v, state["hop"] == i]])]
                for i, v in enumerate(state["value"])}

    def events(step):
        if step.action == "relay":
            i = step.params["i"]
            return [Event(f"n{i + 1}", f"value {step.after['value'][i + 1]}", (f"n{i + 2}",))]
        if step.action == "write":
            return [Event("n1", f"write {step.after['value'][0]}")]
        return []

    m.view(lanes, tables, events)

    @m.narrate
    def _(action, params, before, after):
        if action == "relay":
            i = params["i"]
            return f"n{i + 1} relays value {after['value'][i + 1]} to n{i + 2}"
        if action == "write":
            return f"n1 writes value {after['value'][0]} (write {params['w'] + 1})"
        return f"the clock moves to {after['now']}" if action == "tick" else action

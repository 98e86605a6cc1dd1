"""Clients taking locks on servers: two scalarsets that index and refer to each other.

Each client is idle, waiting for a server, or holding it; `target[c]` names the
server (a Server value, -1 when idle) and `owner[s]` the client holding server s
(a Client value, -1 when free). A global counter of grants (capped) is shared
and symmetric. Clients are interchangeable, and so are servers:

    m.scalarset("Client", clients, index={"cstate": 0, "target": 0}, values=["owner"])
    m.scalarset("Server", servers, index={"owner": 0}, values=["target"])

`WRONG` declares only clients as values of `owner` but forgets that `target`
holds servers: the server swap then breaks the successors of `grant`. `ONE_HOLDER`
claims, wrongly, that at most one client holds a server at a time.
"""

from __future__ import annotations

from checker.lang import And, Array, Enum, Implies, Int, Min, Not, Spec, require

CState = Enum("CState", "idle waiting holding")


def _locks(name: str, declare_target_values: bool, one_holder: bool = False) -> Spec:
    spec = Spec(name, "clients taking locks on servers")
    spec.param("clients", 3, "interchangeable clients", min=2)
    spec.param("servers", 2, "interchangeable servers", min=2)

    @spec.build
    def _build(m, p):
        C, S = p.clients, p.servers
        m.var("cstate", Array(CState, C), init=CState.idle)
        m.var("target", Array(Int(-1, S - 1), C), init=-1)
        m.var("owner", Array(Int(-1, C - 1), S), init=-1)
        m.var("grants", Int(0, 2), init=0)
        m.scalarset("Client", C, index={"cstate": 0, "target": 0}, values=["owner"])
        m.scalarset("Server", S, index={"owner": 0},
                    values=["target"] if declare_target_values else [])

        @m.action(c=range(C), s=range(S))
        def request(st, c, s):
            require(st.cstate[c] == CState.idle)
            st.cstate[c] = CState.waiting
            st.target[c] = s

        @m.action(s=range(S), c=range(C))
        def grant(st, s, c):
            require(And(st.cstate[c] == CState.waiting, st.target[c] == s, st.owner[s] == -1))
            st.owner[s] = c
            st.cstate[c] = CState.holding
            st.grants = Min(st.grants + 1, 2)

        @m.action(c=range(C), s=range(S))
        def release(st, c, s):
            require(And(st.cstate[c] == CState.holding, st.target[c] == s))
            st.owner[s] = -1
            st.cstate[c] = CState.idle
            st.target[c] = -1

        @m.invariant
        def OwnerHolds(st):  # noqa: N802
            """A server's owner holds it."""
            return And(*[Implies(st.owner[s] == c, And(st.cstate[c] == CState.holding,
                                                       st.target[c] == s))
                         for s in range(S) for c in range(C)])

        if one_holder:
            @m.invariant
            def OneHolder(st):  # noqa: N802
                """At most one client holds a server (wrong with two servers)."""
                holds = [st.cstate[c] == CState.holding for c in range(C)]
                return And(*[Not(And(holds[a], holds[b]))
                             for a in range(C) for b in range(a + 1, C)])

    return spec


LOCKS = _locks("locks", True)
WRONG = _locks("locks_wrong", False)
ONE_HOLDER = _locks("locks_one_holder", True, one_holder=True)

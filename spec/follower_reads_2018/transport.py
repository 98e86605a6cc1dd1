"""Closed timestamp updates: the origin's periodic close, the transport, and the
receivers' per-origin state (RFC "Reference-level explanation", "Recovering from
missed updates"; reference §C.1).

An update is `(epoch, closed ts, sequence number, MLAI delta)`. n1 closes
periodically (`Close(now - target, epoch)`) while live, and sends each successful
close to every other node. Each node has a one-message channel from n1: messages
arrive in order, and a message not yet delivered is lost when the next one is sent
or when the network drops it. n1 numbers its updates per peer (one stream per peer,
as in the implementation): the RFC's "the recipient notifies the sender and it resets
its sequence number to zero" then restarts that peer's numbers only. A receiver keeps,
for n1, one `(epoch, seq, closed, MLAI map)` state: a newer epoch discards the state;
an older one is ignored; a sequence gap discards the map and asks n1 for a full
update (sequence 0, with an MLAI for every range whose lease n1 holds), which the
receiver then waits for: the sender starts over at 0, so its later numbers may
repeat the one that showed the gap. Both choices are findings of this model (see
`spec/README.md`): SharedSequence (one numbering for all peers) and ResumeAfterGap
(resuming from the gap's number) each let a receiver take an update from a new run
as the successor of one from an older run. MLAIs merge by maximum ("the client tracks
the maximum seen", the MPT walk-through), and only over a gap-free sequence that
starts with a full update: a delta alone is not enough, because an MLAI sent later
can be lower than one sent earlier (the walk-through's left @14, right @13). A
receiver missing a range's MLAI may ask for it; n1 then feeds the MPT that range's
LAI (the RFC's second strategy).

Ghosts: `cum[n]` is n1's running maximum of the MLAIs it sent peer n since its last
full update to n in its current epoch, sent along with each message and kept by the receiver
(`rc_cum`); `emitted_hi` (epochs.py) is the highest closed ts n1 ever sent.
"""

from __future__ import annotations

from typing import Any

from checker.lang import And, Array, Bool, ForAll, If, Implies, Int, Max, Not, Or, require
from spec.follower_reads_2018 import mpt
from spec.follower_reads_2018.parts import NONE, ORIGIN, V1, holds_lease, rng
from spec.log_driven.parts import WPhase


def add(m: Any, ctx: Any, v: V1) -> None:
    N, R, E, Q = v.nodes, v.ranges, v.epochs, v.max_seq
    shared = v.mutated("SharedSequence")

    def peer(n: int) -> int:
        """Whose sequence number, full-update flag and ghost `cum` n1 uses for peer n:
        its own (one stream per peer), or peer 1's for all (SharedSequence)."""
        return 1 if shared else n

    ts_hi, lai = v.max_ts + 1, Int(NONE, v.lai_hi + 1)  # LAI + 1: a subsumed range
    m.var("ct_seq", Array(Int(NONE, Q), N), init=NONE,
          doc="n1: sequence number of its last update to each peer")
    m.var("ct_closed", Int(NONE, ts_hi), init=NONE, doc="n1: closed ts of its last update")
    m.var("ct_epoch", Int(0, E), init=0, doc="n1: epoch of its last update (0: none)")
    m.var("full_next", Array(Bool(), N), init=True,
          doc="n1: its next update to each peer is a full one (seq 0)")
    m.var("ct_sent", Bool(), init=False,
          doc="n1: flips with every update it sends (so a property can see the event)")
    m.var("requested", Array(Bool(), R), init=False, doc="n1: a receiver asked for an MLAI")
    m.var("cum", Array(Array(lai, R), N), init=NONE, ghost=True,
          doc="n1: highest MLAI sent to each peer per range since its last full update to "
              "it in its current epoch")
    m.var("msg", Array(Bool(), N), init=False, doc="an update from n1 is on its way")
    m.var("msg_epoch", Array(Int(0, E), N), init=0, doc="its epoch")
    m.var("msg_closed", Array(Int(NONE, ts_hi), N), init=NONE, doc="its closed ts")
    m.var("msg_seq", Array(Int(NONE, Q), N), init=NONE, doc="its sequence number")
    m.var("msg_mlai", Array(Array(lai, R), N), init=NONE, doc="its MLAIs (-1: absent)")
    m.var("msg_cum", Array(Array(lai, R), N), init=NONE, ghost=True, doc="n1's cum when sent")
    m.var("rc_epoch", Array(Int(0, E), N), init=0, doc="receiver: n1's epoch (0: empty)")
    m.var("rc_seq", Array(Int(NONE, Q), N), init=NONE, doc="receiver: last sequence number")
    m.var("rc_closed", Array(Int(NONE, ts_hi), N), init=NONE, doc="receiver: closed ts")
    m.var("rc_mlai", Array(Array(lai, R), N), init=NONE, doc="receiver: MLAI map")
    m.var("rc_cum", Array(Array(lai, R), N), init=NONE, ghost=True,
          doc="receiver: n1's cum carried by the last update it applied")
    if v.keep_previous:
        m.var("rc_prev_closed", Array(Int(NONE, ts_hi), N), init=NONE,
              doc="receiver: the closed ts it replaced last (RFC 'Lagging followers' fix)")
        m.var("rc_prev_mlai", Array(Array(lai, R), N), init=NONE,
              doc="receiver: the MLAI map it replaced last")
    _register(v)

    @m.action()
    def close(s):
        """n1's periodic loop: `Close(now - target, epoch)`; a success goes to every peer."""
        require(s.live)
        require(s.mpt_next < s.now - v.target)  # otherwise there is nothing to close
        if v.window:  # window models: a reliable transport (see window.py)
            require(And(*[Not(s.msg[n]) for n in range(1, N)]))
        epoch = s.epoch[ORIGIN]
        closed = s.mpt_next
        ok, delta = mpt.close(s, v, s.now - v.target, epoch, v.writes)
        sent, cum = {}, {}
        for p in sorted({peer(n) for n in range(1, N)}):
            full = s.full_next[p]
            seq = If(full, 0, s.ct_seq[p] + 1)
            require(Implies(ok, seq <= Q))
            # seq 0 carries an MLAI for every range whose lease n1 holds ("Initial catch-up")
            sent[p] = [If(And(full, holds_lease(s, r, ORIGIN)),
                          Max(delta[r], publish(s, v, r, s.assigned_lai[r])), delta[r])
                       for r in range(R)]
            restart = Or(full, s.ct_epoch != epoch)  # cum: since the last full update
            for r in range(R):
                s.cum[p][r] = If(ok, Max(If(restart, NONE, s.cum[p][r]), sent[p][r]),
                                 s.cum[p][r])
            cum[p] = [s.cum[p][r] for r in range(R)]
            s.ct_seq[p] = If(ok, seq, s.ct_seq[p])
            s.full_next[p] = If(ok, False, s.full_next[p])
        s.ct_closed = If(ok, closed, s.ct_closed)
        s.ct_epoch = If(ok, epoch, s.ct_epoch)
        s.ct_sent = If(ok, Not(s.ct_sent), s.ct_sent)
        for n in range(1, N):
            s.msg[n] = Or(s.msg[n], ok)
            s.msg_epoch[n] = If(ok, epoch, s.msg_epoch[n])
            s.msg_closed[n] = If(ok, closed, s.msg_closed[n])
            s.msg_seq[n] = If(ok, s.ct_seq[peer(n)], s.msg_seq[n])
            for r in range(R):
                s.msg_mlai[n][r] = If(ok, sent[peer(n)][r], s.msg_mlai[n][r])
                s.msg_cum[n][r] = If(ok, cum[peer(n)][r], s.msg_cum[n][r])
        for hook in v.on_close:
            hook(s, ok, closed, [sent[peer(n)] for n in range(1, N)])

    if v.losses:
        @m.action(n=range(1, N))
        def lose(s, n):
            """The network drops the update on its way to node n."""
            require(s.msg[n])
            s.msg[n] = False

    ignore_epoch, no_gap_reset = v.mutated("IgnoreEpoch"), v.mutated("NoGapReset")
    resume_after_gap = v.mutated("ResumeAfterGap")

    @m.action(n=range(1, N))
    def deliver(s, n):
        """Node n applies n1's update: epoch check, then gap check, then merge (§C.1)."""
        require(s.msg[n])
        s.msg[n] = False
        e = s.msg_epoch[n]
        newer = Or(s.rc_epoch[n] == 0, e > s.rc_epoch[n])
        older = And(s.rc_epoch[n] != 0, e < s.rc_epoch[n])
        apply = Not(older) if not ignore_epoch else True
        reset = newer if not ignore_epoch else s.rc_epoch[n] == 0
        full = s.msg_seq[n] == 0
        # a fresh state expects the full update (seq 0), a running one the next seq
        gap = And(apply, Not(full), s.msg_seq[n] != If(reset, 0, s.rc_seq[n] + 1))
        clear = Or(reset, full, gap) if not no_gap_reset else Or(reset, full)
        usable = Not(gap) if not no_gap_reset else True
        raised = []
        for r in range(R):
            old = s.rc_mlai[n][r]
            kept = If(clear, NONE, old)
            # "the client tracks the maximum seen" (RFC, Min proposal tracker walk-through)
            merged = If(usable, Max(kept, s.msg_mlai[n][r]), kept)
            raised.append(And(apply, merged != old))
            if v.keep_previous:  # the pair whose MLAI this update overwrites is kept
                s.rc_prev_mlai[n][r] = If(raised[-1], If(reset, NONE, old),
                                          s.rc_prev_mlai[n][r])
            s.rc_mlai[n][r] = If(apply, merged, old)
            s.rc_cum[n][r] = If(apply, If(usable, s.msg_cum[n][r], NONE), s.rc_cum[n][r])
        if v.keep_previous:
            s.rc_prev_closed[n] = If(Or(*raised), If(reset, NONE, s.rc_closed[n]),
                                     s.rc_prev_closed[n])
        s.rc_epoch[n] = If(apply, e, s.rc_epoch[n])
        # after a gap the receiver waits for the full update (seq 0) it asked for: the
        # sender starts over at 0, so a later number may repeat one it already used
        s.rc_seq[n] = If(apply, s.msg_seq[n] if resume_after_gap
                         else If(gap, NONE, s.msg_seq[n]), s.rc_seq[n])
        s.rc_closed[n] = If(apply, s.msg_closed[n], s.rc_closed[n])
        # "the recipient notifies the sender and it resets its sequence number to zero"
        s.full_next[peer(n)] = Or(s.full_next[peer(n)], gap)

    if v.mlai_requests:
        @m.action(n=range(1, N), r=range(R))
        def request_mlai(s, n, r):
            """Node n has n1's state but no MLAI for range r: it asks n1 for one."""
            require(And(s.rc_epoch[n] != 0, s.rc_mlai[n][r] == NONE, Not(s.requested[r])))
            s.requested[r] = True

        pollution = v.mutated("EpochPollution")

        @m.action(r=range(R))
        def refresh(s, r):
            """n1 answers a request (`EmitMLAI`): if it holds range r's lease, it feeds the
            MPT the range's LAI under its own epoch; otherwise it drops the request."""
            require(s.requested[r])
            s.requested[r] = False
            if pollution:  # #48553: the applied lease's epoch, whoever holds the lease
                when, epoch = True, s.lepoch[r][s.lseq[r][ORIGIN]]
            else:
                when, epoch = holds_lease(s, r, ORIGIN), s.epoch[ORIGIN]
            lai = publish(s, v, r, Max(s.assigned_lai[r], s.lai[r][ORIGIN]))
            s.right_ref = If(when, s.right_ref + 1, s.right_ref)
            mpt.release(s, v, False, epoch, r, lai, when=when)

    def MLAIKnowledgeScoped(s):  # noqa: N802 - property names are CamelCase
        """V1: a receiver's MLAI for a range is the highest n1 sent for it since its
        last full update in the receiver's epoch, up to the update the receiver
        applied last: knowledge is scoped to (origin, epoch) and accumulated only over
        a gap-free sequence that starts from a full update."""
        return ForAll([(n, r) for n in range(1, N) for r in range(R)], lambda nr: Implies(
            s.rc_mlai[nr[0]][nr[1]] != NONE,
            s.rc_mlai[nr[0]][nr[1]] == s.rc_cum[nr[0]][nr[1]]))

    def MLAICoversWrites(s):  # noqa: N802
        """V2: every write n1 tracked in epoch e at a ts at or below a receiver's
        closed ts for epoch e is proposed, with an LAI at or below the receiver's
        MLAI for its range (when it has one). For a write proposed again with a new
        LAI (#42821) that is its newest LAI, the only one that can still apply; a
        write that gave up (`failed`) never applies."""
        def covered(n: int, w: int) -> Any:
            return And(*[Implies(rng(s, ctx, w) == g, Or(
                s.rc_mlai[n][g] == NONE, s.wlai[w] <= s.rc_mlai[n][g])) for g in range(R)])
        return ForAll([(n, w) for n in range(1, N) for w in range(v.writes)],
                      lambda nw: Implies(
                          And(s.rc_epoch[nw[0]] != 0, s.wepoch[nw[1]] == s.rc_epoch[nw[0]],
                              s.wphase[nw[1]] != WPhase.idle,
                              s.wphase[nw[1]] != WPhase.failed, s.worigin[nw[1]],
                              s.wts[nw[1]] <= s.rc_closed[nw[0]]),
                          And(s.wphase[nw[1]] == WPhase.flushed, covered(*nw))))

    m.invariant(MLAIKnowledgeScoped)
    m.invariant(MLAICoversWrites)


def publish(s: Any, v: V1, g: int, lai: Any) -> Any:
    """The MLAI n1 publishes for range g at LAI `lai` (a subsumed range: `lai + 1`)."""
    for hook in v.publish:
        lai = hook(s, g, lai)
    return lai


def _register(v: V1) -> None:
    """The values the liveness window renumbers."""
    N, R = v.nodes, v.ranges
    v.register("ts", lambda s: s.ct_closed, lambda s, x: setattr(s, "ct_closed", x),
               lambda s: s.ct_closed != NONE)
    for n in range(1, N):
        v.register("seq", lambda s, n=n: s.ct_seq[n],
                   lambda s, x, n=n: s.ct_seq.__setitem__(n, x),
                   lambda s, n=n: s.ct_seq[n] != NONE)
        for r in range(R):
            v.register("lai", lambda s, n=n, r=r: s.cum[n][r],
                       lambda s, x, n=n, r=r: s.cum[n].__setitem__(r, x),
                       lambda s, n=n, r=r: s.cum[n][r] != NONE)
        for name, dim in (("msg_closed", "ts"), ("rc_closed", "ts"), ("msg_seq", "seq"),
                          ("rc_seq", "seq")):
            v.register(dim, lambda s, name=name, n=n: getattr(s, name)[n],
                       lambda s, x, name=name, n=n: getattr(s, name).__setitem__(n, x),
                       lambda s, name=name, n=n: getattr(s, name)[n] != NONE)
        for r in range(R):
            for name in ("msg_mlai", "msg_cum", "rc_mlai", "rc_cum"):
                v.register("lai", lambda s, name=name, n=n, r=r: getattr(s, name)[n][r],
                           lambda s, x, name=name, n=n, r=r:
                           getattr(s, name)[n].__setitem__(r, x),
                           lambda s, name=name, n=n, r=r: getattr(s, name)[n][r] != NONE)
        if v.keep_previous:
            v.register("ts", lambda s, n=n: s.rc_prev_closed[n],
                       lambda s, x, n=n: s.rc_prev_closed.__setitem__(n, x),
                       lambda s, n=n: s.rc_prev_closed[n] != NONE)
            for r in range(R):
                v.register("lai", lambda s, n=n, r=r: s.rc_prev_mlai[n][r],
                           lambda s, x, n=n, r=r: s.rc_prev_mlai[n].__setitem__(r, x),
                           lambda s, n=n, r=r: s.rc_prev_mlai[n][r] != NONE)

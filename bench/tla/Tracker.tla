------------------------------ MODULE Tracker ------------------------------
(* The 2020 RFC's two-bucket tracker, as spec/tracker.py writes it with its default
   switches (tracker=buckets, close_before_exit=false, keep_cur_ts=false, no
   mutation), for TLC beside ctmc: the same variables, initial state and actions, so
   the state counts (and, under SYMMETRY, the orbit counts) must agree.
   bench/tlc_symmetry.py runs both. *)
EXTENDS Integers, TLC

CONSTANTS Request,    \* the interchangeable write requests (model values)
          NoRequest,  \* an empty buffer slot (a model value outside Request)
          N,          \* how many requests (Cardinality(Request))
          Target, MaxNow, MaxTs

NIL == -1

VARIABLES now, phase, wts, bts, prev, bucket, bts_hi, buf, buflen, closed, closed_hi
vars == <<now, phase, wts, bts, prev, bucket, bts_hi, buf, buflen, closed, closed_hi>>

Max(a, b) == IF a >= b THEN a ELSE b
Tracked(q) == phase[q] \in {"evaluating", "buffered"}
\* no tracked request other than r is in physical bucket b
Empty(b, r) == \A q \in Request \ {r} : ~(Tracked(q) /\ bucket[q] = b)

Init == /\ now = Target
        /\ phase = [q \in Request |-> "idle"]
        /\ wts = [q \in Request |-> 0]
        /\ bts = [b \in 0..1 |-> NIL]
        /\ prev = 0
        /\ bucket = [q \in Request |-> 0]
        /\ bts_hi = NIL
        /\ buf = [i \in 0..N-1 |-> NoRequest]
        /\ buflen = 0
        /\ closed = NIL
        /\ closed_hi = NIL

Tick == /\ now < MaxNow
        /\ now' = now + 1
        /\ UNCHANGED <<phase, wts, bts, prev, bucket, bts_hi, buf, buflen, closed, closed_hi>>

\* r enters cur (an unset cur ts becomes now - Target), is forwarded above cur's ts,
\* and prev and cur shift when prev is empty
Arrive(r, c) ==
  /\ phase[r] = "idle"
  /\ LET cur == 1 - prev
         unset == bts[cur] = NIL
         curTs == IF unset THEN now - Target ELSE bts[cur]
         shift == Empty(prev, r)
     IN /\ bts' = [b \in 0..1 |-> IF b = cur THEN curTs
                                  ELSE IF shift THEN NIL ELSE bts[b]]
        /\ bts_hi' = IF unset THEN Max(bts_hi, now - Target) ELSE bts_hi
        /\ wts' = [wts EXCEPT ![r] = Max(c, curTs + 1)]
        /\ bucket' = [bucket EXCEPT ![r] = cur]
        /\ prev' = IF shift THEN cur ELSE prev
        /\ phase' = [phase EXCEPT ![r] = "evaluating"]
        /\ UNCHANGED <<now, buf, buflen, closed, closed_hi>>

Finish(r) ==
  /\ phase[r] = "evaluating"
  /\ phase' = [phase EXCEPT ![r] = "buffered"]
  /\ buf' = [buf EXCEPT ![buflen] = r]
  /\ buflen' = buflen + 1
  /\ UNCHANGED <<now, wts, bts, prev, bucket, bts_hi, closed, closed_hi>>

\* the head of the buffer leaves its bucket (the last one out of prev shifts the
\* buckets, out of cur resets cur's ts) and its proposal carries the closed ts the
\* RFC's three rules give just after the exit
Flush(r) ==
  /\ buflen > 0
  /\ buf[0] = r
  /\ LET cur0 == 1 - prev
         b == bucket[r]
         last == Empty(b, r)
         bts1 == [x \in 0..1 |-> IF (x = cur0 /\ last /\ b = cur0)
                                    \/ (x = prev /\ last /\ b = prev)
                                 THEN NIL ELSE bts[x]]
         prev1 == IF last /\ b = prev THEN cur0 ELSE prev
         cur1 == 1 - prev1
         carried == IF ~Empty(prev1, r) THEN bts1[prev1]
                    ELSE IF ~Empty(cur1, r) /\ bts1[cur1] # NIL THEN bts1[cur1]
                    ELSE now - Target
     IN /\ bts' = bts1
        /\ prev' = prev1
        /\ bucket' = [bucket EXCEPT ![r] = 0]
        /\ phase' = [phase EXCEPT ![r] = "flushed"]
        /\ wts' = [wts EXCEPT ![r] = 0]
        /\ closed' = carried
        /\ closed_hi' = Max(closed_hi, carried)
        /\ buf' = [i \in 0..N-1 |-> IF i < N - 1 THEN buf[i + 1] ELSE NoRequest]
        /\ buflen' = buflen - 1
        /\ UNCHANGED <<now, bts_hi>>

Next == \/ Tick
        \/ \E r \in Request, c \in 1..MaxTs : Arrive(r, c)
        \/ \E r \in Request : Finish(r) \/ Flush(r)

TrackedAboveClosed == \A r \in Request : Tracked(r) => wts[r] > closed
RequestsAboveBucket == \A q \in Request :
                         Tracked(q) => bts[bucket[q]] # NIL /\ wts[q] > bts[bucket[q]]

Perms == Permutations(Request)
=============================================================================

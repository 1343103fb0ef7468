------------------------------- MODULE RescaleTrace -------------------------------
(***************************************************************************)
(* Trace validation of recoveries: the restore rules of Rescale.tla        *)
(* (Restore, Deliver, LiveRecv: NoInFlightLost, RecoveredBeforeLive),      *)
(* generalised to the topology a trace declares.  A restore at the same    *)
(* parallelism is the special case in which every process restores its    *)
(* own checkpoint and maps each input channel onto itself.                 *)
(*                                                                         *)
(* The mapping (checker/tla/map_rescale.py) turns a trace into events      *)
(* [op, p, c, o, n, k, r, m, g, h]:                                        *)
(*   complete  round r completed (the coordinator's round_complete);       *)
(*   rec       record n of old channel o, key group k - 1 (k = 0: none),  *)
(*             belongs to the recorded channel state of round r (key      *)
(*             groups are written plus one: no negative numbers);        *)
(*   restore   process p restores round r, taking the recorded records of *)
(*             the channels m maps onto its inputs: m is a set of          *)
(*             <<old channel, new channel, key groups, all>> (all = 1: no  *)
(*             filter); g the key groups p owns ({} when not keyed); key   *)
(*             groups are sets of ranges <<lo, hi>>.  A keyed p keeps only *)
(*             the keyed records of its own key groups (Flink's receivers  *)
(*             filter by key group); a record without a key group that     *)
(*             several filtered mappings keep is shared: the first of them *)
(*             to process it takes it from all.  The records still        *)
(*             pending at p are replaced, so each must be channel state    *)
(*             of round h (h = 0: not judged), which takes them on;        *)
(*   restored  the last restore of the recovery (round r) was seen;        *)
(*   recover   p processes record n of old channel o, recovered on c;      *)
(*   live      p processes, on c, a record sent after the restore;         *)
(*   drop      p discards recovered record n of o (no action allows it);   *)
(*   stale     p processes a record its sender sent before its own restore *)
(*             undid it (no action allows it);                             *)
(*   retire    p leaves the job at its checkpoint of round h: its later    *)
(*             steps are undone and its state lives on in the restores     *)
(*             naming it, so its pending records go with it; each was in   *)
(*             flight at that checkpoint and must be channel state of      *)
(*             round h, which the next restores must take (h = 0: not      *)
(*             judged);                                                    *)
(*   end       the trace ends.                                             *)
(* TLC explores TraceSpec with one behaviour per trace; a trace is         *)
(* accepted iff all its events are matched (Progress reports the longest   *)
(* matched prefix).                                                        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC, TraceLog

VARIABLES
    recorded,      \* <<r, o, n, k>>: recorded in-flight records of round r
    pending,       \* <<p, c, o, n, s>>: record n of o, to be processed by p on its input c
                   \* (s = 1: a copy shared with other filtered mappings, s = 0: its own)
    lived,         \* <<p, c>>: p has processed a live record on c since its restore
    took,          \* <<o, n>>: records taken by the restores of the current recovery
    mapped,        \* old channels the restores of the current recovery mapped
    lastComplete,  \* the latest completed round (0: none)
    traceNo, cursor

vars == <<recorded, pending, lived, took, mapped, lastComplete>>
E == Traces[traceNo][cursor + 1]

RecordsOf(r) == {y \in recorded : y[1] = r}

\* Whether a mapping with key groups f (all = 1: every record) keeps a record of key group k.
\* Key groups are sets of ranges <<lo, hi>>.
In(k, f) == \E x \in f : x[1] <= k /\ k <= x[2]
Keeps(f, all, k) == all = 1 \/ (k > 0 /\ In(k, f)) \/ (k = 0 /\ f # {})

\* The records still pending at p, about to leave it unprocessed (p retires at, or
\* restores, its checkpoint of round h), are channel state of round h: in flight at
\* that checkpoint, they were recorded there, under the channel they are pending on
\* (or, at a checkpoint 0 a rescale gave p, under their old channel), and TRestored
\* makes the restores of round h take them on.  One recorded nowhere is lost: nothing
\* takes it on.  h = 0: not judged (that round's channel state is not known).
Held(p, h) ==
    h > 0 => \A x \in pending : x[1] = p => \E y \in RecordsOf(h) : y[3] = x[4] /\ y[2] \in {x[2], x[3]}

TComplete ==
    /\ lastComplete' = E.r
    /\ UNCHANGED <<recorded, pending, lived, took, mapped>>

TRec ==
    /\ recorded' = recorded \cup {<<E.r, E.o, E.n, E.k>>}
    /\ UNCHANGED <<pending, lived, took, mapped, lastComplete>>

\* Rescale!Restore for one new process: it restores the latest completed round; the
\* records its mappings keep become pending on the new channel they map onto, a keyed
\* record only at a process that owns its key group (a keyed process filters the others
\* out; if no owner takes one, TRestored finds it missing).  A record without a key
\* group kept by a filtered mapping is a shared copy (s = 1).
TRestore ==
    LET sel == {t \in E.m \X RecordsOf(E.r) :
                  /\ t[1][1] = t[2][2]
                  /\ Keeps(t[1][3], t[1][4], t[2][4])
                  /\ (t[2][4] > 0 /\ E.g # {}) => In(t[2][4], E.g)}
        shared(t) == IF t[2][4] = 0 /\ t[1][4] = 0 THEN 1 ELSE 0
    IN /\ E.r = lastComplete
       /\ Held(E.p, E.h)
       /\ pending' = {x \in pending : x[1] # E.p} \cup {<<E.p, t[1][2], t[2][2], t[2][3], shared(t)>> : t \in sel}
       /\ lived' = {x \in lived : x[1] # E.p}
       /\ took' = took \cup {<<t[2][2], t[2][3]>> : t \in sel}
       /\ mapped' = mapped \cup {m[1] : m \in E.m}
       /\ UNCHANGED <<recorded, lastComplete>>

\* Every record of the restored round was taken by a restore (a record without a key
\* group on a mapped channel that no mapping keeps is discarded on purpose).
TRestored ==
    LET missing == {y \in RecordsOf(E.r) : <<y[2], y[3]>> \notin took /\ ~(y[4] = 0 /\ y[2] \in mapped)}
    IN /\ missing = {}
       /\ took' = {}
       /\ mapped' = {}
       /\ UNCHANGED <<recorded, pending, lived, lastComplete>>

\* Rescale!Deliver: a record of p's own, or a shared copy, which takes the record from
\* every filtered mapping it was shared with, processed before any live record on c.
TRecover ==
    \E s \in {0, 1} :
        /\ <<E.p, E.c, E.o, E.n, s>> \in pending
        /\ s = 1 => <<E.p, E.c>> \notin lived
        /\ pending' = pending \ ({<<E.p, E.c, E.o, E.n, s>>} \cup
                                  {x \in pending : s = 1 /\ x[5] = 1 /\ x[3] = E.o /\ x[4] = E.n})
        /\ UNCHANGED <<recorded, lived, took, mapped, lastComplete>>

\* Rescale!LiveRecv: live data on an input only once its own recovered records are in
\* (a shared copy may be another process's to process).
TLive ==
    /\ ~\E x \in pending : x[1] = E.p /\ x[2] = E.c /\ x[5] = 0
    /\ lived' = lived \cup {<<E.p, E.c>>}
    /\ UNCHANGED <<recorded, pending, took, mapped, lastComplete>>

\* A process that leaves at a checkpoint hands its input over to the restores naming it.
TRetire ==
    /\ Held(E.p, E.h)
    /\ pending' = {x \in pending : x[1] # E.p}
    /\ lived' = {x \in lived : x[1] # E.p}
    /\ UNCHANGED <<recorded, took, mapped, lastComplete>>

TEnd == pending = {} /\ UNCHANGED vars

Match ==
    \/ E.op = "complete" /\ TComplete
    \/ E.op = "rec" /\ TRec
    \/ E.op = "restore" /\ TRestore
    \/ E.op = "restored" /\ TRestored
    \/ E.op = "recover" /\ TRecover
    \/ E.op = "live" /\ TLive
    \/ E.op = "retire" /\ TRetire
    \/ E.op = "end" /\ TEnd

ASSUME \A k \in 1..Len(Traces) : TLCSet(k, 0)

TraceInit ==
    /\ recorded = {} /\ pending = {} /\ lived = {} /\ took = {} /\ mapped = {} /\ lastComplete = 0
    /\ traceNo \in 1..Len(Traces) /\ cursor = 0

TraceNext == cursor < Len(Traces[traceNo]) /\ Match /\ cursor' = cursor + 1 /\ UNCHANGED traceNo
TraceSpec == TraceInit /\ [][TraceNext]_<<vars, traceNo, cursor>>

Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE
=============================================================================

----------------------------- MODULE ChandyLamportTrace -----------------------------
(***************************************************************************)
(* Trace validation of Chandy-Lamport (docs/specs.md, "Trace validation"): *)
(* does some behaviour of ChandyLamport match a recorded trace, event by   *)
(* event?                                                                  *)
(*                                                                         *)
(* TraceLog (generated per run by checker/tla/conform.py) defines the      *)
(* topology (TProcs, TChans, ...) and Traces, a tuple of traces; each      *)
(* trace is a sequence of events [op, p, c, k, n, x, s, part] (see         *)
(* conform.py for the mapping from trace format v1).  Variable traceNo     *)
(* chooses the trace, cursor counts the events matched.  Every step        *)
(* matches the next event with the protocol action it names, with the      *)
(* logged values fixed: the sequence number or round of a message, the     *)
(* recorded channel state.  The synthetic last event "end" requires that   *)
(* every non-empty channel state the protocol recorded was reported by a   *)
(* record event.  Progress prints the longest matched prefix of every      *)
(* trace; a trace is accepted iff its cursor reaches its length.           *)
(*                                                                         *)
(* Every trace starts from TInit[traceNo]: the messages in flight and the  *)
(* channel counters (nothing and zero for a whole trace; for a segment of  *)
(* a trace cut where every earlier round was finished, what the cut leaves *)
(* in flight: checker/tla/segments.py).  The event "cut" ends a segment:   *)
(* every round of it finished, and the state the one the next segment      *)
(* starts from, TCut[traceNo].                                             *)
(*                                                                         *)
(* The variables are named traceNo and cursor, not t and i: TLC 2.15 lets  *)
(* a variable of this module capture a bound identifier of the same name   *)
(* inside an instantiated module (measured: a LET i == ... in Unaligned    *)
(* evaluated to this module's i), so no name here may be reused there.     *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC, TraceLog

VARIABLES chan, nsent, nrcvd, rec, mustSnap, pending, closed, crec, sentAt, rcvdAt,
          traceNo, cursor, recorded

CL == INSTANCE ChandyLamport WITH
    Procs <- TProcs, Coords <- TCoords, Chans <- TChans, CtrlChans <- TCtrlChans,
    Src <- TSrc, Dst <- TDst, Rounds <- TRounds, MaxData <- TMaxData,
    Initiators <- TInitiators, Bug <- "none"

pvars == <<chan, nsent, nrcvd, rec, mustSnap, pending, closed, crec, sentAt, rcvdAt>>
E == Traces[traceNo][cursor + 1]
HeadIs(c, k, n) == chan[c] # <<>> /\ Head(chan[c]) = [k |-> k, n |-> n]

TSend ==
    \/ E.k = "d" /\ nsent[E.c] + 1 = E.n /\ CL!Send(E.c)
    \/ E.k = "b" /\ rec[E.p] = E.n /\ CL!SendMarker(E.p, E.c)

TRecv ==
    /\ HeadIs(E.c, E.k, E.n)
    /\ IF E.k = "d" THEN CL!Recv(E.c) ELSE CL!RecvMarker(E.c)

TCheckpoint == (CL!Snapshot(E.p) \/ CL!Initiate(E.p)) /\ rec'[E.p] = E.n

TStartRound == CL!StartRound(E.p) /\ rec'[E.p] = E.n

TRecord == CL!SealedNow(E.n, E.c) /\ crec[E.n][E.c] = E.s
           /\ <<E.n, E.c, E.part>> \notin recorded      \* reported once: twice is replayed twice

TComplete == \A p \in TProcs : rec[p] >= E.n

TEnd == \A r \in 1..TRounds, c \in TChans \ TCtrlChans :
            (CL!SealedNow(r, c) /\ crec[r][c] # <<>>) => <<r, c, "input">> \in recorded

TCutOk ==
    LET next == TCut[traceNo] IN
    /\ \A p \in TProcs \cup TCoords : rec[p] = next.rounds /\ pending[p] = {} /\ mustSnap[p] = 0
    /\ \A c \in TChans : closed[c] = next.rounds
    /\ chan = next.chan /\ nsent = next.sent /\ nrcvd = next.rcvd

Match ==
    \/ E.op = "send" /\ TSend /\ UNCHANGED recorded
    \/ E.op = "recv" /\ TRecv /\ UNCHANGED recorded
    \/ E.op = "ckpt" /\ TCheckpoint /\ UNCHANGED recorded
    \/ E.op = "start" /\ TStartRound /\ UNCHANGED recorded
    \/ E.op = "record" /\ TRecord /\ UNCHANGED pvars
       /\ recorded' = recorded \cup {<<E.n, E.c, E.part>>}
    \/ E.op = "complete" /\ TComplete /\ UNCHANGED <<pvars, recorded>>
    \/ E.op = "cut" /\ TCutOk /\ UNCHANGED <<pvars, recorded>>
    \/ E.op = "end" /\ TEnd /\ UNCHANGED <<pvars, recorded>>

ASSUME \A k \in 1..Len(Traces) : TLCSet(k, 0)

TraceInit ==
    /\ traceNo \in 1..Len(Traces)
    /\ CL!InitWith(TInit[traceNo].chan, TInit[traceNo].sent, TInit[traceNo].rcvd)
    /\ cursor = 0 /\ recorded = {}
TraceNext == cursor < Len(Traces[traceNo]) /\ Match /\ cursor' = cursor + 1 /\ UNCHANGED traceNo
TraceSpec == TraceInit /\ [][TraceNext]_<<pvars, traceNo, cursor, recorded>>

\* Print every new longest matched prefix (an invariant that always holds).
Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE

Consistent == CL!Consistent
ChannelStateExact == CL!ChannelStateExact
AbsSpec == CL!AbsSpec
AbsSteps == CL!AbsSteps
=============================================================================

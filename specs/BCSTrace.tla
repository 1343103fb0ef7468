------------------------------------ MODULE BCSTrace ------------------------------------
(***************************************************************************)
(* Trace validation of CIC_BCS (conformance of the forced-checkpoint       *)
(* decisions; docs/theory.md, "Checking a CIC trace"): as in               *)
(* ChandyLamportTrace, TraceLog (generated) holds the topology and the     *)
(* traces.  A recv event carries x = 1 iff the process took a forced       *)
(* checkpoint right before it; the protocol decides whether one was due,   *)
(* so a missing forced checkpoint (a safety bug) and a spurious one (an    *)
(* efficiency bug) are both rejected at that recv.  Per-channel counters   *)
(* (put, got) check that messages are received in the order they were      *)
(* sent.                                                                   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC, TraceLog

VARIABLES chan, lc, ivl, ts, msgs, nsent, nbasic, nforced,
          traceNo, cursor, put, got

P == INSTANCE CIC_BCS WITH
    Procs <- TProcs, Chans <- TChans, Src <- TSrc, Dst <- TDst,
    MaxMsgs <- TMaxMsgs, MaxBasic <- TMaxBasic, Bug <- "none", History <- FALSE

pvars == <<chan, lc, ivl, ts, msgs, nsent, nbasic, nforced>>
E == Traces[traceNo][cursor + 1]

TSend == put[E.c] + 1 = E.n /\ P!Send(E.c) /\ put' = [put EXCEPT ![E.c] = E.n] /\ UNCHANGED got

TRecv ==
    /\ got[E.c] + 1 = E.n
    /\ P!Recv(E.c)
    /\ (nforced' > nforced) = (E.x = 1)
    /\ got' = [got EXCEPT ![E.c] = E.n]
    /\ UNCHANGED put

Match ==
    \/ E.op = "send" /\ TSend
    \/ E.op = "recv" /\ TRecv
    \/ E.op = "ckpt" /\ P!Basic(E.p) /\ UNCHANGED <<put, got>>
    \/ E.op = "end" /\ UNCHANGED <<pvars, put, got>>

ASSUME \A k \in 1..Len(Traces) : TLCSet(k, 0)

TraceInit == P!Init /\ traceNo \in 1..Len(Traces) /\ cursor = 0
             /\ put = [c \in TChans |-> 0] /\ got = [c \in TChans |-> 0]
TraceNext == cursor < Len(Traces[traceNo]) /\ Match /\ cursor' = cursor + 1 /\ UNCHANGED traceNo
TraceSpec == TraceInit /\ [][TraceNext]_<<pvars, traceNo, cursor, put, got>>

Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE
=============================================================================

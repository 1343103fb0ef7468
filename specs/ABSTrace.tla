------------------------------------ MODULE ABSTrace ------------------------------------
(***************************************************************************)
(* Trace validation of ABS (aligned, Algorithms 1 and 2), as in            *)
(* ChandyLamportTrace: TraceLog (generated) holds the topology and the     *)
(* traces; cursor counts the matched events of trace traceNo.  A barrier's *)
(* recv blocks its regular input, the checkpoint event is the snapshot     *)
(* once aligned, record events report back-edge logs.                      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC, TraceLog

VARIABLES chan, nsent, nrcvd, rec, closed, pending, crec, sentAt, rcvdAt, traceNo, cursor, recorded

A == INSTANCE ABS WITH
    Procs <- TProcs, Coords <- TCoords, Chans <- TChans, CtrlChans <- TCtrlChans,
    Src <- TSrc, Dst <- TDst, BackEdges <- TBackEdges, Rounds <- TRounds,
    MaxData <- TMaxData, Bug <- "none"

pvars == <<chan, nsent, nrcvd, rec, closed, pending, crec, sentAt, rcvdAt>>
E == Traces[traceNo][cursor + 1]
HeadIs(c, k, n) == chan[c] # <<>> /\ Head(chan[c]) = [k |-> k, n |-> n]

TSend ==
    \/ E.k = "d" /\ nsent[E.c] + 1 = E.n /\ A!Send(E.c)
    \/ E.k = "b" /\ rec[E.p] = E.n /\ A!SendBarrier(E.p, E.c)

TRecv ==
    /\ HeadIs(E.c, E.k, E.n)
    /\ IF E.k = "d" THEN A!Recv(E.c) ELSE A!RecvBarrier(E.c)

TCheckpoint == A!Snapshot(E.p) /\ rec'[E.p] = E.n

TStart == A!StartRound(E.p) /\ rec'[E.p] = E.n

TRecord == A!SealedNow(E.n, E.c) /\ crec[E.n][E.c] = E.s

TComplete == \A p \in TProcs : rec[p] >= E.n

TEnd == \A r \in 1..TRounds, c \in TChans \ TCtrlChans :
            (A!SealedNow(r, c) /\ crec[r][c] # <<>>) => <<r, c, "input">> \in recorded

Match ==
    \/ E.op = "send" /\ TSend /\ UNCHANGED recorded
    \/ E.op = "recv" /\ TRecv /\ UNCHANGED recorded
    \/ E.op = "ckpt" /\ TCheckpoint /\ UNCHANGED recorded
    \/ E.op = "start" /\ TStart /\ UNCHANGED recorded
    \/ E.op = "record" /\ TRecord /\ UNCHANGED pvars
       /\ recorded' = recorded \cup {<<E.n, E.c, E.part>>}
    \/ E.op = "complete" /\ TComplete /\ UNCHANGED <<pvars, recorded>>
    \/ E.op = "end" /\ TEnd /\ UNCHANGED <<pvars, recorded>>

ASSUME \A k \in 1..Len(Traces) : TLCSet(k, 0)

TraceInit == A!Init /\ traceNo \in 1..Len(Traces) /\ cursor = 0 /\ recorded = {}
TraceNext == cursor < Len(Traces[traceNo]) /\ Match /\ cursor' = cursor + 1 /\ UNCHANGED traceNo
TraceSpec == TraceInit /\ [][TraceNext]_<<pvars, traceNo, cursor, recorded>>

Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE

Consistent == A!Consistent
ChannelStateExact == A!ChannelStateExact
AbsSpec == A!AbsSpec
=============================================================================

--------------------------------- MODULE UnalignedTrace ---------------------------------
(***************************************************************************)
(* Trace validation of unaligned and aligned-with-timeout checkpoints, as  *)
(* in ChandyLamportTrace.  Arrivals are part of the protocol here: an      *)
(* arrive event moves the message from the wire into the input buffer      *)
(* (conform.py inserts the arrival of a message whose trace has none right *)
(* before its recv).  A barrier's send carries in x the number of output   *)
(* records it overtook (the size of the output part its source reports),   *)
(* which fixes where the barrier enters the wire.                          *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC, TraceLog

VARIABLES wire, ibuf, nsent, nrcvd, rec, mustSnap, unal, pending, closed, arrivedB,
          inpart, outpart, sentAt, rcvdAt, traceNo, cursor, recorded

U == INSTANCE Unaligned WITH
    Procs <- TProcs, Coords <- TCoords, Chans <- TChans, CtrlChans <- TCtrlChans,
    Src <- TSrc, Dst <- TDst, Rounds <- TRounds, MaxData <- TMaxData, Mode <- TMode,
    Bug <- "none"

pvars == <<wire, ibuf, nsent, nrcvd, rec, mustSnap, unal, pending, closed, arrivedB,
           inpart, outpart, sentAt, rcvdAt>>
E == Traces[traceNo][cursor + 1]
Msg(k, n) == [k |-> k, n |-> n]

TSend ==
    \/ E.k = "d" /\ nsent[E.c] + 1 = E.n /\ U!Send(E.c)
    \/ /\ E.k = "b"
       /\ rec[E.p] = E.n
       /\ E.x <= Len(wire[E.c])
       /\ U!SendBarrier(E.p, E.c)
       /\ wire'[E.c][Len(wire[E.c]) - E.x + 1] = Msg("b", E.n)

TArrive == wire[E.c] # <<>> /\ Head(wire[E.c]) = Msg(E.k, E.n) /\ U!Arrive(E.c)

TRecv ==
    IF E.k = "d"
      THEN ibuf[E.c] # <<>> /\ Head(ibuf[E.c]) = Msg("d", E.n) /\ U!Recv(E.c)
      ELSE /\ U!FirstBarrier(ibuf[E.c]) <= Len(ibuf[E.c])
           /\ ibuf[E.c][U!FirstBarrier(ibuf[E.c])] = Msg("b", E.n)
           /\ U!RecvBarrier(E.c)

TCheckpoint == U!Snapshot(E.p) /\ rec'[E.p] = E.n

TStart == U!StartRound(E.p) /\ rec'[E.p] = E.n

TRecord ==
    IF E.part = "input"
      THEN U!SealedNow(E.n, E.c) /\ inpart[E.n][E.c] = E.s
      ELSE /\ rec[E.p] >= E.n
           /\ (E.c \notin pending[E.p] \/ rec[E.p] > E.n)
           /\ outpart[E.n][E.c] = E.s

TComplete == \A p \in TProcs : rec[p] >= E.n

TEnd == \A r \in 1..TRounds, c \in TChans \ TCtrlChans :
            /\ (U!SealedNow(r, c) /\ inpart[r][c] # <<>>) => <<r, c, "input">> \in recorded
            /\ outpart[r][c] # <<>> => <<r, c, "output">> \in recorded

Match ==
    \/ E.op = "send" /\ TSend /\ UNCHANGED recorded
    \/ E.op = "arrive" /\ TArrive /\ UNCHANGED recorded
    \/ E.op = "recv" /\ TRecv /\ UNCHANGED recorded
    \/ E.op = "ckpt" /\ TCheckpoint /\ UNCHANGED recorded
    \/ E.op = "start" /\ TStart /\ UNCHANGED recorded
    \/ E.op = "record" /\ TRecord /\ UNCHANGED pvars
       /\ recorded' = recorded \cup {<<E.n, E.c, E.part>>}
    \/ E.op = "complete" /\ TComplete /\ UNCHANGED <<pvars, recorded>>
    \/ E.op = "end" /\ TEnd /\ UNCHANGED <<pvars, recorded>>

ASSUME \A k \in 1..Len(Traces) : TLCSet(k, 0)

TraceInit == U!Init /\ traceNo \in 1..Len(Traces) /\ cursor = 0 /\ recorded = {}
TraceNext == cursor < Len(Traces[traceNo]) /\ Match /\ cursor' = cursor + 1 /\ UNCHANGED traceNo
TraceSpec == TraceInit /\ [][TraceNext]_<<pvars, traceNo, cursor, recorded>>

Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE

Consistent == U!Consistent
ChannelStateExact == U!ChannelStateExact
AbsSpec == U!AbsSpec
=============================================================================

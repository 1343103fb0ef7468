--------------------------------- MODULE UnalignedTrace ---------------------------------
(***************************************************************************)
(* Trace validation of unaligned and aligned-with-timeout checkpoints, as  *)
(* in ChandyLamportTrace.  Arrivals are part of the protocol here: an      *)
(* arrive event moves the message from the wire into the input buffer      *)
(* (conform.py inserts the arrival of a message whose trace has none right *)
(* before its recv).  A barrier's send carries in x the number of output   *)
(* records it overtook (the size of the output part its source reports),   *)
(* which fixes where the barrier enters the wire.  Declines, cancellation  *)
(* markers, round_complete and round_abort as in ABSTrace; a task that     *)
(* aligns an aborted round may give it up between two events (LearnAbort). *)
(*                                                                         *)
(* Every trace starts from TInit[traceNo]: the messages on the wires and   *)
(* in the input buffers and the channel counters (nothing and zero for a   *)
(* whole trace; for a segment of a trace cut where every earlier round was *)
(* finished, what the cut leaves: checker/tla/segments.py).  The event     *)
(* "cut" ends a segment: every round of it finished, and the state the one *)
(* the next segment starts from, TCut[traceNo].                            *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC, TraceLog

VARIABLES wire, ibuf, nsent, nrcvd, rec, took, mustSnap, unal, pending, owe, emitting, completed,
          aborted, closed, arrivedB, inpart, outpart, sentAt, rcvdAt, traceNo, cursor, recorded

TDataChans == TChans \ TCtrlChans

U == INSTANCE Unaligned WITH
    Procs <- TProcs, Coords <- TCoords, Chans <- TChans, CtrlChans <- TCtrlChans,
    Src <- TSrc, Dst <- TDst, Rounds <- TRounds, MaxData <- [c \in TDataChans |-> TMaxData],
    Mode <- TMode, Bug <- "none", Capacity <- 2 * TMaxData + 1, DeclineRounds <- 1..TRounds,
    Timeouts <- TRUE, MaxInFlight <- TRounds

pvars == <<wire, ibuf, nsent, nrcvd, rec, took, mustSnap, unal, pending, owe, emitting, completed,
           aborted, closed, arrivedB, inpart, outpart, sentAt, rcvdAt>>
E == Traces[traceNo][cursor + 1]
Msg(k, n) == [k |-> k, n |-> n]

TSend ==
    \/ E.k = "d" /\ nsent[E.c] + 1 = E.n /\ U!Send(E.c)
    \/ /\ E.k = "b"
       /\ rec[E.p] = E.n /\ owe[E.p] = "b"
       /\ E.x <= Len(wire[E.c])
       /\ U!SendMarker(E.p, E.c)
       /\ wire'[E.c][Len(wire[E.c]) - E.x + 1] = Msg("b", E.n)
    \/ E.k = "cancel" /\ rec[E.p] = E.n /\ owe[E.p] = "cancel" /\ U!SendMarker(E.p, E.c)

TArrive == wire[E.c] # <<>> /\ Head(wire[E.c]) = Msg(E.k, E.n) /\ U!Arrive(E.c)

\* In mode aligned_timeout a barrier at the head of its queue, with other inputs of its
\* task still open, may be handled aligned or as the priority trigger of an unaligned
\* snapshot (RecvBarrierAt).  The trigger makes the task busy until that snapshot;
\* handled aligned, the task may take the same snapshot as one that timed out before a
\* priority barrier came (Snapshot's third case: the same recorded input, nothing
\* ahead of the barrier on its channel), and until then no other process can tell the
\* two apart.  So the same traces match with the aligned handling alone, and a trace
\* in which k tasks align at once keeps one state, not 2^k.
HeadIsAligned(pos) ==
    (TMode = "aligned_timeout" /\ pos = 1 /\ U!In(TDst[E.c]) \cap TDataChans # {})
        => mustSnap'[TDst[E.c]] = mustSnap[TDst[E.c]]

TRecv ==
    CASE E.k = "d" -> ibuf[E.c] # <<>> /\ Head(ibuf[E.c]) = Msg("d", E.n) /\ U!Recv(E.c)
      [] E.k = "cancel" -> ibuf[E.c] # <<>> /\ Head(ibuf[E.c]) = Msg("cancel", E.n) /\ U!RecvCancel(E.c)
      [] OTHER -> \E pos \in U!NextBarriers(E.c) :
                    /\ ibuf[E.c][pos] = Msg("b", E.n)
                    /\ U!RecvBarrierAt(E.c, pos)
                    /\ HeadIsAligned(pos)

TCheckpoint == U!Snapshot(E.p) /\ rec'[E.p] = E.n /\ E.n \in took'[E.p]

\* The task declines round n now (nothing is at stake here but the decision:
\* rec'[p] = n), or reports a round it already gave up.  x = 1: the decline its
\* first cancellation marker of n implies, as in ABSTrace.
TDecline ==
    \/ U!Snapshot(E.p) /\ rec'[E.p] = E.n /\ E.n \notin took'[E.p]
    \/ rec[E.p] >= E.n /\ (E.n \notin took[E.p] \/ E.x = 1) /\ mustSnap[E.p] = 0 /\ UNCHANGED pvars

TStartRound == U!StartRound(E.p) /\ rec'[E.p] = E.n

TRecord ==
    /\ <<E.n, E.c, E.part>> \notin recorded      \* reported once: twice is replayed twice
    /\ IF E.part = "input"
      THEN /\ E.n \in took[TDst[E.c]] /\ arrivedB[E.c] >= E.n     \* the recording of c ended
           /\ inpart[E.n][E.c] = E.s
      ELSE /\ rec[E.p] >= E.n
           /\ (E.c \notin pending[E.p] \/ rec[E.p] > E.n)
           /\ outpart[E.n][E.c] = E.s

\* A segment ends where every round of it is finished -- all started, each completed
\* or aborted, no process owes or aligns anything, no marker in flight -- with in
\* flight exactly what the next segment starts from.  A task that never heard of
\* an aborted round (its upstream declined it without cancellation markers) has
\* handled an older round, and its inputs closed at older rounds: for the events
\* to come, which refer only to newer rounds, that state behaves as the one in
\* which it handled the newest round (segments.py), except for a process without
\* inputs, whose next round is its own rec + 1.
TCutOk ==
    LET next == TCut[traceNo] IN
    /\ \A p \in TProcs \cup TCoords :
          /\ ~U!Busy(p)
          /\ rec[p] <= next.rounds
          /\ rec[p] # next.rounds => U!In(p) # {}
    /\ \A r \in 1..next.rounds : r \in completed \cup aborted
    /\ \A c \in TChans : closed[c] <= rec[TDst[c]]
    /\ wire = next.wire /\ ibuf = next.ibuf /\ nsent = next.sent /\ nrcvd = next.rcvd

\* An open cut (mode unaligned, segments.py) leaves the rounds next.low to
\* next.rounds open: later events still refer to them, and each is aborted, here
\* (next.aborted) or later.  Nothing is owed or aligned, every older round is
\* finished, and the state is exactly the one the events determine: every process's
\* and channel's variables (older rounds than next.low compare only with newer ones
\* there), and the per-round state of the open rounds; the next segment starts from
\* it (StartWith), the older rounds dropped.
TCutOpen(next) ==
    LET open == next.low..next.rounds IN
    /\ \A p \in TProcs \cup TCoords : ~U!Busy(p) /\ took[p] \cap open = next.took[p]
    /\ rec = next.rec /\ unal = next.unal /\ closed = next.closed /\ arrivedB = next.arrivedB
    /\ \A r \in 1..next.low - 1 : r \in completed \cup aborted
    /\ completed \cap open = {} /\ aborted \cap open = next.aborted
    /\ \A r \in open : /\ inpart[r] = next.inpart[r] /\ outpart[r] = next.outpart[r]
                       /\ sentAt[r] = next.sentAt[r] /\ rcvdAt[r] = next.rcvdAt[r]
    /\ wire = next.wire /\ ibuf = next.ibuf /\ nsent = next.sent /\ nrcvd = next.rcvd

TCutMatch == IF "low" \in DOMAIN TCut[traceNo] THEN TCutOpen(TCut[traceNo]) ELSE TCutOk

\* The rounds a segment that ends at an open cut leaves open (segments.py): the next
\* segment starts with them, and each is aborted, at the cut or later.
Open == IF "low" \in DOMAIN TCut[traceNo] THEN TCut[traceNo].low..TCut[traceNo].rounds ELSE {}

TEnd == \A r \in (1..TRounds) \ (aborted \cup Open), c \in TDataChans :
            /\ (U!SealedNow(r, c) /\ inpart[r][c] # <<>>) => <<r, c, "input">> \in recorded
            /\ outpart[r][c] # <<>> => <<r, c, "output">> \in recorded

Match ==
    \/ E.op = "send" /\ TSend /\ UNCHANGED recorded
    \/ E.op = "arrive" /\ TArrive /\ UNCHANGED recorded
    \/ E.op = "recv" /\ TRecv /\ UNCHANGED recorded
    \/ E.op = "ckpt" /\ TCheckpoint /\ UNCHANGED recorded
    \/ E.op = "decline" /\ TDecline /\ UNCHANGED recorded
    \/ E.op = "start" /\ TStartRound /\ UNCHANGED recorded
    \/ E.op = "complete" /\ U!Complete(E.n) /\ UNCHANGED recorded
    \/ E.op = "abort" /\ U!Abort(E.n) /\ UNCHANGED recorded
    \/ E.op = "record" /\ TRecord /\ UNCHANGED pvars
       /\ recorded' = recorded \cup {<<E.n, E.c, E.part>>}
    \/ E.op = "cut" /\ TCutMatch /\ UNCHANGED <<pvars, recorded>>
    \/ E.op = "end" /\ TEnd /\ UNCHANGED <<pvars, recorded>>

ASSUME \A k \in 1..Len(Traces) : TLCSet(k, 0)

\* The state a segment that starts at an open cut starts from (TCutOpen): the open
\* rounds are its first ones.
StartWith(s) ==
    LET procs == TProcs \cup TCoords
        PerRound(f, zero) == [r \in 1..TRounds |-> IF r \in DOMAIN f THEN f[r] ELSE [c \in TDataChans |-> zero]]
    IN
    /\ wire = s.wire /\ ibuf = s.ibuf /\ nsent = s.sent /\ nrcvd = s.rcvd
    /\ rec = s.rec /\ took = s.took /\ unal = s.unal
    /\ mustSnap = [p \in procs |-> 0] /\ pending = [p \in procs |-> {}]
    /\ owe = [p \in procs |-> "b"] /\ emitting = [p \in procs |-> ""]
    /\ completed = {} /\ aborted = s.aborted
    /\ closed = s.closed /\ arrivedB = s.arrivedB
    /\ inpart = PerRound(s.inpart, <<>>) /\ outpart = PerRound(s.outpart, <<>>)
    /\ sentAt = PerRound(s.sentAt, 0) /\ rcvdAt = PerRound(s.rcvdAt, 0)

TraceInit ==
    /\ traceNo \in 1..Len(Traces)
    /\ IF "rec" \in DOMAIN TInit[traceNo]
         THEN StartWith(TInit[traceNo])
         ELSE U!InitWith(TInit[traceNo].wire, TInit[traceNo].ibuf, TInit[traceNo].sent, TInit[traceNo].rcvd)
    /\ cursor = 0 /\ recorded = {}
\* When a task learns that the coordinator aborted the round it aligns: right before
\* its own next event, or before the final checks (cut, end).  Giving the round up
\* (LearnAbort) changes only the task's own variables, and nothing but the task's own
\* steps changes what enables it (aborted only grows), so a behaviour in which it
\* learns earlier is the same behaviour up to the order of independent steps; letting
\* every aligning task learn at every position would multiply the states of each
\* position by up to 2^n for n tasks aligning aborted rounds.
LearnsNow(p) == E.p = p \/ E.op \in {"cut", "end"}

TraceNext ==
    \/ cursor < Len(Traces[traceNo]) /\ Match /\ cursor' = cursor + 1 /\ UNCHANGED traceNo
    \/ aborted # {} /\ cursor < Len(Traces[traceNo])
       /\ \E p \in TProcs : LearnsNow(p) /\ U!LearnAbort(p) /\ UNCHANGED <<traceNo, cursor, recorded>>
TraceSpec == TraceInit /\ [][TraceNext]_<<pvars, traceNo, cursor, recorded>>

Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE

Consistent == U!Consistent
ChannelStateExact == U!ChannelStateExact
AbsSpec == U!AbsSpec
AbsSteps == U!AbsSteps
=============================================================================

------------------------------------ MODULE ABSTrace ------------------------------------
(***************************************************************************)
(* Trace validation of ABS (aligned, Algorithms 1 and 2), as in            *)
(* ChandyLamportTrace: TraceLog (generated) holds the topology and the     *)
(* traces; cursor counts the matched events of trace traceNo.  A barrier's *)
(* recv blocks its regular input, the checkpoint event is the snapshot     *)
(* once aligned, record events report back-edge logs.  A decline is the   *)
(* task's decline message to the coordinator, or without one its first    *)
(* cancellation marker of the round (the mapping inserts the decline      *)
(* before it, x = 1); a cancellation marker is sent and received like a   *)
(* barrier, round_complete and round_abort are                            *)
(* the coordinator's Complete and Abort (any round in flight may be        *)
(* aborted: the reference times rounds out).  That the coordinator's abort *)
(* reached a task is not an event of its own: a task that aligns an        *)
(* aborted round may give it up between two events (LearnAbort).          *)
(*                                                                         *)
(* Every trace starts from TInit[traceNo]: the messages in flight on each *)
(* channel and the channel counters (nothing and zero for a whole trace;   *)
(* for a segment of a trace cut where every earlier round was finished,    *)
(* what the cut leaves in flight: checker/tla/segments.py), the rest as in *)
(* Init.  Segments after the first check refinement with AbsSteps.  The    *)
(* event "cut" ends a segment: every round of the segment is finished and  *)
(* the state is the one the next segment starts from, TCut[traceNo]; the  *)
(* event "end" asks that every non-empty recorded channel state of a      *)
(* round not aborted was reported by a record event (the state of an      *)
(* aborted round is discarded, reported or not).                          *)
(***************************************************************************)
EXTENDS Naturals, Sequences, TLC, TraceLog

VARIABLES chan, nsent, nrcvd, rec, took, closed, pending, owe, emitting, completed, aborted,
          crec, quit, sentAt, rcvdAt, traceNo, cursor, recorded

TDataChans == TChans \ TCtrlChans

A == INSTANCE ABS WITH
    Procs <- TProcs, Coords <- TCoords, Chans <- TChans, CtrlChans <- TCtrlChans,
    Src <- TSrc, Dst <- TDst, BackEdges <- TBackEdges, Rounds <- TRounds,
    MaxData <- [c \in TDataChans |-> TMaxData], Bug <- "none",
    Capacity <- TMaxData + 1, DeclineRounds <- 1..TRounds, Timeouts <- TRUE,
    MaxInFlight <- TRounds

pvars == <<chan, nsent, nrcvd, rec, took, closed, pending, owe, emitting, completed, aborted,
           crec, quit, sentAt, rcvdAt>>
E == Traces[traceNo][cursor + 1]
HeadIs(c, k, n) == chan[c] # <<>> /\ Head(chan[c]) = [k |-> k, n |-> n]

TSend ==
    \/ E.k = "d" /\ nsent[E.c] + 1 = E.n /\ A!Send(E.c)
    \/ E.k # "d" /\ rec[E.p] = E.n /\ owe[E.p] = E.k /\ A!SendMarker(E.p, E.c)

TRecv ==
    /\ HeadIs(E.c, E.k, E.n)
    /\ IF E.k = "d" THEN A!Recv(E.c) ELSE A!RecvMarker(E.c)

TCheckpoint == A!Snapshot(E.p) /\ rec'[E.p] = E.n

\* The task declines round n now, or reports a round it already gave up.  x = 1:
\* the decline its first cancellation marker of n implies when no decline message
\* came before (the marker says that its sender declined or gave up the round): it
\* declines n now unless it already handled n; the marker's send checks it owes it.
TDecline ==
    \/ A!Decline(E.p) /\ rec'[E.p] = E.n
    \/ rec[E.p] >= E.n /\ (E.n \notin took[E.p] \/ E.x = 1) /\ UNCHANGED pvars

TStartRound == A!StartRound(E.p) /\ rec'[E.p] = E.n

TRecord == A!SealedNow(E.n, E.c) /\ crec[E.n][E.c] = E.s
           /\ <<E.n, E.c, E.part>> \notin recorded      \* reported once: twice is replayed twice

\* The rounds a segment that ends at an open cut leaves open (segments.py): the next
\* segment starts with them, and each is aborted, at the cut or later.
Open == IF "low" \in DOMAIN TCut[traceNo] THEN TCut[traceNo].low..TCut[traceNo].rounds ELSE {}

TEnd == \A r \in (1..TRounds) \ (aborted \cup Open), c \in TDataChans :
            (A!SealedNow(r, c) /\ crec[r][c] # <<>>) => <<r, c, "input">> \in recorded

\* A segment ends where every round of it is finished -- all started, each completed
\* or aborted, no process owes or aligns anything, no marker in flight -- with in
\* flight exactly what the next segment starts from.  A task that never heard of
\* an aborted round has handled an older round, and its inputs closed at older
\* rounds: for the events to come, which refer only to newer rounds, that state
\* behaves as the one in which it handled the newest round (segments.py), except
\* for a process without regular inputs, whose next round is its own rec + 1.
TCutOk ==
    LET next == TCut[traceNo] IN
    /\ \A p \in TProcs \cup TCoords :
          /\ pending[p] = {}
          /\ rec[p] <= next.rounds
          /\ rec[p] # next.rounds => A!RegularIn(p) # {}
    /\ \A r \in 1..next.rounds : r \in completed \cup aborted
    /\ \A c \in TChans : closed[c] <= rec[TDst[c]]
    /\ chan = next.chan /\ nsent = next.sent /\ nrcvd = next.rcvd

\* An open cut (segments.py) leaves the rounds next.low to next.rounds open: later
\* events still refer to them, and each is aborted, here (next.aborted) or later.
\* Nothing is owed, every older round is finished, and the state is exactly the one
\* the events determine, a task aligning a round included (it learns of an abort
\* only when its own next event needs it): every process's and channel's variables
\* (older rounds than next.low compare only with newer ones there) and the
\* per-round state of the open rounds; the next segment starts from it (StartWith).
TCutOpen(next) ==
    LET open == next.low..next.rounds IN
    /\ \A p \in TProcs \cup TCoords : ~A!Busy(p) /\ took[p] \cap open = next.took[p]
    /\ rec = next.rec /\ closed = next.closed /\ quit = next.quit
    /\ \A r \in 1..next.low - 1 : r \in completed \cup aborted
    /\ completed \cap open = {} /\ aborted \cap open = next.aborted
    /\ \A r \in open : crec[r] = next.crec[r] /\ sentAt[r] = next.sentAt[r] /\ rcvdAt[r] = next.rcvdAt[r]
    /\ chan = next.chan /\ nsent = next.sent /\ nrcvd = next.rcvd

TCutMatch == IF "low" \in DOMAIN TCut[traceNo] THEN TCutOpen(TCut[traceNo]) ELSE TCutOk

Match ==
    \/ E.op = "send" /\ TSend /\ UNCHANGED recorded
    \/ E.op = "recv" /\ TRecv /\ UNCHANGED recorded
    \/ E.op = "ckpt" /\ TCheckpoint /\ UNCHANGED recorded
    \/ E.op = "decline" /\ TDecline /\ UNCHANGED recorded
    \/ E.op = "start" /\ TStartRound /\ UNCHANGED recorded
    \/ E.op = "complete" /\ A!Complete(E.n) /\ UNCHANGED recorded
    \/ E.op = "abort" /\ A!Abort(E.n) /\ UNCHANGED recorded
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
    /\ chan = s.chan /\ nsent = s.sent /\ nrcvd = s.rcvd
    /\ rec = s.rec /\ took = s.took /\ closed = s.closed /\ quit = s.quit
    /\ pending = [p \in procs |-> {}] /\ owe = [p \in procs |-> "b"] /\ emitting = [p \in procs |-> ""]
    /\ completed = {} /\ aborted = s.aborted
    /\ crec = PerRound(s.crec, <<>>) /\ sentAt = PerRound(s.sentAt, 0) /\ rcvdAt = PerRound(s.rcvdAt, 0)

TraceInit ==
    /\ traceNo \in 1..Len(Traces)
    /\ IF "rec" \in DOMAIN TInit[traceNo]
         THEN StartWith(TInit[traceNo])
         ELSE A!InitWith(TInit[traceNo].chan, TInit[traceNo].sent, TInit[traceNo].rcvd)
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
       /\ \E p \in TProcs : LearnsNow(p) /\ A!LearnAbort(p) /\ UNCHANGED <<traceNo, cursor, recorded>>
TraceSpec == TraceInit /\ [][TraceNext]_<<pvars, traceNo, cursor, recorded>>

Progress == IF cursor > TLCGet(traceNo) THEN TLCSet(traceNo, cursor) /\ PrintT(<<"snapcheck-progress", traceNo, cursor>>) ELSE TRUE

Consistent == A!Consistent
ChannelStateExact == A!ChannelStateExact
AbsSpec == A!AbsSpec
AbsSteps == A!AbsSteps
=============================================================================

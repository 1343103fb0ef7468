------------------------------- MODULE ChandyLamport -------------------------------
(***************************************************************************)
(* The Chandy-Lamport snapshot algorithm on FIFO channels, with repeated   *)
(* snapshots identified by round numbers.                                  *)
(*                                                                         *)
(* Source: K. M. Chandy and L. Lamport, "Distributed Snapshots:            *)
(* Determining Global States of Distributed Systems" (1985); rules as in   *)
(* docs/theory.md, "Chandy-Lamport":                                       *)
(*  - initiator: record own state; then, before sending any further        *)
(*    message, send a marker on every outgoing channel; record every       *)
(*    incoming channel;                                                    *)
(*  - first marker of a round on channel c: record own state, the state of *)
(*    c is empty, send markers on all outgoing channels, record all other  *)
(*    incoming channels;                                                   *)
(*  - later marker on c: stop recording c; its state is what was processed *)
(*    on c after the local state was recorded and before the marker.       *)
(*                                                                         *)
(* A snapshot is started either by a process in Initiators on its own or   *)
(* by a coordinator (a process in Coords, which takes no checkpoint) that  *)
(* sends a marker on its control channels.  Processing a marker and       *)
(* recording the local state are two steps (RecvMarker, then Snapshot),    *)
(* as in a recorded trace (a recv of the barrier, then a checkpoint).      *)
(*                                                                         *)
(* Reference implementation: reference/ (protocol "chandy-lamport").       *)
(* Mutants (constant Bug):                                                 *)
(*   "no_channel_recording"  processed messages are never added to the     *)
(*                           channel state (fails ChannelStateExact);      *)
(*   "data_before_marker"    a process may send data after recording and   *)
(*                           before its markers (fails Consistent or       *)
(*                           ChannelStateExact).                           *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Procs,       \* checkpointing processes
    Coords,      \* coordinators: start rounds, take no checkpoint (may be {})
    Chans,       \* all channels
    CtrlChans,   \* control channels (coordinator -> process); carry only markers
    Src, Dst,    \* channel ends
    Rounds,      \* number of snapshots
    MaxData,     \* data messages per data channel
    Initiators,  \* processes that may start a snapshot on their own
    Bug          \* "none" or the name of a mutant

ASSUME Bug \in {"none", "no_channel_recording", "data_before_marker"}
ASSUME Initiators \subseteq Procs /\ CtrlChans \subseteq Chans

VARIABLES
    chan,      \* chan[c]: messages in flight on c, FIFO; [k |-> "d"|"b", n |-> seq|round]
    nsent,     \* nsent[c]: data messages sent on c
    nrcvd,     \* nrcvd[c]: data messages processed from c
    rec,       \* rec[p]: last round p recorded (coordinator: last round started)
    mustSnap,  \* mustSnap[p]: round whose first marker p just processed (0: none)
    pending,   \* pending[p]: outgoing channels still waiting for p's marker of round rec[p]
    closed,    \* closed[c]: last round whose marker was processed on c
    crec,      \* crec[r][c]: channel state of c recorded for round r (message numbers)
    sentAt,    \* history: sentAt[r][c] = nsent[c] when Src[c] recorded round r
    rcvdAt     \* history: rcvdAt[r][c] = nrcvd[c] when Dst[c] recorded round r

vars == <<chan, nsent, nrcvd, rec, mustSnap, pending, closed, crec, sentAt, rcvdAt>>

AllProcs == Procs \cup Coords
DataChans == Chans \ CtrlChans
RoundIds == 1..Rounds
Out(p) == {c \in Chans : Src[c] = p}
In(p) == {c \in Chans : Dst[c] = p}
Data(n) == [k |-> "d", n |-> n]
Marker(r) == [k |-> "b", n |-> r]

\* p is busy with a snapshot (must record, or must send markers) and may do nothing else.
Busy(p) == mustSnap[p] # 0 \/ pending[p] # {}

\* Channel c is being recorded for round r.
Recording(r, c) == rec[Dst[c]] >= r /\ closed[c] < r

TypeOK ==
    /\ chan \in [Chans -> Seq([k : {"d", "b"}, n : Nat])]
    /\ nsent \in [DataChans -> 0..MaxData]
    /\ nrcvd \in [DataChans -> 0..MaxData]
    /\ rec \in [AllProcs -> 0..Rounds]
    /\ mustSnap \in [AllProcs -> 0..Rounds]
    /\ pending \in [AllProcs -> SUBSET Chans]
    /\ closed \in [Chans -> 0..Rounds]
    /\ crec \in [RoundIds -> [DataChans -> Seq(1..MaxData)]]

\* The initial state with the given messages in flight and channel counters
\* (trace validation starts segments of a trace in such states).
InitWith(inflight, ns, nr) ==
    /\ chan = inflight
    /\ nsent = ns
    /\ nrcvd = nr
    /\ rec = [p \in AllProcs |-> 0]
    /\ mustSnap = [p \in AllProcs |-> 0]
    /\ pending = [p \in AllProcs |-> {}]
    /\ closed = [c \in Chans |-> 0]
    /\ crec = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ sentAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]

Init == InitWith([c \in Chans |-> <<>>], [c \in DataChans |-> 0], [c \in DataChans |-> 0])

\* The application sends a data message on c.
Send(c) ==
    LET p == Src[c] IN
    /\ c \in DataChans
    /\ IF Bug = "data_before_marker" THEN mustSnap[p] = 0 ELSE ~Busy(p)
    /\ nsent[c] < MaxData
    /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
    /\ chan' = [chan EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
    /\ UNCHANGED <<nrcvd, rec, mustSnap, pending, closed, crec, sentAt, rcvdAt>>

\* p sends its marker of round rec[p] on c.
SendMarker(p, c) ==
    /\ c \in pending[p]
    /\ chan' = [chan EXCEPT ![c] = Append(@, Marker(rec[p]))]
    /\ pending' = [pending EXCEPT ![p] = @ \ {c}]
    /\ UNCHANGED <<nsent, nrcvd, rec, mustSnap, closed, crec, sentAt, rcvdAt>>

\* Dst[c] processes the data message at the head of c.
Recv(c) ==
    LET p == Dst[c]
        m == Head(chan[c]) IN
    /\ chan[c] # <<>>
    /\ m.k = "d"
    /\ ~Busy(p)
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1]
    /\ crec' = IF Bug = "no_channel_recording" THEN crec
               ELSE [r \in RoundIds |->
                       [crec[r] EXCEPT ![c] = IF Recording(r, c) THEN Append(@, m.n) ELSE @]]
    /\ UNCHANGED <<nsent, rec, mustSnap, pending, closed, sentAt, rcvdAt>>

\* Dst[c] processes the marker at the head of c: the first marker of its round
\* makes the process record its state next; any marker closes c for its round.
RecvMarker(c) ==
    LET p == Dst[c]
        r == Head(chan[c]).n IN
    /\ chan[c] # <<>>
    /\ Head(chan[c]).k = "b"
    /\ ~Busy(p)
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ closed' = [closed EXCEPT ![c] = r]
    /\ mustSnap' = [mustSnap EXCEPT ![p] = IF rec[p] < r THEN r ELSE 0]
    /\ UNCHANGED <<nsent, nrcvd, rec, pending, crec, sentAt, rcvdAt>>

\* p records its local state for round r and will send markers on all outputs.
TakeSnapshot(p, r) ==
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ mustSnap' = [mustSnap EXCEPT ![p] = 0]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ sentAt' = [sentAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Src[c] = p THEN nsent[c] ELSE sentAt[r][c]]]
    /\ rcvdAt' = [rcvdAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Dst[c] = p THEN nrcvd[c] ELSE rcvdAt[r][c]]]
    /\ UNCHANGED <<chan, nsent, nrcvd, closed, crec>>

\* After the first marker of round mustSnap[p].
Snapshot(p) ==
    /\ mustSnap[p] # 0
    /\ TakeSnapshot(p, mustSnap[p])

\* An initiator starts the next round on its own.
Initiate(p) ==
    /\ p \in Initiators
    /\ ~Busy(p)
    /\ rec[p] < Rounds
    /\ TakeSnapshot(p, rec[p] + 1)

\* A coordinator starts the next round: it sends a marker on each control channel.
StartRound(p) ==
    /\ p \in Coords
    /\ pending[p] = {}
    /\ rec[p] < Rounds
    /\ rec' = [rec EXCEPT ![p] = @ + 1]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ UNCHANGED <<chan, nsent, nrcvd, mustSnap, closed, crec, sentAt, rcvdAt>>

RoundDone(r) ==
    /\ \A p \in Procs : rec[p] >= r
    /\ \A c \in Chans : closed[c] >= r

\* Everything finished: stutter instead of reporting a deadlock.
Finished ==
    /\ \A r \in RoundIds : RoundDone(r)
    /\ \A c \in Chans : chan[c] = <<>>
    /\ \A c \in DataChans : nsent[c] = MaxData
    /\ \A p \in AllProcs : ~Busy(p)
    /\ UNCHANGED vars

Next ==
    \/ \E c \in Chans : Send(c) \/ Recv(c) \/ RecvMarker(c)
    \/ \E p \in AllProcs : Snapshot(p) \/ Initiate(p) \/ StartRound(p)
                           \/ \E c \in Chans : SendMarker(p, c)
    \/ Finished

\* Protocol steps are weakly fair; the application may stop sending.
Fairness ==
    /\ \A c \in Chans : WF_vars(Recv(c)) /\ WF_vars(RecvMarker(c))
    /\ \A p \in AllProcs : WF_vars(Snapshot(p)) /\ WF_vars(Initiate(p))
                           /\ WF_vars(StartRound(p))
                           /\ \A c \in Chans : WF_vars(SendMarker(p, c))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

(***************************************************************************)
(* Refinement of the abstract consistent snapshot.                         *)
(***************************************************************************)
Taken(r, p) == rec[p] >= r
SealedNow(r, c) == closed[c] >= r /\ Taken(r, Dst[c])

Abs == INSTANCE ConsistentSnapshot WITH
    DataChans <- DataChans,
    sent <- nsent,
    rcvd <- nrcvd,
    taken <- [r \in RoundIds |-> [p \in Procs |-> Taken(r, p)]],
    sealed <- [r \in RoundIds |-> [c \in DataChans |-> SealedNow(r, c)]],
    cs <- [r \in RoundIds |-> [c \in DataChans |->
              IF SealedNow(r, c) THEN crec[r][c] ELSE <<>>]]

\* Every step is a step of the abstract snapshot, without its initial condition:
\* trace validation in segments starts from a state in the middle of a run.
\* Cheap cases first (TLC evaluates the disjuncts in order): a step that
\* leaves the mapping's variables unchanged is an abstract stutter; a step that
\* only sends or processes one data message on c is Abs!Send(c) or Abs!Recv(c),
\* because the other abstract variables are functions of <<rec, closed, crec, sentAt, rcvdAt>>.
DataStep ==
    /\ UNCHANGED <<rec, closed, crec, sentAt, rcvdAt>>
    /\ \E c \in DataChans :
          \/ nsent[c] < MaxData /\ nsent' = [nsent EXCEPT ![c] = @ + 1] /\ nrcvd' = nrcvd
          \/ nrcvd[c] < nsent[c] /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1] /\ nsent' = nsent
\* Then the abstract step a snapshot or a seal is, named from the concrete change
\* (p takes round r and seals the channels into p that the step makes final; or
\* one channel's state becomes final) instead of searched for among all of
\* Abs!Next's steps (which tries every round, process and subset of inputs,
\* recomputing the mapping each time); then a step that leaves the abstract
\* state unchanged.  Each case is one of Abs!Next's steps or a stutter, so the
\* property is the same; Abs!Next, last, judges every other step.
TakeStep ==
    \E p \in Procs, r \in RoundIds :
        /\ ~Taken(r, p) /\ Taken(r, p)'
        /\ Abs!Take(r, p, {c \in DataChans : Dst[c] = p /\ ~SealedNow(r, c) /\ SealedNow(r, c)'})
SealStep ==
    /\ UNCHANGED rec
    /\ \E r \in RoundIds, c \in DataChans : ~SealedNow(r, c) /\ SealedNow(r, c)' /\ Abs!Seal(r, c)
AbsSteps ==
    [][\/ UNCHANGED <<nsent, nrcvd, rec, closed, crec, sentAt, rcvdAt>>
       \/ DataStep \/ TakeStep \/ SealStep \/ UNCHANGED Abs!absvars
       \/ Abs!Next]_Abs!absvars
AbsSpec == Abs!Init /\ AbsSteps
Consistent == Abs!Consistent
ChannelStateExact == Abs!ChannelStateExact

\* Markers of one round never overtake those of another on a channel, and a
\* process records rounds in order (what FIFO channels buy).
RoundsInOrder == \A p \in Procs : mustSnap[p] # 0 => mustSnap[p] = rec[p] + 1

(***************************************************************************)
(* Liveness: every round that was started completes.                       *)
(***************************************************************************)
Started(r) == \E p \in AllProcs : rec[p] >= r
Termination == \A r \in RoundIds : Started(r) ~> RoundDone(r)
AllRoundsEventuallyDone == <>(\A r \in RoundIds : RoundDone(r))

(***************************************************************************)
(* Trap (must be violated): a snapshot records a non-empty channel state.  *)
(***************************************************************************)
TrapNonEmptyChannelState == Abs!TrapNonEmptyChannelState
=============================================================================

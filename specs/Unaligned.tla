--------------------------------- MODULE Unaligned ---------------------------------
(***************************************************************************)
(* Unaligned checkpoints (Apache Flink >= 1.11, FLIP-76) and aligned       *)
(* checkpoints with an alignment timeout that switch to unaligned.         *)
(*                                                                         *)
(* Sources: the Flink documentation ("Checkpointing under backpressure",   *)
(* execution.checkpointing.aligned-checkpoint-timeout) and                 *)
(* ChannelStatePersister.java; docs/theory.md, "Unaligned checkpoints" and *)
(* "Aligned checkpoints with a timeout".                                   *)
(*                                                                         *)
(* Each channel has two stages: wire[c] (sent by the source: its output    *)
(* buffer and the network) and ibuf[c] (arrived in the destination's input *)
(* buffer, not processed yet).  Mode "unaligned": the first barrier of a   *)
(* round that a task handles is a priority event -- it is handled wherever *)
(* it stands in the input buffer, the task snapshots at once and forwards  *)
(* the barrier ahead of its output buffer.  Persisted as channel state:    *)
(*  - input part of c (by Dst[c]): the data queued in ibuf[c] before the   *)
(*    barrier at the snapshot, and, while c's barrier has not arrived, all *)
(*    data arriving on c;                                                  *)
(*  - output part of c (by Src[c]): the data the forwarded barrier         *)
(*    overtakes.                                                           *)
(* Mode "aligned_timeout": a round starts aligned (inputs that delivered   *)
(* the barrier are blocked).  A task that is not aligned yet may time out: *)
(* either on its own once the round has started, or when a barrier arrives *)
(* after the timeout (then it is a priority event, as in mode unaligned).  *)
(* It then takes an unaligned snapshot, persisting nothing on the already  *)
(* aligned inputs; its remaining barriers of the round are priority        *)
(* events.  The channel state of c is input part then output part, which   *)
(* must equal the in-transit messages.                                     *)
(*                                                                         *)
(* Reference implementation: reference/ (protocols "unaligned",            *)
(* "aligned-timeout").  Mutants (constant Bug):                            *)
(*   "no_output_persist"  the overtaken output buffers are not persisted   *)
(*                        (fails ChannelStateExact);                       *)
(*   "late_snapshot"      after handling the first barrier the task keeps  *)
(*                        processing records, also from behind the barrier,*)
(*                        before it snapshots (FLINK-17568: records are    *)
(*                        both persisted and processed, or orphaned;       *)
(*                        fails ChannelStateExact or Consistent);          *)
(*   "persist_aligned"    on a timeout switch the post-barrier data of     *)
(*                        already aligned inputs are persisted too (fails  *)
(*                        ChannelStateExact).                              *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Procs, Coords, Chans, CtrlChans, Src, Dst,
    Rounds, MaxData,
    Mode,    \* "unaligned" or "aligned_timeout"
    Bug

ASSUME Mode \in {"unaligned", "aligned_timeout"}
ASSUME Bug \in {"none", "no_output_persist", "late_snapshot", "persist_aligned"}

VARIABLES
    wire,      \* wire[c]: sent, not arrived (output buffer + network), FIFO
    ibuf,      \* ibuf[c]: arrived, not processed; handled barriers are removed
    nsent, nrcvd,
    rec,       \* rec[p]: last round p snapshotted (coordinator: last round started)
    mustSnap,  \* mustSnap[p]: round whose first barrier p handled (unaligned mode), 0: none
    unal,      \* unal[p]: p's snapshot of round rec[p] was unaligned
    pending,   \* pending[p]: outputs still waiting for p's barrier of round rec[p]
    closed,    \* closed[c]: last round whose barrier was handled on c
    arrivedB,  \* arrivedB[c]: last round whose barrier arrived on c
    inpart,    \* inpart[r][c]: input part of c's channel state, round r
    outpart,   \* outpart[r][c]: output part of c's channel state, round r
    sentAt, rcvdAt

vars == <<wire, ibuf, nsent, nrcvd, rec, mustSnap, unal, pending, closed, arrivedB,
          inpart, outpart, sentAt, rcvdAt>>

AllProcs == Procs \cup Coords
DataChans == Chans \ CtrlChans
RoundIds == 1..Rounds
Out(p) == {c \in Chans : Src[c] = p}
In(p) == {c \in Chans : Dst[c] = p}
Data(n) == [k |-> "d", n |-> n]
Barrier(r) == [k |-> "b", n |-> r]

\* Positions of barriers in a queue; the data message numbers in a queue.
BarrierPos(q) == {pos \in 1..Len(q) : q[pos].k = "b"}
FirstBarrier(q) == IF BarrierPos(q) = {} THEN Len(q) + 1
                   ELSE CHOOSE pos \in BarrierPos(q) : \A pos2 \in BarrierPos(q) : pos <= pos2
LastBarrier(q) == IF BarrierPos(q) = {} THEN 0
                  ELSE CHOOSE pos \in BarrierPos(q) : \A pos2 \in BarrierPos(q) : pos >= pos2
DataNums(q) == [pos \in 1..Len(q) |-> q[pos].n]
\* The data queued in q ahead of the barrier of round r (or of a later round).
PreBarrier(q, r) ==
    LET later == {pos \in BarrierPos(q) : q[pos].n >= r}
        end == IF later = {} THEN Len(q) + 1 ELSE CHOOSE pos \in later : \A pos2 \in later : pos <= pos2
    IN DataNums(SelectSeq(SubSeq(q, 1, end - 1), LAMBDA m : m.k = "d"))
RemoveAt(q, pos) == SubSeq(q, 1, pos - 1) \o SubSeq(q, pos + 1, Len(q))

Busy(p) == mustSnap[p] # 0 \/ pending[p] # {}
\* Round r was started (its barriers are on their way).
RoundStarted(r) == \E q \in AllProcs : rec[q] >= r
\* Aligned mode: c delivered the barrier of p's coming round, p has not snapshotted.
Blocked(c) == closed[c] > rec[Dst[c]]
\* Dst[c] persists the data arriving on c for round r.
Persisting(r, c) == rec[Dst[c]] >= r /\ arrivedB[c] < r

TypeOK ==
    /\ wire \in [Chans -> Seq([k : {"d", "b"}, n : Nat])]
    /\ ibuf \in [Chans -> Seq([k : {"d", "b"}, n : Nat])]
    /\ nsent \in [DataChans -> 0..MaxData]
    /\ nrcvd \in [DataChans -> 0..MaxData]
    /\ rec \in [AllProcs -> 0..Rounds]
    /\ mustSnap \in [AllProcs -> 0..Rounds]
    /\ unal \in [AllProcs -> BOOLEAN]
    /\ pending \in [AllProcs -> SUBSET Chans]
    /\ closed \in [Chans -> 0..Rounds]
    /\ arrivedB \in [Chans -> 0..Rounds]
    /\ inpart \in [RoundIds -> [DataChans -> Seq(1..MaxData)]]
    /\ outpart \in [RoundIds -> [DataChans -> Seq(1..MaxData)]]

Init ==
    /\ wire = [c \in Chans |-> <<>>]
    /\ ibuf = [c \in Chans |-> <<>>]
    /\ nsent = [c \in DataChans |-> 0]
    /\ nrcvd = [c \in DataChans |-> 0]
    /\ rec = [p \in AllProcs |-> 0]
    /\ mustSnap = [p \in AllProcs |-> 0]
    /\ unal = [p \in AllProcs |-> FALSE]
    /\ pending = [p \in AllProcs |-> {}]
    /\ closed = [c \in Chans |-> 0]
    /\ arrivedB = [c \in Chans |-> 0]
    /\ inpart = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ outpart = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ sentAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]

\* The operator emits a record into its output buffer.
Send(c) ==
    /\ c \in DataChans
    /\ ~Busy(Src[c])
    /\ nsent[c] < MaxData
    /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
    /\ wire' = [wire EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
    /\ UNCHANGED <<ibuf, nrcvd, rec, mustSnap, unal, pending, closed, arrivedB,
                   inpart, outpart, sentAt, rcvdAt>>

\* p forwards its barrier on c, inserted ahead of the last records of wire[c]
\* (its output buffer), which it persists as the output part.  An aligned
\* snapshot may overtake too: what it overtakes is persisted, so the snapshot
\* stays exact (the reference overtakes whenever its task switched).
SendBarrier(p, c) ==
    LET r == rec[p]
        q == wire[c] IN
    /\ c \in pending[p]
    /\ \E k \in LastBarrier(q)..Len(q) :
          /\ wire' = [wire EXCEPT ![c] = SubSeq(q, 1, k) \o <<Barrier(r)>> \o SubSeq(q, k + 1, Len(q))]
          /\ outpart' = IF c \in DataChans /\ Bug # "no_output_persist"
                          THEN [outpart EXCEPT ![r][c] = DataNums(SubSeq(q, k + 1, Len(q)))]
                          ELSE outpart
    /\ pending' = [pending EXCEPT ![p] = @ \ {c}]
    /\ UNCHANGED <<ibuf, nsent, nrcvd, rec, mustSnap, unal, closed, arrivedB, inpart,
                   sentAt, rcvdAt>>

\* The message at the head of wire[c] reaches the input buffer of Dst[c].
Arrive(c) ==
    LET m == Head(wire[c]) IN
    /\ wire[c] # <<>>
    /\ wire' = [wire EXCEPT ![c] = Tail(@)]
    /\ ibuf' = [ibuf EXCEPT ![c] = Append(@, m)]
    /\ IF m.k = "b"
         THEN /\ arrivedB' = [arrivedB EXCEPT ![c] = m.n]
              /\ UNCHANGED inpart
         ELSE /\ inpart' = [r \in RoundIds |->
                              [inpart[r] EXCEPT ![c] = IF Persisting(r, c) THEN Append(@, m.n) ELSE @]]
              /\ UNCHANGED arrivedB
    /\ UNCHANGED <<nsent, nrcvd, rec, mustSnap, unal, pending, closed, outpart, sentAt, rcvdAt>>

\* Dst[c] processes the record at the head of its input buffer.
Recv(c) ==
    LET p == Dst[c] IN
    /\ ibuf[c] # <<>>
    /\ Head(ibuf[c]).k = "d"
    /\ pending[p] = {}
    /\ mustSnap[p] = 0 \/ Bug = "late_snapshot"
    /\ ~Blocked(c) \/ Bug = "late_snapshot"
    /\ ibuf' = [ibuf EXCEPT ![c] = Tail(@)]
    /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<wire, nsent, rec, mustSnap, unal, pending, closed, arrivedB, inpart,
                   outpart, sentAt, rcvdAt>>

\* Dst[c] handles the first barrier in its input buffer of c, either
\*  - aligned (mode aligned_timeout): at the head of the buffer; c is blocked
\*    until the snapshot; or
\*  - as a priority event wherever it stands (mode unaligned; in mode
\*    aligned_timeout once the round has timed out -- the reference's rule is a
\*    barrier that arrives after the timeout or from a sender that switched):
\*    the first one of a round triggers an unaligned snapshot, and the data
\*    queued ahead of it is in transit (its input part); later ones only end
\*    the recording of their channel.
RecvBarrier(c) ==
    LET p == Dst[c]
        pos == FirstBarrier(ibuf[c])
        r == ibuf[c][pos].n IN
    /\ pos <= Len(ibuf[c])
    /\ ~Busy(p)
    /\ ~Blocked(c)
    /\ ibuf' = [ibuf EXCEPT ![c] = RemoveAt(@, pos)]
    /\ closed' = [closed EXCEPT ![c] = r]
    /\ \/ /\ Mode = "aligned_timeout" /\ pos = 1                  \* aligned
          /\ UNCHANGED <<mustSnap, inpart>>
       \/ /\ rec[p] < r                                           \* priority: the trigger
          \* (in aligned_timeout mode not for the last barrier at the head: its
          \* aligned handling leads to the same snapshot)
          /\ Mode = "unaligned" \/ pos > 1 \/ \E c2 \in In(p) \ {c} : closed[c2] < r
          /\ mustSnap' = [mustSnap EXCEPT ![p] = r]
          /\ inpart' = IF c \in DataChans
                         THEN [inpart EXCEPT ![r][c] = DataNums(SubSeq(ibuf[c], 1, pos - 1))]
                         ELSE inpart
       \/ /\ rec[p] >= r /\ (Mode = "unaligned" \/ unal[p])          \* priority, after the snapshot
          /\ UNCHANGED <<mustSnap, inpart>>
    /\ UNCHANGED <<wire, nsent, nrcvd, rec, unal, pending, arrivedB, outpart, sentAt, rcvdAt>>

\* p records its local state for round r; aligned = FALSE persists in-flight input.
TakeSnapshot(p, r, aligned) ==
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ mustSnap' = [mustSnap EXCEPT ![p] = 0]
    /\ unal' = [unal EXCEPT ![p] = ~aligned]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ inpart' = [inpart EXCEPT ![r] =
                    [c \in DataChans |->
                       IF Dst[c] = p /\ ~aligned /\ (closed[c] < r \/ Bug = "persist_aligned")
                         THEN PreBarrier(ibuf[c], r) ELSE inpart[r][c]]]
    /\ sentAt' = [sentAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Src[c] = p THEN nsent[c] ELSE sentAt[r][c]]]
    /\ rcvdAt' = [rcvdAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Dst[c] = p THEN nrcvd[c] ELSE rcvdAt[r][c]]]
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, closed, arrivedB, outpart>>

Snapshot(p) ==
    LET r == rec[p] + 1 IN
    /\ p \in Procs
    /\ r <= Rounds
    /\ pending[p] = {}
    /\ \/ mustSnap[p] = r /\ TakeSnapshot(p, r, FALSE)           \* after a priority barrier
       \/ mustSnap[p] = 0 /\ In(p) = {} /\ TakeSnapshot(p, r, TRUE)   \* a source without inputs
       \/ /\ Mode = "aligned_timeout" /\ mustSnap[p] = 0 /\ In(p) # {}
          /\ \/ (\A c \in In(p) : closed[c] = r) /\ TakeSnapshot(p, r, TRUE)   \* aligned
             \/ /\ RoundStarted(r)                 \* timed out before a priority barrier came
                /\ In(p) \cap DataChans # {}
                /\ \E c \in In(p) : closed[c] < r
                /\ TakeSnapshot(p, r, FALSE)

StartRound(p) ==
    /\ p \in Coords
    /\ pending[p] = {}
    /\ rec[p] < Rounds
    /\ rec' = [rec EXCEPT ![p] = @ + 1]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, mustSnap, unal, closed, arrivedB, inpart,
                   outpart, sentAt, rcvdAt>>

RoundDone(r) ==
    /\ \A p \in Procs : rec[p] >= r
    /\ \A c \in Chans : closed[c] >= r

Finished ==
    /\ \A r \in RoundIds : RoundDone(r)
    /\ \A c \in Chans : wire[c] = <<>> /\ ibuf[c] = <<>>
    /\ \A c \in DataChans : nsent[c] = MaxData
    /\ \A p \in AllProcs : ~Busy(p)
    /\ UNCHANGED vars

Next ==
    \/ \E c \in Chans : Send(c) \/ Arrive(c) \/ Recv(c) \/ RecvBarrier(c)
    \/ \E p \in AllProcs : Snapshot(p) \/ StartRound(p) \/ \E c \in Chans : SendBarrier(p, c)
    \/ Finished

Fairness ==
    /\ \A c \in Chans : WF_vars(Arrive(c)) /\ WF_vars(Recv(c)) /\ WF_vars(RecvBarrier(c))
    /\ \A p \in AllProcs : WF_vars(Snapshot(p)) /\ WF_vars(StartRound(p))
                           /\ \A c \in Chans : WF_vars(SendBarrier(p, c))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

(***************************************************************************)
(* Refinement of the abstract consistent snapshot: c's state for round r   *)
(* is final once its destination snapshotted and the barrier arrived.      *)
(***************************************************************************)
SealedNow(r, c) == rec[Dst[c]] >= r /\ arrivedB[c] >= r

Abs == INSTANCE ConsistentSnapshot WITH
    DataChans <- DataChans,
    sent <- nsent,
    rcvd <- nrcvd,
    taken <- [r \in RoundIds |-> [p \in Procs |-> rec[p] >= r]],
    sealed <- [r \in RoundIds |-> [c \in DataChans |-> SealedNow(r, c)]],
    cs <- [r \in RoundIds |-> [c \in DataChans |->
              IF SealedNow(r, c) THEN inpart[r][c] \o outpart[r][c] ELSE <<>>]]

AbsSpec == Abs!Spec
Consistent == Abs!Consistent
ChannelStateExact == Abs!ChannelStateExact

Started(r) == \E p \in AllProcs : rec[p] >= r
Termination == \A r \in RoundIds : Started(r) ~> RoundDone(r)

(***************************************************************************)
(* Traps (must be violated).                                               *)
(***************************************************************************)
\* A barrier overtook output data, which was persisted as output part.
TrapOutputPart == ~(\E r \in RoundIds, c \in DataChans : outpart[r][c] # <<>>)
\* In-flight input data was persisted.
TrapInputPart == ~(\E r \in RoundIds, c \in DataChans : SealedNow(r, c) /\ inpart[r][c] # <<>>)
\* A mixed snapshot (docs/theory.md, "Aligned checkpoints with a timeout"): a task
\* timed out after one input had aligned (empty input part) and persisted in-flight
\* data of another input.
TrapTimeoutSwitch ==
    ~(\E p \in Procs :
        LET r == rec[p] IN
        /\ r >= 1 /\ unal[p]
        /\ \E c \in In(p) \cap DataChans : closed[c] >= r /\ inpart[r][c] = <<>>
        /\ \E c \in In(p) \cap DataChans : inpart[r][c] # <<>>)
=============================================================================

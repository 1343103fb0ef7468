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
(*                        ChannelStateExact);                              *)
(*   "no_cancel"          a declining task sends nothing downstream and    *)
(*                        the coordinator's abort does not reach the tasks *)
(*                        (as MCABS_bug_no_cancel; here the timeout still  *)
(*                        unblocks: MCUnaligned_timeout_heavy_diamond).    *)
(*                                                                         *)
(* Rounds that do not complete, as in ABS.tla: instead of a snapshot a     *)
(* task may decline a round in DeclineRounds (sending cancellation markers *)
(* of the round on its outputs: FIFO, never overtaking; optional in mode   *)
(* unaligned, where no input waits for them); a task                       *)
(* gives up a round it is aligning when it processes a cancellation marker *)
(* of it, a barrier of a newer round, or learns that the coordinator      *)
(* aborted it; markers of rounds a task already handled are dropped (in    *)
(* mode unaligned wherever they stand, in mode aligned_timeout at the head *)
(* of the buffer, and a priority barrier of a newer round may overtake     *)
(* them, as it may overtake any older barrier), except a cancellation      *)
(* marker of the round a task took an unaligned snapshot of and still      *)
(* records channel state for: the task                                     *)
(* gives that round up too and may forward cancellation markers behind its *)
(* barriers, as Flink does; the coordinator completes, aborts (after a     *)
(* decline, a newer completion, or a timeout if Timeouts) and keeps at     *)
(* most MaxInFlight rounds in flight.  Backpressure: a data channel (wire  *)
(* and input buffer) holds at most Capacity records; an operator emitting  *)
(* into a full channel blocks; barriers and cancellation markers need no   *)
(* credit.  A timed-out alignment switches to an unaligned snapshot, which *)
(* unblocks the inputs: unlike aligned ABS (MCABS_bug_no_cancel), aligned  *)
(* checkpoints with a timeout do not deadlock after a declined round even  *)
(* without cancellation (MCUnaligned_timeout_heavy_diamond).               *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Procs, Coords, Chans, CtrlChans, Src, Dst,
    Rounds,
    MaxData,        \* MaxData[c]: the records data channel c carries
    Mode,           \* "unaligned" or "aligned_timeout"
    Bug,
    Capacity,       \* records a data channel (wire and input buffer) holds
    DeclineRounds,  \* the rounds a task may decline
    Timeouts,       \* TRUE: the coordinator may abort any round in flight
    MaxInFlight     \* rounds the coordinator keeps in flight at most

ASSUME Mode \in {"unaligned", "aligned_timeout"}
ASSUME Bug \in {"none", "no_output_persist", "late_snapshot", "persist_aligned", "no_cancel"}
ASSUME Capacity \in Nat \ {0} /\ DeclineRounds \subseteq 1..Rounds /\ Timeouts \in BOOLEAN
ASSUME MaxInFlight \in Nat \ {0} /\ MaxData \in [Chans \ CtrlChans -> Nat]

VARIABLES
    wire,      \* wire[c]: sent, not arrived (output buffer + network), FIFO
    ibuf,      \* ibuf[c]: arrived, not processed; handled markers are removed
    nsent, nrcvd,
    rec,       \* rec[p]: the newest round p handled -- snapshotted, declined or given up
               \* (coordinator: the last round started)
    took,      \* took[p]: the rounds p snapshotted
    mustSnap,  \* mustSnap[p]: round whose first barrier p handled as a priority event, 0: none
    unal,      \* unal[p]: p's snapshot of round rec[p] was unaligned (and p has not given it up)
    pending,   \* pending[p]: outputs still waiting for p's marker of round rec[p]
    owe,       \* owe[p]: the kind of that marker, "b" (barrier) or "cancel"
    emitting,  \* emitting[p]: the full channel p's operator is blocked emitting into ("": none)
    completed, aborted,   \* rounds the coordinator completed / aborted
    closed,    \* closed[c]: round of the last marker handled on c
    arrivedB,  \* arrivedB[c]: round of the last marker (barrier or cancellation) arrived on c
    inpart,    \* inpart[r][c]: input part of c's channel state, round r
    outpart,   \* outpart[r][c]: output part of c's channel state, round r
    sentAt, rcvdAt

vars == <<wire, ibuf, nsent, nrcvd, rec, took, mustSnap, unal, pending, owe, emitting, completed,
          aborted, closed, arrivedB, inpart, outpart, sentAt, rcvdAt>>

AllProcs == Procs \cup Coords
DataChans == Chans \ CtrlChans
RoundIds == 1..Rounds
Out(p) == {c \in Chans : Src[c] = p}
In(p) == {c \in Chans : Dst[c] = p}
Data(n) == [k |-> "d", n |-> n]
Barrier(r) == [k |-> "b", n |-> r]
MaxOf(S) == CHOOSE x \in S : \A y \in S : x >= y

\* Positions of barriers / of markers (barriers and cancellation markers) in a queue.
BarrierPos(q) == {pos \in 1..Len(q) : q[pos].k = "b"}
MarkerPos(q) == {pos \in 1..Len(q) : q[pos].k # "d"}
FirstBarrier(q) == IF BarrierPos(q) = {} THEN Len(q) + 1
                   ELSE CHOOSE pos \in BarrierPos(q) : \A pos2 \in BarrierPos(q) : pos <= pos2
LastMarker(q) == IF MarkerPos(q) = {} THEN 0 ELSE MaxOf(MarkerPos(q))
\* The data message numbers in a queue, in order.
DataNums(q) == LET d == SelectSeq(q, LAMBDA m : m.k = "d") IN [pos \in 1..Len(d) |-> d[pos].n]
\* The data queued in q ahead of the barrier of round r (or of a later round).
PreBarrier(q, r) ==
    LET later == {pos \in BarrierPos(q) : q[pos].n >= r}
        end == IF later = {} THEN Len(q) + 1 ELSE CHOOSE pos \in later : \A pos2 \in later : pos <= pos2
    IN DataNums(SubSeq(q, 1, end - 1))
RemoveAt(q, pos) == SubSeq(q, 1, pos - 1) \o SubSeq(q, pos + 1, Len(q))

Records(c) == Len(DataNums(wire[c])) + Len(DataNums(ibuf[c]))
Room(c) == Records(c) < Capacity
Busy(p) == mustSnap[p] # 0 \/ pending[p] # {} \/ emitting[p] # ""
\* Round r was started (its barriers are on their way).
RoundStarted(r) == \E q \in AllProcs : rec[q] >= r
InFlight == {r \in RoundIds : RoundStarted(r) /\ r \notin completed \cup aborted}
\* Aligned mode: c delivered a marker of a round newer than Dst[c] handled.
Blocked(c) == closed[c] > rec[Dst[c]]
\* The round p is aligning (0: none).
Aligning(p) ==
    LET rs == {closed[c] : c \in In(p)} \cap {r \in RoundIds : r > rec[p]}
    IN IF rs = {} THEN 0 ELSE MaxOf(rs)
\* Dst[c] persists the data arriving on c for round r.
Persisting(r, c) == r \in took[Dst[c]] /\ arrivedB[c] < r

TypeOK ==
    /\ wire \in [Chans -> Seq([k : {"d", "b", "cancel"}, n : Nat])]
    /\ ibuf \in [Chans -> Seq([k : {"d", "b", "cancel"}, n : Nat])]
    /\ nsent \in [DataChans -> Nat] /\ nrcvd \in [DataChans -> Nat]
    /\ \A c \in DataChans : nrcvd[c] <= nsent[c] /\ nsent[c] <= MaxData[c] /\ Records(c) <= Capacity
    /\ rec \in [AllProcs -> 0..Rounds]
    /\ took \in [AllProcs -> SUBSET RoundIds]
    /\ mustSnap \in [AllProcs -> 0..Rounds]
    /\ unal \in [AllProcs -> BOOLEAN]
    /\ pending \in [AllProcs -> SUBSET Chans]
    /\ owe \in [AllProcs -> {"b", "cancel"}]
    /\ emitting \in [AllProcs -> DataChans \cup {""}]
    /\ completed \subseteq RoundIds /\ aborted \subseteq RoundIds
    /\ closed \in [Chans -> 0..Rounds]
    /\ arrivedB \in [Chans -> 0..Rounds]
    /\ inpart \in [RoundIds -> [DataChans -> Seq(Nat)]]
    /\ outpart \in [RoundIds -> [DataChans -> Seq(Nat)]]

\* The initial state with the given messages on the wires and in the input
\* buffers and the given channel counters (trace validation starts segments of
\* a trace in such states).
InitWith(wires, bufs, ns, nr) ==
    /\ wire = wires
    /\ ibuf = bufs
    /\ nsent = ns
    /\ nrcvd = nr
    /\ rec = [p \in AllProcs |-> 0]
    /\ took = [p \in AllProcs |-> {}]
    /\ mustSnap = [p \in AllProcs |-> 0]
    /\ unal = [p \in AllProcs |-> FALSE]
    /\ pending = [p \in AllProcs |-> {}]
    /\ owe = [p \in AllProcs |-> "b"]
    /\ emitting = [p \in AllProcs |-> ""]
    /\ completed = {} /\ aborted = {}
    /\ closed = [c \in Chans |-> 0]
    /\ arrivedB = [c \in Chans |-> 0]
    /\ inpart = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ outpart = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ sentAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]

Init == InitWith([c \in Chans |-> <<>>], [c \in Chans |-> <<>>], [c \in DataChans |-> 0],
                 [c \in DataChans |-> 0])

\* The operator emits a record into its output buffer; into a full channel it blocks.
Send(c) ==
    LET p == Src[c] IN
    /\ c \in DataChans
    /\ ~Busy(p)
    /\ nsent[c] < MaxData[c]
    /\ IF Room(c)
         THEN /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
              /\ wire' = [wire EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
              /\ UNCHANGED emitting
         ELSE /\ emitting' = [emitting EXCEPT ![p] = c]
              /\ UNCHANGED <<nsent, wire>>
    /\ UNCHANGED <<ibuf, nrcvd, rec, took, mustSnap, unal, pending, owe, completed, aborted, closed,
                   arrivedB, inpart, outpart, sentAt, rcvdAt>>

\* The blocked record enters its channel once the channel has room.
SendBlocked(p) ==
    LET c == emitting[p] IN
    /\ c # ""
    /\ Room(c)
    /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
    /\ wire' = [wire EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
    /\ emitting' = [emitting EXCEPT ![p] = ""]
    /\ UNCHANGED <<ibuf, nrcvd, rec, took, mustSnap, unal, pending, owe, completed, aborted, closed,
                   arrivedB, inpart, outpart, sentAt, rcvdAt>>

\* p forwards its barrier on c, inserted ahead of the last records of wire[c]
\* (its output buffer, behind the last marker), which it persists as the output
\* part.  An aligned snapshot may overtake too: what it overtakes is persisted,
\* so the snapshot stays exact (the reference overtakes whenever its task
\* switched).  A cancellation marker goes at the end of the wire (FIFO).
SendMarker(p, c) ==
    LET r == rec[p]
        q == wire[c] IN
    /\ c \in pending[p]
    /\ IF owe[p] = "b"
         THEN \E k \in LastMarker(q)..Len(q) :
                 /\ wire' = [wire EXCEPT ![c] = SubSeq(q, 1, k) \o <<Barrier(r)>> \o SubSeq(q, k + 1, Len(q))]
                 /\ outpart' = IF c \in DataChans /\ Bug # "no_output_persist"
                                 THEN [outpart EXCEPT ![r][c] = DataNums(SubSeq(q, k + 1, Len(q)))]
                                 ELSE outpart
         ELSE /\ wire' = [wire EXCEPT ![c] = Append(@, [k |-> "cancel", n |-> r])]
              /\ UNCHANGED outpart
    /\ pending' = [pending EXCEPT ![p] = @ \ {c}]
    /\ owe' = IF pending[p] = {c} THEN [owe EXCEPT ![p] = "b"] ELSE owe   \* "b" whenever nothing is owed
    /\ UNCHANGED <<ibuf, nsent, nrcvd, rec, took, mustSnap, unal, emitting, completed, aborted, closed,
                   arrivedB, inpart, sentAt, rcvdAt>>

\* The message at the head of wire[c] reaches the input buffer of Dst[c].
Arrive(c) ==
    LET m == Head(wire[c]) IN
    /\ wire[c] # <<>>
    /\ wire' = [wire EXCEPT ![c] = Tail(@)]
    /\ ibuf' = [ibuf EXCEPT ![c] = Append(@, m)]
    /\ IF m.k # "d"
         THEN /\ arrivedB' = [arrivedB EXCEPT ![c] = m.n]
              /\ UNCHANGED inpart
         ELSE /\ inpart' = [r \in RoundIds |->
                              [inpart[r] EXCEPT ![c] = IF Persisting(r, c) THEN Append(@, m.n) ELSE @]]
              /\ UNCHANGED arrivedB
    /\ UNCHANGED <<nsent, nrcvd, rec, took, mustSnap, unal, pending, owe, emitting, completed, aborted,
                   closed, outpart, sentAt, rcvdAt>>

\* Dst[c] processes the record at the head of its input buffer.
Recv(c) ==
    LET p == Dst[c] IN
    /\ ibuf[c] # <<>>
    /\ Head(ibuf[c]).k = "d"
    /\ pending[p] = {} /\ emitting[p] = ""
    /\ mustSnap[p] = 0 \/ Bug = "late_snapshot"
    /\ ~Blocked(c) \/ Bug = "late_snapshot"
    /\ ibuf' = [ibuf EXCEPT ![c] = Tail(@)]
    /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<wire, nsent, rec, took, mustSnap, unal, pending, owe, emitting, completed, aborted,
                   closed, arrivedB, inpart, outpart, sentAt, rcvdAt>>

\* p gives up round r, which it did not snapshot; it may forward cancellation markers.
GiveUp(p, r) ==
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ \/ UNCHANGED <<pending, owe>>
       \/ /\ Out(p) # {} /\ Bug # "no_cancel"
          /\ pending' = [pending EXCEPT ![p] = Out(p)]
          /\ owe' = [owe EXCEPT ![p] = "cancel"]

\* The positions of the barriers Dst[c] may handle next on c: the first one, and
\* in mode aligned_timeout any one (Flink, on an alignment timeout, turns the
\* pending checkpoint's barrier into a priority event that jumps the queue,
\* older barriers included: their checkpoints are subsumed, and a barrier of an
\* older checkpoint is ignored when the task reaches it; the reference does the
\* same).  Which of them may be handled, and how, RecvBarrierAt says: one behind
\* another barrier only as a priority event.
NextBarriers(c) ==
    {pos \in BarrierPos(ibuf[c]) : Mode = "aligned_timeout" \/ pos = FirstBarrier(ibuf[c])}

\* Dst[c] handles the barrier at position pos of its input buffer of c (one of
\* NextBarriers(c)), either
\*  - aligned (mode aligned_timeout): at the head of the buffer; c is blocked
\*    until the snapshot; an older round p was aligning is given up; or
\*  - as a priority event wherever it stands (mode unaligned; in mode
\*    aligned_timeout once the round has timed out -- the reference's rule is a
\*    barrier that arrives after the timeout or from a sender that switched),
\*    also ahead of older barriers (mode aligned_timeout): the first one of
\*    a round triggers an unaligned snapshot, and the data queued ahead of it
\*    is in transit (its input part); later ones only end the recording of
\*    their channel; or
\*  - as obsolete (a round p handled without snapshotting it, or older than the
\*    one it aligns): dropped, in mode aligned_timeout only at the head; closed[c]
\*    never goes back (a newer barrier may have overtaken it).
RecvBarrierAt(c, pos) ==
    LET p == Dst[c]
        r == ibuf[c][pos].n
        cur == Aligning(p)
        after == r <= rec[p] /\ r \in took[p] /\ closed[c] < r /\ (Mode = "unaligned" \/ unal[p]) IN
    /\ ~Busy(p)
    /\ ~Blocked(c)
    /\ ibuf' = [ibuf EXCEPT ![c] = RemoveAt(@, pos)]
    /\ IF r <= rec[p] \/ r < cur
         THEN /\ closed' = [closed EXCEPT ![c] = IF r <= rec[p] /\ r > @ THEN r ELSE @]
              /\ after \/ (pos = FirstBarrier(ibuf[c]) /\ (Mode = "unaligned" \/ pos = 1))
              /\ UNCHANGED <<rec, pending, owe, mustSnap, inpart>>
         ELSE /\ closed' = [closed EXCEPT ![c] = r]
              /\ IF cur # 0 /\ cur < r THEN GiveUp(p, cur) ELSE UNCHANGED <<rec, pending, owe>>
              /\ \/ /\ Mode = "aligned_timeout" /\ pos = 1                  \* aligned
                    /\ UNCHANGED <<mustSnap, inpart>>
                 \/ \* priority: the trigger (in aligned_timeout mode not for the last
                    \* barrier at the head: its aligned handling leads to the same snapshot)
                    /\ Mode = "unaligned" \/ pos > 1 \/ \E c2 \in In(p) \ {c} : closed[c2] < r
                    /\ mustSnap' = [mustSnap EXCEPT ![p] = r]
                    /\ inpart' = IF c \in DataChans
                                   THEN [inpart EXCEPT ![r][c] = DataNums(SubSeq(ibuf[c], 1, pos - 1))]
                                   ELSE inpart
    /\ UNCHANGED <<wire, nsent, nrcvd, took, unal, emitting, completed, aborted, arrivedB, outpart,
                   sentAt, rcvdAt>>

RecvBarrier(c) == \E pos \in NextBarriers(c) : RecvBarrierAt(c, pos)

\* p took an unaligned snapshot of its newest round r and still records the channel
\* state of an input whose marker of r has not come; it has not given r up since.
Recording(p, r) == r = rec[p] /\ r \in took[p] /\ unal[p] /\ \E c \in In(p) : closed[c] < r

\* Dst[c] processes the cancellation marker at the head of its input buffer of c:
\* it gives up that round (and any older one it aligns) unless it is obsolete.  A
\* task still recording the channel state of the round it snapshotted last gives
\* that round up too and may forward cancellation markers behind its barriers:
\* Flink's barrier handler acts on a cancellation of the pending checkpoint until
\* every barrier of it arrived, and its task then broadcasts a cancellation marker.
RecvCancel(c) ==
    LET p == Dst[c]
        r == Head(ibuf[c]).n
        cur == Aligning(p) IN
    /\ ibuf[c] # <<>>
    /\ Head(ibuf[c]).k = "cancel"
    /\ ~Busy(p)
    /\ ~Blocked(c)
    /\ ibuf' = [ibuf EXCEPT ![c] = Tail(@)]
    /\ IF r <= rec[p] \/ r < cur
         THEN /\ closed' = [closed EXCEPT ![c] = IF r <= rec[p] THEN r ELSE @]
              /\ IF Recording(p, r)
                   THEN GiveUp(p, r) /\ unal' = [unal EXCEPT ![p] = FALSE]
                   ELSE UNCHANGED <<rec, pending, owe, unal>>
         ELSE /\ closed' = [closed EXCEPT ![c] = r]
              /\ GiveUp(p, r)
              /\ UNCHANGED unal
    /\ UNCHANGED <<wire, nsent, nrcvd, took, mustSnap, emitting, completed, aborted, arrivedB,
                   inpart, outpart, sentAt, rcvdAt>>

\* p records its local state for round r; aligned = FALSE persists in-flight input.
TakeSnapshot(p, r, aligned) ==
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ took' = [took EXCEPT ![p] = @ \cup {r}]
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
    /\ UNCHANGED <<owe, outpart>>

\* p declines round r instead: no snapshot, nothing persisted for it.  In mode
\* aligned_timeout it sends cancellation markers of r on its outputs (as aligned
\* ABS does); in mode unaligned, where no input ever waits, it may.
DeclineSnapshot(p, r) ==
    /\ r \in DeclineRounds
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ mustSnap' = [mustSnap EXCEPT ![p] = 0]
    /\ inpart' = [inpart EXCEPT ![r] = [c \in DataChans |-> IF Dst[c] = p THEN <<>> ELSE @[c]]]
    /\ \/ (Mode = "unaligned" \/ Bug = "no_cancel" \/ Out(p) = {}) /\ UNCHANGED <<pending, owe>>
       \/ /\ Out(p) # {} /\ Bug # "no_cancel"
          /\ pending' = [pending EXCEPT ![p] = Out(p)]
          /\ owe' = [owe EXCEPT ![p] = "cancel"]
    /\ UNCHANGED <<took, unal, sentAt, rcvdAt, outpart>>

\* p snapshots (or declines) round r; aligned = FALSE persists in-flight input.
Decide(p, r, aligned) == TakeSnapshot(p, r, aligned) \/ DeclineSnapshot(p, r)

Snapshot(p) ==
    LET cur == Aligning(p) IN
    /\ p \in Procs
    /\ pending[p] = {} /\ emitting[p] = ""
    /\ \/ mustSnap[p] # 0 /\ Decide(p, mustSnap[p], FALSE)          \* after a priority barrier
       \/ /\ mustSnap[p] = 0 /\ In(p) = {} /\ rec[p] < Rounds      \* a source without inputs
          /\ Decide(p, rec[p] + 1, TRUE)
       \/ /\ Mode = "aligned_timeout" /\ mustSnap[p] = 0 /\ In(p) # {}
          /\ \/ cur # 0 /\ (\A c \in In(p) : closed[c] = cur) /\ Decide(p, cur, TRUE)   \* aligned
             \/ \E r \in RoundIds :                  \* timed out before a priority barrier came
                /\ r > rec[p] /\ (cur = 0 \/ r = cur)
                /\ RoundStarted(r)
                /\ In(p) \cap DataChans # {}
                /\ \E c \in In(p) : closed[c] < r
                /\ Decide(p, r, FALSE)
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, emitting, completed, aborted, closed, arrivedB, outpart>>

\* The coordinator's abort reaches p while p aligns the aborted round: p gives it up.
LearnAbort(p) ==
    /\ Bug # "no_cancel"
    /\ p \in Procs
    /\ ~Busy(p)
    /\ Aligning(p) \in aborted
    /\ GiveUp(p, Aligning(p))
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, took, mustSnap, unal, emitting, completed, aborted, closed,
                   arrivedB, inpart, outpart, sentAt, rcvdAt>>

StartRound(p) ==
    /\ p \in Coords
    /\ pending[p] = {}
    /\ rec[p] < Rounds
    /\ Cardinality(InFlight) < MaxInFlight
    /\ rec' = [rec EXCEPT ![p] = @ + 1]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, took, mustSnap, unal, owe, emitting, completed, aborted,
                   closed, arrivedB, inpart, outpart, sentAt, rcvdAt>>

\* The coordinator completes round r: every task snapshotted it.
Complete(r) ==
    /\ r \in RoundIds \ (completed \cup aborted)
    /\ \A p \in Procs : r \in took[p]
    /\ completed' = completed \cup {r}
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, rec, took, mustSnap, unal, pending, owe, emitting, aborted,
                   closed, arrivedB, inpart, outpart, sentAt, rcvdAt>>

\* The coordinator aborts round r: a task declined or gave it up, a newer completed
\* round subsumes it, or (with Timeouts) it timed out.
Abort(r) ==
    /\ r \in RoundIds \ (completed \cup aborted)
    /\ RoundStarted(r)
    /\ \/ Timeouts
       \/ \E p \in Procs : rec[p] >= r /\ r \notin took[p]
       \/ \E r2 \in completed : r2 > r
    /\ aborted' = aborted \cup {r}
    /\ UNCHANGED <<wire, ibuf, nsent, nrcvd, rec, took, mustSnap, unal, pending, owe, emitting, completed,
                   closed, arrivedB, inpart, outpart, sentAt, rcvdAt>>

RoundDone(r) ==
    /\ \A p \in Procs : r \in took[p]
    /\ \A c \in Chans : closed[c] >= r

\* Every round was started and completed or aborted, nothing is in flight, nothing waits.
Finished ==
    /\ \A p \in Coords : rec[p] = Rounds
    /\ \A r \in RoundIds : r \in completed \cup aborted
    /\ \A c \in Chans : wire[c] = <<>> /\ ibuf[c] = <<>> /\ ~Blocked(c)
    /\ \A c \in DataChans : nsent[c] = MaxData[c]
    /\ \A p \in AllProcs : ~Busy(p)
    /\ UNCHANGED vars

Next ==
    \/ \E c \in Chans : Send(c) \/ Arrive(c) \/ Recv(c) \/ RecvBarrier(c) \/ RecvCancel(c)
    \/ \E p \in AllProcs : \/ Snapshot(p) \/ LearnAbort(p) \/ StartRound(p) \/ SendBlocked(p)
                           \/ \E c \in Chans : SendMarker(p, c)
    \/ \E r \in RoundIds : Complete(r) \/ Abort(r)
    \/ Finished

Fairness ==
    /\ \A c \in Chans : /\ WF_vars(Arrive(c)) /\ WF_vars(Recv(c)) /\ WF_vars(RecvBarrier(c))
                        /\ WF_vars(RecvCancel(c))
    /\ \A p \in AllProcs : /\ WF_vars(Snapshot(p)) /\ WF_vars(LearnAbort(p)) /\ WF_vars(StartRound(p))
                           /\ WF_vars(SendBlocked(p)) /\ \A c \in Chans : WF_vars(SendMarker(p, c))
    /\ \A r \in RoundIds : WF_vars(Complete(r)) /\ WF_vars(Abort(r))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

(***************************************************************************)
(* Refinement of the abstract consistent snapshot: c's state for round r   *)
(* is final once both ends snapshotted and the barrier arrived.            *)
(***************************************************************************)
SealedNow(r, c) == r \in took[Dst[c]] /\ r \in took[Src[c]] /\ arrivedB[c] >= r

\* The most records any channel carries (the abstract snapshot bounds all alike).
MaxSends == MaxOf({MaxData[c] : c \in DataChans} \cup {0})

Abs == INSTANCE ConsistentSnapshot WITH
    DataChans <- DataChans,
    MaxData <- MaxSends,
    sent <- nsent,
    rcvd <- nrcvd,
    taken <- [r \in RoundIds |-> [p \in Procs |-> r \in took[p]]],
    sealed <- [r \in RoundIds |-> [c \in DataChans |-> SealedNow(r, c)]],
    cs <- [r \in RoundIds |-> [c \in DataChans |->
              IF SealedNow(r, c) THEN inpart[r][c] \o outpart[r][c] ELSE <<>>]]

\* Every step is a step of the abstract snapshot, without its initial condition:
\* trace validation in segments starts from a state in the middle of a run.
\* Cheap cases first (TLC evaluates the disjuncts in order): a step that
\* leaves the mapping's variables unchanged is an abstract stutter; a step that
\* only sends or processes one data message on c is Abs!Send(c) or Abs!Recv(c),
\* because the other abstract variables are functions of <<took, arrivedB, inpart, outpart, sentAt, rcvdAt>>.
DataStep ==
    /\ UNCHANGED <<took, arrivedB, inpart, outpart, sentAt, rcvdAt>>
    /\ \E c \in DataChans :
          \/ nsent[c] < MaxSends /\ nsent' = [nsent EXCEPT ![c] = @ + 1] /\ nrcvd' = nrcvd
          \/ nrcvd[c] < nsent[c] /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1] /\ nsent' = nsent
\* Then the abstract step a snapshot or a seal is, named from the concrete change
\* (p takes round r and seals the channels into p that the step makes final; or
\* one channel's state becomes final) instead of searched for among all of
\* Abs!Next's steps (which tries every round, process and subset of inputs,
\* recomputing the mapping each time); then a step that leaves the abstract
\* state unchanged.  Each case is one of Abs!Next's steps or a stutter, so the
\* property is the same; Abs!Next, last, judges every other step.
TakeStep ==
    \E p \in Procs : \E r \in took'[p] \ took[p] :
        Abs!Take(r, p, {c \in DataChans : Dst[c] = p /\ ~SealedNow(r, c) /\ SealedNow(r, c)'})
SealStep ==
    /\ UNCHANGED took
    /\ \E r \in RoundIds, c \in DataChans : ~SealedNow(r, c) /\ SealedNow(r, c)' /\ Abs!Seal(r, c)
AbsSteps ==
    [][\/ UNCHANGED <<nsent, nrcvd, took, arrivedB, inpart, outpart, sentAt, rcvdAt>>
       \/ DataStep \/ TakeStep \/ SealStep \/ UNCHANGED Abs!absvars
       \/ Abs!Next]_Abs!absvars
AbsSpec == Abs!Init /\ AbsSteps
Consistent == Abs!Consistent
ChannelStateExact == Abs!ChannelStateExact

\* Every started round completes (all its barriers handled) or is aborted.
Termination == \A r \in RoundIds : RoundStarted(r) ~> ((RoundDone(r) /\ r \in completed) \/ r \in aborted)
\* No input stays blocked forever.
Unblocks == \A c \in Chans : Blocked(c) ~> ~Blocked(c)

(***************************************************************************)
(* Traps (must be violated).                                               *)
(***************************************************************************)
\* A barrier overtook output data, which was persisted as output part.
TrapOutputPart == ~(\E r \in RoundIds, c \in DataChans : outpart[r][c] # <<>>)
\* In-flight input data was persisted.
TrapInputPart == ~(\E r \in RoundIds, c \in DataChans : SealedNow(r, c) /\ inpart[r][c] # <<>>)
\* A barrier overtook an older one in an input buffer (mode aligned_timeout: a
\* priority barrier ahead of an older one).
TrapObsoleteOvertaken == ~(\E c \in Chans : \E pos \in BarrierPos(ibuf[c]) : ibuf[c][pos].n < closed[c])
\* A mixed snapshot (docs/theory.md, "Aligned checkpoints with a timeout"): a task
\* timed out after one input had aligned (empty input part) and persisted in-flight
\* data of another input.
TrapTimeoutSwitch ==
    ~(\E p \in Procs :
        LET r == rec[p] IN
        /\ r \in took[p] /\ unal[p]
        /\ \E c \in In(p) \cap DataChans : closed[c] >= r /\ inpart[r][c] = <<>>
        /\ \E c \in In(p) \cap DataChans : inpart[r][c] # <<>>)
=============================================================================

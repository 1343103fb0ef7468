------------------------------------ MODULE ABS ------------------------------------
(***************************************************************************)
(* Asynchronous Barrier Snapshotting (ABS), aligned: Algorithm 1 (acyclic  *)
(* dataflows) and Algorithm 2 (cyclic dataflows, back-edge logging), with  *)
(* declined and aborted rounds, cancellation markers and backpressure.     *)
(*                                                                         *)
(* Source: P. Carbone, G. Fora, S. Ewen, S. Haridi, K. Tzoumas,            *)
(* "Lightweight Asynchronous Snapshots for Distributed Dataflows" (2015),  *)
(* Algorithms 1 and 2; docs/theory.md, "Aligned ABS" and "Cyclic ABS".     *)
(* Declines, aborts and cancellation as in Apache Flink                    *)
(* (CancelCheckpointMarker, the coordinator's notifyCheckpointAborted, a   *)
(* newer barrier subsuming a pending alignment); backpressure as in        *)
(* Flink's credit-based flow control.                                      *)
(*                                                                         *)
(* A task that processes barrier r on input c blocks c: records behind the *)
(* barrier wait.  When barrier r was processed on every regular input (all *)
(* inputs that are not back-edges) the task takes its snapshot, forwards   *)
(* barrier r on every output and unblocks.  Back-edges (BackEdges, found   *)
(* by a DFS of the dataflow) are not waited for: from the snapshot until  *)
(* barrier r arrives on a back-edge, the records processed from that       *)
(* back-edge are logged; the log is that channel's recorded state.  With   *)
(* BackEdges = {} this is Algorithm 1, whose snapshots have empty channel  *)
(* state -- and which deadlocks on a cyclic dataflow (MCABS_cycle_aligned).*)
(*                                                                         *)
(* Early back-edge barriers.  Algorithm 2 takes for granted that barrier r *)
(* comes back round the loop only after the task's own snapshot.  With the *)
(* loop in parallel subtasks it can come back sooner, through subtasks     *)
(* that aligned first (MCABS_loop_par); the records behind it were sent    *)
(* after their sender's snapshot.  A back-edge whose barrier of a round    *)
(* newer than the task's last handled one was processed is therefore held  *)
(* (blocked) like a regular input until the task snapshots, declines or    *)
(* gives up that round; a marker of a newer round on a back-edge ends an   *)
(* older alignment as on a regular input, and a cancellation marker on a   *)
(* back-edge gives its round up.  Back-edges need no credit (feedback      *)
(* queues are unbounded, as in the reference): a held back-edge never      *)
(* backpressures the loop.                                                 *)
(*                                                                         *)
(* Rounds that do not complete.  Instead of its snapshot an aligned task   *)
(* may decline a round in DeclineRounds: it takes no snapshot, tells the   *)
(* coordinator, and sends a cancellation marker of the round on every      *)
(* output instead of the barrier.  A task gives up (abandons) the round it *)
(* is aligning -- unblocking its inputs -- when it processes a             *)
(* cancellation marker of that round or of a newer one, a barrier of a     *)
(* newer round (the newer round subsumes the older), or when it learns     *)
(* that the coordinator aborted the round; it may then forward            *)
(* cancellation markers of the abandoned round (Flink does, a protocol     *)
(* that does not is still live because every task learns of the abort).   *)
(* Markers of a round a task already handled, or older than the one it     *)
(* aligns, are dropped -- except a cancellation marker of the round a task *)
(* snapshotted last while it still waits for markers of that round on     *)
(* back-edges: the task gives that round up too, and may forward           *)
(* cancellation markers behind its barriers (Flink's barrier handler acts  *)
(* on a cancellation of the pending checkpoint until all of its barriers   *)
(* arrived, and its task then broadcasts a cancellation marker).  The      *)
(* coordinator completes a round every task snapshotted and aborts one     *)
(* that a task declined or gave up, that a newer completed round subsumes, *)
(* or -- if Timeouts -- any round in flight.  Barriers and cancellation    *)
(* markers travel FIFO with the records on the data channels.              *)
(*                                                                         *)
(* Backpressure.  A data channel holds at most Capacity records (its       *)
(* receiver's credits and its sender's buffers); barriers and cancellation *)
(* markers need no credit (Flink sends events without credit).  An        *)
(* operator that emits a record into a full channel blocks until the      *)
(* channel has room, and meanwhile does nothing else -- it processes       *)
(* neither records nor markers (nor the coordinator's trigger, at a       *)
(* source).                                                                *)
(*                                                                         *)
(* Sources are processes whose only inputs are control channels from a     *)
(* coordinator (Coords) or that have no input at all (then they start      *)
(* rounds on their own).                                                   *)
(*                                                                         *)
(* Reference implementation: reference/ (protocols "abs-aligned",          *)
(* "abs-cyclic").  Mutants (constant Bug):                                 *)
(*   "no_blocking"      records behind a barrier are processed before the  *)
(*                      snapshot (fails Consistent; cf. FLINK-17568);      *)
(*   "log_as_printed"   Algorithm 2 as printed: logging continues on every *)
(*                      back-edge until the barrier arrived on all of them *)
(*                      (fails ChannelStateExact with two back-edges into  *)
(*                      one task; docs/theory.md, "Pitfall: Algorithm 2    *)
(*                      as printed");                                      *)
(*   "early_back_edge"  Algorithm 2 as printed on a loop in parallel        *)
(*                      subtasks: a back-edge is never held, its markers   *)
(*                      only end its logging (fails Consistent on          *)
(*                      MCABS_bug_early_back_edge; docs/theory.md,         *)
(*                      "Pitfall: an early back-edge barrier");            *)
(*   "no_cancel"        a declining task sends nothing downstream, and     *)
(*                      the coordinator's abort does not reach the tasks:  *)
(*                      only a newer barrier ends a pending alignment.     *)
(*                      With backpressure a declined round deadlocks the   *)
(*                      dataflow (MCABS_bug_no_cancel).                    *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Procs, Coords, Chans, CtrlChans, Src, Dst,
    BackEdges,      \* back-edges of a cyclic dataflow ({} for Algorithm 1)
    Rounds,
    MaxData,        \* MaxData[c]: the records data channel c carries
    Bug,
    Capacity,       \* records a data channel holds (credit-based backpressure)
    DeclineRounds,  \* the rounds a task may decline
    Timeouts,       \* TRUE: the coordinator may abort any round in flight (checkpoint timeout)
    MaxInFlight     \* rounds the coordinator keeps in flight at most (Flink: max concurrent checkpoints)

ASSUME Bug \in {"none", "no_blocking", "log_as_printed", "no_cancel", "early_back_edge"}
ASSUME BackEdges \subseteq Chans \ CtrlChans
ASSUME Capacity \in Nat \ {0} /\ DeclineRounds \subseteq 1..Rounds /\ Timeouts \in BOOLEAN
ASSUME MaxInFlight \in Nat \ {0}
ASSUME MaxData \in [Chans \ CtrlChans -> Nat]

VARIABLES
    chan,      \* chan[c]: FIFO queue of messages [k |-> "d"|"b"|"cancel", n |-> seq|round]
    nsent, nrcvd,
    rec,       \* rec[p]: the newest round p handled -- snapshotted, declined or abandoned
               \* (coordinator: the last round started)
    took,      \* took[p]: the rounds p snapshotted
    closed,    \* closed[c]: round of the last barrier or cancellation marker processed on c
    pending,   \* pending[p]: outputs still waiting for p's marker of round rec[p]
    owe,       \* owe[p]: the kind of that marker, "b" (barrier) or "cancel"
    emitting,  \* emitting[p]: the full channel p's operator is blocked emitting a record into ("": none)
    completed, \* rounds the coordinator completed
    aborted,   \* rounds the coordinator aborted
    crec,      \* crec[r][c]: back-edge log of round r on c (message numbers)
    quit,      \* quit[p]: a round p gave up after its snapshot (0: none)
    sentAt, rcvdAt   \* history variables, as in ConsistentSnapshot

vars == <<chan, nsent, nrcvd, rec, took, closed, pending, owe, emitting, completed, aborted,
          crec, quit, sentAt, rcvdAt>>

AllProcs == Procs \cup Coords
DataChans == Chans \ CtrlChans
RoundIds == 1..Rounds
Out(p) == {c \in Chans : Src[c] = p}
In(p) == {c \in Chans : Dst[c] = p}
RegularIn(p) == In(p) \ BackEdges
\* The inputs whose markers p acts on (the others' markers only end their logging):
\* every input, or under "early_back_edge" the regular ones, as printed.
Watched(p) == IF Bug = "early_back_edge" THEN RegularIn(p) ELSE In(p)
Data(n) == [k |-> "d", n |-> n]
Barrier(r) == [k |-> "b", n |-> r]
MaxOf(S) == CHOOSE x \in S : \A y \in S : x >= y

\* Records queued on c: credit-based flow control admits a record only below Capacity.
Records(c) == Len(SelectSeq(chan[c], LAMBDA m : m.k = "d"))
Room(c) == c \in BackEdges \/ Records(c) < Capacity
Busy(p) == pending[p] # {} \/ emitting[p] # ""

\* The round p is aligning (0: none): a barrier of it was processed on a watched input.
Aligning(p) ==
    LET rs == {closed[c] : c \in Watched(p)} \cap {r \in RoundIds : r > rec[p]}
    IN IF rs = {} THEN 0 ELSE MaxOf(rs)
\* c is blocked: its destination processed a marker of a round newer than the newest it
\* handled; a back-edge only while that round is the one its destination aligns (an
\* early barrier; a back-edge marker of an older round is obsolete, and one never held
\* under "early_back_edge").
Blocked(c) ==
    /\ closed[c] > rec[Dst[c]]
    /\ c \in Watched(Dst[c])
    /\ c \in BackEdges => closed[c] = Aligning(Dst[c])
\* The round p snapshots or declines next; a process without regular inputs starts its next round.
NextRound(p) == IF RegularIn(p) = {} THEN rec[p] + 1 ELSE Aligning(p)
\* p is aligned: the barrier of that round was processed on every regular input.
Aligned(p) ==
    LET r == NextRound(p) IN
    /\ r > rec[p] /\ r <= Rounds
    /\ \A c \in RegularIn(p) : closed[c] = r
\* Back-edge c is being logged for round r.
Logging(r, c) ==
    /\ c \in BackEdges
    /\ r \in took[Dst[c]]
    /\ IF Bug = "log_as_printed"
         THEN \E c2 \in In(Dst[c]) \cap BackEdges : closed[c2] < r
         ELSE closed[c] < r
Started(r) == \E p \in AllProcs : rec[p] >= r
InFlight == {r \in RoundIds : Started(r) /\ r \notin completed \cup aborted}

TypeOK ==
    /\ chan \in [Chans -> Seq([k : {"d", "b", "cancel"}, n : Nat])]
    /\ nsent \in [DataChans -> Nat] /\ nrcvd \in [DataChans -> Nat]
    /\ \A c \in DataChans : nrcvd[c] <= nsent[c] /\ nsent[c] <= MaxData[c]
    /\ rec \in [AllProcs -> 0..Rounds]
    /\ took \in [AllProcs -> SUBSET RoundIds]
    /\ closed \in [Chans -> 0..Rounds]
    /\ pending \in [AllProcs -> SUBSET Chans]
    /\ owe \in [AllProcs -> {"b", "cancel"}]
    /\ emitting \in [AllProcs -> DataChans \cup {""}]
    /\ completed \subseteq RoundIds /\ aborted \subseteq RoundIds
    /\ crec \in [RoundIds -> [DataChans -> Seq(Nat)]]
    /\ quit \in [AllProcs -> 0..Rounds]
    /\ \A c \in DataChans \ BackEdges : Records(c) <= Capacity

\* The initial state with the given messages in flight and channel counters
\* (trace validation starts segments of a trace in such states).
InitWith(inflight, ns, nr) ==
    /\ chan = inflight
    /\ nsent = ns
    /\ nrcvd = nr
    /\ rec = [p \in AllProcs |-> 0]
    /\ took = [p \in AllProcs |-> {}]
    /\ closed = [c \in Chans |-> 0]
    /\ pending = [p \in AllProcs |-> {}]
    /\ owe = [p \in AllProcs |-> "b"]
    /\ emitting = [p \in AllProcs |-> ""]
    /\ completed = {} /\ aborted = {}
    /\ crec = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ quit = [p \in AllProcs |-> 0]
    /\ sentAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]

Init == InitWith([c \in Chans |-> <<>>], [c \in DataChans |-> 0], [c \in DataChans |-> 0])

\* The operator of Src[c] emits its next record into c; into a full channel it blocks.
Send(c) ==
    LET p == Src[c] IN
    /\ c \in DataChans
    /\ ~Busy(p)
    /\ nsent[c] < MaxData[c]
    /\ IF Room(c)
         THEN /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
              /\ chan' = [chan EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
              /\ UNCHANGED emitting
         ELSE /\ emitting' = [emitting EXCEPT ![p] = c]
              /\ UNCHANGED <<nsent, chan>>
    /\ UNCHANGED <<quit, nrcvd, rec, took, closed, pending, owe, completed, aborted, crec, sentAt, rcvdAt>>

\* The blocked record enters its channel once the channel has room.
SendBlocked(p) ==
    LET c == emitting[p] IN
    /\ c # ""
    /\ Room(c)
    /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
    /\ chan' = [chan EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
    /\ emitting' = [emitting EXCEPT ![p] = ""]
    /\ UNCHANGED <<quit, nrcvd, rec, took, closed, pending, owe, completed, aborted, crec, sentAt, rcvdAt>>

\* p sends its marker of round rec[p] (barrier or cancellation) on output c.
SendMarker(p, c) ==
    /\ c \in pending[p]
    /\ chan' = [chan EXCEPT ![c] = Append(@, [k |-> owe[p], n |-> rec[p]])]
    /\ pending' = [pending EXCEPT ![p] = @ \ {c}]
    /\ owe' = IF pending[p] = {c} THEN [owe EXCEPT ![p] = "b"] ELSE owe   \* "b" whenever nothing is owed
    /\ UNCHANGED <<quit, nsent, nrcvd, rec, took, closed, emitting, completed, aborted, crec,
                   sentAt, rcvdAt>>

\* Dst[c] processes the record at the head of c (not while c is blocked).
Recv(c) ==
    LET p == Dst[c]
        m == Head(chan[c]) IN
    /\ chan[c] # <<>>
    /\ m.k = "d"
    /\ ~Busy(p)
    /\ Bug = "no_blocking" \/ ~Blocked(c)
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1]
    /\ crec' = [r \in RoundIds |->
                  [crec[r] EXCEPT ![c] = IF Logging(r, c) THEN Append(@, m.n) ELSE @]]
    /\ UNCHANGED <<quit, nsent, rec, took, closed, pending, owe, emitting, completed, aborted, sentAt, rcvdAt>>

\* p gives up round r, which it did not snapshot, and owes cancellation markers
\* of it on its outputs if it forwards the cancellation (never under "no_cancel").
GiveUp(p, r) ==
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ \/ UNCHANGED <<pending, owe>>
       \/ /\ Bug # "no_cancel" /\ Out(p) # {}
          /\ pending' = [pending EXCEPT ![p] = Out(p)]
          /\ owe' = [owe EXCEPT ![p] = "cancel"]

\* p snapshotted its newest round r and still waits for markers of r (on back-edges,
\* whose records it logs); it has not given r up since.
Unfinished(p, r) ==
    /\ r = rec[p] /\ r \in took[p] /\ quit[p] # r
    /\ \E c \in In(p) : closed[c] < r

\* p gives up its newest round after its snapshot (a cancellation marker of it came
\* while p still waited for markers of it, as Flink's barrier handler acts on the
\* cancellation of the pending checkpoint until every barrier of it arrived): its log
\* of the round is of no use, and it may forward cancellation markers although its
\* barriers of the round are out.
GiveUpTaken(p) ==
    /\ quit' = [quit EXCEPT ![p] = rec[p]]
    /\ GiveUp(p, rec[p])

\* Dst[c] processes the barrier or cancellation marker of round r at the head of c.
\*  - an obsolete marker (of a round p handled, or older than the one it aligns) is dropped;
\*    on a back-edge it still ends the logging of its round (and under "early_back_edge"
\*    every back-edge marker only does that); a cancellation marker of the round p
\*    snapshotted last, while p still waits for markers of it, gives that round up;
\*  - a barrier blocks c until the snapshot (on a back-edge: an early barrier); an older
\*    round p was aligning is given up: the newer round subsumes it;
\*  - a cancellation marker gives up round r, and any older round p was aligning.
RecvMarker(c) ==
    LET p == Dst[c]
        m == Head(chan[c])
        r == m.n
        cur == Aligning(p) IN
    /\ chan[c] # <<>>
    /\ m.k # "d"
    /\ ~Busy(p)
    /\ ~Blocked(c)
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ IF c \notin Watched(p) \/ r <= rec[p] \/ r < cur
         THEN /\ closed' = [closed EXCEPT ![c] = IF c \in BackEdges \/ r <= rec[p] THEN r ELSE @]
              /\ IF m.k = "cancel" /\ c \in Watched(p) /\ Unfinished(p, r)
                   THEN GiveUpTaken(p)
                   ELSE UNCHANGED <<quit, rec, pending, owe>>
         ELSE /\ closed' = [closed EXCEPT ![c] = r]
              /\ UNCHANGED quit
              /\ IF m.k = "cancel" THEN GiveUp(p, r)
                 ELSE IF cur # 0 /\ cur < r THEN GiveUp(p, cur)
                 ELSE UNCHANGED <<rec, pending, owe>>
    /\ UNCHANGED <<nsent, nrcvd, took, emitting, completed, aborted, crec, sentAt, rcvdAt>>

\* Aligned on all regular inputs: snapshot, forward the barrier, unblock.
Snapshot(p) ==
    LET r == NextRound(p) IN
    /\ p \in Procs
    /\ ~Busy(p)
    /\ Aligned(p)
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ took' = [took EXCEPT ![p] = @ \cup {r}]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ sentAt' = [sentAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Src[c] = p THEN nsent[c] ELSE sentAt[r][c]]]
    /\ rcvdAt' = [rcvdAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Dst[c] = p THEN nrcvd[c] ELSE rcvdAt[r][c]]]
    /\ UNCHANGED <<quit, chan, nsent, nrcvd, closed, owe, emitting, completed, aborted, crec>>

\* Aligned, p declines the round instead: no snapshot, its inputs unblock, and
\* (unless "no_cancel") a cancellation marker goes on every output.
Decline(p) ==
    LET r == NextRound(p) IN
    /\ p \in Procs
    /\ ~Busy(p)
    /\ Aligned(p)
    /\ r \in DeclineRounds
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ IF Bug = "no_cancel" \/ Out(p) = {}
         THEN UNCHANGED <<pending, owe>>
         ELSE /\ pending' = [pending EXCEPT ![p] = Out(p)]
              /\ owe' = [owe EXCEPT ![p] = "cancel"]
    /\ UNCHANGED <<quit, chan, nsent, nrcvd, took, closed, emitting, completed, aborted, crec, sentAt, rcvdAt>>

\* The coordinator's abort reaches p while p aligns the aborted round: p gives it up.
LearnAbort(p) ==
    /\ Bug # "no_cancel"
    /\ p \in Procs
    /\ ~Busy(p)
    /\ Aligning(p) \in aborted
    /\ GiveUp(p, Aligning(p))
    /\ UNCHANGED <<quit, chan, nsent, nrcvd, took, closed, emitting, completed, aborted, crec, sentAt, rcvdAt>>

StartRound(p) ==
    /\ p \in Coords
    /\ pending[p] = {}
    /\ rec[p] < Rounds
    /\ Cardinality(InFlight) < MaxInFlight
    /\ rec' = [rec EXCEPT ![p] = @ + 1]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ UNCHANGED <<quit, chan, nsent, nrcvd, took, closed, owe, emitting, completed, aborted, crec, sentAt, rcvdAt>>

\* The coordinator completes round r: every task snapshotted it.
Complete(r) ==
    /\ r \in RoundIds \ (completed \cup aborted)
    /\ \A p \in Procs : r \in took[p]
    /\ completed' = completed \cup {r}
    /\ UNCHANGED <<quit, chan, nsent, nrcvd, rec, took, closed, pending, owe, emitting, aborted, crec,
                   sentAt, rcvdAt>>

\* The coordinator aborts round r: a task declined or gave it up, a newer completed
\* round subsumes it, or (with Timeouts) it timed out.
Abort(r) ==
    /\ r \in RoundIds \ (completed \cup aborted)
    /\ Started(r)
    /\ \/ Timeouts
       \/ \E p \in Procs : rec[p] >= r /\ r \notin took[p]
       \/ \E r2 \in completed : r2 > r
    /\ aborted' = aborted \cup {r}
    /\ UNCHANGED <<quit, chan, nsent, nrcvd, rec, took, closed, pending, owe, emitting, completed, crec,
                   sentAt, rcvdAt>>

RoundDone(r) ==
    /\ \A p \in Procs : r \in took[p]
    /\ \A c \in Chans : closed[c] >= r

\* Every round was started and completed or aborted, nothing is in flight, nothing waits.
Finished ==
    /\ \A p \in Coords : rec[p] = Rounds
    /\ \A r \in RoundIds : r \in completed \cup aborted
    /\ \A c \in Chans : chan[c] = <<>> /\ ~Blocked(c)
    /\ \A c \in DataChans : nsent[c] = MaxData[c]
    /\ \A p \in AllProcs : ~Busy(p)
    /\ UNCHANGED vars

Next ==
    \/ \E c \in Chans : Send(c) \/ Recv(c) \/ RecvMarker(c)
    \/ \E p \in AllProcs : \/ Snapshot(p) \/ Decline(p) \/ LearnAbort(p) \/ StartRound(p)
                           \/ SendBlocked(p) \/ \E c \in Chans : SendMarker(p, c)
    \/ \E r \in RoundIds : Complete(r) \/ Abort(r)
    \/ Finished

Fairness ==
    /\ \A c \in Chans : WF_vars(Recv(c)) /\ WF_vars(RecvMarker(c))
    /\ \A p \in AllProcs : /\ WF_vars(Snapshot(p) \/ Decline(p)) /\ WF_vars(LearnAbort(p))
                           /\ WF_vars(StartRound(p)) /\ WF_vars(SendBlocked(p))
                           /\ \A c \in Chans : WF_vars(SendMarker(p, c))
    /\ \A r \in RoundIds : WF_vars(Complete(r)) /\ WF_vars(Abort(r))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

(***************************************************************************)
(* Refinement of the abstract consistent snapshot: a regular input is      *)
(* sealed (with an empty state) by the snapshot of its destination, a      *)
(* back-edge when its barrier was processed after that snapshot.  A        *)
(* declined or abandoned round is a snapshot whose local states are never *)
(* all taken.                                                              *)
(***************************************************************************)
SealedNow(r, c) ==
    /\ r \in took[Dst[c]]
    /\ c \notin BackEdges \/ (closed[c] >= r /\ r \in took[Src[c]])

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
              IF SealedNow(r, c) THEN crec[r][c] ELSE <<>>]]

\* Every step is a step of the abstract snapshot, without its initial condition:
\* trace validation in segments starts from a state in the middle of a run.
\* Cheap cases first (TLC evaluates the disjuncts in order): a step that
\* leaves the mapping's variables unchanged is an abstract stutter; a step that
\* only sends or processes one data message on c is Abs!Send(c) or Abs!Recv(c),
\* because the other abstract variables are functions of <<took, closed, crec, sentAt, rcvdAt>>.
DataStep ==
    /\ UNCHANGED <<took, closed, crec, sentAt, rcvdAt>>
    /\ \E c \in DataChans :
          \/ nsent[c] < MaxSends /\ nsent' = [nsent EXCEPT ![c] = @ + 1] /\ nrcvd' = nrcvd
          \/ nrcvd[c] < nsent[c] /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1] /\ nsent' = nsent
AbsStutter ==      \* closed matters to the mapping on back-edges only
    UNCHANGED <<nsent, nrcvd, took, crec, sentAt, rcvdAt>> /\ \A c \in BackEdges : closed'[c] = closed[c]
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
    [][AbsStutter \/ DataStep \/ TakeStep \/ SealStep \/ UNCHANGED Abs!absvars \/ Abs!Next]_Abs!absvars
AbsSpec == Abs!Init /\ AbsSteps
Consistent == Abs!Consistent
ChannelStateExact == Abs!ChannelStateExact

\* Alignment safety: no record is processed from a blocked input.
\* (Stated by the guard of Recv; the mutant "no_blocking" shows why it matters.)

\* Aligned snapshots (Algorithm 1) record no channel state at all.
RegularChannelsEmpty ==
    \A r \in RoundIds, c \in DataChans \ BackEdges : crec[r][c] = <<>>

\* Every started round completes (all its barriers processed) or is aborted.
Termination == \A r \in RoundIds : Started(r) ~> ((RoundDone(r) /\ r \in completed) \/ r \in aborted)
\* No input stays blocked forever.
Unblocks == \A c \in Chans : Blocked(c) ~> ~Blocked(c)

(***************************************************************************)
(* Traps (must be violated).                                               *)
(***************************************************************************)
\* Alignment buffers data: a blocked input with a record waiting behind its barrier.
TrapBlockedWithData ==
    ~(\E c \in DataChans : Blocked(c) /\ chan[c] # <<>> /\ Head(chan[c]).k = "d")
\* A back-edge log that is not empty.
TrapNonEmptyChannelState == Abs!TrapNonEmptyChannelState
\* Backpressure meets alignment: an operator blocked emitting into a full channel
\* that its destination keeps blocked for an alignment.
TrapBackpressuredAlignment == ~(\E p \in Procs : emitting[p] # "" /\ Blocked(emitting[p]))
=============================================================================

------------------------------------ MODULE ABS ------------------------------------
(***************************************************************************)
(* Asynchronous Barrier Snapshotting (ABS), aligned: Algorithm 1 (acyclic  *)
(* dataflows) and Algorithm 2 (cyclic dataflows, back-edge logging).       *)
(*                                                                         *)
(* Source: P. Carbone, G. Fora, S. Ewen, S. Haridi, K. Tzoumas,            *)
(* "Lightweight Asynchronous Snapshots for Distributed Dataflows" (2015),  *)
(* Algorithms 1 and 2; docs/theory.md, "Aligned ABS" and "Cyclic ABS".     *)
(*                                                                         *)
(* A task that processes barrier r on input c blocks c: records behind the *)
(* barrier wait.  When barrier r was processed on every regular input (all *)
(* inputs that are not back-edges) the task takes its snapshot, forwards   *)
(* barrier r on every output and unblocks.  Back-edges (BackEdges, found   *)
(* by a DFS of the dataflow) are not waited for: from the snapshot until   *)
(* barrier r arrives on a back-edge, the records processed from that       *)
(* back-edge are logged; the log is that channel's recorded state.  A      *)
(* back-edge whose barrier r arrives before the snapshot is blocked until  *)
(* it, like a regular input: with parallel subtasks the barrier can come   *)
(* round the loop through other subtasks first (MCABS_par).  With          *)
(* BackEdges = {} this is Algorithm 1, whose snapshots have empty channel  *)
(* state -- and which deadlocks on a cyclic dataflow (MCABS_cycle_aligned).*)
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
(*   "early_back_edge"  a back-edge whose barrier arrives before the       *)
(*                      snapshot is not blocked (fails Consistent when the *)
(*                      loop runs in parallel subtasks; docs/theory.md,    *)
(*                      "Pitfall: an early back-edge barrier").            *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    Procs, Coords, Chans, CtrlChans, Src, Dst,
    BackEdges,   \* back-edges of a cyclic dataflow ({} for Algorithm 1)
    Rounds, MaxData, Bug

ASSUME Bug \in {"none", "no_blocking", "log_as_printed", "early_back_edge"}
ASSUME BackEdges \subseteq Chans \ CtrlChans

VARIABLES
    chan,      \* chan[c]: FIFO queue of messages [k |-> "d"|"b", n |-> seq|round]
    nsent, nrcvd,
    rec,       \* rec[p]: last round p snapshotted (coordinator: last round started)
    closed,    \* closed[c]: last round whose barrier was processed on c
    pending,   \* pending[p]: outputs still waiting for p's barrier of round rec[p]
    crec,      \* crec[r][c]: back-edge log of round r on c (message numbers)
    sentAt, rcvdAt   \* history variables, as in ConsistentSnapshot

vars == <<chan, nsent, nrcvd, rec, closed, pending, crec, sentAt, rcvdAt>>

AllProcs == Procs \cup Coords
DataChans == Chans \ CtrlChans
RoundIds == 1..Rounds
Out(p) == {c \in Chans : Src[c] = p}
In(p) == {c \in Chans : Dst[c] = p}
RegularIn(p) == In(p) \ BackEdges
Data(n) == [k |-> "d", n |-> n]
Barrier(r) == [k |-> "b", n |-> r]

\* c is blocked: its barrier of the coming round was processed, the snapshot not taken yet
\* (on a back-edge: the barrier came round the loop before the snapshot).
Blocked(c) == (c \notin BackEdges \/ Bug # "early_back_edge") /\ closed[c] > rec[Dst[c]]
\* p is aligned for its next round: barrier processed on every regular input.
Aligned(p) == \A c \in RegularIn(p) : closed[c] = rec[p] + 1
\* Back-edge c is being logged for round r.
Logging(r, c) ==
    /\ c \in BackEdges
    /\ rec[Dst[c]] >= r
    /\ IF Bug = "log_as_printed"
         THEN \E c2 \in In(Dst[c]) \cap BackEdges : closed[c2] < r
         ELSE closed[c] < r

TypeOK ==
    /\ chan \in [Chans -> Seq([k : {"d", "b"}, n : Nat])]
    /\ nsent \in [DataChans -> 0..MaxData]
    /\ nrcvd \in [DataChans -> 0..MaxData]
    /\ rec \in [AllProcs -> 0..Rounds]
    /\ closed \in [Chans -> 0..Rounds]
    /\ pending \in [AllProcs -> SUBSET Chans]
    /\ crec \in [RoundIds -> [DataChans -> Seq(1..MaxData)]]

Init ==
    /\ chan = [c \in Chans |-> <<>>]
    /\ nsent = [c \in DataChans |-> 0]
    /\ nrcvd = [c \in DataChans |-> 0]
    /\ rec = [p \in AllProcs |-> 0]
    /\ closed = [c \in Chans |-> 0]
    /\ pending = [p \in AllProcs |-> {}]
    /\ crec = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]
    /\ sentAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]

Send(c) ==
    /\ c \in DataChans
    /\ pending[Src[c]] = {}
    /\ nsent[c] < MaxData
    /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
    /\ chan' = [chan EXCEPT ![c] = Append(@, Data(nsent[c] + 1))]
    /\ UNCHANGED <<nrcvd, rec, closed, pending, crec, sentAt, rcvdAt>>

SendBarrier(p, c) ==
    /\ c \in pending[p]
    /\ chan' = [chan EXCEPT ![c] = Append(@, Barrier(rec[p]))]
    /\ pending' = [pending EXCEPT ![p] = @ \ {c}]
    /\ UNCHANGED <<nsent, nrcvd, rec, closed, crec, sentAt, rcvdAt>>

\* Dst[c] processes the record at the head of c (not while c is blocked).
Recv(c) ==
    LET p == Dst[c]
        m == Head(chan[c]) IN
    /\ chan[c] # <<>>
    /\ m.k = "d"
    /\ pending[p] = {}
    /\ Bug = "no_blocking" \/ ~Blocked(c)
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1]
    /\ crec' = [r \in RoundIds |->
                  [crec[r] EXCEPT ![c] = IF Logging(r, c) THEN Append(@, m.n) ELSE @]]
    /\ UNCHANGED <<nsent, rec, closed, pending, sentAt, rcvdAt>>

\* Dst[c] processes the barrier at the head of c: a regular input is blocked
\* until the snapshot, a back-edge stops being logged.
RecvBarrier(c) ==
    LET p == Dst[c] IN
    /\ chan[c] # <<>>
    /\ Head(chan[c]).k = "b"
    /\ pending[p] = {}
    /\ ~Blocked(c)
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ closed' = [closed EXCEPT ![c] = Head(chan[c]).n]
    /\ UNCHANGED <<nsent, nrcvd, rec, pending, crec, sentAt, rcvdAt>>

\* Aligned on all regular inputs: snapshot, forward the barrier, unblock.
Snapshot(p) ==
    LET r == rec[p] + 1 IN
    /\ p \in Procs
    /\ r <= Rounds
    /\ pending[p] = {}
    /\ Aligned(p)
    /\ rec' = [rec EXCEPT ![p] = r]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ sentAt' = [sentAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Src[c] = p THEN nsent[c] ELSE sentAt[r][c]]]
    /\ rcvdAt' = [rcvdAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Dst[c] = p THEN nrcvd[c] ELSE rcvdAt[r][c]]]
    /\ UNCHANGED <<chan, nsent, nrcvd, closed, crec>>

StartRound(p) ==
    /\ p \in Coords
    /\ pending[p] = {}
    /\ rec[p] < Rounds
    /\ rec' = [rec EXCEPT ![p] = @ + 1]
    /\ pending' = [pending EXCEPT ![p] = Out(p)]
    /\ UNCHANGED <<chan, nsent, nrcvd, closed, crec, sentAt, rcvdAt>>

RoundDone(r) ==
    /\ \A p \in Procs : rec[p] >= r
    /\ \A c \in Chans : closed[c] >= r

Finished ==
    /\ \A r \in RoundIds : RoundDone(r)
    /\ \A c \in Chans : chan[c] = <<>>
    /\ \A c \in DataChans : nsent[c] = MaxData
    /\ \A p \in AllProcs : pending[p] = {}
    /\ UNCHANGED vars

Next ==
    \/ \E c \in Chans : Send(c) \/ Recv(c) \/ RecvBarrier(c)
    \/ \E p \in AllProcs : Snapshot(p) \/ StartRound(p) \/ \E c \in Chans : SendBarrier(p, c)
    \/ Finished

Fairness ==
    /\ \A c \in Chans : WF_vars(Recv(c)) /\ WF_vars(RecvBarrier(c))
    /\ \A p \in AllProcs : WF_vars(Snapshot(p)) /\ WF_vars(StartRound(p))
                           /\ \A c \in Chans : WF_vars(SendBarrier(p, c))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

(***************************************************************************)
(* Refinement of the abstract consistent snapshot: a regular input is      *)
(* sealed (with an empty state) by the snapshot of its destination, a      *)
(* back-edge when its barrier was processed after that snapshot.           *)
(***************************************************************************)
SealedNow(r, c) == rec[Dst[c]] >= r /\ (c \notin BackEdges \/ closed[c] >= r)

Abs == INSTANCE ConsistentSnapshot WITH
    DataChans <- DataChans,
    sent <- nsent,
    rcvd <- nrcvd,
    taken <- [r \in RoundIds |-> [p \in Procs |-> rec[p] >= r]],
    sealed <- [r \in RoundIds |-> [c \in DataChans |-> SealedNow(r, c)]],
    cs <- [r \in RoundIds |-> [c \in DataChans |->
              IF SealedNow(r, c) THEN crec[r][c] ELSE <<>>]]

AbsSpec == Abs!Spec
Consistent == Abs!Consistent
ChannelStateExact == Abs!ChannelStateExact

\* Alignment safety: no record is processed from a blocked input.
\* (Stated by the guard of Recv; the mutant "no_blocking" shows why it matters.)

\* Aligned snapshots (Algorithm 1) record no channel state at all.
RegularChannelsEmpty ==
    \A r \in RoundIds, c \in DataChans \ BackEdges : crec[r][c] = <<>>

Started(r) == \E p \in AllProcs : rec[p] >= r
Termination == \A r \in RoundIds : Started(r) ~> RoundDone(r)

(***************************************************************************)
(* Traps (must be violated).                                               *)
(***************************************************************************)
\* Alignment buffers data: a blocked input with a record waiting behind its barrier.
TrapBlockedWithData ==
    ~(\E c \in DataChans : Blocked(c) /\ chan[c] # <<>> /\ Head(chan[c]).k = "d")
\* A back-edge log that is not empty.
TrapNonEmptyChannelState == Abs!TrapNonEmptyChannelState
=============================================================================

----------------------------------- MODULE Rescale -----------------------------------
(***************************************************************************)
(* Restoring a snapshot at another parallelism: key-group ownership and    *)
(* the redistribution of recorded in-flight records.                       *)
(*                                                                         *)
(* The old job is an upstream task 0 feeding a keyed operator with PO      *)
(* subtasks 1..PO over channels <<0, q>>.  Its snapshot (one round) is the *)
(* abstract consistent snapshot: the old job's steps are ConsistentSnapshot*)
(* steps, so Spec refines it (PROPERTY OldSpec).  Records carry a key      *)
(* group in 0..M-1; subtask q of p owns the groups g with g*p \div M = q-1 *)
(* (Flink's KeyGroupRangeAssignment), and a record goes to the owner of    *)
(* its group.                                                              *)
(*                                                                         *)
(* Restore (once the round is complete) rebuilds the operator with PN      *)
(* subtasks: new subtask j takes the state of every key group it owns from *)
(* the old owner's checkpoint (so a record processed before that           *)
(* checkpoint is reflected once), and the recorded channel state of every  *)
(* old channel is split by key group: each record becomes pending at its   *)
(* new owner, which delivers it before any live record (records the        *)
(* upstream sends after the restore).                                      *)
(*                                                                         *)
(* Bug selects a mutant of the reference simulator:                        *)
(*   "race"           FLINK-38544: live records may be processed while     *)
(*                    recovered ones are pending; those are then dropped;  *)
(*   "skip_stateless" FLINK-31963: a stateless operator's channel state is *)
(*                    not redistributed (with Stateless = TRUE);           *)
(*   "undispatched"   apache/beam#25975: recovered records of removed old  *)
(*                    subtasks (q > PN) are never dispatched.              *)
(* Each violates NoInFlightLost; the correct protocol satisfies every      *)
(* invariant below.                                                        *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS
    PO, PN,     \* old and new parallelism of the keyed operator
    M,          \* number of key groups (max parallelism)
    MaxData,    \* records per old channel
    MaxLive,    \* live records after the restore
    Stateless,  \* the keyed operator has no state of its own
    Bug         \* "none" | "race" | "skip_stateless" | "undispatched"

ASSUME PO \in Nat \ {0} /\ PN \in Nat \ {0} /\ M >= PO /\ M >= PN

KeyGroups == 0..(M - 1)
OldSubs == 1..PO
NewSubs == 1..PN
Owner(p, g) == (g * p) \div M + 1
OldChans == {<<0, q>> : q \in OldSubs}
OldProcs == {0} \cup OldSubs

VARIABLES
    sent, rcvd, taken, sentAt, rcvdAt, sealed, cs,  \* the old job and its snapshot
    kg,         \* kg[c]: the key groups of the records sent on old channel c, in order
    phase,      \* "run" (the old job) | "restored" (the new one)
    pending,    \* pending[j]: recovered records <<c, n>> new subtask j has not processed yet
    count,      \* count[c][n]: how often record n of c is processed after the restore
    liveQ,      \* liveQ[j]: live records waiting at new subtask j
    liveDone    \* liveDone[j]: live records processed by j

oldvars == <<sent, rcvd, taken, sentAt, rcvdAt, sealed, cs>>
vars == <<oldvars, kg, phase, pending, count, liveQ, liveDone>>

Old == INSTANCE ConsistentSnapshot WITH
    Procs <- OldProcs, DataChans <- OldChans,
    Src <- [c \in OldChans |-> c[1]], Dst <- [c \in OldChans |-> c[2]], Rounds <- 1

OldSpec == Old!Spec

\* The recorded channel state of the round, as records <<c, n>>.
Recorded == UNION {{<<c, cs[1][c][i]>> : i \in 1..Len(cs[1][c])} : c \in OldChans}

\* Whether the restore redistributes the recorded state of old channel c.
Dispatched(c) ==
    /\ ~(Bug = "skip_stateless" /\ Stateless)
    /\ ~(Bug = "undispatched" /\ c[2] > PN)

Done == phase = "restored" /\ \A j \in NewSubs : pending[j] = {} /\ liveQ[j] = 0

(***************************************************************************)
(* Properties                                                              *)
(***************************************************************************)
\* Every recorded in-flight record is processed after the restore, exactly once,
\* by the new owner of its key group (theory: no drop across the remap).
NoInFlightLost ==
    Done => \A r \in Recorded : count[r[1]][r[2]] = 1

\* Nothing is processed twice: a record reflected in the restored state (processed
\* before the old checkpoint) is not processed again, a recovered one at most once.
NoDuplicate ==
    \A c \in OldChans, n \in 1..MaxData :
        (IF n <= rcvdAt[1][c] THEN 1 ELSE 0) + count[c][n] <= 1

\* A new subtask processes a live record only once its recovered records are in.
RecoveredBeforeLive ==
    \A j \in NewSubs : liveDone[j] > 0 => pending[j] = {}

\* Every key group is owned by exactly one new subtask, the one Flink's
\* assignment names, and its recovered records are pending there only.
KeyGroupOwnership ==
    \A j \in NewSubs : \A r \in pending[j] : Owner(PN, kg[r[1]][r[2]]) = j

TypeOK ==
    /\ phase \in {"run", "restored"}
    /\ pending \in [NewSubs -> SUBSET (OldChans \X (1..MaxData))]
    /\ count \in [OldChans -> [1..MaxData -> Nat]]
    /\ liveQ \in [NewSubs -> Nat] /\ liveDone \in [NewSubs -> Nat]

(***************************************************************************)
(* The old job: ConsistentSnapshot's steps, records routed by key group.   *)
(***************************************************************************)
Init ==
    /\ Old!Init
    /\ kg = [c \in OldChans |-> <<>>]
    /\ phase = "run"
    /\ pending = [j \in NewSubs |-> {}]
    /\ count = [c \in OldChans |-> [n \in 1..MaxData |-> 0]]
    /\ liveQ = [j \in NewSubs |-> 0]
    /\ liveDone = [j \in NewSubs |-> 0]

newvars == <<kg, phase, pending, count, liveQ, liveDone>>

Send(g) ==
    LET c == <<0, Owner(PO, g)>> IN
    /\ phase = "run"
    /\ Old!Send(c)
    /\ kg' = [kg EXCEPT ![c] = Append(@, g)]
    /\ UNCHANGED <<phase, pending, count, liveQ, liveDone>>

OldStep ==
    /\ phase = "run"
    /\ \/ \E c \in OldChans : Old!Recv(c)
       \/ \E p \in OldProcs : \E S \in SUBSET {c \in OldChans : c[2] = p} : Old!Take(1, p, S)
       \/ \E c \in OldChans : Old!Seal(1, c)
    /\ UNCHANGED newvars

(***************************************************************************)
(* The restore at parallelism PN and the new job.                          *)
(***************************************************************************)
Restore ==
    /\ phase = "run"
    /\ Old!RoundComplete(1)
    /\ phase' = "restored"
    /\ pending' = [j \in NewSubs |->
                     {r \in Recorded : Dispatched(r[1]) /\ Owner(PN, kg[r[1]][r[2]]) = j}]
    /\ UNCHANGED <<oldvars, kg, count, liveQ, liveDone>>

Deliver(j) ==
    /\ phase = "restored"
    /\ \E r \in pending[j] :
         /\ pending' = [pending EXCEPT ![j] = @ \ {r}]
         /\ count' = [count EXCEPT ![r[1]][r[2]] = @ + 1]
    /\ UNCHANGED <<oldvars, kg, phase, liveQ, liveDone>>

LiveSend(g) ==
    /\ phase = "restored"
    /\ \A j \in NewSubs : liveQ[j] + liveDone[j] < MaxLive
    /\ liveQ' = [liveQ EXCEPT ![Owner(PN, g)] = @ + 1]
    /\ UNCHANGED <<oldvars, kg, phase, pending, count, liveDone>>

\* Correct: live data waits for the recovered records.  "race": it need not, and
\* the recovered records still pending are then dropped.
LiveRecv(j) ==
    /\ phase = "restored"
    /\ liveQ[j] > 0
    /\ pending[j] = {} \/ Bug = "race"
    /\ liveQ' = [liveQ EXCEPT ![j] = @ - 1]
    /\ liveDone' = [liveDone EXCEPT ![j] = @ + 1]
    /\ pending' = [pending EXCEPT ![j] = {}]
    /\ UNCHANGED <<oldvars, kg, phase, count>>

Next ==
    \/ \E g \in KeyGroups : Send(g) \/ LiveSend(g)
    \/ OldStep
    \/ Restore
    \/ \E j \in NewSubs : Deliver(j) \/ LiveRecv(j)

Spec == Init /\ [][Next]_vars

\* Trap: a recovered record is redistributed and processed.
TrapRecovered == ~(\E c \in OldChans, n \in 1..MaxData : count[c][n] > 0)
=============================================================================

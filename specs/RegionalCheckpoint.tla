----------------------------- MODULE RegionalCheckpoint -----------------------------
(***************************************************************************)
(* Regional checkpoints (FLIP-600, "Independent Checkpoint Based On        *)
(* Pipeline Region") over aligned barriers.                                *)
(*                                                                         *)
(* Processes belong to pipeline regions (Region[p], the protocol's view of *)
(* the job).  Every round, each process takes its local snapshot with the  *)
(* aligned rule of ABS (it has processed exactly what its upstream sent    *)
(* before their snapshots) or declines (before or after its snapshot); a   *)
(* region whose process declined, timed out, or failed over is *failed*    *)
(* for the round.  The coordinator then completes the round globally (no  *)
(* failed region), regionally (some, not all, regions failed: each process *)
(* of a failed region keeps its state of the latest completed checkpoint,  *)
(* ref[n][p]), or aborts it (every region failed, too many, no checkpoint  *)
(* to fall back to, or a global checkpoint is due: after MaxConsecutive    *)
(* regional completions, or when the sources finished).  Reading "restart" *)
(* (the FLIP's text) restarts a region that fell back; "continue" (the    *)
(* pull requests) lets it run on.  A region failing over restores the     *)
(* latest completed checkpoint's state of its processes.                  *)
(*                                                                         *)
(* The source coordinator hands splits to readers (owner Owner[s]) and     *)
(* checkpoints what it handed out at each trigger (coordAt); the completed *)
(* checkpoint keeps that state corrected for the fallback readers          *)
(* (coordDone).  Two-phase-commit sinks publish the transaction of a round *)
(* once a completed checkpoint holds their state of that round.            *)
(*                                                                         *)
(* The local snapshots are those of ConsistentSnapshot (PROPERTY AbsSpec,  *)
(* without failovers, whose rollback the abstract spec does not model);   *)
(* every completed checkpoint, local snapshots composed through ref, must *)
(* satisfy ConsistentSnapshot's Consistent and ChannelStateExact          *)
(* (ComposedConsistent, ComposedChannelStateExact): the composition is a  *)
(* consistent snapshot exactly when no channel joins two regions.         *)
(*                                                                         *)
(* Bug selects a broken variant: "no_forced_global" (BoundedDrift),       *)
(* "fallback_commit" (NoFallbackCommit), "uncorrected" (SplitsAgree),      *)
(* "live_correction" (NoSplitReadTwice), "agreed_state" (Agreement),       *)
(* "stale_ack" (NoStaleState); a Region that is not the connected         *)
(* components of the channels breaks ComposedConsistent.                  *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences

CONSTANTS
    Procs, DataChans, Src, Dst,   \* the dataflow (as in ConsistentSnapshot)
    Region,          \* Region[p]: the region of process p
    Readers,         \* source readers (they read splits)
    Sinks,           \* two-phase-commit sinks
    Splits, Owner,   \* splits and their owning reader
    Rounds,          \* rounds 1..Rounds (0 is the initial state)
    MaxData,         \* bound on data messages per channel
    MaxPending,      \* rounds in progress at once
    MaxConsecutive,  \* regional completions in a row before a global one is forced
    MaxFailed,       \* most failed regions a regional completion accepts
    MaxRestarts,     \* bound on failovers (0: none)
    Reading,         \* "restart" | "continue"
    Bug

VARIABLES
    sent, rcvd,                   \* data messages sent / processed per channel
    taken, sentAt, rcvdAt,        \* local snapshots of every round (0: the initial state)
    sealed, cs,                   \* channel states (aligned: empty)
    declined,                     \* declined[n][p]
    started, status,              \* rounds triggered; "pending" | "done" | "aborted" | "idle"
    ref, lastDone, consec, forced,
    down, crashed, inc, trigInc, snapInc, doneInc, crashes,
    assigned, inflight, sentAfter, held, heldAt, coordAt, coordDone, readTwice,
    published

snapvars == <<taken, sentAt, rcvdAt, sealed, cs>>
coordvars == <<declined, started, status, ref, lastDone, consec, forced, doneInc>>
regionvars == <<down, crashed, inc, trigInc, snapInc, crashes>>
splitvars == <<assigned, inflight, sentAfter, held, heldAt, coordAt, coordDone, readTwice>>
vars == <<sent, rcvd, snapvars, coordvars, regionvars, splitvars, published>>

Regions == {Region[p] : p \in Procs}
RoundIds == 1..Rounds
Snaps == 0..Rounds
DataIn(p) == {c \in DataChans : Dst[c] = p}
Members(r) == {p \in Procs : Region[p] = r}
ChansOf(r) == {c \in DataChans : Region[Src[c]] = r \/ Region[Dst[c]] = r}
Pending == {n \in RoundIds : status[n] = "pending"}
Seg(a, b) == [k \in 1..(IF b >= a THEN b - a + 1 ELSE 0) |-> a + k - 1]
Max(S) == CHOOSE x \in S : \A y \in S : y <= x

(***************************************************************************)
(* A region's fate in round n.                                             *)
(***************************************************************************)
AllTaken(n, r) == \A p \in Members(r) : taken[n][p]
\* Failed over since the trigger (under the bug, only if it had not taken its snapshots).
FailedOver(n, r) == (down[r] \/ inc[r] # trigInc[n][r]) /\ (Bug # "stale_ack" \/ ~AllTaken(n, r))
\* With the declines dec (the current ones, or those after a timeout):
Failed(dec, n, r) == (\E p \in Members(r) : dec[n][p]) \/ FailedOver(n, r)
Healthy(dec, n, r) == ~Failed(dec, n, r) /\ AllTaken(n, r)
Decided(dec, n) == \A r \in Regions : Failed(dec, n, r) \/ Healthy(dec, n, r)
FailedSet(dec, n) == {r \in Regions : Failed(dec, n, r)}

\* The round whose state p keeps in completed checkpoint n.
RefOf(n, F, p) == IF Region[p] \in F THEN ref[lastDone][p] ELSE n
\* Agreed (union) state: under Bug "agreed_state", snapshotState writes the round into it.
Agreed(p, k) == IF Bug = "agreed_state" THEN k ELSE 0

TypeOK ==
    /\ sent \in [DataChans -> Nat] /\ rcvd \in [DataChans -> Nat]
    /\ taken \in [Snaps -> [Procs -> BOOLEAN]]
    /\ status \in [RoundIds -> {"idle", "pending", "done", "aborted"}]
    /\ ref \in [Snaps -> [Procs -> Snaps]]
    /\ lastDone \in Snaps /\ consec \in Nat /\ forced \in BOOLEAN
    /\ assigned \in SUBSET Splits /\ held \in [Readers -> SUBSET Splits]
    /\ published \in [Sinks -> Snaps]

Init ==
    /\ sent = [c \in DataChans |-> 0] /\ rcvd = [c \in DataChans |-> 0]
    /\ taken = [n \in Snaps |-> [p \in Procs |-> n = 0]]
    /\ sentAt = [n \in Snaps |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [n \in Snaps |-> [c \in DataChans |-> 0]]
    /\ sealed = [n \in Snaps |-> [c \in DataChans |-> n = 0]]
    /\ cs = [n \in Snaps |-> [c \in DataChans |-> <<>>]]
    /\ declined = [n \in Snaps |-> [p \in Procs |-> FALSE]]
    /\ started = 0 /\ status = [n \in RoundIds |-> "idle"]
    /\ ref = [n \in Snaps |-> [p \in Procs |-> 0]]
    /\ lastDone = 0 /\ consec = 0 /\ forced = FALSE
    /\ down = [r \in Regions |-> FALSE] /\ crashed = [r \in Regions |-> FALSE]
    /\ inc = [r \in Regions |-> 0] /\ trigInc = [n \in Snaps |-> [r \in Regions |-> 0]]
    /\ snapInc = [n \in Snaps |-> [p \in Procs |-> 0]] /\ doneInc = [n \in Snaps |-> [r \in Regions |-> 0]]
    /\ crashes = 0
    /\ assigned = {} /\ inflight = {} /\ sentAfter = [s \in Splits |-> 0] /\ held = [p \in Readers |-> {}]
    /\ heldAt = [n \in Snaps |-> [p \in Readers |-> {}]]
    /\ coordAt = [n \in Snaps |-> {}] /\ coordDone = [n \in Snaps |-> {}] /\ readTwice = FALSE
    /\ published = [p \in Sinks |-> 0]

(***************************************************************************)
(* The dataflow.                                                           *)
(***************************************************************************)
Alive(p) == ~down[Region[p]]

Send(c) ==
    /\ Alive(Src[c]) /\ sent[c] < MaxData
    /\ Src[c] \in Readers => held[Src[c]] # {}
    /\ sent' = [sent EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<rcvd, snapvars, coordvars, regionvars, splitvars, published>>

Recv(c) ==
    /\ Alive(Dst[c]) /\ rcvd[c] < sent[c]
    /\ rcvd' = [rcvd EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<sent, snapvars, coordvars, regionvars, splitvars, published>>

(***************************************************************************)
(* Splits: the coordinator hands split s to its owner, which holds it once *)
(* the assignment arrives. Assignments share the FIFO channel of the round *)
(* triggers: one sent after trigger n arrives after the reader handled n   *)
(* (unless the reader restarted since: it never gets that trigger), one   *)
(* sent before it arrives before.                                          *)
(***************************************************************************)
AssignSend(s) ==
    /\ s \notin assigned
    /\ assigned' = assigned \cup {s}
    /\ inflight' = inflight \cup {s}
    /\ sentAfter' = [sentAfter EXCEPT ![s] = started]
    /\ UNCHANGED <<sent, rcvd, snapvars, coordvars, regionvars, held, heldAt, coordAt, coordDone, readTwice,
                   published>>

AssignRecv(s) ==
    /\ s \in inflight /\ Alive(Owner[s])
    /\ \A n \in 1..sentAfter[s] : status[n] = "pending" /\ trigInc[n][Region[Owner[s]]] = inc[Region[Owner[s]]]
                                    => taken[n][Owner[s]] \/ declined[n][Owner[s]]
    /\ inflight' = inflight \ {s}
    /\ readTwice' = (readTwice \/ s \in held[Owner[s]])
    /\ held' = [held EXCEPT ![Owner[s]] = @ \cup {s}]
    /\ UNCHANGED <<sent, rcvd, snapvars, coordvars, regionvars, assigned, sentAfter, heldAt, coordAt, coordDone,
                   published>>

(***************************************************************************)
(* Rounds.                                                                 *)
(***************************************************************************)
Trigger ==
    /\ started < Rounds /\ Cardinality(Pending) < MaxPending
    /\ started' = started + 1
    /\ status' = [status EXCEPT ![started + 1] = "pending"]
    /\ trigInc' = [trigInc EXCEPT ![started + 1] = inc]
    /\ coordAt' = [coordAt EXCEPT ![started + 1] = assigned]
    /\ UNCHANGED <<sent, rcvd, snapvars, declined, ref, lastDone, consec, forced, doneInc, down, crashed, inc,
                   snapInc, crashes, assigned, inflight, sentAfter, held, heldAt, coordDone, readTwice, published>>

\* p takes its local snapshot of round n (aligned: its inputs carry nothing in flight).
Take(n, p) ==
    /\ status[n] = "pending" /\ Alive(p) /\ ~taken[n][p] /\ ~declined[n][p]
    /\ \A c \in DataIn(p) : taken[n][Src[c]] /\ snapInc[n][Src[c]] = inc[Region[Src[c]]]
                            /\ rcvd[c] = sentAt[n][c]
    /\ \A s \in inflight : Owner[s] = p => sentAfter[s] >= n
    /\ taken' = [taken EXCEPT ![n][p] = TRUE]
    /\ sentAt' = [sentAt EXCEPT ![n] = [c \in DataChans |-> IF Src[c] = p THEN sent[c] ELSE sentAt[n][c]]]
    /\ rcvdAt' = [rcvdAt EXCEPT ![n] = [c \in DataChans |-> IF Dst[c] = p THEN rcvd[c] ELSE rcvdAt[n][c]]]
    /\ sealed' = [sealed EXCEPT ![n] = [c \in DataChans |-> sealed[n][c] \/ Dst[c] = p]]
    /\ snapInc' = [snapInc EXCEPT ![n][p] = inc[Region[p]]]
    /\ heldAt' = IF p \in Readers THEN [heldAt EXCEPT ![n][p] = held[p]] ELSE heldAt
    /\ UNCHANGED <<sent, rcvd, cs, coordvars, down, crashed, inc, trigInc, crashes, assigned, inflight, sentAfter,
                   held, coordAt, coordDone, readTwice, published>>

\* p declines round n: its snapshot fails before or after it is taken (one decline
\* fails its region; model checking explores the first of each region).
Decline(n, p) ==
    /\ status[n] = "pending" /\ Alive(p) /\ ~declined[n][p]
    /\ declined' = [declined EXCEPT ![n][p] = TRUE]
    /\ UNCHANGED <<sent, rcvd, snapvars, started, status, ref, lastDone, consec, forced, doneInc, regionvars,
                   splitvars, published>>

\* Round n times out while the regions R are undecided (some acknowledgement of theirs
\* has not arrived): they fail it, as if every process of theirs declined.
DeclineRegions(n, R) == [declined EXCEPT ![n] = [p \in Procs |-> declined[n][p] \/ Region[p] \in R]]

\* A round whose failed regions F may complete regionally: some region is healthy, at
\* most MaxFailed failed, a checkpoint completed before, no global checkpoint is due.
MayFallBack(F) == F # {} /\ F # Regions /\ Cardinality(F) <= MaxFailed /\ lastDone > 0

\* Once round n is decided its declines matter no more: forgotten, so that the ways
\* of failing it (which processes declined, which regions timed out) are one state.
Settled(dec, n) == [dec EXCEPT ![n] = [p \in Procs |-> FALSE]]

\* A failed round a forced global checkpoint aborts (rather than its regions).
Forceable(F) == F # Regions /\ Cardinality(F) <= MaxFailed

\* Round n is decided with the declines dec and completes (globally or regionally).
CompleteD(n, dec) ==
    LET F == FailedSet(dec, n)
        global == F = {}
        fallbackReaders == {p \in Readers : Region[p] \in F}
        corrected == {s \in coordAt[n] : Owner[s] \notin fallbackReaders}
                     \cup {s \in coordDone[lastDone] : Owner[s] \in fallbackReaders}
    IN
    /\ status[n] = "pending" /\ Decided(dec, n)
    /\ global \/ (MayFallBack(F) /\ ~forced)
    /\ declined' = Settled(dec, n)
    /\ ref' = [ref EXCEPT ![n] = [p \in Procs |-> RefOf(n, F, p)]]
    /\ doneInc' = [doneInc EXCEPT ![n] = inc]
    /\ lastDone' = n
    /\ status' = [m \in RoundIds |-> IF m = n THEN "done" ELSE IF m < n /\ status[m] = "pending" THEN "aborted"
                                     ELSE status[m]]
    /\ consec' = IF global THEN 0 ELSE consec + 1
    /\ forced' = IF global THEN FALSE ELSE (consec + 1 >= MaxConsecutive /\ Bug # "no_forced_global") \/ forced
    /\ coordDone' = [coordDone EXCEPT ![n] = IF Bug = "uncorrected" THEN coordAt[n] ELSE corrected]
    /\ assigned' = IF Bug = "live_correction" THEN assigned \ (coordAt[n] \ corrected) ELSE assigned
    /\ down' = IF Reading = "restart" THEN [r \in Regions |-> down[r] \/ (r \in F /\ trigInc[n][r] = inc[r])] ELSE down
    /\ UNCHANGED <<sent, rcvd, snapvars, started, crashed, inc, trigInc, snapInc, crashes, inflight,
                   sentAfter, held, heldAt, coordAt, readTwice, published>>

\* Round n is decided with the declines dec, some region failed, and it may not
\* complete: aborted because of its regions, or because a global checkpoint was
\* forced (why: "consecutive" regional completions, or "finished" sources, which
\* the environment decides), which resets the count.
AbortD(n, why, dec) ==
    LET F == FailedSet(dec, n) IN
    /\ status[n] = "pending" /\ Decided(dec, n) /\ F # {}
    /\ \/ why = "regions" /\ ~MayFallBack(F) /\ ~(Forceable(F) /\ forced)
       \/ why = "consecutive" /\ Forceable(F) /\ forced
       \/ why = "finished" /\ Forceable(F)
    /\ declined' = Settled(dec, n)
    /\ status' = [status EXCEPT ![n] = "aborted"]
    /\ IF why = "regions" THEN UNCHANGED <<consec, forced>> ELSE consec' = 0 /\ forced' = FALSE
    /\ UNCHANGED <<sent, rcvd, snapvars, started, ref, lastDone, doneInc, regionvars, splitvars, published>>

Complete(n) == CompleteD(n, declined)
Abort(n, why) == AbortD(n, why, declined)

(***************************************************************************)
(* Two-phase-commit sinks: p publishes its transaction of round m once a   *)
(* completed checkpoint holds p's state of round m or later (under the     *)
(* bug: once round m completed, whatever p kept). A sink pre-commits at    *)
(* its snapshot, also a late one of a round already aborted.              *)
(***************************************************************************)
Permitted(p, m) ==
    \/ lastDone >= m /\ ref[lastDone][p] >= m
    \/ Bug = "fallback_commit" /\ status[m] = "done"

Publish(p, m) ==
    /\ m \in RoundIds /\ Permitted(p, m)
    /\ published' = [published EXCEPT ![p] = IF m > @ THEN m ELSE @]
    /\ UNCHANGED <<sent, rcvd, snapvars, coordvars, regionvars, splitvars>>

(***************************************************************************)
(* Failover of a region: a crash, detected later (or, reading "restart", a *)
(* fallback), then a restore of the latest completed checkpoint.           *)
(***************************************************************************)
Crash(r) ==
    /\ crashes < MaxRestarts /\ ~crashed[r] /\ ~down[r]
    /\ crashed' = [crashed EXCEPT ![r] = TRUE]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<sent, rcvd, snapvars, coordvars, down, inc, trigInc, snapInc, splitvars, published>>

Detect(r) ==
    /\ crashed[r] /\ ~down[r]
    /\ down' = [down EXCEPT ![r] = TRUE]
    /\ UNCHANGED <<sent, rcvd, snapvars, coordvars, crashed, inc, trigInc, snapInc, crashes, splitvars, published>>

Restart(r) ==
    LET k(p) == ref[lastDone][p]
        mine == {s \in Splits : Region[Owner[s]] = r}
    IN
    /\ down[r]
    /\ sent' = [c \in DataChans |-> IF Region[Src[c]] = r THEN sentAt[k(Src[c])][c] ELSE sent[c]]
    /\ rcvd' = [c \in DataChans |-> IF Region[Dst[c]] = r THEN rcvdAt[k(Dst[c])][c] ELSE rcvd[c]]
    /\ inc' = [inc EXCEPT ![r] = @ + 1]
    /\ down' = [down EXCEPT ![r] = FALSE] /\ crashed' = [crashed EXCEPT ![r] = FALSE]
    /\ held' = [p \in Readers |-> IF Region[p] = r THEN heldAt[k(p)][p] ELSE held[p]]
    /\ assigned' = (assigned \ mine) \cup (coordDone[lastDone] \cap mine)
    /\ inflight' = inflight \ mine
    /\ UNCHANGED <<snapvars, coordvars, trigInc, snapInc, crashes, sentAfter, heldAt, coordAt, coordDone, readTwice,
                   published>>

\* The protocol's steps. A timeout is a set of declines and a forced round for
\* finished sources an abort like a failed one; trace validation adds both
\* (CompleteD, AbortD with DeclineRegions; Abort(n, "finished")).
Next ==
    \/ \E c \in DataChans : Send(c) \/ Recv(c)
    \/ \E s \in Splits : AssignSend(s) \/ AssignRecv(s)
    \/ Trigger
    \/ \E n \in RoundIds, p \in Procs : Take(n, p)
    \/ \E n \in RoundIds, p \in Procs : (~\E q \in Members(Region[p]) : declined[n][q]) /\ Decline(n, p)
    \/ \E n \in RoundIds : Complete(n) \/ \E why \in {"regions", "consecutive"} : Abort(n, why)
    \/ \E p \in Sinks, m \in RoundIds : Publish(p, m)
    \/ \E r \in Regions : Crash(r) \/ Detect(r) \/ Restart(r)

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties.                                                             *)
(***************************************************************************)
\* Local snapshots are those of the abstract consistent snapshot.
Abs == INSTANCE ConsistentSnapshot WITH
    taken <- [n \in RoundIds |-> taken[n]], sentAt <- [n \in RoundIds |-> sentAt[n]],
    rcvdAt <- [n \in RoundIds |-> rcvdAt[n]], sealed <- [n \in RoundIds |-> sealed[n]],
    cs <- [n \in RoundIds |-> cs[n]]
AbsSpec == Abs!Spec

\* Every completed checkpoint, composed through ref, is a consistent snapshot
\* with exact (aligned: empty) channel state.
Comp == INSTANCE ConsistentSnapshot WITH
    taken <- [n \in RoundIds |-> [p \in Procs |-> status[n] = "done"]],
    sentAt <- [n \in RoundIds |-> [c \in DataChans |-> sentAt[ref[n][Src[c]]][c]]],
    rcvdAt <- [n \in RoundIds |-> [c \in DataChans |-> rcvdAt[ref[n][Dst[c]]][c]]],
    sealed <- [n \in RoundIds |-> [c \in DataChans |-> status[n] = "done"]],
    cs <- [n \in RoundIds |-> [c \in DataChans |-> <<>>]]
ComposedConsistent == Comp!Consistent
ComposedChannelStateExact == Comp!ChannelStateExact

\* At most MaxConsecutive regional completions follow one another.
BoundedDrift == consec <= MaxConsecutive

\* Everything a sink published is held by the latest completed checkpoint.
NoFallbackCommit == \A p \in Sinks : published[p] = 0 \/ ref[lastDone][p] >= published[p]

\* The coordinator's checkpointed assignment agrees with the readers' states.
SplitsAgree ==
    \A n \in RoundIds : status[n] = "done" =>
        \A s \in Splits : (s \in coordDone[n]) = (s \in heldAt[ref[n][Owner[s]]][Owner[s]])

\* No reader is handed a split it is already reading.
NoSplitReadTwice == ~readTwice

\* Agreed values are equal in every completed checkpoint.
Agreement ==
    \A n \in RoundIds : status[n] = "done" =>
        \A p, q \in Procs : Agreed(p, ref[n][p]) = Agreed(q, ref[n][q])

\* A completed checkpoint holds no state of an incarnation that had restarted
\* before the completion (a stale acknowledgement).
NoStaleState ==
    \A n \in RoundIds : status[n] = "done" =>
        \A p \in Procs : ref[n][p] = n => snapInc[n][p] = doneInc[n][Region[p]]

\* Trap: a regional completion (some process keeps an older state) is reachable.
TrapNoRegional == \A n \in RoundIds : status[n] = "done" => \A p \in Procs : ref[n][p] = n
=============================================================================

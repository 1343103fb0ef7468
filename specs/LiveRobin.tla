---------------------------------- MODULE LiveRobin ----------------------------------
(***************************************************************************)
(* LiveRobin: leaderless deterministic merge for actively replicated       *)
(* stream processing.                                                      *)
(*                                                                         *)
(* Source: "Active replication for latency-sensitive stream processing in  *)
(* Apache Flink" (Rosinosky et al.), section V and its Algorithm 1.        *)
(*                                                                         *)
(* A task has n input queues; queue k is fed by a merger M_k that merges   *)
(* the events of source S_k with the heartbeats (increasing sequence       *)
(* numbers) of the single heartbeat generator HG.  HGEmit appends the      *)
(* heartbeat to every merged stream at once: since every source emits on   *)
(* its own, each stream still interleaves its events and the heartbeats in *)
(* any order, which is all a merger's freedom amounts to.  Both replicas   *)
(* of the task receive the same (deduplicated) stream on every queue, but  *)
(* each at its own pace (avail).  Each replica runs Algorithm 1            *)
(* on its own:                                                             *)
(*    dequeue from in[next] (blocking);                                    *)
(*    heartbeat: if e.seq > gen, propagate it and gen := e.seq; remove     *)
(*               next from the active set A; if A = {} then A := 1..n;     *)
(*    event:     process it;                                               *)
(*    next := the next queue of A after next, round robin.                 *)
(* (Lines 15-17 of the printed algorithm apply to every heartbeat, as the  *)
(* prose says: "It then removes the current queue from the active one".)   *)
(*                                                                         *)
(* Properties:                                                             *)
(*   ReplicaAgreement  the replicas' outputs (processed events and         *)
(*                     propagated heartbeats) are prefixes of one another; *)
(*                     refinement of DeterministicMerge (PROPERTY);        *)
(*   AllConsumed       under fairness every event of every queue is        *)
(*                     eventually consumed by both replicas, because HG    *)
(*                     sends a last heartbeat after all events.            *)
(*                                                                         *)
(* Reference implementation: reference/ (protocol "liverobin").  Mutants   *)
(* (constant Bug):                                                         *)
(*   "no_ordering"      a replica consumes from any non-empty queue (the   *)
(*                      paper's incorrect baseline; fails ReplicaAgreement);*)
(*   "plain_rr"         round robin over all queues, heartbeats treated as *)
(*                      ordinary events (stalls: fails AllConsumed);       *)
(*   "different_config" the second replica starts polling at another      *)
(*                      queue (cf. Materialize #38196; fails               *)
(*                      ReplicaAgreement).                                 *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS N,          \* input queues 1..N
          MaxEvents,  \* events per source
          MaxHB,      \* heartbeats of HG
          Bug

ASSUME Bug \in {"none", "no_ordering", "plain_rr", "different_config"}

Replicas == {1, 2}
Queues == 1..N

VARIABLES
    stream,    \* stream[k]: the merged stream of queue k: [h |-> heartbeat?, n |-> number]
    nev,       \* nev[k]: events emitted by source S_k
    hb,        \* heartbeats emitted by HG
    avail,     \* avail[r][k]: prefix of stream[k] that arrived at replica r
    pos,       \* pos[r][k]: items of queue k consumed by replica r
    next, gen, act,   \* Algorithm 1's variables of each replica (act is A)
    out        \* out[r]: processed events and propagated heartbeats, in order

vars == <<stream, nev, hb, avail, pos, next, gen, act, out>>

Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Max(S) == CHOOSE x \in S : \A y \in S : x >= y
\* Round robin: the queue of A after q (wrapping around).
RR(A, q) == IF q >= Max(A) THEN Min(A) ELSE Min({c \in A : c > q})

TypeOK ==
    /\ nev \in [Queues -> 0..MaxEvents]
    /\ hb \in 0..MaxHB
    /\ next \in [Replicas -> Queues]
    /\ gen \in [Replicas -> 0..MaxHB]
    /\ act \in [Replicas -> SUBSET Queues]

Init ==
    /\ stream = [k \in Queues |-> <<>>]
    /\ nev = [k \in Queues |-> 0]
    /\ hb = 0
    /\ avail = [r \in Replicas |-> [k \in Queues |-> 0]]
    /\ pos = [r \in Replicas |-> [k \in Queues |-> 0]]
    /\ next = [r \in Replicas |-> IF Bug = "different_config" /\ r = 2 THEN N ELSE 1]
    /\ gen = [r \in Replicas |-> 0]
    /\ act = [r \in Replicas |-> Queues]
    /\ out = [r \in Replicas |-> <<>>]

\* S_k emits an event (sources stop before HG's last heartbeat).
SourceEmit(k) ==
    /\ nev[k] < MaxEvents
    /\ hb < MaxHB
    /\ nev' = [nev EXCEPT ![k] = @ + 1]
    /\ stream' = [stream EXCEPT ![k] = Append(@, [h |-> FALSE, n |-> nev[k] + 1])]
    /\ UNCHANGED <<hb, avail, pos, next, gen, act, out>>

\* HG emits the next heartbeat; every merger forwards it into its queue.
HGEmit ==
    /\ hb < MaxHB
    /\ hb' = hb + 1
    /\ stream' = [k \in Queues |-> Append(stream[k], [h |-> TRUE, n |-> hb + 1])]
    /\ UNCHANGED <<nev, avail, pos, next, gen, act, out>>

\* The next item of queue k reaches replica r.
Arrive(r, k) ==
    /\ avail[r][k] < Len(stream[k])
    /\ avail' = [avail EXCEPT ![r][k] = @ + 1]
    /\ UNCHANGED <<stream, nev, hb, pos, next, gen, act, out>>

\* Replica r dequeues from queue q and runs one iteration of Algorithm 1.
Consume(r, q) ==
    LET e == stream[q][pos[r][q] + 1]
        first == e.h /\ e.n > gen[r]
        a1 == IF e.h THEN act[r] \ {q} ELSE act[r]
        a2 == IF a1 = {} THEN Queues ELSE a1
    IN
    /\ pos[r][q] < avail[r][q]
    /\ pos' = [pos EXCEPT ![r][q] = @ + 1]
    /\ IF Bug = "plain_rr"
         THEN /\ out' = [out EXCEPT ![r] = Append(@, [q |-> q, h |-> e.h, n |-> e.n])]
              /\ next' = [next EXCEPT ![r] = RR(Queues, q)]
              /\ UNCHANGED <<gen, act>>
         ELSE /\ out' = IF ~e.h \/ first
                          THEN [out EXCEPT ![r] = Append(@, [q |-> q, h |-> e.h, n |-> e.n])]
                          ELSE out
              /\ gen' = IF first THEN [gen EXCEPT ![r] = e.n] ELSE gen
              /\ act' = [act EXCEPT ![r] = a2]
              /\ next' = [next EXCEPT ![r] = RR(a2, q)]
    /\ UNCHANGED <<stream, nev, hb, avail>>

Step(r) ==
    IF Bug = "no_ordering" THEN \E q \in Queues : Consume(r, q) ELSE Consume(r, next[r])

Done ==
    /\ hb = MaxHB
    /\ \A r \in Replicas, k \in Queues : pos[r][k] = Len(stream[k])
    /\ UNCHANGED vars

Next ==
    \/ \E k \in Queues : SourceEmit(k)
    \/ HGEmit
    \/ \E r \in Replicas, k \in Queues : Arrive(r, k)
    \/ \E r \in Replicas : Step(r)
    \/ Done

Fairness ==
    /\ WF_vars(HGEmit)
    /\ \A r \in Replicas : WF_vars(Step(r)) /\ \A k \in Queues : WF_vars(Arrive(r, k))

Spec == Init /\ [][Next]_vars
FairSpec == Spec /\ Fairness

IsPrefix(s, t) == Len(s) <= Len(t) /\ s = SubSeq(t, 1, Len(s))

ReplicaAgreement == IsPrefix(out[1], out[2]) \/ IsPrefix(out[2], out[1])

\* Every item of every queue is eventually consumed by both replicas.
AllConsumed == <>[](\A r \in Replicas, k \in Queues : pos[r][k] = Len(stream[k]))

(***************************************************************************)
(* Refinement: both replicas consume prefixes of one common sequence.      *)
(***************************************************************************)
Longer == IF Len(out[1]) >= Len(out[2]) THEN out[1] ELSE out[2]
Elems == [q : Queues, h : BOOLEAN, n : 1..(MaxEvents + MaxHB)]
Merged == INSTANCE DeterministicMerge WITH order <- Longer, seen <- out
MergeSpec == Merged!Spec

\* Trap (must be violated): a replica completes a heartbeat cycle (every queue
\* delivered heartbeat 1) after processing an event.
TrapCycle == ~(\E r \in Replicas : gen[r] >= 1 /\ act[r] = Queues /\ \E j \in DOMAIN out[r] : ~out[r][j].h)
=============================================================================

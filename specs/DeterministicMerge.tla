------------------------------ MODULE DeterministicMerge ------------------------------
(***************************************************************************)
(* Abstract deterministic merge ("atomic broadcast through deterministic   *)
(* merging", section V-A of "Active Replication for Latency-Sensitive      *)
(* Stream Processing in Apache Flink"): all replicas consume prefixes of   *)
(* one common sequence.  A replica either consumes the next element of the *)
(* agreed order or, when it is ahead of every other replica, extends the   *)
(* order with any element.  LiveRobin refines this module (MergeSpec).     *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS Replicas, Elems

VARIABLES order,  \* the agreed consumption order
          seen    \* seen[r]: what replica r consumed so far

Init == order = <<>> /\ seen = [r \in Replicas |-> <<>>]

\* Replica r consumes element e.
Consume(r, e) ==
    LET k == Len(seen[r]) + 1 IN
    /\ IF k <= Len(order)
         THEN /\ order[k] = e
              /\ UNCHANGED order
         ELSE order' = Append(order, e)
    /\ seen' = [seen EXCEPT ![r] = Append(@, e)]

Next == \E r \in Replicas, e \in Elems : Consume(r, e)

Spec == Init /\ [][Next]_<<order, seen>>

\* Every replica has consumed a prefix of the agreed order.
Agreement == \A r \in Replicas : Len(seen[r]) <= Len(order) /\ seen[r] = SubSeq(order, 1, Len(seen[r]))
=============================================================================

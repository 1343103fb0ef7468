------------------------- MODULE MCRegionalCheckpoint -------------------------
(* Two slices r1 -> s1 and r2 -> s2 of an embarrassingly parallel job (reader
   r1 owns split "a"; s1, s2 are two-phase-commit sinks); the same job with a
   channel r1 -> s2 between the slices (MCCrossChans), whose regions the buggy
   configuration still takes per slice; and, for failovers (whose state space
   is larger), the job whose second slice is its reader alone (MCSmallProcs). *)
EXTENDS RegionalCheckpoint

MCProcs == {"r1", "s1", "r2", "s2"}
MCDataChans == {"r1>s1", "r2>s2"}
MCCrossChans == {"r1>s1", "r2>s2", "r1>s2"}
MCSrc == [c \in MCCrossChans |-> IF c = "r2>s2" THEN "r2" ELSE "r1"]
MCDst == [c \in MCCrossChans |-> IF c = "r1>s1" THEN "s1" ELSE "s2"]
MCRegion == [p \in MCProcs |-> IF p \in {"r1", "s1"} THEN 1 ELSE 2]
\* The regions of the job with the cross channel: its connected components (one).
MCOneRegion == [p \in MCProcs |-> 1]
MCReaders == {"r1", "r2"}
MCSinks == {"s1", "s2"}
MCSplits == {"a"}
MCSmallProcs == {"r1", "s1", "r2"}
MCSmallChans == {"r1>s1"}
MCSmallSinks == {"s1"}
MCOwner == [s \in MCSplits |-> IF s = "a" THEN "r1" ELSE "r2"]
=============================================================================

------------------------------------ MODULE MCCIC ------------------------------------
(* Model-checking topologies for the CIC specifications (CIC_BCS, CIC_HMNR):
   MCTopo = "triangle": three processes, a channel between every ordered pair;
   MCTopo = "pair": two processes, a channel each way. *)
EXTENDS Naturals

CONSTANT MCTopo

MCProcs == IF MCTopo = "pair" THEN {"p", "q"} ELSE {"p", "q", "r"}
MCChans == {<<a, b>> : a, b \in MCProcs} \ {<<a, a>> : a \in MCProcs}
MCSrc == [c \in MCChans |-> c[1]]
MCDst == [c \in MCChans |-> c[2]]
=============================================================================

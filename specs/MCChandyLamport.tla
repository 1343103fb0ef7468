------------------------------ MODULE MCChandyLamport ------------------------------
(* Model-checking instances of ChandyLamport: a ring of three processes with a
   chord, started by a coordinator (MCTopo = "coord") or by an initiator on its
   own (MCTopo = "initiator"). *)
EXTENDS ChandyLamport

CONSTANT MCTopo

MCProcs == {"p1", "p2", "p3"}
MCCoords == IF MCTopo = "coord" THEN {"co"} ELSE {}
MCDataChans == {"p1>p2", "p2>p3", "p3>p1", "p1>p3"}
MCCtrlChans == IF MCTopo = "coord" THEN {"co>p1"} ELSE {}
MCChans == MCDataChans \cup MCCtrlChans
MCSrc == [c \in {"p1>p2", "p2>p3", "p3>p1", "p1>p3", "co>p1"} |->
            CASE c = "p1>p2" -> "p1" [] c = "p2>p3" -> "p2" [] c = "p3>p1" -> "p3"
              [] c = "p1>p3" -> "p1" [] c = "co>p1" -> "co"]
MCDst == [c \in {"p1>p2", "p2>p3", "p3>p1", "p1>p3", "co>p1"} |->
            CASE c = "p1>p2" -> "p2" [] c = "p2>p3" -> "p3" [] c = "p3>p1" -> "p1"
              [] c = "p1>p3" -> "p3" [] c = "co>p1" -> "p1"]
MCInitiators == IF MCTopo = "coord" THEN {} ELSE {"p1", "p2"}
=============================================================================

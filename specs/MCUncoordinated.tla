------------------------------ MODULE MCUncoordinated ------------------------------
(* Model-checking instance of Uncoordinated: two processes p, q with a channel
   each way, or three processes in a ring (MCTopo = "ring"). *)
EXTENDS Uncoordinated

CONSTANT MCTopo

MCProcs == IF MCTopo = "pair" THEN {"p", "q"} ELSE {"p", "q", "r"}
MCChans == IF MCTopo = "pair" THEN {"p>q", "q>p"} ELSE {"p>q", "q>r", "r>p"}
MCSrc == [c \in {"p>q", "q>p", "q>r", "r>p"} |->
            CASE c = "p>q" -> "p" [] c = "q>p" -> "q" [] c = "q>r" -> "q" [] c = "r>p" -> "r"]
MCDst == [c \in {"p>q", "q>p", "q>r", "r>p"} |->
            CASE c = "p>q" -> "q" [] c = "q>p" -> "p" [] c = "q>r" -> "r" [] c = "r>p" -> "p"]
=============================================================================

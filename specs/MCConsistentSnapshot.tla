--------------------------- MODULE MCConsistentSnapshot ---------------------------
(* The abstract module checked on its own: two processes with a channel each
   way.  Its guards make Consistent and ChannelStateExact hold by construction;
   the check shows they are invariants and that a non-empty channel state is
   reachable. *)
EXTENDS ConsistentSnapshot

MCProcs == {"p", "q"}
MCDataChans == {"p>q", "q>p"}
MCSrc == [c \in MCDataChans |-> IF c = "p>q" THEN "p" ELSE "q"]
MCDst == [c \in MCDataChans |-> IF c = "p>q" THEN "q" ELSE "p"]
=============================================================================

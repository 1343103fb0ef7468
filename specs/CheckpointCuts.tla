------------------------------- MODULE CheckpointCuts -------------------------------
(***************************************************************************)
(* Global checkpoints over recorded checkpoint histories: the definitions  *)
(* shared by the uncoordinated (Uncoordinated) and communication-induced   *)
(* (CIC_BCS, CIC_HMNR) specifications.                                     *)
(*                                                                         *)
(* Conventions of docs/theory.md, "Conventions": every process p has the   *)
(* initial checkpoint C_{p,0}; a checkpoint history of p is the sequence   *)
(* of its stable checkpoints C_{p,0}, C_{p,1}, ... (TLA+ index x+1 holds   *)
(* C_{p,x}); index Len+1 stands for the virtual checkpoint V_p (its        *)
(* current state).                                                         *)
(* A checkpoint is represented by p's message counters at that point:      *)
(* for an output channel c the number of messages sent on c, for an input  *)
(* channel the number processed (FIFO channels, messages numbered 1, 2,    *)
(* ... per channel), as in CheckMate's per-channel offsets.                *)
(***************************************************************************)
EXTENDS Naturals, Sequences

\* The counters of a global checkpoint G (G[p]: index into hist[p], or
\* Len(hist[p]) + 1 for the current counters cur[p]).
CutVal(hist, cur, G, p) == IF G[p] <= Len(hist[p]) THEN hist[p][G[p]] ELSE cur[p]

\* Orphans of G on channels Chans (docs/theory.md, "Orphans, in-transit messages and
\* consistency"): processed by the receiver in its checkpoint but not sent in the
\* sender's.
Orphans(hist, cur, G, Chans, Src, Dst) ==
    {c \in Chans : CutVal(hist, cur, G, Dst[c])[c] > CutVal(hist, cur, G, Src[c])[c]}

IsConsistent(hist, cur, G, Chans, Src, Dst) == Orphans(hist, cur, G, Chans, Src, Dst) = {}

(***************************************************************************)
(* Rollback propagation (Elnozahy et al. 2002 survey; CheckMate Algorithm  *)
(* 1 on the checkpoint graph; docs/theory.md, "Rollback propagation"):     *)
(* starting from the bound U, roll every receiver of an orphan back by one *)
(* checkpoint, until no orphan is left.  By the lattice property           *)
(* (docs/theory.md, "The lattice of consistent global checkpoints") the    *)
(* result is the maximum consistent global checkpoint below U: the         *)
(* recovery line.                                                          *)
(***************************************************************************)
RECURSIVE RollbackPropagation(_, _, _, _, _, _, _)
RollbackPropagation(hist, cur, G, Procs, Chans, Src, Dst) ==
    LET bad == Orphans(hist, cur, G, Chans, Src, Dst) IN
    IF bad = {} THEN G
    ELSE RollbackPropagation(hist, cur,
            [p \in Procs |-> IF \E c \in bad : Dst[c] = p THEN G[p] - 1 ELSE G[p]],
            Procs, Chans, Src, Dst)

\* All global checkpoints G with Lo <= G <= Hi (componentwise).
CutsBetween(Lo, Hi, Procs) == {G \in [Procs -> UNION {Lo[p]..Hi[p] : p \in Procs}] :
                                  \A p \in Procs : Lo[p] <= G[p] /\ G[p] <= Hi[p]}

\* G is the maximum consistent global checkpoint below U: consistent, and no
\* other consistent global checkpoint between G and U (brute force, the
\* definition rather than the algorithm).
IsMaxConsistentBelow(hist, cur, G, U, Procs, Chans, Src, Dst) ==
    /\ \A p \in Procs : G[p] <= U[p]
    /\ IsConsistent(hist, cur, G, Chans, Src, Dst)
    /\ \A H \in CutsBetween(G, U, Procs) :
          H # G => ~IsConsistent(hist, cur, H, Chans, Src, Dst)
=============================================================================

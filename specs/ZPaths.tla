----------------------------------- MODULE ZPaths -----------------------------------
(***************************************************************************)
(* Z-paths, Z-cycles and useless checkpoints over a checkpoint-and-message *)
(* history, computed as reachability in the rollback-dependency graph.     *)
(*                                                                         *)
(* Sources: R. H. B. Netzer and J. Xu, "Necessary and Sufficient           *)
(* Conditions for Consistent Global Snapshots" (1995); Y.-M. Wang,         *)
(* "Consistent Global Checkpoints that Contain a Given Set of Local        *)
(* Checkpoints" (1997); docs/theory.md, "Z-paths and Z-cycles" and "The    *)
(* R-graph and the checkpoint graph".                                      *)
(*                                                                         *)
(* ivl[p] is p's current interval index iota (1 before its first           *)
(* checkpoint after C_{p,0}; +1 at every checkpoint), so p's stable        *)
(* checkpoints are C_{p,0} .. C_{p,ivl[p]-1} and node <<p, ivl[p]>> is its *)
(* virtual checkpoint V_p.  A delivered message is a record [src, s, dst,  *)
(* r]: sent in interval s of src, processed in interval r of dst.  R-graph *)
(* edges (docs/theory.md, "The R-graph"): <<p, x>> -> <<p, x+1>> and, for  *)
(* every delivered message, <<src, s>> -> <<dst, r>>.  A Z-path from       *)
(* C_{i,x} to C_{j,y} exists iff <<j, y>> is reachable from <<i, x+1>>     *)
(* (docs/theory.md, "R-paths are Z-paths"), so C_{p,x} is useless (lies on *)
(* a Z-cycle) iff <<p, x>> is reachable from <<p, x+1>> (docs/theory.md,   *)
(* "Useless checkpoints in linear time").  Reachability is the least       *)
(* fixpoint of the successor relation: a bounded transitive closure over   *)
(* the finitely many nodes.                                                *)
(***************************************************************************)
EXTENDS Naturals

Nodes(Procs, ivl) == UNION {{<<p, x>> : x \in 0..ivl[p]} : p \in Procs}

Succ(S, ivl, msgs) ==
    {<<n[1], n[2] + 1>> : n \in {m \in S : m[2] < ivl[m[1]]}}
    \cup {<<m.dst, m.r>> : m \in {d \in msgs : <<d.src, d.s>> \in S}}

RECURSIVE Closure(_, _, _)
Closure(S, ivl, msgs) ==
    LET T == S \cup Succ(S, ivl, msgs) IN
    IF T = S THEN S ELSE Closure(T, ivl, msgs)

\* Nodes reachable from the set S (S included).
Reach(S, ivl, msgs) == Closure(S, ivl, msgs)

\* C_{p,x} (a stable checkpoint) lies on a Z-cycle.
Useless(p, x, ivl, msgs) == <<p, x>> \in Reach({<<p, x + 1>>}, ivl, msgs)

UselessSet(Procs, ivl, msgs) ==
    {n \in Nodes(Procs, ivl) : n[2] < ivl[n[1]] /\ Useless(n[1], n[2], ivl, msgs)}

\* Z-cycle freedom: no checkpoint is useless.
ZCycleFree(Procs, ivl, msgs) == UselessSet(Procs, ivl, msgs) = {}

\* The global checkpoint G (G[p] in 0..ivl[p]; ivl[p] = V_p) is consistent:
\* no delivered message is an orphan (docs/theory.md, "Orphans, in-transit messages
\* and consistency").
ConsistentCut(G, msgs) == \A m \in msgs : m.r <= G[m.dst] => m.s <= G[m.src]
=============================================================================

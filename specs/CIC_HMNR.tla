---------------------------------- MODULE CIC_HMNR ----------------------------------
(***************************************************************************)
(* Communication-induced checkpointing: the HMNR protocol (Helary,         *)
(* Mostefaoui, Netzer, Raynal, "Communication-Based Prevention of Useless  *)
(* Checkpoints in Distributed Computations", Distributed Computing 13(1),  *)
(* 2000), in the greater[] form CheckMate implements                       *)
(* (cic_checkpointing.py); rules exactly as docs/theory.md, "HMNR".        *)
(*                                                                         *)
(* Process i keeps lc, ckpt[1..n], taken[1..n], greater[1..n],             *)
(* sent_to[1..n] and piggybacks lc, ckpt, taken and greater.  Before       *)
(* delivering m it takes a forced checkpoint iff                           *)
(*   C1: (\E k : sent_to[k] /\ m.greater[k]) /\ m.lc > lc                  *)
(*   C2: m.ckpt[i] = ckpt[i] /\ m.taken[i]                                 *)
(* C1 prevents a non-causal Z-path along which timestamps would decrease,  *)
(* C2 prevents closing a Z-cycle through i's current interval.             *)
(*                                                                         *)
(* History variables (ivl, msgs) record every delivered message with its   *)
(* send and receive intervals; the invariant NoZCycle checks, by bounded   *)
(* transitive closure of the rollback-dependency graph (ZPaths), that no   *)
(* checkpoint lies on a Z-cycle: HMNR's guarantee.  History = FALSE        *)
(* freezes msgs at {}: no step reads it, and trace validation (HMNRTrace)  *)
(* checks no invariant, so a state there no longer grows with the trace.   *)
(*                                                                         *)
(* Reference implementation: reference/ (protocol "hmnr").  Mutants (Bug): *)
(*   "no_c1"  the forced-checkpoint condition without C1 (fails NoZCycle); *)
(*   "no_c2"  without C2 (fails NoZCycle).                                 *)
(***************************************************************************)
EXTENDS Naturals, Sequences, ZPaths

CONSTANTS Procs, Chans, Src, Dst, MaxMsgs, MaxBasic, Bug,
          History     \* keep the history variable msgs (model checking)

ASSUME Bug \in {"none", "no_c1", "no_c2"} /\ History \in BOOLEAN

VARIABLES
    chan,     \* chan[c]: FIFO queue of messages (piggyback and send interval)
    lc, ckpt, taken, greater, sentTo,   \* per process, as in docs/theory.md, "HMNR"
    ivl, msgs,                          \* history (ZPaths)
    nsent, nbasic, nforced

vars == <<chan, lc, ckpt, taken, greater, sentTo, ivl, msgs, nsent, nbasic, nforced>>

TypeOK ==
    /\ lc \in [Procs -> Nat]
    /\ ckpt \in [Procs -> [Procs -> Nat]]
    /\ taken \in [Procs -> [Procs -> BOOLEAN]]
    /\ greater \in [Procs -> [Procs -> BOOLEAN]]
    /\ sentTo \in [Procs -> [Procs -> BOOLEAN]]
    /\ nsent \in 0..MaxMsgs
    /\ nbasic \in [Procs -> 0..MaxBasic]

Init ==
    /\ chan = [c \in Chans |-> <<>>]
    /\ lc = [p \in Procs |-> 0]
    /\ ckpt = [p \in Procs |-> [k \in Procs |-> 0]]
    /\ taken = [p \in Procs |-> [k \in Procs |-> FALSE]]
    /\ greater = [p \in Procs |-> [k \in Procs |-> FALSE]]
    /\ sentTo = [p \in Procs |-> [k \in Procs |-> FALSE]]
    /\ ivl = [p \in Procs |-> 1]
    /\ msgs = {}
    /\ nsent = 0
    /\ nbasic = [p \in Procs |-> 0]
    /\ nforced = 0

\* The state of process i after take_checkpoint (basic or forced).
AfterCkpt(i, st) ==
    [lc |-> st.lc + 1,
     ckpt |-> [st.ckpt EXCEPT ![i] = @ + 1],
     taken |-> [k \in Procs |-> IF k = i THEN st.taken[k] ELSE TRUE],
     greater |-> [k \in Procs |-> IF k = i THEN st.greater[k] ELSE TRUE],
     sentTo |-> [k \in Procs |-> FALSE]]

Local(i) == [lc |-> lc[i], ckpt |-> ckpt[i], taken |-> taken[i], greater |-> greater[i],
             sentTo |-> sentTo[i]]

SetLocal(i, st) ==
    /\ lc' = [lc EXCEPT ![i] = st.lc]
    /\ ckpt' = [ckpt EXCEPT ![i] = st.ckpt]
    /\ taken' = [taken EXCEPT ![i] = st.taken]
    /\ greater' = [greater EXCEPT ![i] = st.greater]
    /\ sentTo' = [sentTo EXCEPT ![i] = st.sentTo]

Basic(i) ==
    /\ nbasic[i] < MaxBasic
    /\ nbasic' = [nbasic EXCEPT ![i] = @ + 1]
    /\ SetLocal(i, AfterCkpt(i, Local(i)))
    /\ ivl' = [ivl EXCEPT ![i] = @ + 1]
    /\ UNCHANGED <<chan, msgs, nsent, nforced>>

Send(c) ==
    LET i == Src[c] IN
    /\ nsent < MaxMsgs
    /\ nsent' = nsent + 1
    /\ chan' = [chan EXCEPT ![c] = Append(@, [lc |-> lc[i], ckpt |-> ckpt[i], taken |-> taken[i],
                                              greater |-> greater[i], s |-> ivl[i]])]
    /\ sentTo' = [sentTo EXCEPT ![i][Dst[c]] = TRUE]
    /\ UNCHANGED <<lc, ckpt, taken, greater, ivl, msgs, nbasic, nforced>>

C1(i, m) == (\E k \in Procs : sentTo[i][k] /\ m.greater[k]) /\ m.lc > lc[i]
C2(i, m) == m.ckpt[i] = ckpt[i][i] /\ m.taken[i]
Forced(i, m) == (C1(i, m) /\ Bug # "no_c1") \/ (C2(i, m) /\ Bug # "no_c2")

\* Merge the piggyback of m into the state st of i (after a forced checkpoint, if any).
Merge(i, st, m) ==
    LET gr == IF m.lc > st.lc
                THEN [k \in Procs |-> IF k = i THEN FALSE ELSE m.greater[k]]
              ELSE IF m.lc = st.lc
                THEN [k \in Procs |-> st.greater[k] /\ m.greater[k]]
              ELSE st.greater
    IN [lc |-> IF m.lc > st.lc THEN m.lc ELSE st.lc,
        greater |-> gr,
        ckpt |-> [k \in Procs |-> IF k # i /\ m.ckpt[k] > st.ckpt[k] THEN m.ckpt[k] ELSE st.ckpt[k]],
        taken |-> [k \in Procs |->
                     IF k = i THEN st.taken[k]
                     ELSE IF m.ckpt[k] > st.ckpt[k] THEN m.taken[k]
                     ELSE IF m.ckpt[k] = st.ckpt[k] THEN st.taken[k] \/ m.taken[k]
                     ELSE st.taken[k]],
        sentTo |-> st.sentTo]

Recv(c) ==
    LET i == Dst[c]
        m == Head(chan[c])
        f == Forced(i, m)
        st == IF f THEN AfterCkpt(i, Local(i)) ELSE Local(i)
        iv == IF f THEN ivl[i] + 1 ELSE ivl[i]
    IN
    /\ chan[c] # <<>>
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ SetLocal(i, Merge(i, st, m))
    /\ ivl' = [ivl EXCEPT ![i] = iv]
    /\ nforced' = IF f THEN nforced + 1 ELSE nforced
    /\ msgs' = IF History THEN msgs \cup {[src |-> Src[c], s |-> m.s, dst |-> i, r |-> iv]} ELSE msgs
    /\ UNCHANGED <<nsent, nbasic>>

Done ==
    /\ nsent = MaxMsgs
    /\ \A c \in Chans : chan[c] = <<>>
    /\ \A p \in Procs : nbasic[p] = MaxBasic
    /\ UNCHANGED vars

Next ==
    \/ \E p \in Procs : Basic(p)
    \/ \E c \in Chans : Send(c) \/ Recv(c)
    \/ Done

Spec == Init /\ [][Next]_vars

NoZCycle == ZCycleFree(Procs, ivl, msgs)

\* ckpt[i][i] counts i's checkpoints; greater[i][i] is always false (docs/theory.md,
\* "HMNR").
IndexMatchesInterval == \A p \in Procs : ckpt[p][p] + 1 = ivl[p] /\ ~greater[p][p]

\* Trap (must be violated): a forced checkpoint is reachable.
TrapForced == nforced = 0
=============================================================================

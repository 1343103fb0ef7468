---------------------------------- MODULE CIC_BCS ----------------------------------
(***************************************************************************)
(* Communication-induced checkpointing: the BCS protocol (Briatico,        *)
(* Ciuffoletti, Simoncini 1984), index-based, Z-cycle free.                *)
(*                                                                         *)
(* Rules (docs/theory.md, "BCS"): every process keeps a logical clock lc   *)
(* (0 initially; C_{p,0} has timestamp 0).  A basic checkpoint increments  *)
(* lc and is timestamped lc.  Every message piggybacks lc.  On receiving m *)
(* with m.lc > lc, the process sets lc := m.lc and takes a forced          *)
(* checkpoint timestamped m.lc before delivering m.                        *)
(*                                                                         *)
(* History variables: ivl (interval index), ts (checkpoint timestamps),    *)
(* msgs (delivered messages with their send and receive intervals), so the *)
(* invariants can state the protocol's guarantees over the whole history:  *)
(*   NoZCycle       no checkpoint lies on a Z-cycle (Netzer-Xu; ZPaths);   *)
(*   IndexCutsConsistent  for every n, the global checkpoint made of each  *)
(*                  process's first checkpoint with timestamp >= n (or its *)
(*                  current state) is consistent -- the BCS property.      *)
(*                                                                         *)
(* History = FALSE freezes ts and msgs at their initial values: no step    *)
(* reads them, only the invariants do, and trace validation (BCSTrace)     *)
(* checks none, so a state there no longer grows with the trace.           *)
(*                                                                         *)
(* Reference implementation: reference/ (protocol "bcs").  Mutant (Bug):   *)
(*   "no_forced"  the forced checkpoint is skipped (fails NoZCycle).       *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, ZPaths

CONSTANTS Procs, Chans, Src, Dst,
          MaxMsgs,    \* messages sent in the whole run
          MaxBasic,   \* basic checkpoints per process
          Bug,
          History     \* keep the history variables ts and msgs (model checking)

ASSUME Bug \in {"none", "no_forced"} /\ History \in BOOLEAN

VARIABLES
    chan,     \* chan[c]: FIFO queue of [lc |-> piggybacked clock, s |-> send interval]
    lc,       \* lc[p]: logical clock (checkpoint index)
    ivl,      \* history: ivl[p], p's current interval index (1 + checkpoints taken)
    ts,       \* history: ts[p][x+1] = timestamp of C_{p,x}
    msgs,     \* history: delivered messages [src, s, dst, r]
    nsent,    \* messages sent so far (bound)
    nbasic,   \* nbasic[p]: basic checkpoints of p so far (bound)
    nforced   \* forced checkpoints so far

vars == <<chan, lc, ivl, ts, msgs, nsent, nbasic, nforced>>

TypeOK ==
    /\ chan \in [Chans -> Seq([lc : Nat, s : Nat])]
    /\ lc \in [Procs -> Nat]
    /\ ivl \in [Procs -> Nat \ {0}]
    /\ nsent \in 0..MaxMsgs
    /\ nbasic \in [Procs -> 0..MaxBasic]

Init ==
    /\ chan = [c \in Chans |-> <<>>]
    /\ lc = [p \in Procs |-> 0]
    /\ ivl = [p \in Procs |-> 1]
    /\ ts = [p \in Procs |-> <<0>>]
    /\ msgs = {}
    /\ nsent = 0
    /\ nbasic = [p \in Procs |-> 0]
    /\ nforced = 0

Basic(p) ==
    /\ nbasic[p] < MaxBasic
    /\ nbasic' = [nbasic EXCEPT ![p] = @ + 1]
    /\ lc' = [lc EXCEPT ![p] = @ + 1]
    /\ ivl' = [ivl EXCEPT ![p] = @ + 1]
    /\ ts' = IF History THEN [ts EXCEPT ![p] = Append(@, lc[p] + 1)] ELSE ts
    /\ UNCHANGED <<chan, msgs, nsent, nforced>>

Send(c) ==
    /\ nsent < MaxMsgs
    /\ nsent' = nsent + 1
    /\ chan' = [chan EXCEPT ![c] = Append(@, [lc |-> lc[Src[c]], s |-> ivl[Src[c]]])]
    /\ UNCHANGED <<lc, ivl, ts, msgs, nbasic, nforced>>

\* Receive the head of c: a forced checkpoint first if m.lc > lc, then deliver.
Recv(c) ==
    LET p == Dst[c]
        m == Head(chan[c])
        forced == m.lc > lc[p] /\ Bug # "no_forced"
        iv == IF forced THEN ivl[p] + 1 ELSE ivl[p]
    IN
    /\ chan[c] # <<>>
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ lc' = [lc EXCEPT ![p] = IF m.lc > @ THEN m.lc ELSE @]
    /\ ivl' = [ivl EXCEPT ![p] = iv]
    /\ ts' = IF forced /\ History THEN [ts EXCEPT ![p] = Append(@, m.lc)] ELSE ts
    /\ nforced' = IF forced THEN nforced + 1 ELSE nforced
    /\ msgs' = IF History THEN msgs \cup {[src |-> Src[c], s |-> m.s, dst |-> p, r |-> iv]} ELSE msgs
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

\* docs/theory.md, "BCS": for every n, take on each process its first checkpoint with
\* timestamp >= n, or its current state V_p when there is none.
FirstAtLeast(p, n) ==
    LET xs == {x \in 0..(Len(ts[p]) - 1) : ts[p][x + 1] >= n} IN
    IF xs = {} THEN ivl[p] ELSE CHOOSE x \in xs : \A y \in xs : x <= y

IndexCutsConsistent ==
    \A n \in 0..(MaxBasic * Cardinality(Procs) + 1) :
        ConsistentCut([p \in Procs |-> FirstAtLeast(p, n)], msgs)

\* Checkpoint timestamps strictly increase per process.
TimestampsIncrease == \A p \in Procs : \A x \in 1..(Len(ts[p]) - 1) : ts[p][x] < ts[p][x + 1]

\* Trap (must be violated): a forced checkpoint is reachable.
TrapForced == nforced = 0
=============================================================================

------------------------------ MODULE ConsistentSnapshot ------------------------------
(***************************************************************************)
(* Abstract consistent snapshots: what every coordinated checkpointing     *)
(* protocol of the kit (Chandy-Lamport, aligned and cyclic ABS, unaligned  *)
(* and aligned-with-timeout checkpoints) must produce.                     *)
(*                                                                         *)
(* Source: K. M. Chandy and L. Lamport, "Distributed Snapshots:            *)
(* Determining Global States of Distributed Systems" (1985); definitions   *)
(* as in docs/theory.md, "Conventions" to "Complete snapshots: channel     *)
(* state and logs".                                                        *)
(*                                                                         *)
(* Data messages on channel c are numbered 1, 2, ... in send order (FIFO   *)
(* channels).  "Received" means *processed* (docs/theory.md, "Receive      *)
(* means processing").  For snapshot round r:                              *)
(*   sentAt[r][c]  messages the source had sent on c when it recorded its  *)
(*                 local state (its checkpoint of round r),                *)
(*   rcvdAt[r][c]  messages the destination had processed from c when it   *)
(*                 recorded its local state,                               *)
(*   cs[r][c]      the recorded channel state of c, once sealed.           *)
(* The recorded local states form a consistent cut iff no message is an    *)
(* orphan (rcvdAt <= sentAt), and the recorded channel state is exact iff  *)
(* it lists exactly the in-transit messages <<rcvdAt+1, ..., sentAt>> in   *)
(* send order (no drop, no phantom or duplicate, FIFO order).              *)
(*                                                                         *)
(* The actions below only ever produce such snapshots: Take refuses a      *)
(* local state that would create an orphan, Seal records exactly the       *)
(* in-transit messages.  A concrete protocol refines this module (PROPERTY *)
(* Abs!Spec under its refinement mapping) iff every snapshot it records is *)
(* consistent and complete.                                                *)
(***************************************************************************)
EXTENDS Naturals, Sequences

CONSTANTS
    Procs,      \* processes whose local states form the global checkpoint
    DataChans,  \* application channels (control channels are not part of a cut)
    Src, Dst,   \* Src[c], Dst[c]: the ends of channel c
    Rounds,     \* snapshot rounds 1..Rounds
    MaxData     \* bound on data messages per channel (only for checking this module alone)

VARIABLES
    sent,       \* sent[c]: data messages sent on c so far
    rcvd,       \* rcvd[c]: data messages processed from c so far
    taken,      \* taken[r][p]: p has recorded its local state for round r
    sentAt,     \* sentAt[r][c]
    rcvdAt,     \* rcvdAt[r][c]
    sealed,     \* sealed[r][c]: the channel state of c for round r is final
    cs          \* cs[r][c]: the recorded channel state (sequence of message numbers)

absvars == <<sent, rcvd, taken, sentAt, rcvdAt, sealed, cs>>

RoundIds == 1..Rounds
DataIn(p) == {c \in DataChans : Dst[c] = p}

\* <<a, a+1, ..., b>> (empty when b < a)
Seg(a, b) == [k \in 1..(IF b >= a THEN b - a + 1 ELSE 0) |-> a + k - 1]

\* The messages in transit on c with respect to round r (docs/theory.md,
\* "Orphans, in-transit messages and consistency").
InTransit(r, c) == Seg(rcvdAt[r][c] + 1, sentAt[r][c])

BothTaken(r, c) == taken[r][Src[c]] /\ taken[r][Dst[c]]

(***************************************************************************)
(* The properties every concrete protocol must satisfy.                    *)
(***************************************************************************)
\* No orphan: every message processed before the receiver's checkpoint was
\* sent before the sender's checkpoint (docs/theory.md, "Orphans, in-transit messages
\* and consistency").
Consistent ==
    \A r \in RoundIds, c \in DataChans :
        BothTaken(r, c) => rcvdAt[r][c] <= sentAt[r][c]

\* The recorded channel state equals the in-transit set, in send order
\* (docs/theory.md, "Complete snapshots: channel state and logs": no drop, no
\* phantom, no duplicate, order).
ChannelStateExact ==
    \A r \in RoundIds, c \in DataChans :
        sealed[r][c] => cs[r][c] = InTransit(r, c)

\* A channel state is final only once both of its ends have recorded.
SealedAfterBoth ==
    \A r \in RoundIds, c \in DataChans : sealed[r][c] => BothTaken(r, c)

RoundComplete(r) ==
    /\ \A p \in Procs : taken[r][p]
    /\ \A c \in DataChans : sealed[r][c]

TypeOK ==
    /\ sent \in [DataChans -> Nat]
    /\ rcvd \in [DataChans -> Nat]
    /\ taken \in [RoundIds -> [Procs -> BOOLEAN]]
    /\ sentAt \in [RoundIds -> [DataChans -> Nat]]
    /\ rcvdAt \in [RoundIds -> [DataChans -> Nat]]
    /\ sealed \in [RoundIds -> [DataChans -> BOOLEAN]]
    /\ cs \in [RoundIds -> [DataChans -> Seq(Nat)]]

(***************************************************************************)
(* The abstract protocol.                                                  *)
(***************************************************************************)
Init ==
    /\ sent = [c \in DataChans |-> 0]
    /\ rcvd = [c \in DataChans |-> 0]
    /\ taken = [r \in RoundIds |-> [p \in Procs |-> FALSE]]
    /\ sentAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ rcvdAt = [r \in RoundIds |-> [c \in DataChans |-> 0]]
    /\ sealed = [r \in RoundIds |-> [c \in DataChans |-> FALSE]]
    /\ cs = [r \in RoundIds |-> [c \in DataChans |-> <<>>]]

Send(c) ==
    /\ sent[c] < MaxData
    /\ sent' = [sent EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<rcvd, taken, sentAt, rcvdAt, sealed, cs>>

Recv(c) ==
    /\ rcvd[c] < sent[c]
    /\ rcvd' = [rcvd EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<sent, taken, sentAt, rcvdAt, sealed, cs>>

\* p records its local state for round r, which must create no orphan, and
\* in the same step seals the input channels S whose sources already recorded.
Take(r, p, S) ==
    /\ ~taken[r][p]
    /\ \A c \in DataIn(p) : taken[r][Src[c]] => rcvd[c] <= sentAt[r][c]
    /\ S \subseteq {c \in DataIn(p) : taken[r][Src[c]] /\ ~sealed[r][c]}
    /\ taken' = [taken EXCEPT ![r][p] = TRUE]
    /\ sentAt' = [sentAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Src[c] = p THEN sent[c] ELSE sentAt[r][c]]]
    /\ rcvdAt' = [rcvdAt EXCEPT ![r] =
                    [c \in DataChans |-> IF Dst[c] = p THEN rcvd[c] ELSE rcvdAt[r][c]]]
    /\ sealed' = [sealed EXCEPT ![r] = [c \in DataChans |-> sealed[r][c] \/ c \in S]]
    /\ cs' = [cs EXCEPT ![r] =
                [c \in DataChans |-> IF c \in S THEN Seg(rcvd[c] + 1, sentAt[r][c])
                                               ELSE cs[r][c]]]
    /\ UNCHANGED <<sent, rcvd>>

\* The channel state of c for round r becomes final: exactly the in-transit messages.
Seal(r, c) ==
    /\ BothTaken(r, c)
    /\ ~sealed[r][c]
    /\ sealed' = [sealed EXCEPT ![r][c] = TRUE]
    /\ cs' = [cs EXCEPT ![r][c] = InTransit(r, c)]
    /\ UNCHANGED <<sent, rcvd, taken, sentAt, rcvdAt>>

Next ==
    \/ \E c \in DataChans : Send(c) \/ Recv(c)
    \/ \E r \in RoundIds, p \in Procs : \E S \in SUBSET DataIn(p) : Take(r, p, S)
    \/ \E r \in RoundIds, c \in DataChans : Seal(r, c)

Spec == Init /\ [][Next]_absvars

\* Trap: a sealed channel state that is not empty is reachable.
TrapNonEmptyChannelState ==
    ~(\E r \in RoundIds, c \in DataChans : sealed[r][c] /\ cs[r][c] # <<>>)
=============================================================================

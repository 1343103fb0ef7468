------------------------------- MODULE Uncoordinated -------------------------------
(***************************************************************************)
(* Uncoordinated checkpointing with sender-side message logging and        *)
(* recovery by rollback propagation.                                       *)
(*                                                                         *)
(* Sources: G. Siachamis et al., "CheckMate: Evaluating Checkpointing      *)
(* Protocols for Streaming Dataflows" (2024), section III-B and Algorithm  *)
(* 1; E. N. Elnozahy, L. Alvisi, Y.-M. Wang, D. B. Johnson, "A Survey of   *)
(* Rollback-Recovery Protocols in Message-Passing Systems" (2002);         *)
(* docs/theory.md, "Recovery lines".                                       *)
(*                                                                         *)
(* Every process checkpoints on its own (at most MaxCkpts times) and logs  *)
(* every message it sends.  When process f fails (its volatile state is    *)
(* lost) the recovery line is computed from the bound U (f: its last       *)
(* stable checkpoint; survivors: their current state) by rollback          *)
(* propagation; every process is restored to its checkpoint in the line    *)
(* and the messages in transit with respect to the line are replayed from  *)
(* the senders' logs, in order.  The last recovery is kept in history      *)
(* variables (lastHist, lastCur, lastU, lastLine, lastLogLo, lastLogHi) so *)
(* the invariants can judge it against the definitions:                    *)
(*   RecoveryLineConsistent  the line has no orphan;                       *)
(*   RecoveryLineMaximal     no consistent global checkpoint lies between  *)
(*                           the line and U (brute force over all cuts);   *)
(*   NoLostMessage           every in-transit message of the line is still *)
(*                           in its sender's log (docs/theory.md,          *)
(*                           "Complete snapshots: channel state and        *)
(*                           logs": no drop).                              *)
(*                                                                         *)
(* Reference implementation: reference/ (protocol "unc").  Mutants (Bug):  *)
(*   "no_rollback_propagation"  restore the latest checkpoints (the bound  *)
(*                              U) without propagating rollbacks (fails    *)
(*                              RecoveryLineConsistent);                   *)
(*   "no_logging"               messages are not logged (fails             *)
(*                              NoLostMessage);                            *)
(*   "truncate_on_checkpoint"   a receiver's checkpoint truncates its      *)
(*                              senders' logs up to what it processed,     *)
(*                              although rollback propagation may undo     *)
(*                              that checkpoint (cf. SPARK-6222; fails     *)
(*                              NoLostMessage).                            *)
(***************************************************************************)
EXTENDS Naturals, Sequences, CheckpointCuts

CONSTANTS Procs, Chans, Src, Dst, MaxMsgs, MaxCkpts, MaxFailures, Bug

ASSUME Bug \in {"none", "no_rollback_propagation", "no_logging", "truncate_on_checkpoint"}

VARIABLES
    chan,        \* chan[c]: message numbers in flight on c (FIFO)
    nsent,       \* nsent[c]: messages sent on c (in the current execution)
    nrcvd,       \* nrcvd[c]: messages processed from c
    hist,        \* hist[p]: p's stable checkpoints (counters), hist[p][1] = C_{p,0}
    nck,         \* nck[p]: checkpoints p took in the whole run (bounds the model)
    logLo, logHi,\* the sender's log of c holds messages logLo[c]+1 .. logHi[c]
    nfail,       \* failures so far
    lastHist, lastCur, lastU, lastLine, lastLogLo, lastLogHi  \* the last recovery

vars == <<chan, nsent, nrcvd, hist, nck, logLo, logHi, nfail,
          lastHist, lastCur, lastU, lastLine, lastLogLo, lastLogHi>>

Zero == [c \in Chans |-> 0]
\* p's current counters (its virtual checkpoint V_p).
Cur(p) == [c \in Chans |-> IF Src[c] = p THEN nsent[c] ELSE IF Dst[c] = p THEN nrcvd[c] ELSE 0]
CurAll == [p \in Procs |-> Cur(p)]
Seg(a, b) == [k \in 1..(IF b >= a THEN b - a + 1 ELSE 0) |-> a + k - 1]
Min(a, b) == IF a <= b THEN a ELSE b

TypeOK ==
    /\ chan \in [Chans -> Seq(1..MaxMsgs)]
    /\ nsent \in [Chans -> 0..MaxMsgs]
    /\ nrcvd \in [Chans -> 0..MaxMsgs]
    /\ nck \in [Procs -> 0..MaxCkpts]
    /\ nfail \in 0..MaxFailures

Init ==
    /\ chan = [c \in Chans |-> <<>>]
    /\ nsent = Zero
    /\ nrcvd = Zero
    /\ hist = [p \in Procs |-> <<Zero>>]
    /\ nck = [p \in Procs |-> 0]
    /\ logLo = Zero
    /\ logHi = Zero
    /\ nfail = 0
    /\ lastHist = hist
    /\ lastCur = [p \in Procs |-> Zero]
    /\ lastU = [p \in Procs |-> 1]
    /\ lastLine = [p \in Procs |-> 1]
    /\ lastLogLo = Zero
    /\ lastLogHi = Zero

History == <<lastHist, lastCur, lastU, lastLine, lastLogLo, lastLogHi>>

Send(c) ==
    /\ nsent[c] < MaxMsgs
    /\ nsent' = [nsent EXCEPT ![c] = @ + 1]
    /\ chan' = [chan EXCEPT ![c] = Append(@, nsent[c] + 1)]
    /\ logHi' = IF Bug = "no_logging" THEN logHi ELSE [logHi EXCEPT ![c] = nsent[c] + 1]
    /\ UNCHANGED <<nrcvd, hist, nck, logLo, nfail, History>>

Recv(c) ==
    /\ chan[c] # <<>>
    /\ chan' = [chan EXCEPT ![c] = Tail(@)]
    /\ nrcvd' = [nrcvd EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<nsent, hist, nck, logLo, logHi, nfail, History>>

\* A basic (independent) checkpoint of p.
Checkpoint(p) ==
    /\ nck[p] < MaxCkpts
    /\ hist' = [hist EXCEPT ![p] = Append(@, Cur(p))]
    /\ nck' = [nck EXCEPT ![p] = @ + 1]
    /\ logLo' = IF Bug = "truncate_on_checkpoint"
                  THEN [c \in Chans |-> IF Dst[c] = p /\ nrcvd[c] > logLo[c] THEN nrcvd[c] ELSE logLo[c]]
                  ELSE logLo
    /\ UNCHANGED <<chan, nsent, nrcvd, logHi, nfail, History>>

\* f fails; all processes restore the recovery line; in-transit messages of the
\* line are replayed from the logs (those still logged).
FailAndRecover(f) ==
    LET U == [p \in Procs |-> IF p = f THEN Len(hist[p]) ELSE Len(hist[p]) + 1]
        G == IF Bug = "no_rollback_propagation" THEN U
             ELSE RollbackPropagation(hist, CurAll, U, Procs, Chans, Src, Dst)
        at(p) == CutVal(hist, CurAll, G, p)
        s(c) == at(Src[c])[c]
        r(c) == at(Dst[c])[c]
    IN
    /\ nfail < MaxFailures
    /\ nfail' = nfail + 1
    /\ lastHist' = hist
    /\ lastCur' = CurAll
    /\ lastU' = U
    /\ lastLine' = G
    /\ lastLogLo' = logLo
    /\ lastLogHi' = logHi
    /\ hist' = [p \in Procs |-> SubSeq(hist[p], 1, Min(G[p], Len(hist[p])))]
    /\ nsent' = [c \in Chans |-> s(c)]
    /\ nrcvd' = [c \in Chans |-> r(c)]
    /\ chan' = [c \in Chans |-> SelectSeq(Seg(r(c) + 1, s(c)),
                                          LAMBDA n : logLo[c] < n /\ n <= logHi[c])]
    /\ logHi' = [c \in Chans |-> Min(logHi[c], s(c))]
    /\ UNCHANGED <<nck, logLo>>

Done ==
    /\ \A c \in Chans : chan[c] = <<>> /\ nsent[c] = MaxMsgs
    /\ \A p \in Procs : nck[p] = MaxCkpts
    /\ nfail = MaxFailures
    /\ UNCHANGED vars

Next ==
    \/ \E c \in Chans : Send(c) \/ Recv(c)
    \/ \E p \in Procs : Checkpoint(p) \/ FailAndRecover(p)
    \/ Done

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties of the last recovery.                                        *)
(***************************************************************************)
RecoveryLineConsistent == IsConsistent(lastHist, lastCur, lastLine, Chans, Src, Dst)

RecoveryLineMaximal ==
    RecoveryLineConsistent =>
        IsMaxConsistentBelow(lastHist, lastCur, lastLine, lastU, Procs, Chans, Src, Dst)

\* The in-transit messages of the line were all still in the senders' logs.
NoLostMessage ==
    \A c \in Chans :
        LET s == CutVal(lastHist, lastCur, lastLine, Src[c])[c]
            r == CutVal(lastHist, lastCur, lastLine, Dst[c])[c]
        IN r < s => (lastLogLo[c] <= r /\ s <= lastLogHi[c])

\* Trap (must be violated): the domino effect -- rollbacks cascade back to the
\* failed process and take it past its own last checkpoint (docs/theory.md,
\* "Worked example C: the domino effect").
TrapDomino ==
    ~(nfail > 0 /\ \E p \in Procs : lastU[p] = Len(lastHist[p]) /\ lastLine[p] < lastU[p])
=============================================================================

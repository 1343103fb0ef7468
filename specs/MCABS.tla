------------------------------------ MODULE MCABS ------------------------------------
(* Model-checking instances of ABS.  MCTopo selects the dataflow:
   "dag"    two sources s1, s2 -> a -> sink k (Algorithm 1);
   "cycle"  s -> a -> b -> k with the loop b -> a;
   "cycle2" s -> a -> b -> c with two loops b -> a and c -> a into one task
            (the case where Algorithm 2 as printed logs duplicates);
   "diamond" s -> a, s -> b -> a: a task reading a source and a sibling
            consumer of it (with backpressure a declined round
            deadlocks aligned ABS without cancellation);
   "loop_par" a loop at parallelism 2: s -> a1, s -> a2, and each subtask
            feeds the other back (back-edges a1 -> a2, a2 -> a1), so a
            round's barrier can come back to a subtask before its snapshot.
   Every source is triggered by the coordinator co over a control channel. *)
EXTENDS ABS

CONSTANT MCTopo, MCBackEdges, MCRecords

\* <<channel, source, destination, control?>>
MCEdges ==
    CASE MCTopo = "dag" ->
            {<<"co>s1", "co", "s1", TRUE>>, <<"co>s2", "co", "s2", TRUE>>,
             <<"s1>a", "s1", "a", FALSE>>, <<"s2>a", "s2", "a", FALSE>>,
             <<"a>k", "a", "k", FALSE>>}
      [] MCTopo = "cycle" ->
            {<<"co>s", "co", "s", TRUE>>, <<"s>a", "s", "a", FALSE>>,
             <<"a>b", "a", "b", FALSE>>, <<"b>a", "b", "a", FALSE>>,
             <<"b>k", "b", "k", FALSE>>}
      [] MCTopo = "cycle2" ->
            {<<"co>s", "co", "s", TRUE>>, <<"s>a", "s", "a", FALSE>>,
             <<"a>b", "a", "b", FALSE>>, <<"b>c", "b", "c", FALSE>>,
             <<"b>a", "b", "a", FALSE>>, <<"c>a", "c", "a", FALSE>>}
      [] MCTopo = "diamond" ->
            {<<"co>s", "co", "s", TRUE>>, <<"s>a", "s", "a", FALSE>>,
             <<"s>b", "s", "b", FALSE>>, <<"b>a", "b", "a", FALSE>>}
      [] MCTopo = "loop_par" ->
            {<<"co>s", "co", "s", TRUE>>, <<"s>a1", "s", "a1", FALSE>>,
             <<"s>a2", "s", "a2", FALSE>>, <<"a1>a2", "a1", "a2", FALSE>>,
             <<"a2>a1", "a2", "a1", FALSE>>}

MCChans == {e[1] : e \in MCEdges}
MCCtrlChans == {e[1] : e \in {f \in MCEdges : f[4]}}
MCSrc == [c \in MCChans |-> (CHOOSE e \in MCEdges : e[1] = c)[2]]
MCDst == [c \in MCChans |-> (CHOOSE e \in MCEdges : e[1] = c)[3]]
MCCoords == {"co"}
MCProcs == ({MCSrc[c] : c \in MCChans} \cup {MCDst[c] : c \in MCChans}) \ MCCoords

\* Records per data channel: MCRecords each; in the "diamond" only s>a carries
\* records, the sibling's channels carry barriers and cancellation markers; in the
\* "loop_par" only the back-edges carry records.
MCMaxData == [c \in MCChans \ MCCtrlChans |->
                CASE MCTopo = "diamond" /\ c # "s>a" -> 0
                  [] MCTopo = "loop_par" /\ c \notin MCBackEdges -> 0
                  [] OTHER -> MCRecords]
=============================================================================

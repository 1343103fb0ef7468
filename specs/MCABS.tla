------------------------------------ MODULE MCABS ------------------------------------
(* Model-checking instances of ABS.  MCTopo selects the dataflow:
   "dag"    two sources s1, s2 -> a -> sink k (Algorithm 1);
   "cycle"  s -> a -> b -> k with the loop b -> a;
   "cycle2" s -> a -> b -> c with two loops b -> a and c -> a into one task
            (the case where Algorithm 2 as printed logs duplicates);
   "loop_par" the loop a -> b -> a at parallelism 2, reduced to the channels
            where a round's barrier comes back to a1 before a1's snapshot:
            s -> a1, s -> a2, a2 -> b2 and the back-edge b2 -> a1.
   Every source is triggered by the coordinator co over a control channel. *)
EXTENDS ABS

CONSTANT MCTopo, MCBackEdges

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
      [] MCTopo = "loop_par" ->
            {<<"co>s", "co", "s", TRUE>>, <<"s>a1", "s", "a1", FALSE>>,
             <<"s>a2", "s", "a2", FALSE>>, <<"a2>b2", "a2", "b2", FALSE>>,
             <<"b2>a1", "b2", "a1", FALSE>>}

MCChans == {e[1] : e \in MCEdges}
MCCtrlChans == {e[1] : e \in {f \in MCEdges : f[4]}}
MCSrc == [c \in MCChans |-> (CHOOSE e \in MCEdges : e[1] = c)[2]]
MCDst == [c \in MCChans |-> (CHOOSE e \in MCEdges : e[1] = c)[3]]
MCCoords == {"co"}
MCProcs == ({MCSrc[c] : c \in MCChans} \cup {MCDst[c] : c \in MCChans}) \ MCCoords
=============================================================================

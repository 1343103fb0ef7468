--------------------------------- MODULE MCUnaligned ---------------------------------
(* Model-checking instances of Unaligned.  MCTopo selects the dataflow:
   "fanin"  two sources s1, s2 -> a -> sink k, triggered by the coordinator co;
   "join"   two sources s1, s2 -> sink a (the sources' barriers can overtake
            their output buffers; a persists its inputs);
   "diamond" s -> a, s -> b -> a (the shape of the declined-round deadlock of aligned ABS; only s>a carries
            records, b's channels carry markers). *)
EXTENDS Unaligned

CONSTANT MCTopo, MCRecords

\* <<channel, source, destination, control?>>
MCEdges ==
    CASE MCTopo = "fanin" ->
            {<<"co>s1", "co", "s1", TRUE>>, <<"co>s2", "co", "s2", TRUE>>,
             <<"s1>a", "s1", "a", FALSE>>, <<"s2>a", "s2", "a", FALSE>>,
             <<"a>k", "a", "k", FALSE>>}
      [] MCTopo = "join" ->
            {<<"co>s1", "co", "s1", TRUE>>, <<"co>s2", "co", "s2", TRUE>>,
             <<"s1>a", "s1", "a", FALSE>>, <<"s2>a", "s2", "a", FALSE>>}
      [] MCTopo = "diamond" ->
            {<<"co>s", "co", "s", TRUE>>, <<"s>a", "s", "a", FALSE>>,
             <<"s>b", "s", "b", FALSE>>, <<"b>a", "b", "a", FALSE>>}

MCChans == {e[1] : e \in MCEdges}
MCCtrlChans == {e[1] : e \in {f \in MCEdges : f[4]}}
MCSrc == [c \in MCChans |-> (CHOOSE e \in MCEdges : e[1] = c)[2]]
MCDst == [c \in MCChans |-> (CHOOSE e \in MCEdges : e[1] = c)[3]]
MCCoords == {"co"}
MCProcs == ({MCSrc[c] : c \in MCChans} \cup {MCDst[c] : c \in MCChans}) \ MCCoords

\* Records per data channel: MCRecords each; in the "diamond" only s>a carries records.
MCMaxData == [c \in MCChans \ MCCtrlChans |->
                IF MCTopo = "diamond" /\ c # "s>a" THEN 0 ELSE MCRecords]
=============================================================================

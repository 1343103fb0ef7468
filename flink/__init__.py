"""Tracing real Apache Flink jobs (issue 10): a Java instrumentation library and job set
compiled against the installed ``apache-flink-libraries`` jars (``build``), a runner for
local MiniCluster runs with injected failures (``run``), the merge of per-subtask trace
files into one v1 trace (``merge``), Flink-specific recovery expectations
(``expectations``) and a randomized campaign (``campaign``). See docs/flink.md.
"""

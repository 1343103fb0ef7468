"""Debugging aids on top of the checker: what an engineer needs to see *why* a
trace fails.

* ``history``   – the message table and checkpoint intervals of a trace (docs/theory.md, "Conventions");
* ``replay``    – a pure, position-addressable replay of a trace: per-process and
  per-channel state at any event position (the stepper's model);
* ``findings``  – the checker's verdict mapped onto trace positions, messages and
  checkpoints (what to jump to and what to highlight);
* ``stepper``   – the interactive terminal stepper (``snapcheck replay``);
* ``render``    – space-time diagrams in the style of ShiViz (``snapcheck render``);
* ``html_report`` – a self-contained HTML report (``snapcheck check --html``);
* ``shrink``    – delta debugging (ddmin) of a failing trace (``snapcheck shrink``);
* ``shiviz``    – export as a ShiViz vector-clock log (``snapcheck shiviz``).

Only ``findings`` (and the modules that take a checker report) depend on the
checker; the rest reads the trace alone.
"""

"""TLA+ side of the checker: run TLC on the specifications in ``specs/`` and
validate recorded traces against them.

* ``checker.tla.tlc``: find ``tla2tools.jar`` and Java, run TLC 2.15 in
  ``-tool`` mode (one metadir per run, a wall-clock timeout), map its exit code
  and message codes to a ``TlcResult``.
* ``checker.tla.manifest``: the configurations listed in ``specs/manifest.json``
  with their expected result, distinct states and depth; run them and compare.
* ``checker.tla.apalache``: the optional Apalache backend.
* ``checker.tla.conform``: trace validation (``snapcheck conform``; per-family
  mappings in ``trace_events``, ``map_unc``, ``map_replication``): a v1 trace
  becomes a ``TraceLog.tla`` module, TLC decides whether some behaviour of the
  protocol's specification matches it.

See ``docs/specs.md``.
"""

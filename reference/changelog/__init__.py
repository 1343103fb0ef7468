"""Generic log-based incremental (changelog) checkpoints, GIC: dual writes,
continuous changelog upload, periodic materialization, checkpoint = snapshot +
changelog range (``model``; ``protocol`` runs it as a protocol of the kit;
``mutants``). See docs/protocols.md ("Changelog checkpoints, GIC")."""

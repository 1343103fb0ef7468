"""snapcheck: verification kit for checkpointing protocols of streaming dataflows.

This package is the composition root: the command-line interface that wires the
trace format (``traces``), the reference implementations (``reference``), the
checker (``checker``) and the Spark validation (``spark_validation``) together.
"""

__version__ = "0.1.0"

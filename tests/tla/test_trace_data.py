"""The binary trace data TLC reads (``checker.tla.trace_data.write_values``) is a pure function of
the values written: sets are written in the text form's order, not in the order Python's
string hashing happens to give them in this process."""

import subprocess
import sys

CODE = """
import io, sys
from snapcheck.checker.tla.trace_data import write_values
b = io.BytesIO()
write_values(b, {"S": {"a", "bb", "c", "op1[0]", ("x", 1)}, "T": frozenset({3, 1, 2}), "R": [{"p": {"q", "r"}}]})
sys.stdout.write(b.getvalue().hex())
"""


def test_the_written_bytes_do_not_depend_on_the_hash_seed():
    outs = {
        subprocess.run(
            [sys.executable, "-c", CODE], env={"PYTHONHASHSEED": str(seed)}, capture_output=True, text=True, check=True
        ).stdout
        for seed in range(6)
    }
    assert len(outs) == 1 and next(iter(outs))

"""Fuzzing every trace-reading command with mutated golden traces: the exit code is 0, 1
or 2, there is never a traceback, and time and memory stay bounded.

Two drivers over the same mutations (``tests.hostile.mutations``):

* ``test_fuzz_commands``: hypothesis draws the input (a seed), every command runs it in
  process with a per-input deadline; a counterexample is reproduced by its seed.
* ``test_fuzz_batch_in_bounded_memory``: a batch of seeded inputs in a child process
  whose address space is limited (``RLIMIT_AS``), each input timed; the child reports
  how many inputs it ran and every exit code.

``SNAPCHECK_FUZZ_EXAMPLES`` raises the number of hypothesis examples and of batch inputs
(e.g. 5000 for a long campaign); the default keeps the suite quick.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile.commands import CHEAP, COMMANDS, argv, run
from tests.hostile.mutations import hostile

EXAMPLES = int(os.environ.get("SNAPCHECK_FUZZ_EXAMPLES", "120"))
SECONDS_PER_INPUT = 20.0


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(0, 2**32 - 1))
def test_fuzz_commands(seed, tmp_path_factory):
    scratch = tmp_path_factory.mktemp("fuzz")
    trace = scratch / "t.jsonl"
    trace.write_bytes(hostile(seed))
    for command in COMMANDS if seed % 8 == 0 else CHEAP:  # render/shiviz/JUnit on a sample
        start = time.monotonic()
        code, out = run(argv(command, str(trace), scratch))
        assert code in (0, 1, 2, 4) and "Traceback" not in out, (seed, command, out)  # 4: nothing judged
        assert time.monotonic() - start < SECONDS_PER_INPUT, (seed, command)
        if code == 2:
            assert str(trace) in out or "snapcheck:" in out, (seed, command, out)


_CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (__LIMIT__, __LIMIT__))
from tests.hostile.commands import CHEAP, argv, run
from tests.hostile.mutations import hostile
scratch = Path(tempfile.mkdtemp())
codes, slowest = {}, 0.0
for seed in range(__START__, __START__ + __COUNT__):
    trace = scratch / "t.jsonl"
    trace.write_bytes(hostile(seed))
    for command in CHEAP:
        t = time.monotonic()
        code, out = run(argv(command, str(trace), scratch))
        slowest = max(slowest, time.monotonic() - t)
        if code not in (0, 1, 2, 4) or "Traceback" in out:  # 4: check judged nothing
            print(json.dumps({"bad": [seed, command, code, out[-2000:]]}))
            sys.exit(0)
        codes[str(code)] = codes.get(str(code), 0) + 1
print(json.dumps({"inputs": __COUNT__, "runs": sum(codes.values()), "codes": codes, "slowest": slowest,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def test_fuzz_batch_in_bounded_memory():
    count = max(EXAMPLES, 100)
    code = (
        _CHILD.replace("__LIMIT__", str(3 * 2**30)).replace("__START__", "10_000_000").replace("__COUNT__", str(count))
    )
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=SECONDS_PER_INPUT * count * len(CHEAP),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert "bad" not in report, report
    assert report["inputs"] == count and report["slowest"] < SECONDS_PER_INPUT, report
    assert set(report["codes"]) <= {"0", "1", "2", "4"} and "2" in report["codes"], report
    print(f"fuzz batch: {report}")

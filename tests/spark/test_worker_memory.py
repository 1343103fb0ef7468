"""A campaign worker's garbage stays collectable over many runs (traces.gc_pause)."""

import gc

from snapcheck.spark_validation.configs import Selection, draw_config
from snapcheck.spark_validation.runner import run_one
from snapcheck.traces.gc_pause import FULL_COLLECTION_FLOOR


def test_campaign_runs_leave_no_growing_garbage():
    """Simulating and checking run after run (a campaign worker's loop): the garbage left
    behind stays within two floors of a full collection; it grew by about 2,700 objects a
    run (412,000 after these 150) while the pauses moved their garbage uncounted."""
    sel = Selection.of(protocols=["abs-aligned", "unaligned"], mutants=(), explore="stress")
    gc.collect()
    for i in range(150):
        run_one(i, 7_213_000 + i, draw_config(i, 7_213_000 + i, sel))
    assert gc.collect() < 2 * FULL_COLLECTION_FLOOR

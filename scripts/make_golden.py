"""Build the golden traces in ``traces/examples/`` and their index ``README.md``.

Each golden trace is a hand transcription of a figure of *CheckMate: Evaluating
Checkpointing Protocols for Streaming Dataflows* (arXiv 2403.13629, §II-III:
Figure 2 (a)-(d), Figure 4, Figure 5) or of a worked example of
docs/theory.md (worked examples A-D and the example of a stably unusable
checkpoint). Every trace is built here with
``traces.TraceRecorder``, so it is a valid v1 trace by construction, and
carries in its header ``metadata``:

* ``source``: the paper figure or docs/theory.md example it transcribes;
* ``notes``: how it was transcribed, the choices made where the text leaves
  something open, and the hand derivation of every expected value
  (docs/theory.md, "Conventions": ``C_{i,0}`` is the implied initial checkpoint,
  ``ι`` the interval index, a message is ``(src, s, dst, r)``, R-graph edges
  ``(src, s) -> (dst, r)``);
* ``expected``: the verdict a checker must reach (``docs/trace-format.md``,
  "Golden traces and metadata.expected").

The expected values were derived by hand, not by running a checker;
``tests/traces/test_golden.py`` re-derives them by brute-force enumeration of
all global checkpoints and checks that the committed files are byte for byte
this script's output.

Usage::

    python scripts/make_golden.py            # (re)write traces/examples/
    python scripts/make_golden.py --check    # exit 1 if the committed files differ
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from snapcheck.traces import TraceRecorder

EXAMPLES = Path(__file__).resolve().parents[1] / "traces" / "examples"

CHECKMATE = "CheckMate: Evaluating Checkpointing Protocols for Streaming Dataflows (arXiv 2403.13629)"

CONVENTIONS = (
    'Conventions (docs/theory.md, "Conventions"): C_{i,0} is the implied initial checkpoint; the interval index ι of an '
    "event is the number of checkpoints of its process before it, counting C_{i,0}; a message is "
    "(src, s, dst, r) with s = ι(send), r = ι(recv); orphan(m, G) iff r <= g_dst and s > g_src; "
    "in_transit(m, G) iff s <= g_src and r > g_dst; R-graph edges (i,x)->(i,x+1) and (src,s)->(dst,r); "
    "C_{i,x} is useless iff (i,x+1) reaches (i,x); the recovery line for failure set F is "
    "line_i = max{x <= U_i : (i,x) not in Reach({V_f : f in F})} with U_f = L_f, U_i = L_i+1 = V_i "
    'for survivors (docs/theory.md, "R-MARK").'
)

DOMINO = (
    "domino: the restart-all recovery line (failure set 'all') lies at least two checkpoints behind "
    "the last checkpoint of some process (max_i L_i - line_i >= 2), i.e. rollback propagated beyond "
    "the single checkpoint a failure costs by itself."
)


@dataclass(frozen=True)
class Golden:
    """One golden trace: its file stem, header and the function that records its events."""

    name: str
    source: str
    notes: str
    expected: dict
    processes: list
    channels: list
    protocol: str
    record: Callable[[TraceRecorder], None]

    def recorder(self) -> TraceRecorder:
        rec = TraceRecorder(
            self.processes,
            self.channels,
            protocol=self.protocol,
            seed=None,
            metadata={"source": self.source, "notes": self.notes, "expected": self.expected},
        )
        self.record(rec)
        return rec


def _expected(
    verdict: str,
    violations: list[str],
    *,
    check: dict | None = None,
    useless: list[str],
    recovery_lines: dict | None = None,
    domino: bool | None = None,
) -> dict:
    """``metadata.expected`` with a fixed key order (so the output is byte-stable)."""
    out: dict = {"verdict": verdict, "violations": sorted(violations)}
    if check is not None:
        out["check"] = check
    out["useless"] = sorted(useless)
    if recovery_lines is not None:
        out["recovery_lines"] = recovery_lines
    if domino is not None:
        out["domino"] = domino
    return out


# ---------------------------------------------------------------------------
# CheckMate Figure 2 (a)-(d): consistent and inconsistent global states
# ---------------------------------------------------------------------------

FIG2_PROCS = ["O1", "O2", "O3"]
FIG2_CHANS = [("O1>O2", "O1", "O2"), ("O2>O3", "O2", "O3")]
FIG2_CUT = {"O1": 1, "O2": 1, "O3": 1}
FIG2_COMMON = (
    "Figure 2 shows stateful operators O1, O2, O3 and a recovery line through one checkpoint per "
    "operator. The text names only m2, the message from O2 to O3; we read the operators as the "
    "pipeline O1->O2->O3 and m1 as the message from O1 to O2, sent and processed before the "
    "checkpoints in every panel. Each operator's single checkpoint is its checkpoint 1, and the "
    "recovery line drawn in the figure is the explicit cut expected.check.cut = (O1:1, O2:1, O3:1). "
    "(The paper's paragraph calls these panels 'Figure 1(a)-(d)', a typo for Figure 2: Figure 1 has "
    "no panels.) Message names are in each send's 'value'; mids are 'channel:seq'. "
)


def _fig2a(rec: TraceRecorder) -> None:
    m1 = rec.send("O1", "O1>O2", value="m1")
    rec.checkpoint("O1")
    rec.recv("O2", m1)
    m2 = rec.send("O2", "O2>O3", value="m2")
    rec.checkpoint("O2")
    rec.recv("O3", m2)
    rec.checkpoint("O3")


def _fig2b(rec: TraceRecorder) -> None:
    m1 = rec.send("O1", "O1>O2", value="m1")
    rec.checkpoint("O1")
    rec.recv("O2", m1)
    rec.checkpoint("O2")
    m2 = rec.send("O2", "O2>O3", value="m2")
    rec.recv("O3", m2)
    rec.checkpoint("O3")


def _fig2c(rec: TraceRecorder) -> None:
    m1 = rec.send("O1", "O1>O2", value="m1")
    rec.checkpoint("O1")
    rec.recv("O2", m1)
    m2 = rec.send("O2", "O2>O3", value="m2")
    rec.checkpoint("O2")
    rec.checkpoint("O3")
    rec.recv("O3", m2)


def _fig2d(rec: TraceRecorder) -> None:
    m1 = rec.send("O1", "O1>O2", value="m1")
    rec.checkpoint("O1")
    rec.recv("O2", m1)
    m2 = rec.send("O2", "O2>O3", value="m2")
    rec.checkpoint("O2")
    c3 = rec.checkpoint("O3")
    rec.recv("O3", m2)
    rec.record("O3", c3, "O2>O3", [m2])


FIG2A = Golden(
    name="checkmate_fig2a_consistent",
    source=f"{CHECKMATE}, Figure 2(a) 'Consistent state after recovery'",
    notes=FIG2_COMMON
    + (
        "Panel (a): 'all messages are sent and received before the checkpoints that compose the "
        "recovery line', so every send and receive precedes its operator's checkpoint 1. "
        "Derivation: m1 = (O1, s=1, O2, r=1), m2 = (O2, 1, O3, 1). For G = (1,1,1) every s <= g_src "
        "and every r <= g_dst: no orphan (needs s > g_src) and nothing in transit (needs r > g_dst), "
        "so the cut is consistent and complete: clean. R-graph edges (O1,1)->(O2,1) and "
        "(O2,1)->(O3,1) close no cycle: no useless checkpoint."
    ),
    expected=_expected("clean", [], check={"cut": FIG2_CUT}, useless=[]),
    processes=FIG2_PROCS,
    channels=FIG2_CHANS,
    protocol="none",
    record=_fig2a,
)

FIG2B = Golden(
    name="checkmate_fig2b_orphan",
    source=f"{CHECKMATE}, Figure 2(b) 'Inconsistent state after recovery'",
    notes=FIG2_COMMON
    + (
        "Panel (b): 'm2 is an orphan message since its side-effects are reflected in the checkpoint "
        "of O3 but not in the checkpoint of the sender operator O2': O2 sends m2 after its "
        "checkpoint 1 and O3 processes m2 before its checkpoint 1. m1 is drawn as in (a). "
        "Derivation: m1 = (O1, 1, O2, 1), m2 = (O2, s=2, O3, r=1). For G = (1,1,1): m2 has "
        "r = 1 <= g_O3 = 1 and s = 2 > g_O2 = 1, an orphan (CheckMate Def. 4); m1 is neither orphan "
        "nor in transit and no message is in transit, so the exact set of violations is {orphan}. "
        "R-graph edges (O1,1)->(O2,1), (O2,2)->(O3,1) close no cycle: no useless checkpoint "
        "(O3:1 belongs to the consistent global checkpoint (O1:1, O2:V, O3:1))."
    ),
    expected=_expected("violation", ["orphan"], check={"cut": FIG2_CUT}, useless=[]),
    processes=FIG2_PROCS,
    channels=FIG2_CHANS,
    protocol="none",
    record=_fig2b,
)

FIG2C = Golden(
    name="checkmate_fig2c_dropped",
    source=f"{CHECKMATE}, Figure 2(c) 'Inconsistent state without capturing in-flight messages'",
    notes=FIG2_COMMON
    + (
        "Panel (c): 'send(m2) occurs before O2 acquires its checkpoint, whereas receive(m2) occurs "
        "after O3 takes its checkpoint', and in-flight messages are not captured: there is no record "
        "event, channel O2>O3 is not logged and m2 is not logged, so m2 would never be processed "
        "after recovery ('dropping messages', CheckMate Def. 5 'No Dropping'); the kit's kind for "
        "this is 'dropped'. Derivation: m1 = (O1, 1, O2, 1), m2 = (O2, s=1, O3, r=2). For "
        "G = (1,1,1): m2 has s = 1 <= 1 and r = 2 > 1, in transit, neither recorded nor in a durable "
        "log: dropped; there is no orphan. The exact set of violations is {dropped}: the cut is "
        'consistent in the orphan sense but not complete (docs/theory.md, "Complete snapshots: channel '
        'state and logs"). No R-graph cycle: '
        "no useless checkpoint."
    ),
    expected=_expected("violation", ["dropped"], check={"cut": FIG2_CUT}, useless=[]),
    processes=FIG2_PROCS,
    channels=FIG2_CHANS,
    protocol="none",
    record=_fig2c,
)

FIG2D = Golden(
    name="checkmate_fig2d_channel_state",
    source=f"{CHECKMATE}, Figure 2(d) 'Consistent state by capturing in-flight messages'",
    notes=FIG2_COMMON
    + (
        "Panel (d): the execution of (c) with the channel state captured: 'capturing the channel "
        "state and replaying in-flight messages is necessary'. O3 records m2 as the input channel "
        "state of O2>O3 persisted with its checkpoint 1 (the record event, emitted when recording "
        "ends, after m2's processing as in Chandy-Lamport). Derivation: m1 = (O1, 1, O2, 1), "
        "m2 = (O2, 1, O3, 2). For G = (1,1,1): no orphan; the in-transit set is {m2} and the "
        "recorded channel state of O2>O3 is exactly [m2] (no drop, no phantom, FIFO order trivially "
        "kept): clean. No R-graph cycle: no useless checkpoint."
    ),
    expected=_expected("clean", [], check={"cut": FIG2_CUT}, useless=[]),
    processes=FIG2_PROCS,
    channels=FIG2_CHANS,
    protocol="none",
    record=_fig2d,
)


# ---------------------------------------------------------------------------
# CheckMate Figure 4: rollback propagation on the checkpoint graph
# ---------------------------------------------------------------------------


def _fig4(rec: TraceRecorder) -> None:
    m1 = rec.send("O1", "O1>O2", value="m1")
    rec.recv("O2", m1)
    m2 = rec.send("O2", "O2>O3", value="m2")
    rec.recv("O3", m2)
    rec.checkpoint("O3")
    rec.checkpoint("O1")
    m3 = rec.send("O1", "O1>O2", value="m3")
    rec.recv("O2", m3)
    rec.checkpoint("O2")
    m4 = rec.send("O2", "O2>O3", value="m4")
    rec.checkpoint("O1")
    m5 = rec.send("O1", "O1>O2", value="m5")
    rec.recv("O2", m5)
    rec.checkpoint("O2")
    m6 = rec.send("O2", "O2>O3", value="m6")
    rec.recv("O3", m4)
    rec.recv("O3", m6)
    rec.checkpoint("O3")


FIG4 = Golden(
    name="checkmate_fig4_rollback_propagation",
    source=f"{CHECKMATE}, Figure 4 'Example overview of Rollback propagation algorithm on a given "
    "execution timeline' (with Algorithm 1)",
    notes=(
        "The text describes Figure 4 only through the steps of Algorithm 1 on the checkpoint graph: "
        "(a) edges c_{i,x} -> c_{j,y} for an orphan sent by i after c_{i,x} and processed by j before "
        "c_{j,y} (plus consecutive checkpoints); (b) step 1: the root set is the latest checkpoint of "
        "every operator; step 2: mark the root members strictly reachable from another root member; "
        "step 3: replace each marked member by the 'next most fresh' (i.e. the next older) checkpoint "
        "of its operator and check the new members; return the root set once none is marked. The timeline itself is not "
        "recoverable from the text, so this trace is a reconstruction chosen to take exactly those "
        "three steps: the pipeline O1->O2->O3 (CheckMate UNC: uncoordinated checkpoints with "
        "upstream-backup message logs, hence protocol 'unc' and logged channels), two checkpoints per "
        "operator, messages m1..m6 numbered in send order. Intervals: m1 = (O1,1,O2,1), "
        "m2 = (O2,1,O3,1), m3 = (O1,2,O2,1), m4 = (O2,2,O3,2), m5 = (O1,3,O2,2), m6 = (O2,3,O3,2). "
        "Checkpoint-graph message edges (src, s-1) -> (dst, r): m1 C1,0->C2,1; m2 C2,0->C3,1; "
        "m3 C1,1->C2,1; m4 C2,1->C3,2; m5 C1,2->C2,2 (m5 is sent after O1's last checkpoint); "
        "m6 C2,2->C3,2 (sent after O2's last checkpoint). Step 1: root {C1,2, C2,2, C3,2}. Step 2: "
        "C2,2 is reachable from C1,2 (m5) and C3,2 from C2,2 (m6): both marked. Step 3: root "
        "{C1,2, C2,1, C3,1}; no member is reachable from another (C2,1 and C3,1 have in-edges only "
        "from C1,0, C1,1, C2,0, which are not reachable from the root), so Algorithm 1 returns "
        "(O1:2, O2:1, O3:1), the restart-all line (CheckMate restarts every operator: failure set "
        "'all'). R-MARK cross-check on the R-graph (edges m1 (O1,1)->(O2,1), m2 (O2,1)->(O3,1), "
        "m3 (O1,2)->(O2,1), m4 (O2,2)->(O3,2), m5 (O1,3)->(O2,2), m6 (O2,3)->(O3,2); V = "
        "(O1,3), (O2,3), (O3,3)): Reach(V_O1) = {(O1,3),(O2,2),(O2,3),(O3,2),(O3,3)} gives (2,1,1) "
        "for 'all', 'O1' and 'O1,O2'; Reach(V_O2) = {(O2,3),(O3,2),(O3,3)} gives (V,2,1) for 'O2' "
        "and 'O2,O3'; Reach(V_O3) = {(O3,3)} gives (V,V,2) for 'O3'; no failure gives (V,V,V). "
        "In the line (V,2,1) m4 is in transit and is replayed from O2's log. Pipelines have no "
        "Z-cycle: no useless checkpoint. Every process is rolled back at most one checkpoint past "
        "its last one for 'all', so no domino. " + DOMINO + " " + CONVENTIONS
    ),
    expected=_expected(
        "clean",
        [],
        check={"failures": "all"},
        useless=[],
        recovery_lines={
            "all": {"O1": 2, "O2": 1, "O3": 1},
            "O1": {"O1": 2, "O2": 1, "O3": 1},
            "O2": {"O1": "V", "O2": 2, "O3": 1},
            "O3": {"O1": "V", "O2": "V", "O3": 2},
            "O1,O2": {"O1": 2, "O2": 1, "O3": 1},
            "O2,O3": {"O1": "V", "O2": 2, "O3": 1},
            "none": {"O1": "V", "O2": "V", "O3": "V"},
        },
        domino=False,
    ),
    processes=["O1", "O2", "O3"],
    channels=[
        {"id": "O1>O2", "src": "O1", "dst": "O2", "logged": True},
        {"id": "O2>O3", "src": "O2", "dst": "O3", "logged": True},
    ],
    protocol="unc",
    record=_fig4,
)


# ---------------------------------------------------------------------------
# CheckMate Figure 5: domino effect on a cyclic query
# ---------------------------------------------------------------------------


def _fig5(rec: TraceRecorder) -> None:
    for p in ("O1", "O2", "O3"):
        rec.checkpoint(p)  # C<i,1>
    m1 = rec.send("O1", "O1>O2", value="m1")
    rec.recv("O2", m1)
    m2 = rec.send("O2", "O2>O3", value="m2")
    rec.checkpoint("O2")  # C<2,2>
    rec.recv("O3", m2)
    m3 = rec.send("O3", "O3>O1", value="m3")
    rec.recv("O1", m3)
    rec.checkpoint("O1")  # C<1,2>
    m4 = rec.send("O1", "O1>O2", value="m4")
    rec.recv("O2", m4)
    m5 = rec.send("O2", "O2>O3", value="m5")
    rec.checkpoint("O2")  # C<2,3>
    rec.recv("O3", m5)
    rec.checkpoint("O3")  # C<3,2>
    m6 = rec.send("O3", "O3>O1", value="m6")
    rec.recv("O1", m6)
    rec.checkpoint("O1")  # C<1,3>


FIG5 = Golden(
    name="checkmate_fig5_domino_cyclic",
    source=f"{CHECKMATE}, Figure 5 'Domino effect of invalid checkpoints on a cyclic query' (§III-B)",
    notes=(
        "Transcribed from the §III-B text: operators 1, 2, 3 with checkpoints C<1,1..3>, C<2,1..3>, "
        "C<3,1..2> and messages m1..m6; the candidate lines are (C<1,3>,C<2,3>,C<3,2>) invalid by the "
        "orphan m6, then (C<1,2>,C<2,3>,C<3,2>) invalid by m4, then (C<1,2>,C<2,2>,C<3,2>) invalid by "
        "m5, and 'the domino effect continues with the rest of m3,2,1' down to "
        "(C<1,1>,C<2,1>,C<3,1>). Choices: (1) C<i,k> is checkpoint k of O_i, and C<i,1> is each "
        "operator's first event (the figure's starting checkpoints), so the final line holds the "
        "same state as the implied initial checkpoints C_{i,0}: 'starting from scratch'. (2) The "
        "stated sequence forces m6 = O3->O1 or O2->O1 into O1's interval 3, m4 = O1->O2 from O1's "
        "interval 3 into O2's interval 3, m5 = O2->O3 or O2->O1 from O2's interval 3; the cyclic "
        "query is read as the ring O1->O2->O3->O1 (O3>O1 is the back edge), which fixes m6 = O3->O1 "
        "and m5 = O2->O3, and m1..m6 are two laps of the ring in causal order (each operator "
        "checkpoints between a receipt and its next send, the classic domino staircase): "
        "m1 = (O1,2,O2,2), m2 = (O2,2,O3,2), m3 = (O3,2,O1,2), m4 = (O1,3,O2,3), m5 = (O2,3,O3,2), "
        "m6 = (O3,3,O1,3). (3) With 6 messages and 5 one-checkpoint rollbacks, one message cannot "
        "cause a rollback: in this reading m2 is never an orphan of a candidate line (it is in "
        "transit w.r.t. (1,2,1)); the rollbacks after m5 are caused by m3 then m1. Derivation, "
        "restart-all (CheckMate, failure set 'all'): orphans of (3,3,2) = {m6} -> (2,3,2); of "
        "(2,3,2) = {m4} -> (2,2,2); of (2,2,2) = {m5} -> (2,2,1); of (2,2,1) = {m3} -> (1,2,1); of "
        "(1,2,1) = {m1} -> (1,1,1), which has no orphan: line (O1:1, O2:1, O3:1) as the paper states. "
        "Algorithm 1 on the checkpoint graph takes the same five steps. R-graph edges: m1 "
        "(O1,2)->(O2,2), m2 (O2,2)->(O3,2), m3 (O3,2)->(O1,2), m4 (O1,3)->(O2,3), m5 (O2,3)->(O3,2), "
        "m6 (O3,3)->(O1,3); V = (O1,4), (O2,4), (O3,3). Useless (Z-cycles): C1,2 by "
        "(O1,3)->(O2,3)->(O3,2)->(O1,2) [m4 m5 m3]; C2,2 by (O2,3)->(O3,2)->(O1,2)->(O2,2) [m5 m3 m1]; "
        "C3,2 by (O3,3)->(O1,3)->(O2,3)->(O3,2) [m6 m4 m5]; no other checkpoint reaches itself "
        "(C1,3 and C2,3 are usable, e.g. in (3,3,V)). Partial failures: Reach(V_O3) = "
        "{(O3,3),(O1,3),(O1,4),(O2,3),(O2,4),(O3,2),(O1,2),(O2,2)} so any failure set containing O3 "
        "gives (1,1,1); V_O1 and V_O2 have no out-edges, so 'O1' gives (3,V,V), 'O2' gives (V,3,V), "
        "'O1,O2' gives (3,3,V), and no failure gives (V,V,V). The 'all' line is two checkpoints "
        "behind the last ones of O1 and O2: domino. Channels are logged (UNC upstream backup); no "
        "expected line has a message in transit anyway. " + DOMINO + " " + CONVENTIONS
    ),
    expected=_expected(
        "clean",
        [],
        check={"failures": "all"},
        useless=["O1:2", "O2:2", "O3:2"],
        recovery_lines={
            "all": {"O1": 1, "O2": 1, "O3": 1},
            "O1": {"O1": 3, "O2": "V", "O3": "V"},
            "O2": {"O1": "V", "O2": 3, "O3": "V"},
            "O3": {"O1": 1, "O2": 1, "O3": 1},
            "O1,O2": {"O1": 3, "O2": 3, "O3": "V"},
            "O1,O3": {"O1": 1, "O2": 1, "O3": 1},
            "none": {"O1": "V", "O2": "V", "O3": "V"},
        },
        domino=True,
    ),
    processes=["O1", "O2", "O3"],
    channels=[
        {"id": "O1>O2", "src": "O1", "dst": "O2", "logged": True},
        {"id": "O2>O3", "src": "O2", "dst": "O3", "logged": True},
        {"id": "O3>O1", "src": "O3", "dst": "O1", "back_edge": True, "logged": True},
    ],
    protocol="unc",
    record=_fig5,
)


# ---------------------------------------------------------------------------
# the worked examples of docs/theory.md
# ---------------------------------------------------------------------------

P01 = ["P0", "P1"]
P01_CHANS = [("P0>P1", "P0", "P1"), ("P1>P0", "P1", "P0")]


def _theory_a(rec: TraceRecorder) -> None:
    m2 = rec.send("P1", "P1>P0", value="m2")
    rec.recv("P0", m2)
    rec.checkpoint("P0")
    m1 = rec.send("P0", "P0>P1", value="m1")
    rec.recv("P1", m1)
    rec.checkpoint("P1")
    rec.checkpoint("P0")


THEORY_A = Golden(
    name="theory_a_zcycle",
    source='docs/theory.md, "Worked example A: a Z-cycle without a causal cycle"',
    notes=(
        "Verbatim transcription of example A: P0: C0,0 | r(m2) | C0,1 | s(m1->P1) | C0,2 and "
        "P1: C1,0 | s(m2->P0) | r(m1) | C1,1, so m2 = (P1,1,P0,1), m1 = (P0,2,P1,1). R-graph edges "
        "m2 (P1,1)->(P0,1), m1 (P0,2)->(P1,1); V0 = (P0,3), V1 = (P1,2). C0,1 is useless: "
        "(P0,2)->(P1,1)->(P0,1) is the Z-cycle m1 m2 (m2 is sent before m1 is received: non-causal); "
        "check: (C0,1, C1,0) has orphan m2, (C0,1, C1,1) and (C0,1, V1) have orphan m1. No other "
        "checkpoint reaches itself (V0, V1 have no out-edges; nothing enters (P0,0), (P1,0)). "
        "Recovery lines: V0 and V1 have no out-edges, so Reach({V_f}) = {V_f} and every failed "
        "process keeps its last checkpoint: 'all' (2,1), 'P0' (2,V), 'P1' (V,1), none (V,V). The "
        "useless checkpoint is reported in report.useless, not as a violation (protocol 'none' "
        "promises no Z-cycle freedom); no property applies without a cut or a failure set (the useless checkpoints and recovery lines are information): verdict not-judged. "
        + DOMINO
        + " "
        + CONVENTIONS
    ),
    expected=_expected(
        "not-judged",
        [],
        useless=["P0:1"],
        recovery_lines={
            "all": {"P0": 2, "P1": 1},
            "P0": {"P0": 2, "P1": "V"},
            "P1": {"P0": "V", "P1": 1},
            "none": {"P0": "V", "P1": "V"},
        },
        domino=False,
    ),
    processes=P01,
    channels=P01_CHANS,
    protocol="none",
    record=_theory_a,
)


def _theory_b(rec: TraceRecorder) -> None:
    q = rec.send("P0", "P0>P1", value="q")
    rec.recv("P1", q)
    a = rec.send("P1", "P1>P0", value="a")
    rec.recv("P0", a)
    rec.checkpoint("P0")
    rec.checkpoint("P1")


THEORY_B = Golden(
    name="theory_b_request_response",
    source='docs/theory.md, "Worked example B: an R-graph cycle that is not a Z-cycle"',
    notes=(
        "Verbatim transcription of example B: P0: C0,0 | s(q->P1) | r(a) | C0,1 and "
        "P1: C1,0 | r(q) | s(a->P0) | C1,1, so q = (P0,1,P1,1), a = (P1,1,P0,1). The R-graph has "
        "the cycle (P0,1)->(P1,1)->(P0,1), yet no checkpoint is useless: C0,0 and C1,0 have no "
        "in-edges, and C0,1 / C1,1 would need (P0,2) resp. (P1,2) (the virtual V nodes, without "
        "out-edges) to reach them. This is the trace on which the wrong shortcut 'useless iff on an "
        "R-graph cycle' reports false positives. Recovery lines: no V node has an out-edge, so "
        "'all' (1,1), 'P0' (1,V), 'P1' (V,1), none (V,V). No useless checkpoint, and "
        "No property applies without a cut or a failure set (the useless checkpoints and recovery lines are information): verdict not-judged. "
        + DOMINO
        + " "
        + CONVENTIONS
    ),
    expected=_expected(
        "not-judged",
        [],
        useless=[],
        recovery_lines={
            "all": {"P0": 1, "P1": 1},
            "P0": {"P0": 1, "P1": "V"},
            "P1": {"P0": "V", "P1": 1},
            "none": {"P0": "V", "P1": "V"},
        },
        domino=False,
    ),
    processes=P01,
    channels=P01_CHANS,
    protocol="none",
    record=_theory_b,
)


def _theory_c(rec: TraceRecorder) -> None:
    rec.checkpoint("P0")
    a = rec.send("P0", "P0>P1", value="a")
    rec.recv("P1", a)
    rec.checkpoint("P1")
    b = rec.send("P1", "P1>P0", value="b")
    rec.recv("P0", b)
    rec.checkpoint("P0")
    c = rec.send("P0", "P0>P1", value="c")
    rec.recv("P1", c)
    rec.checkpoint("P1")
    d = rec.send("P1", "P1>P0", value="d")
    rec.recv("P0", d)
    rec.checkpoint("P0")
    e = rec.send("P0", "P0>P1", value="e")
    rec.recv("P1", e)


THEORY_C = Golden(
    name="theory_c_domino",
    source='docs/theory.md, "Worked example C: the domino effect"',
    notes=(
        "Verbatim transcription of example C: P0: C0,0 | C0,1 | s(a) | r(b) | C0,2 | s(c) | r(d) | "
        "C0,3 | s(e) and P1: C1,0 | r(a) | C1,1 | s(b) | r(c) | C1,2 | s(d) | r(e); a = (P0,2,P1,1), "
        "b = (P1,2,P0,2), c = (P0,3,P1,2), d = (P1,3,P0,3), e = (P0,4,P1,3). R-graph edges a "
        "(P0,2)->(P1,1), b (P1,2)->(P0,2), c (P0,3)->(P1,2), d (P1,3)->(P0,3), e (P0,4)->(P1,3); "
        "V0 = (P0,4), V1 = (P1,3). Useless: C0,2 by (P0,3)->(P1,2)->(P0,2) [c b]; C0,3 by "
        "(P0,4)->(P1,3)->(P0,3) [e d]; C1,1 by (P1,2)->(P0,2)->(P1,1) [b a]; C1,2 by "
        "(P1,3)->(P0,3)->(P1,2) [d c]; C0,1 is not ((P0,1) has no in-edge but (P0,0)). Recovery "
        "lines: Reach(V0) = Reach(V1) = {(P0,2),(P0,3),(P0,4),(P1,1),(P1,2),(P1,3)}, so failures "
        "{P0,P1} ('all'), {P0} and {P1} all give (1,0); no failure gives (V,V) = (4,3). Chain for "
        "'all': (3,2) has orphan d -> P0 to 2; (2,2) orphan c -> P1 to 1; (2,1) orphan b -> P0 to 1; "
        "(1,1) orphan a -> P1 to 0. Both processes end two checkpoints behind their last ones: "
        "domino. Verdict clean (protocol 'none' promises no Z-cycle freedom; the useless "
        "checkpoints go to report.useless). " + DOMINO + " " + CONVENTIONS
    ),
    expected=_expected(
        "clean",
        [],
        check={"failures": "all"},
        useless=["P0:2", "P0:3", "P1:1", "P1:2"],
        recovery_lines={
            "all": {"P0": 1, "P1": 0},
            "P0": {"P0": 1, "P1": 0},
            "P1": {"P0": 1, "P1": 0},
            "none": {"P0": "V", "P1": "V"},
        },
        domino=True,
    ),
    processes=P01,
    channels=P01_CHANS,
    protocol="none",
    record=_theory_c,
)


def _theory_d(k: int) -> Callable[[TraceRecorder], None]:
    """Example D where P1 records CS(P0>P1) = the first ``k`` messages of [m1, m2]; the record
    event is emitted when recording ends, right after P1 processes the last recorded message."""

    def record(rec: TraceRecorder) -> None:
        m1 = rec.send("P0", "P0>P1", value="m1")
        c1 = rec.checkpoint("P1")
        rec.checkpoint("P0")
        sent = [m1, rec.send("P0", "P0>P1", value="m2")]
        if k == 0:
            rec.record("P1", c1, "P0>P1", [])
        for n, m in enumerate(sent, 1):
            rec.recv("P1", m)
            if n == k:
                rec.record("P1", c1, "P0>P1", sent[:k])

    return record


THEORY_D_COMMON = (
    "Verbatim transcription of example D: P0: C0,0 | s(m1->P1) | C0,1 | s(m2->P1) and "
    "P1: C1,0 | C1,1 | r(m1) | r(m2), so m1 = (P0,1,P1,2), m2 = (P0,2,P1,2); the cut is "
    "G = (1,1) (expected.check.cut). m1 is in transit (1 <= 1 and 2 > 1); m2 is neither in transit "
    "nor an orphan (s = 2 > 1: not sent in the cut); no orphan. P1 records the channel state of "
    "P0>P1 with its checkpoint 1 (record event, emitted when recording ends); the channel is not "
    "logged. No R-graph cycle (P1 sends nothing): no useless checkpoint. "
)

THEORY_D_DROPPED = Golden(
    name="theory_d_dropped",
    source='docs/theory.md, "Worked example D: channel state", CS = {}',
    notes=THEORY_D_COMMON
    + (
        "Variant CS = {}: P1 records an empty channel state, so the in-transit m1 is neither "
        "recorded nor logged: violations {dropped}."
    ),
    expected=_expected("violation", ["dropped"], check={"cut": {"P0": 1, "P1": 1}}, useless=[]),
    processes=P01,
    channels=[("P0>P1", "P0", "P1")],
    protocol="none",
    record=_theory_d(0),
)

THEORY_D_RECORDED = Golden(
    name="theory_d_recorded",
    source='docs/theory.md, "Worked example D: channel state", CS = [m1]',
    notes=THEORY_D_COMMON + ("Variant CS = [m1]: the recorded channel state equals the in-transit set {m1}: clean."),
    expected=_expected("clean", [], check={"cut": {"P0": 1, "P1": 1}}, useless=[]),
    processes=P01,
    channels=[("P0>P1", "P0", "P1")],
    protocol="none",
    record=_theory_d(1),
)

THEORY_D_PHANTOM = Golden(
    name="theory_d_phantom",
    source='docs/theory.md, "Worked example D: channel state", CS = [m1, m2]',
    notes=THEORY_D_COMMON
    + (
        "Variant CS = [m1, m2]: m1 is correctly recorded, m2 is recorded but not in transit "
        "(P0 re-sends m2 after recovery, so replaying the recorded copy would duplicate it): "
        "violations {phantom}."
    ),
    expected=_expected("violation", ["phantom"], check={"cut": {"P0": 1, "P1": 1}}, useless=[]),
    processes=P01,
    channels=[("P0>P1", "P0", "P1")],
    protocol="none",
    record=_theory_d(2),
)


def _theory_stably_unusable(rec: TraceRecorder) -> None:
    m1 = rec.send("P1", "P1>P0", value="m1")
    rec.recv("P0", m1)
    rec.checkpoint("P0")


THEORY_STABLY_UNUSABLE = Golden(
    name="theory_stably_unusable",
    source=(
        'docs/theory.md, "Useless, stably unusable and not yet usable checkpoints": a checkpoint '
        "that is not useless but stably unusable"
    ),
    notes=(
        "Verbatim transcription of the example: P0: C0,0 | r(m1) | C0,1 and "
        "P1: C1,0 | s(m1->P0), P1 never checkpoints again; m1 = (P1,1,P0,1). R-graph edge m1 "
        "(P1,1)->(P0,1), with V0 = (P0,2), V1 = (P1,1). C0,1 is on no Z-cycle ((P0,2) has no "
        "out-edge), and (C0,1, V1) is consistent, so useless = {} even though C0,1 is in no "
        "consistent global checkpoint made of stable checkpoints (stably unusable: V1 reaches "
        "(P0,1)). A checker that forbids V when judging uselessness wrongly reports P0:1. Recovery "
        "lines: Reach(V1) = {(P1,1),(P0,1),(P0,2)}, so 'all' and 'P1' give (0,0) (C0,1 is "
        "discarded); Reach(V0) = {(P0,2)}, so 'P0' gives (1,V); no failure gives (V,V). "
        "No property applies without a cut or a failure set (the useless checkpoints and recovery lines are information): verdict not-judged. "
        + DOMINO
        + " "
        + CONVENTIONS
    ),
    expected=_expected(
        "not-judged",
        [],
        useless=[],
        recovery_lines={
            "all": {"P0": 0, "P1": 0},
            "P0": {"P0": 1, "P1": "V"},
            "P1": {"P0": 0, "P1": 0},
            "none": {"P0": "V", "P1": "V"},
        },
        domino=False,
    ),
    processes=P01,
    channels=[("P1>P0", "P1", "P0")],
    protocol="none",
    record=_theory_stably_unusable,
)


GOLDEN: tuple[Golden, ...] = (
    FIG2A,
    FIG2B,
    FIG2C,
    FIG2D,
    FIG4,
    FIG5,
    THEORY_A,
    THEORY_B,
    THEORY_C,
    THEORY_D_DROPPED,
    THEORY_D_RECORDED,
    THEORY_D_PHANTOM,
    THEORY_STABLY_UNUSABLE,
)


# ---------------------------------------------------------------------------
# index and output
# ---------------------------------------------------------------------------


def _fmt_line(line: dict) -> str:
    return "(" + ", ".join(f"{p}:{x}" for p, x in line.items()) + ")"


def readme() -> str:
    """The index ``traces/examples/README.md``."""
    rows = []
    for g in GOLDEN:
        e = g.expected
        check = e.get("check", {})
        if "cut" in check:
            opts = "cut " + _fmt_line(check["cut"])
        elif "failures" in check:
            opts = f"failures {check['failures']}"
        else:
            opts = "(defaults)"
        lines = e.get("recovery_lines", {})
        shown = "; ".join(f"{k}: {_fmt_line(v)}" for k, v in lines.items()) or "-"
        dom = {True: "yes", False: "no", None: "-"}[e.get("domino")]
        source = g.source.replace(CHECKMATE, "CheckMate")
        rows.append(
            f"| `{g.name}.jsonl` | {source} | {e['verdict']} | "
            f"{', '.join(e['violations']) or '-'} | {opts} | {', '.join(e['useless']) or '-'} | "
            f"{shown} | {dom} |"
        )
    return "\n".join(
        [
            "# Golden traces",
            "",
            f'Hand transcriptions of the figures of *{CHECKMATE}* ("CheckMate" below: Figures 2(a)-(d), 4, 5)',
            "and of the worked examples of `docs/theory.md` (A-D and a stably unusable checkpoint). Each file's",
            "header carries `metadata.source`, `metadata.notes` (how it was transcribed, the choices made where",
            "the paper leaves something open, and the hand derivation of every expected value) and",
            '`metadata.expected` (see `docs/trace-format.md`, "Golden traces and metadata.expected").',
            "",
            "Generated by `scripts/make_golden.py` (do not edit the `.jsonl` files or this index by hand:",
            "edit the script and run `python scripts/make_golden.py`; `--check` verifies the committed",
            "files). `tests/traces/test_golden.py` checks that every trace validates, that the files are",
            "byte for byte the script's output, and that a brute-force enumeration of all global",
            "checkpoints (volatile states V allowed) agrees with every expected useless set, recovery line,",
            "domino flag and explicit-cut verdict.",
            "",
            "Conventions: checkpoint numbers are the trace's `ckpt` (0 = the implied initial checkpoint",
            'C_{i,0}); `"V"` is a survivor\'s current (volatile) state, the virtual checkpoint L_i+1, also',
            "when no event follows its last checkpoint; recovery-line labels are `none`, `all`, or failed",
            "process ids joined by commas (partial-failure semantics: survivors may keep V; `all` equals",
            "CheckMate's restart-all). Useless = on a Z-cycle (Netzer-Xu), judged with V allowed.",
            f"Domino: {DOMINO[len('domino: ') :]}",
            "",
            "| file | source | verdict | violations | check | useless | recovery lines | domino |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def build() -> dict[str, bytes]:
    """Every output file of this script: name -> exact bytes."""
    out = {f"{g.name}.jsonl": g.recorder().dumps() for g in GOLDEN}
    out["README.md"] = readme().encode()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare with the committed files; exit 1 if they differ")
    args = ap.parse_args(argv)
    files = build()
    stale = [n for n, data in files.items() if not (EXAMPLES / n).is_file() or (EXAMPLES / n).read_bytes() != data]
    extra = sorted(p.name for p in EXAMPLES.glob("*.jsonl") if p.name not in files)
    if args.check:
        for n in stale:
            print(f"{EXAMPLES / n}: differs from scripts/make_golden.py output", file=sys.stderr)
        for n in extra:
            print(f"{EXAMPLES / n}: not produced by scripts/make_golden.py", file=sys.stderr)
        return 1 if stale or extra else 0
    EXAMPLES.mkdir(parents=True, exist_ok=True)
    for n in stale:
        (EXAMPLES / n).write_bytes(files[n])
    print(f"{len(files) - 1} golden traces and README.md in {EXAMPLES} ({len(stale)} written)")
    for n in extra:
        print(f"warning: {EXAMPLES / n} is not produced by this script", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

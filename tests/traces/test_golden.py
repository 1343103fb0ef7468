"""Golden traces (``traces/examples/``): validity, reproducibility, and an independent oracle.

The expected values in each trace's ``metadata.expected`` were derived by hand.
Here they are re-derived without the checker, by brute force over every global
checkpoint ``G = (g_0..g_{n-1})`` with ``g_i ∈ {0..L_i+1}`` (the virtual
checkpoint ``V_i = L_i+1`` allowed; docs/theory.md, "Orphans, in-transit messages and
consistency"):

* ``useless``: checkpoints ``(i, x)``, ``x <= L_i``, in no consistent ``G`` (Netzer-Xu);
* recovery line for failure set F: the maximum consistent ``G <= U`` with
  ``U_f = L_f`` and ``U_i = L_i+1`` for survivors (docs/theory.md, "R-MARK"), which must itself
  be consistent and dominate every other consistent ``G <= U`` (docs/theory.md, "The
  lattice of consistent global checkpoints");
* explicit cut: orphans, in-transit messages neither recorded nor logged (``dropped``)
  and recorded messages not in transit (``phantom``) (docs/theory.md, "Violation kinds
  of a snapshot");
* CheckMate's Algorithm 1 (rollback propagation on the checkpoint graph, root set =
  every operator's last checkpoint) as a second recovery oracle, and the sequence of
  candidate lines Figure 5's text states.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapcheck.cli import cli
from snapcheck.traces import read_trace

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "traces" / "examples"
CUT_KINDS = {"orphan", "dropped", "phantom"}  # the violation kinds this oracle decides for a cut


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_golden", ROOT / "scripts" / "make_golden.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(mod)
    return mod


GEN = _load_generator()
FILES = sorted(EXAMPLES.glob("*.jsonl"))
NAMES = [p.stem for p in FILES]


def _having(pred) -> list[str]:
    """Golden traces whose expectation satisfies ``pred`` (taken from the generator, so
    collection needs no file I/O; the files are checked to equal its output)."""
    return [g.name for g in GEN.GOLDEN if pred(g.expected)]


WITH_DOMINO = _having(lambda e: "domino" in e)
WITH_CUT = _having(lambda e: "cut" in e.get("check", {}))
WITH_RESTART_ALL = _having(lambda e: "all" in e.get("recovery_lines", {}))


# -- the oracle's model of a trace (docs/theory.md, "Conventions") ---------------------


@dataclass(frozen=True)
class Msg:
    mid: str
    name: str  # the name in the paper or docs/theory.md, carried in the send's value
    ch: str
    src: str
    s: int  # ι(send)
    dst: str
    r: int | None  # ι(recv), None if never processed


@dataclass
class Model:
    procs: list[str]
    L: dict[str, int]
    msgs: list[Msg]
    logged: set[str]  # mids durably logged by their sender
    records: list[tuple[str, int, str, str, list]]  # (proc, ckpt, ch, part, mids)


def model_of(trace) -> Model:
    chans = {c.id: c for c in trace.header.channels}
    procs = [p.id for p in trace.header.processes if p.checkpoints]
    L, sends, recvs, records, logged = {}, {}, {}, [], set()
    for proc, events in trace.by_process().items():
        c = 1  # C_{i,0} precedes every event
        for e in events:
            assert e.type in ("send", "recv", "checkpoint", "record", "log"), (
                f"the oracle does not model {e.type!r} events"
            )
            if e.type == "checkpoint" and e.ckpt > 0:
                assert e.ckpt == c, "checkpoints are numbered 1, 2, ... in order"
                c += 1
            elif e.type == "send":
                assert e.kind != "barrier"
                sends[e.mid] = (e, c)
                if e.logged or chans[e.ch].logged:
                    logged.add(e.mid)
            elif e.type == "recv":
                assert e.mid not in recvs
                recvs[e.mid] = c
            elif e.type == "record":
                records.append((proc, e.ckpt, e.ch, e.part or "input", list(e.mids)))
            elif e.type == "log":
                logged.update(e.mids)
        L[proc] = c - 1
    msgs = [Msg(mid, ev.value, ev.ch, ev.proc, s, chans[ev.ch].dst, recvs.get(mid)) for mid, (ev, s) in sends.items()]
    return Model(procs, L, msgs, logged, records)


def orphan(m: Msg, G: dict) -> bool:
    return m.r is not None and m.r <= G[m.dst] and m.s > G[m.src]


def in_transit(m: Msg, G: dict) -> bool:
    return m.s <= G[m.src] and (m.r is None or m.r > G[m.dst])


def consistent(M: Model, G: dict) -> bool:
    return not any(orphan(m, G) for m in M.msgs)


def consistent_below(M: Model, U: dict) -> list[dict]:
    ranges = [range(U[p] + 1) for p in M.procs]
    return [G for G in (dict(zip(M.procs, g)) for g in itertools.product(*ranges)) if consistent(M, G)]


def brute_useless(M: Model) -> set[str]:
    usable = {(p, G[p]) for G in consistent_below(M, {p: M.L[p] + 1 for p in M.procs}) for p in M.procs}
    return {f"{p}:{x}" for p in M.procs for x in range(M.L[p] + 1) if (p, x) not in usable}


def failure_set(M: Model, label: str) -> set[str]:
    if label == "none":
        return set()
    if label == "all":
        return set(M.procs)
    failed = set(label.split(","))
    assert failed <= set(M.procs) and label == ",".join(sorted(failed)), f"bad label {label!r}"
    return failed


def brute_recovery_line(M: Model, failed: set[str]) -> dict:
    U = {p: M.L[p] if p in failed else M.L[p] + 1 for p in M.procs}
    cands = consistent_below(M, U)
    top = {p: max(G[p] for G in cands) for p in M.procs}
    assert top in cands, "the componentwise max of consistent lines is consistent (lattice)"
    return {p: "V" if top[p] == M.L[p] + 1 else top[p] for p in M.procs}


def brute_cut_kinds(M: Model, cut: dict) -> set[str]:
    G = {p: M.L[p] + 1 if x == "V" else x for p, x in cut.items()}
    kinds = set()
    if any(orphan(m, G) for m in M.msgs):
        kinds.add("orphan")
    by_mid = {m.mid: m for m in M.msgs}
    recorded = set()
    for proc, ckpt, ch, _part, mids in M.records:
        if ckpt == G[proc]:
            recorded.update((ch, mid) for mid in mids)
    if any(not in_transit(by_mid[mid], G) for _, mid in recorded):
        kinds.add("phantom")
    if any(in_transit(m, G) and (m.ch, m.mid) not in recorded and m.mid not in M.logged for m in M.msgs):
        kinds.add("dropped")
    return kinds


def checkmate_algorithm1(M: Model) -> list[tuple[dict, list[str]]]:
    """CheckMate's Algorithm 1 with the checkpoint graph of its §III-B: the root set
    starts at every operator's latest checkpoint; root members strictly reachable
    from another root member are marked and replaced by the next older checkpoint.
    Returns the successive root sets, each with the names of its orphan messages."""
    succ: dict[tuple, set] = {(p, x): set() for p in M.procs for x in range(M.L[p] + 1)}
    for p in M.procs:
        for x in range(M.L[p]):
            succ[(p, x)].add((p, x + 1))
    for m in M.msgs:
        if m.r is not None and m.r <= M.L[m.dst]:  # no V node: CheckMate restarts everyone
            succ[(m.src, m.s - 1)].add((m.dst, m.r))
    root = {p: M.L[p] for p in M.procs}
    steps = []
    while True:
        steps.append((dict(root), sorted(m.name for m in M.msgs if orphan(m, root))))
        frontier = [n for p in M.procs for n in succ[(p, root[p])]]
        reached = set()
        while frontier:
            n = frontier.pop()
            if n not in reached:
                reached.add(n)
                frontier.extend(succ[n])
        marked = [p for p in M.procs if (p, root[p]) in reached]
        if not marked:
            return steps
        for p in marked:
            root[p] -= 1


# -- fixtures -------------------------------------------------------------------------


def _load(name: str):
    trace = read_trace(EXAMPLES / f"{name}.jsonl")
    return name, trace, model_of(trace), trace.header.metadata["expected"]


@pytest.fixture(scope="module", params=NAMES)
def golden(request):
    return _load(request.param)


# -- the files --------------------------------------------------------------------------


def test_every_golden_trace_is_listed_and_generated_byte_for_byte():
    files = GEN.build()
    assert sorted(files) == sorted([p.name for p in FILES] + ["README.md"])
    for name, data in files.items():
        assert (EXAMPLES / name).read_bytes() == data, f"{name}: rerun python scripts/make_golden.py"
    assert GEN.main(["--check"]) == 0


def test_generator_covers_every_figure_and_example():
    sources = " ".join(g.source for g in GEN.GOLDEN)
    for fig in ("Figure 2(a)", "Figure 2(b)", "Figure 2(c)", "Figure 2(d)", "Figure 4", "Figure 5"):
        assert fig in sources
    for ex in ("example A", "example B", "example C", "example D", "stably unusable"):
        assert ex in sources


def test_cli_validates_every_golden_trace():
    result = CliRunner().invoke(cli, ["validate-trace", *map(str, FILES)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": OK (") == len(FILES)


# -- metadata -------------------------------------------------------------------------


def test_metadata_follows_the_expected_contract(golden):
    name, trace, M, exp = golden
    meta = trace.header.metadata
    assert meta["source"] and len(meta["notes"]) > 200
    assert set(exp) <= {"verdict", "violations", "check", "useless", "recovery_lines", "domino"}
    assert (exp["verdict"] == "violation") == bool(exp["violations"])
    # without a cut or a failure set nothing applies: "clean" would claim a judgement
    applies = {"cut", "failures"} & set(exp.get("check", {}))
    assert exp["verdict"] in (("violation", "clean") if applies else ("not-judged",))
    assert set(exp.get("check", {})) <= {"cut", "failures", "semantics", "properties", "z3"}
    for ckpt in exp["useless"]:
        p, x = ckpt.split(":")
        assert p in M.procs and 0 <= int(x) <= M.L[p]
    if "cut" not in exp.get("check", {}):
        # Without a cut these traces exercise only uselessness and recovery lines, which are
        # not violations for protocols that promise no Z-cycle freedom.
        assert exp["violations"] == [] and trace.header.protocol["name"] not in ("bcs", "hmnr")


def test_notes_state_the_message_tuples_correctly(golden):
    """Every '(src, s, dst, r)' tuple written in the notes is the one the trace records."""
    name, trace, M, exp = golden
    tuples = re.findall(r"\b(\w+) = \((\w+), ?(?:s=)?(\d+), ?(\w+), ?(?:r=)?(\d+)\)", trace.header.metadata["notes"])
    actual = {m.name: (m.src, m.s, m.dst, m.r) for m in M.msgs}
    assert {t[0] for t in tuples} == set(actual), "the notes give every message's tuple"
    for n, src, s, dst, r in tuples:
        assert actual[n] == (src, int(s), dst, int(r)), f"{name}: notes say {n} = ({src},{s},{dst},{r})"


# -- expectations against the brute-force oracle -----------------------------------------------


def test_useless_set_agrees_with_brute_force(golden):
    name, trace, M, exp = golden
    assert brute_useless(M) == set(exp["useless"])


def test_recovery_lines_agree_with_brute_force(golden):
    name, trace, M, exp = golden
    for label, line in exp.get("recovery_lines", {}).items():
        assert brute_recovery_line(M, failure_set(M, label)) == line, f"{name}: failure set {label}"


def test_recovery_lines_leave_no_unlogged_message_in_transit(golden):
    """The expected lines hold whether or not a checker adds no-drop constraints for
    unlogged messages (docs/theory.md, "The lattice of consistent global checkpoints"):
    every message in transit w.r.t. them is logged."""
    name, trace, M, exp = golden
    for label, line in exp.get("recovery_lines", {}).items():
        G = {p: M.L[p] + 1 if x == "V" else x for p, x in line.items()}
        assert all(m.mid in M.logged for m in M.msgs if in_transit(m, G)), f"{name}: failure set {label}"


@pytest.mark.parametrize("name", WITH_DOMINO)
def test_domino_flag_agrees_with_brute_force(name):
    name, trace, M, exp = _load(name)
    line = brute_recovery_line(M, set(M.procs))
    assert (max(M.L[p] - line[p] for p in M.procs) >= 2) == exp["domino"]


@pytest.mark.parametrize("name", WITH_CUT)
def test_explicit_cut_verdict_agrees_with_brute_force(name):
    name, trace, M, exp = _load(name)
    cut = exp["check"]["cut"]
    assert set(exp["violations"]) <= CUT_KINDS
    assert brute_cut_kinds(M, cut) == set(exp["violations"])


@pytest.mark.parametrize("name", WITH_RESTART_ALL)
def test_checkmate_algorithm1_finds_the_restart_all_line(name):
    """docs/theory.md, "Rollback propagation": rollback propagation on the checkpoint graph and R-MARK on the
    R-graph give the same line from the same bound (here: everyone restarts)."""
    name, trace, M, exp = _load(name)
    final, orphans = checkmate_algorithm1(M)[-1]
    assert orphans == [] and final == exp["recovery_lines"]["all"]


# -- the figures' stated outcomes -------------------------------------------------------------


def test_figure5_follows_the_papers_sequence_of_invalid_lines():
    """§III-B: (C<1,3>,C<2,3>,C<3,2>) is invalid by m6, (C<1,2>,C<2,3>,C<3,2>) by m4,
    (C<1,2>,C<2,2>,C<3,2>) by m5; then m3 and m1 (m2 is in transit) lead to (C<1,1>,C<2,1>,C<3,1>)."""
    M = model_of(read_trace(EXAMPLES / "checkmate_fig5_domino_cyclic.jsonl"))
    steps = checkmate_algorithm1(M)
    lines = [tuple(root[p] for p in ("O1", "O2", "O3")) for root, _ in steps]
    assert lines == [(3, 3, 2), (2, 3, 2), (2, 2, 2), (2, 2, 1), (1, 2, 1), (1, 1, 1)]
    assert [o for _, o in steps] == [["m6"], ["m4"], ["m5"], ["m3"], ["m1"], []]
    m2 = next(m for m in M.msgs if m.name == "m2")
    assert in_transit(m2, {"O1": 1, "O2": 2, "O3": 1})


def test_figure4_takes_the_three_described_steps():
    """Step 1: root = latest checkpoints; step 2: two members are marked; step 3: after
    replacing them nothing is marked and the root set is returned."""
    M = model_of(read_trace(EXAMPLES / "checkmate_fig4_rollback_propagation.jsonl"))
    steps = checkmate_algorithm1(M)
    assert [root for root, _ in steps] == [{"O1": 2, "O2": 2, "O3": 2}, {"O1": 2, "O2": 1, "O3": 1}]
    assert steps[0][1] == ["m5", "m6"]

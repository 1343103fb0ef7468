"""Restores at another parallelism written by hand, as a user's own engine would record
them (not by the reference simulator): a keyed job ``src -> agg`` checkpointed by an
unaligned round and restored at another parallelism, with the faults the simulator's
mutants do not model. Key-group ownership is computed by brute force from Flink's
definition of a key group's subtask (``⌊g·p/M⌋``), scanning every key group, never
from the range formula the checker's docs quote."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from snapcheck.checker import check_trace
from snapcheck.checker.junit import junit_xml
from snapcheck.traces import TraceRecorder
from snapcheck.traces.errors import RecorderError
from snapcheck.traces.jsonl import parse_trace
from snapcheck.traces.writer import dumps_trace


def ranges(M: int, p: int) -> list[list[int]]:
    """Per subtask of ``p``, the key groups of ``M`` it owns, found by scanning every group."""
    out: list[list[int]] = [[] for _ in range(p)]
    for g in range(M):
        out[g * p // M].append(g)
    return out


def span(groups: list[int]) -> list[list[int]]:
    return [[groups[0], groups[-1]]] if groups else []


def keyed_rescale(
    p_old: int,
    p_new: int,
    M: int,
    *,
    key_groups: bool = True,
    new_M: int | None = None,
    fault: str | None = None,
    late_round: bool = False,
    retire_at: int | None = 1,
    unsaved: int | None = None,
    zombie: int | None = None,
    keeps: bool = False,
    live: str | None = None,
) -> tuple[TraceRecorder, dict[str, tuple[int, int]]]:
    """The job (module docstring) with one record per key group: each old aggregate
    processes the first half of its records before round 1's barrier and records the rest
    as input channel state, which the new owners replay. Returns the recorder and the
    recorded records (mid -> (key group, old subtask)).

    ``key_groups=False``: sends name no key group. ``new_M``: the new aggregates' max
    parallelism. ``fault``: ``drop`` (the first recorded record whose old channel several
    new channels share is never replayed), ``twice`` (it is also processed on a second of
    those channels), ``misroute`` (it is processed on a second of them instead). ``late_round``: a round 2 that every old process checkpoints, then
    aborted; ``retire_at``: the checkpoint the old processes retire at (None: none).
    ``unsaved``: an old subtask that takes no checkpoint of round 1 (it processes all its
    records and retires without a checkpoint); no restore takes its key groups. ``zombie``:
    an old subtask that never retires; ``keeps``: the restores leave it its first key group.
    ``live``: after the recovered records the new source sends one record per key group,
    routed by the new parallelism (``new``) or still by the old one (``old``, modulo the
    new parallelism)."""
    old, new = ranges(M, p_old), ranges(M, p_new)
    procs: list = [{"id": "coord", "role": "coordinator"}, {"id": "in[0]", "role": "external"}]
    procs.append({"id": "src[0]", "role": "source", "operator": "src", "partitions": ["in[0]"]})
    procs += [
        {"id": f"agg[{j}]", "operator": "agg", "subtask": j, "key_groups": span(old[j]), "max_parallelism": M}
        for j in range(p_old)
        if old[j]
    ]
    procs.append({"id": "g1.src[0]", "role": "source", "operator": "src", "appears": True})
    procs += [
        {"id": f"g1.agg[{j}]", "operator": "agg", "subtask": j, "appears": True, "max_parallelism": new_M or M}
        for j in range(p_new)
    ]
    chans = [("in[0]>src[0]", "in[0]", "src[0]"), ("in[0]>g1.src[0]", "in[0]", "g1.src[0]")]
    chans += [(f"src[0]>agg[{j}]", "src[0]", f"agg[{j}]") for j in range(p_old) if old[j]]
    chans += [(f"g1.src[0]>g1.agg[{j}]", "g1.src[0]", f"g1.agg[{j}]") for j in range(p_new)]
    rec = TraceRecorder(procs, chans, protocol="unaligned", seed=0)
    rec.round_start("coord", 1)
    queue: dict[int, list[tuple[str, int]]] = {j: [] for j in range(p_old)}
    for g in range(M):
        rec.recv("src[0]", rec.send("in[0]", "in[0]>src[0]", value=g))
        j = g * p_old // M
        queue[j].append((rec.send("src[0]", f"src[0]>agg[{j}]", key=f"k{g}", key_group=g if key_groups else None), g))
    rec.checkpoint("src[0]", kind="coordinated", round=1)
    olds = [j for j in range(p_old) if old[j]]
    for j in olds:
        rec.barrier("src[0]", f"src[0]>agg[{j}]", 1)
    recorded: dict[str, tuple[int, int]] = {}
    for j in olds:
        if j == unsaved:
            for mid, _ in queue[j]:
                rec.recv(f"agg[{j}]", mid)
            continue
        half = len(queue[j]) // 2
        for mid, _ in queue[j][:half]:
            rec.recv(f"agg[{j}]", mid)
        rec.recv(f"agg[{j}]", f"src[0]>agg[{j}]:b1")
        rec.checkpoint(f"agg[{j}]", kind="coordinated", round=1)
        rec.record(f"agg[{j}]", 1, f"src[0]>agg[{j}]", [mid for mid, _ in queue[j][half:]])
        for mid, g in queue[j][half:]:
            recorded[mid] = (g, j)
            rec.recv(f"agg[{j}]", mid)  # after the checkpoint: undone by a retire at it
    rec.round_complete("coord", 1)
    if late_round:
        rec.round_start("coord", 2)
        for p in ["src[0]"] + [f"agg[{j}]" for j in olds]:
            rec.checkpoint(p, kind="coordinated", round=2)
        rec.round_abort("coord", 2, reason="stopped")
    for p in ["src[0]"] + [f"agg[{j}]" for j in olds if j != zombie]:
        rec.retire(p, ckpt=None if p == f"agg[{unsaved}]" else retire_at, reason="rescaled")
    rec.restore(
        "g1.src[0]",
        0,
        recovery=1,
        round=1,
        sources=[{"proc": "src[0]", "ckpt": 1, "partitions": ["in[0]"]}],
        channels=[{"old": "in[0]>src[0]", "new": "in[0]>g1.src[0]"}],
    )
    onto: dict[int, list[int]] = {}  # old subtask -> the new subtasks its channel is mapped onto
    for jn in range(p_new):
        srcs, maps = [], []
        for j in olds:
            both = sorted(set(new[jn]) & set(old[j])) if j != unsaved else []
            if keeps and j == zombie:
                both = [g for g in both if g != old[j][0]]
            if both:
                srcs.append({"proc": f"agg[{j}]", "ckpt": 1, "key_groups": span(both)})
                maps.append({"old": f"src[0]>agg[{j}]", "new": f"g1.src[0]>g1.agg[{jn}]", "key_groups": span(both)})
                onto.setdefault(j, []).append(jn)
        rec.restore(f"g1.agg[{jn}]", 0, recovery=1, round=1, sources=srcs, channels=maps)
    victim = next((mid for mid, (_, j) in recorded.items() if len(onto.get(j, ())) > 1), None)
    for mid, (g, j) in recorded.items():
        owner = g * p_new // M
        if fault == "drop" and mid == victim:
            continue
        if fault == "misroute" and mid == victim:
            owner = next(x for x in onto[j] if x != owner)
        rec.recv(
            f"g1.agg[{owner}]", rec.replay(f"g1.agg[{owner}]", mid, "channel_state", ch=f"g1.src[0]>g1.agg[{owner}]")
        )
        if fault == "twice" and mid == victim:
            other = next(x for x in onto[j] if x != owner)
            rec.recv(
                f"g1.agg[{other}]",
                rec.replay(f"g1.agg[{other}]", mid, "channel_state", ch=f"g1.src[0]>g1.agg[{other}]"),
            )
    for g in range(M) if live else ():
        to = (g * p_old // M) % p_new if live == "old" else g * p_new // M
        rec.recv(f"g1.agg[{to}]", rec.send("g1.src[0]", f"g1.src[0]>g1.agg[{to}]", key=f"k{g}", key_group=g))
    return rec, recorded


def shared(p_old: int, p_new: int, M: int, recorded: dict) -> bool:
    """Whether some recorded record's old channel is mapped onto more than one new channel."""
    old, new = ranges(M, p_old), ranges(M, p_new)
    return any(sum(1 for jn in range(p_new) if set(new[jn]) & set(old[j])) > 1 for _, j in recorded.values())


pars = st.integers(1, 5)
max_par = st.integers(1, 13)


@settings(max_examples=40, deadline=None)
@given(p_old=pars, p_new=pars, M=max_par)
def test_recovered_records_without_a_key_group_go_to_one_of_the_filtered_channels(p_old, p_new, M):
    """A record whose send names no key group, on an old channel mapped onto several new
    channels filtered by key group, is owned by one of them (the receiver filters by key):
    processed once by its owner is clean, and the note says its owner was not judged; the
    keyed twin is clean without the note."""
    assume(M >= max(p_old, p_new))
    for key_groups in (True, False):
        rec, recorded = keyed_rescale(p_old, p_new, M, key_groups=key_groups)
        report = check_trace(rec.trace())
        assert report.violations == [], [v.message for v in report.violations]
        noted = [n for n in report.notes if "without a key_group" in n]
        assert bool(noted) == (not key_groups and shared(p_old, p_new, M, recorded))


@settings(max_examples=40, deadline=None)
@given(p_old=pars, p_new=pars, M=max_par, fault=st.sampled_from(["drop", "twice"]))
def test_a_record_without_a_key_group_dropped_or_processed_twice(p_old, p_new, M, fault):
    assume(M >= max(p_old, p_new))
    rec, recorded = keyed_rescale(p_old, p_new, M, key_groups=False, fault=fault)
    assume(shared(p_old, p_new, M, recorded))
    report = check_trace(rec.trace())
    kind = {"drop": "in-flight-lost", "twice": "in-flight-duplicated"}[fault]
    [v] = [v for v in report.violations if v.property == "rescale-in-flight"]
    assert v.kind == kind
    mid = v.witness["messages"][0]
    assert mid in recorded and v.witness["old_channel"] == f"src[0]>agg[{recorded[mid][1]}]"


@settings(max_examples=30, deadline=None)
@given(p_old=pars, p_new=pars, M=max_par)
def test_a_keyed_record_replayed_to_a_process_that_does_not_own_its_key_group(p_old, p_new, M):
    """Misrouted to another new channel its old channel is mapped onto: the non-owner's
    receive is in-flight-misrouted and the loss explains where the record went."""
    assume(M >= max(p_old, p_new))
    rec, recorded = keyed_rescale(p_old, p_new, M, fault="misroute")
    assume(shared(p_old, p_new, M, recorded))
    vs = check_trace(rec.trace()).violations
    assert {v.kind for v in vs} == {"in-flight-misrouted", "in-flight-lost"}
    [lost] = [v for v in vs if v.kind == "in-flight-lost"]
    g = lost.witness["key_group"]
    assert recorded[lost.witness["messages"][0]][0] == g
    assert f"the new owner of key group {g}" in lost.message and "instead (misrouted)" in lost.message


@settings(max_examples=30, deadline=None)
@given(p_old=pars, p_new=pars, M=max_par)
def test_a_record_replayed_where_the_restores_own_filter_keeps_it_off(p_old, p_new, M):
    """The restore maps an old channel onto its owner's new channel for some key groups
    only (or none), and a recovered record of another key group is replayed and processed
    there all the same, by the owner of its key group: the trace contradicts its own
    mapping, which says the record does not go there (in-flight-misrouted, naming it)."""
    assume(M >= max(p_old, p_new))
    rec, recorded = keyed_rescale(p_old, p_new, M)
    assume(recorded)
    trace = rec.trace()
    assert check_trace(trace).violations == []  # as recorded: clean
    mid, (g, j) = next(iter(recorded.items()))
    owner = f"g1.src[0]>g1.agg[{g * p_new // M}]"
    for e in trace.events:
        for m in (e.channels or ()) if e.type == "restore" else ():
            if m["old"] == f"src[0]>agg[{j}]" and m["new"] == owner:  # its key group left out of the filter
                m["key_groups"] = [[a, b] for a, b in m["key_groups"] if not a <= g <= b]
    cut = parse_trace(dumps_trace(trace.header, trace.events).decode(), "t.jsonl")
    found = [v for v in check_trace(cut).violations if v.kind == "in-flight-misrouted"]
    assert mid in {v.witness["messages"][0] for v in found}  # (and the others the removed range held)
    assert all("contradicts its own mapping" in v.message for v in found)


@settings(max_examples=40, deadline=None)
@given(p_old=pars, p_new=pars, M=st.integers(2, 13), new_M=st.integers(2, 13))
def test_a_restore_under_another_max_parallelism(p_old, p_new, M, new_M):
    """Key groups of ``M`` restored into processes declaring ``new_M > M`` key groups: every
    new aggregate that takes state is reported (brute force: those whose scanned range
    meets an old one), and nothing when the max parallelism is unchanged."""
    assume(M >= max(p_old, p_new) and new_M >= p_new)
    if new_M < M:  # key group M - 1 does not exist among new_M: the trace is malformed, said by the validator
        with pytest.raises(RecorderError, match="outside max_parallelism"):
            keyed_rescale(p_old, p_new, M, new_M=new_M)
        return
    rec, _ = keyed_rescale(p_old, p_new, M, new_M=new_M)
    report = check_trace(rec.trace())
    got = {v.witness["process"] for v in report.violations if v.kind == "max-parallelism-changed"}
    takers = {f"g1.agg[{jn}]" for jn, groups in enumerate(ranges(M, p_new)) if groups}
    assert got == (takers if new_M != M else set())
    for v in report.violations:
        if v.kind == "max-parallelism-changed":
            assert v.witness["max_parallelism"] == [M, new_M]


def test_old_tasks_retiring_at_a_later_checkpoint_than_the_one_restored():
    """Round 2 is aborted after every old task checkpointed it; the job is restored from
    round 1, but the old tasks retire at their checkpoint 2, so what they processed between
    the two checkpoints is kept and processed again. The twin retiring at checkpoint 1 is
    clean, and so is one whose tasks retire without a checkpoint but did nothing after the
    restored one."""
    rec, _ = keyed_rescale(3, 2, 7, late_round=True, retire_at=2)
    report = check_trace(rec.trace())
    wrong = [v for v in report.violations if v.kind == "state-wrong-round"]
    assert {v.witness["process"] for v in wrong} == {"src[0]", "agg[0]", "agg[1]", "agg[2]"}
    assert all(v.witness["checkpoints"] == [[v.witness["process"], 1]] for v in wrong)
    assert check_trace(keyed_rescale(3, 2, 7, late_round=True, retire_at=1)[0].trace()).violations == []
    # retiring without a checkpoint keeps the records processed after checkpoint 1
    unhanded = check_trace(keyed_rescale(3, 2, 7, retire_at=None)[0].trace())
    assert {v.witness["process"] for v in unhanded.violations if v.kind == "state-wrong-round"} == {
        "agg[0]",
        "agg[1]",
        "agg[2]",
    }  # not src[0]: it sent only barriers after its checkpoint


@settings(max_examples=40, deadline=None)
@given(p_old=st.integers(2, 5), p_new=pars, M=max_par, data=st.data())
def test_an_old_subtask_without_a_checkpoint_of_the_restored_round_loses_its_key_groups(p_old, p_new, M, data):
    """An old subtask that was in the job when round 1 started but never checkpointed it,
    and whose key groups no restore takes: exactly its key groups (brute force) are
    key-group-lost, the witness naming no checkpoint. The twin that checkpointed is clean."""
    assume(M >= max(p_old, p_new))
    j = data.draw(st.integers(0, p_old - 1))
    report = check_trace(keyed_rescale(p_old, p_new, M, unsaved=j)[0].trace())
    [lost] = [v for v in report.violations if v.kind == "key-group-lost"]
    assert lost.witness["key_groups"] == span(ranges(M, p_old)[j]) and lost.witness["checkpoints"] == []
    assert f"agg[{j}] owned" in lost.message and "took no checkpoint" in lost.message
    assert check_trace(keyed_rescale(p_old, p_new, M)[0].trace()).violations == []


@settings(max_examples=30, deadline=None)
@given(p_old=st.integers(2, 5), p_new=pars, M=max_par, data=st.data())
def test_an_old_subtask_that_never_retires(p_old, p_new, M, data):
    """An old subtask all of whose key groups the rescale takes but that never retires
    keeps what it processed after the restored checkpoint (a zombie): state-wrong-round
    naming it exactly when it processed records after it (brute force: its second half).
    One that keeps a key group of its own may live on: its lost remainder aside, nothing."""
    assume(M >= max(p_old, p_new))
    j = data.draw(st.integers(0, p_old - 1))
    after = len(ranges(M, p_old)[j]) - len(ranges(M, p_old)[j]) // 2  # records it processes after checkpoint 1
    report = check_trace(keyed_rescale(p_old, p_new, M, zombie=j)[0].trace())
    wrong = {v.witness["process"] for v in report.violations if v.kind == "state-wrong-round"}
    assert wrong == ({f"agg[{j}]"} if after else set())
    kept = check_trace(keyed_rescale(p_old, p_new, M, zombie=j, keeps=True)[0].trace())
    assert not [v for v in kept.violations if v.kind == "state-wrong-round"]
    # the group it keeps is lost to the new job (whose owner still processes its recovered record)
    assert "key-group-lost" in {v.kind for v in kept.violations}


def _whole_state(declare_partitions: bool = False, partial: bool = False, sources_of=None) -> TraceRecorder:
    """Operator ``u`` at 2 restored at 3, each new process taking whole checkpoints (union
    state: both old ones); ``partial``: the last takes only ``u[0]``'s. With partitions
    declared, only ``g1.u[0]`` takes one (``u[0]``'s). ``sources_of(j)``: new process
    ``j``'s sources instead."""
    procs: list = [{"id": "coord", "role": "coordinator"}]
    for j in range(2):
        procs.append(
            {"id": f"u[{j}]", "operator": "u", "subtask": j} | ({"partitions": [f"u{j}"]} if declare_partitions else {})
        )
    procs += [{"id": f"g1.u[{j}]", "operator": "u", "subtask": j, "appears": True} for j in range(3)]
    rec = TraceRecorder(procs, [], protocol="unaligned")
    rec.round_start("coord", 1)
    for j in range(2):
        rec.checkpoint(f"u[{j}]", kind="coordinated", round=1)
    rec.round_complete("coord", 1)
    for j in range(2):
        rec.retire(f"u[{j}]", ckpt=1)
    for j in range(3):
        srcs = [{"proc": f"u[{i}]", "ckpt": 1} for i in range(2)]
        if declare_partitions:
            srcs = [dict(s, partitions=[f"u{i}"]) for i, s in enumerate(srcs) if i == j == 0]
        elif partial and j == 2:
            srcs = srcs[:1]
        rec.restore(f"g1.u[{j}]", 0, recovery=1, round=1, sources=srcs if sources_of is None else sources_of(j))
    return rec


def test_state_restored_whole_is_said_not_judged():
    """Whole-checkpoint state of processes that declare neither key groups nor partitions
    (union, broadcast or split: the trace does not say) is never silently passed: the
    text, JSON and JUnit reports say it is not judged; with partitions declared it is
    judged (here: old ``u[1]``'s partition, taken by no new process, is lost)."""
    for partial in (False, True):
        report = check_trace(_whole_state(False, partial).trace())
        assert report.violations == []
        [note] = [n for n in report.notes if "operator u restores state whole" in n]
        assert "u[0]:1, u[1]:1" in note and "not judged" in note
        assert note in json.loads(json.dumps(report.to_json()))["notes"]
        assert note in report.render_text()
        out = ET.fromstring(junit_xml([report])).find("testsuite/system-out")
        assert out is not None and note in (out.text or "")
    judged = check_trace(_whole_state(True, False).trace())
    assert not [n for n in judged.notes if "restores state whole" in n]
    assert {(v.kind, v.witness.get("partition")) for v in judged.violations} == {("partition-lost", "u1")}


def test_a_whole_checkpoint_no_restore_takes_is_named_in_the_note():
    """Old ``u[1]``'s checkpoint, taken whole by no restore (``g1.u[0]`` and ``g1.u[2]``
    take ``u[0]``'s; ``g1.u[1]`` none): lost if it is split state, nothing if it is a
    stateless operator's or a broadcast copy. The trace does not say which: no violation,
    and the note, in text, JSON and JUnit, names it."""
    rec = _whole_state(sources_of=lambda j: [] if j == 1 else [{"proc": "u[0]", "ckpt": 1}])
    report = check_trace(rec.trace())
    assert report.violations == []
    [note] = [n for n in report.notes if "operator u restores state whole" in n]
    assert "no restore takes u[1]:1, whose state is lost if it is split state" in note
    assert note in json.loads(json.dumps(report.to_json()))["notes"]
    out = ET.fromstring(junit_xml([report])).find("testsuite/system-out")
    assert out is not None and note in (out.text or "")
    taken = check_trace(_whole_state(False, True).trace())  # every old checkpoint taken: none named
    assert not [n for n in taken.notes if "no restore takes" in n]


def _splits(n: int, p_old: int, p_new: int, fault: str | None) -> TraceRecorder:
    """``n`` input splits read round robin by ``p_old`` readers, each reading one record of
    each of its splits before round 1 and leaving the second unread; restored round robin
    on ``p_new`` readers, which re-read the unread records from the logs. ``fault``:
    ``dup`` (split 0 is also given to the next reader), ``none`` (split 0 to nobody)."""
    holder = {s: s % p_old for s in range(n)}
    given = {s: [s % p_new] for s in range(n)}
    if fault == "dup":
        given[0].append((given[0][0] + 1) % p_new)
    if fault == "none":
        given[0] = []
    procs: list = [{"id": "coord", "role": "coordinator"}]
    procs += [{"id": f"in[{s}]", "role": "external"} for s in range(n)]
    procs += [
        {
            "id": f"src[{j}]",
            "role": "source",
            "operator": "src",
            "partitions": [f"in[{s}]" for s in range(n) if holder[s] == j],
        }
        for j in range(p_old)
    ]
    procs += [{"id": f"g1.src[{j}]", "role": "source", "operator": "src", "appears": True} for j in range(p_new)]
    chans = [(f"in[{s}]>src[{holder[s]}]", f"in[{s}]", f"src[{holder[s]}]") for s in range(n)]
    chans += [(f"in[{s}]>g1.src[{j}]", f"in[{s}]", f"g1.src[{j}]") for s in range(n) for j in range(p_new)]
    rec = TraceRecorder(procs, chans, protocol="unaligned")
    rec.round_start("coord", 1)
    unread = {}
    for s in range(n):
        rec.recv(f"src[{holder[s]}]", rec.send(f"in[{s}]", f"in[{s}]>src[{holder[s]}]", value=1))
        unread[s] = rec.send(f"in[{s}]", f"in[{s}]>src[{holder[s]}]", value=2)
    for j in range(p_old):
        rec.checkpoint(f"src[{j}]", kind="coordinated", round=1)
    rec.round_complete("coord", 1)
    for j in range(p_old):
        rec.retire(f"src[{j}]", ckpt=1)
    for jn in range(p_new):
        mine = [s for s in range(n) if jn in given[s]]
        olds = sorted({holder[s] for s in mine})
        srcs = [
            {"proc": f"src[{q}]", "ckpt": 1, "partitions": [f"in[{s}]" for s in mine if holder[s] == q]} for q in olds
        ]
        maps = [{"old": f"in[{s}]>src[{holder[s]}]", "new": f"in[{s}]>g1.src[{jn}]"} for s in mine]
        rec.restore(f"g1.src[{jn}]", 0, recovery=1, round=1, sources=srcs, channels=maps)
    for s in range(n):
        for jn in given[s]:
            rec.recv(f"g1.src[{jn}]", rec.replay(f"in[{s}]", unread[s], "log", ch=f"in[{s}]>g1.src[{jn}]"))
    return rec


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), p_old=pars, p_new=st.integers(2, 5), fault=st.sampled_from([None, "dup", "none"]))
def test_source_splits_given_to_two_readers_or_none(n, p_old, p_new, fault):
    """Round-robin split reassignment is clean; a split given to two readers is
    partition-duplicated and its unread record, read by both, in-flight-duplicated (the
    witness names it); a split given to nobody is partition-lost and its record input-lost."""
    report = check_trace(_splits(n, p_old, p_new, fault).trace())
    got = {(v.kind, v.witness.get("partition"), tuple(v.witness.get("messages", ())[:1])) for v in report.violations}
    first = ("in[0]>src[0]:2",)
    expected = {
        None: set(),
        "dup": {("partition-duplicated", "in[0]", ()), ("in-flight-duplicated", "in[0]", first)},
        "none": {("partition-lost", "in[0]", ()), ("input-lost", "in[0]", first)},
    }[fault]
    assert got == expected


def test_a_job_restarted_at_another_parallelism_with_no_state_at_all():
    """Every new reader restores with ``sources: []``: the old readers' splits (handed over
    by their retire) are lost, although no restore names a single source; with neither a
    round nor a source checkpoint the rescale's round is unknown, and that is said."""
    report = check_trace(_splits(1, 1, 2, "none").trace())
    assert {(v.kind, v.witness["partition"]) for v in report.violations} == {
        ("partition-lost", "in[0]"),
        ("input-lost", "in[0]"),
    }
    rec = TraceRecorder(["A", {"id": "N", "appears": True}], [])
    _ = rec.checkpoint("A", round=1)
    rec.retire("A", 1)
    rec.restore("N", 0, recovery=1, sources=[])
    unknown = check_trace(rec.trace())
    assert "rescale-state" not in unknown.judged and "known restored round" in unknown.not_judged["rescale-state"]
    assert any("restored round is unknown" in n for n in unknown.notes)


def test_a_rescale_from_the_initial_state():
    """A job that failed before its first checkpoint and restarts at another parallelism
    restores every old subtask's initial state (checkpoint 0, no round): that is round 0,
    judged like any other (it was passed unjudged)."""

    def restart(both: bool):
        agg = {"operator": "agg", "max_parallelism": 4}
        rec = TraceRecorder(
            [
                dict(agg, id="A0", key_groups=[[0, 1]]),
                dict(agg, id="A1", key_groups=[[2, 3]]),
                dict(agg, id="N", appears=True),
            ],
            [],
        )
        rec.retire("A0", 0)
        rec.retire("A1", 0)
        srcs = [{"proc": "A0", "ckpt": 0, "key_groups": [[0, 1]]}, {"proc": "A1", "ckpt": 0, "key_groups": [[2, 3]]}]
        rec.restore("N", 0, recovery=1, sources=srcs if both else srcs[:1])
        return check_trace(rec.trace())

    ok = restart(True)
    assert ok.violations == [] and "rescale-state" in ok.judged
    [lost] = restart(False).violations
    assert (lost.kind, lost.witness["key_groups"], lost.witness["checkpoints"]) == (
        "key-group-lost",
        [[2, 3]],
        [["A1", 0]],
    )


@settings(max_examples=40, deadline=None)
@given(p_old=pars, p_new=pars, M=max_par, live=st.sampled_from(["new", "old"]))
def test_live_records_routed_by_the_old_parallelism_after_the_rescale(p_old, p_new, M, live):
    """After the restore the new source routes each key group either to its new owner
    (clean) or still by the old parallelism: exactly the new subtasks that receive key
    groups outside their scanned range are live-misrouted, naming those key groups."""
    assume(M >= max(p_old, p_new))
    report = check_trace(keyed_rescale(p_old, p_new, M, live=live)[0].trace())
    new = ranges(M, p_new)
    expected: dict[str, list[int]] = {}
    for g in range(M):
        to = (g * p_old // M) % p_new if live == "old" else g * p_new // M
        if g not in new[to]:
            expected.setdefault(f"g1.agg[{to}]", []).append(g)
    got = {v.witness["process"]: v.witness["key_groups"] for v in report.violations if v.kind == "live-misrouted"}
    assert got == {p: _runs(gs) for p, gs in expected.items()}
    assert {v.kind for v in report.violations} <= {"live-misrouted"}


def _runs(gs: list[int]) -> list[list[int]]:
    """Sorted integers as inclusive runs, counted one by one."""
    out: list[list[int]] = []
    for g in sorted(gs):
        if out and out[-1][1] + 1 == g:
            out[-1][1] = g
        else:
            out.append([g, g])
    return out


def test_a_recovered_record_processed_on_two_new_channels_is_judged_by_rescale_in_flight():
    """exactly-once identifies a recovered record per new channel (a copy of broadcast
    state is processed once on each), so the same record processed by its owner and by
    another new process passes exactly-once: rescale-in-flight reports it, misrouted when
    it has a key group, duplicated when it has none (docs/checker.md said exactly-once
    reports it as duplicate-processing)."""
    for key_groups, kind in ((True, "in-flight-misrouted"), (False, "in-flight-duplicated")):
        rec, recorded = keyed_rescale(2, 3, 8, key_groups=key_groups, fault="twice")
        assert shared(2, 3, 8, recorded)
        report = check_trace(rec.trace())
        assert report.kinds == {kind}
        assert [r.property for r in report.results if r.violations] == ["rescale-in-flight"]
        assert any(r.property == "exactly-once" and r.ok for r in report.results)


def test_a_record_re_injected_from_recovered_channel_state_is_not_said_to_be_sent_by_its_receiver():
    """N re-injects m, recovered from B's channel state after a rescale, then takes its
    round-2 checkpoint before processing it and records nothing: dropped. The report
    named N, the receiver itself, as the sender ("is sent by N")."""
    rec = TraceRecorder(["A", "B", {"id": "N", "appears": True}], [("ab", "A", "B"), ("an", "A", "N")])
    m = rec.send("A", "ab")
    rec.checkpoint("A", round=1)
    rec.checkpoint("B", round=1)
    rec.record("B", 1, "ab", [m])
    rec.retire("B", 1)
    rec.restore("N", 0, round=1, sources=[{"proc": "B", "ckpt": 1}], channels=[{"old": "ab", "new": "an"}])
    r = rec.replay("N", m, "channel_state", ch="an")
    rec.checkpoint("A", round=2)
    rec.checkpoint("N", round=2)
    rec.recv("N", r)
    [v] = [v for v in check_trace(rec.trace()).violations if v.kind == "dropped"]
    assert f"Message {r} on an is re-injected from recovered channel state by N at line 8" in v.message
    assert "sent by N" not in v.message


def test_a_new_subtask_that_restores_no_state_but_declares_key_groups():
    """tests/data/rescale/upscale_one_to_three.jsonl: ``agg`` goes from 2 subtasks to 3,
    ``g1.agg[2]`` declaring key group 3 and restoring it from ``agg[1]``; clean. Edited so
    that ``g1.agg[1]`` restores 2..3 and ``g1.agg[2]`` restores nothing (``sources: []``):
    each declares other key groups than it restored, ``key-group-mismatch`` twice (the
    empty restore escaped: only ``g1.agg[1]`` was reported, and the live record of key
    group 3 that ``g1.agg[2]`` processes without its state went unremarked)."""
    text = (Path(__file__).parents[1] / "data/rescale/upscale_one_to_three.jsonl").read_text()
    assert check_trace(parse_trace(text)).ok
    for old, new in (
        ('"key_groups":[[2,2]]}]}', '"key_groups":[[2,3]]}]}'),
        ('"sources":[{"proc":"agg[1]","ckpt":1,"key_groups":[[3,3]]}]}', '"sources":[]}'),
    ):
        assert text.count(old) == 1
        text = text.replace(old, new)
    report = check_trace(parse_trace(text))
    assert {(v.kind, v.witness["process"], v.message.split("(restore at line ")[1]) for v in report.violations} == {
        ("key-group-mismatch", "g1.agg[1]", "26): restored, not declared: 3."),
        ("key-group-mismatch", "g1.agg[2]", "27): declared, not restored: 3."),
    }


@pytest.mark.parametrize("names_round", [True, False])
def test_one_restore_merging_key_groups_from_checkpoints_of_two_rounds_is_a_violation_not_bad_input(names_round):
    """A scaled-in task that merges ``A0``'s key groups from round 1 with ``A1``'s from round
    2 (an engine picking each old task's latest checkpoint): its state mixes two rounds.
    It was refused as unreadable input, and with its restore naming no round it would have
    had no round to judge: the round it names, else its newest source's, is the one restored."""
    agg = {"operator": "agg", "max_parallelism": 4}
    rec = TraceRecorder(
        [
            dict(agg, id="A0", key_groups=[[0, 1]]),
            dict(agg, id="A1", key_groups=[[2, 3]]),
            dict(agg, id="N", appears=True),
        ],
        [],
    )
    for r in (1, 2):
        rec.checkpoint("A0", round=r)
        rec.checkpoint("A1", round=r)
    rec.retire("A0", 2)
    rec.retire("A1", 2)
    sources = [{"proc": "A0", "ckpt": 1, "key_groups": [[0, 1]]}, {"proc": "A1", "ckpt": 2, "key_groups": [[2, 3]]}]
    rec.restore("N", 0, recovery=1, sources=sources, **({"round": 2} if names_round else {}))
    report = check_trace(parse_trace(rec.dumps().decode()))  # through the validator, as a file is read
    wrong = [v for v in report.violations if v.kind == "state-wrong-round"]
    assert wrong and all(v.witness["checkpoints"] == [["A0", 1]] for v in wrong)
    assert "which belongs to round 1, but rescale at line 8 (recovery 1) restores round 2" in wrong[0].message


def test_a_new_process_restoring_key_groups_without_a_max_parallelism_is_said_not_judged():
    """Whether the new process keeps its operator's max parallelism cannot be judged when its
    header declares none: said in a note, never passed in silence (the twin that declares it
    is judged, and clean)."""

    def trace(declare: bool):
        agg = {"operator": "agg", "max_parallelism": 4}
        new = dict(agg, id="N", appears=True) if declare else {"id": "N", "operator": "agg", "appears": True}
        rec = TraceRecorder([dict(agg, id="A0", key_groups=[[0, 1]]), dict(agg, id="A1", key_groups=[[2, 3]]), new], [])
        rec.checkpoint("A0", round=1)
        rec.checkpoint("A1", round=1)
        rec.retire("A0", 1)
        rec.retire("A1", 1)
        sources = [{"proc": "A0", "ckpt": 1, "key_groups": [[0, 1]]}, {"proc": "A1", "ckpt": 1, "key_groups": [[2, 3]]}]
        rec.restore("N", 0, recovery=1, round=1, sources=sources)
        return check_trace(parse_trace(rec.dumps().decode()))

    silent, declared = trace(False), trace(True)
    assert silent.ok and declared.ok
    assert [n for n in silent.notes if "declares no max_parallelism" in n] == [
        "rescale at line 6 (recovery 1): N restores key-group state of A0:1 but declares no max_parallelism "
        "(header): whether it keeps its operator's is not judged (max-parallelism-changed)."
    ]
    assert not [n for n in declared.notes if "max_parallelism" in n]

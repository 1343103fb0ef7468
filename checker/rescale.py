"""Rescaling: state and in-flight records redistributed at another parallelism.

A *rescale* is a recovery (a group of ``restore`` events, ``observed_recovery``)
in which at least one restore has a ``sources`` field, even an empty one (Flink: a job stopped, or failed,
and restarted at another parallelism from a checkpoint or savepoint): the job is restored at another
parallelism from round ``r`` (the round of the sources' checkpoints). Its *old
processes* are the processes outside the group that took a checkpoint of round
``r``, and those owning key groups or partitions that belonged to the job when round
``r`` started but took no checkpoint of it (their state of round ``r`` does not
exist, so a restore can take it from nowhere); its *new processes* the restoring ones. A process *owns* the key groups
(and list-state partitions) the header declares for it, or else those its own
restore took (all of a source's when the restore names neither). Key groups belong to an operator (the header's ``operator``).

``rescale-state`` (each rescale; Flink's key-group assignment, "StateAssignment"):
every key group an old process of operator ``X`` owned at round ``r`` is taken
by exactly one new process of ``X``, from the checkpoint of round ``r`` of the
old process that owned it. Kinds: ``key-group-lost`` (taken by no restore: its
state is gone), ``key-group-duplicated`` (taken twice: its state is counted
twice), ``key-group-wrong-owner`` (taken from a process that did not own it, so
the state restored for it is not its state), ``state-wrong-round`` (a source
checkpoint of another round, or an old process that retires handing over another
checkpoint than the one taken, or never retires although all its state was taken, so
that what it did in between is kept and done again), ``key-group-mismatch`` (a new process declares key groups other than those
it restored, none for a restore with ``sources: []``), ``max-parallelism-changed`` (a new process declares another max
parallelism than the process it takes state from: key groups then name other keys);
the same for list-state partitions (``partition-lost``, ``partition-duplicated``,
``partition-wrong-owner``). State restored whole from processes that declare neither
key groups nor partitions (union, broadcast or split state: the trace does not say
which) is not judged, and a note says so (``unjudged_state``).

``rescale-in-flight`` (each rescale; unaligned checkpoints' channel state, and
the input logs): every record the restored round recorded as channel state of an
old channel ``c`` (input part by ``c``'s destination, output part by its source)
is processed after the restore exactly once by each of its new owners: for a
record with a ``key_group``, when some new process of ``c``'s destination operator
owns key groups, the one that owns the record's key group; otherwise each new
channel a restore maps ``c`` onto whose key-group filter keeps it (a record without a
key group, when several mappings of ``c`` filter by key group: exactly one of those
channels, which one not judged and noted). It must be processed before any record that the same
new channel carried after the restore (recovered data first). Kinds:
``in-flight-lost`` (never processed by its owner: the explanation says whether no
restore mapped ``c``, or it was mapped and not replayed, or replayed and dropped),
``in-flight-duplicated``, ``in-flight-misrouted`` (processed by a process that
does not own its key group, or on a channel ``c`` is not mapped onto),
``in-flight-after-live``; and a record sent after the restore with a ``key_group`` is
processed by a new process that owns it, when the receiver owns key groups
(``live-misrouted``: a sender still routing by the old parallelism). A record without a key group that every mapping of ``c``
filters out (an empty ``key_groups``) is discarded on purpose: Flink drops the extra
copies of broadcast channel state on a downscale. A partition named after an ``external`` process is that
input log's split: each record the log sent to the old holder and the old holder
had not processed at its checkpoint must be processed exactly once by the new
holder (``input-lost``; twice is ``in-flight-duplicated``). Witnesses name the key
group and the old channel.

What a rescale is and who owns what: ``rescale_model`` (``Rescale``, ``Ownership``);
the two properties: ``rescale_state`` and ``rescale_in_flight``; this module runs them.
"""

from __future__ import annotations

from snapcheck.checker.rescale_in_flight import in_flight_violations
from snapcheck.checker.rescale_model import rescale_groups
from snapcheck.checker.rescale_state import state_violations, unjudged_state


def check_rescale(run) -> None:
    """Add ``rescale-state`` and ``rescale-in-flight`` results to a ``check_trace`` run,
    one of each per rescale (``rescale_groups``), for the properties selected; a trace
    without a restore that names sources has none, and the report says so.

    ``A0`` and ``A1`` are restored as ``N``, which takes all four key groups from
    ``A0``'s checkpoint, though ``A0`` owned only two of them:

    >>> from snapcheck.checker import check_trace
    >>> from snapcheck.checker.rescale_model import two_to_one
    >>> report = check_trace(two_to_one([0, 3]))
    >>> [(v.kind, v.property, v.message) for v in report.violations]
    [('key-group-wrong-owner', 'rescale-state', 'N takes key groups 2..3 of operator agg from A0:1 (restore at line 6), but A1 owned them at round 1: A0 did not hold their state, so N restores the wrong state for them.')]
    >>> from snapcheck.traces.golden import golden
    >>> check_trace(golden("theory_a_zcycle")).not_judged["rescale-state"]
    'the trace has no restore at another parallelism (no restore names its sources)'
    """
    if not (run.want("rescale-state") or run.want("rescale-in-flight")):
        return
    if not run.ix.has("restore"):
        return
    for rs in rescale_groups(run):
        if rs.round is None:
            run.report.notes.append(
                f"{rs.subject}: its restored round is unknown (its restores name no round, and the checkpoints they take belong to none), so "
                "its state and in-flight records are not judged."
            )
            continue
        if run.want("rescale-state"):
            run.add("rescale-state", rs.subject, state_violations(rs))
            run.report.notes.extend(unjudged_state(rs))
        if run.want("rescale-in-flight"):
            run.add("rescale-in-flight", rs.subject, in_flight_violations(run, rs))

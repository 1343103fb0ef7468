"""How a verdict writes checkpoints and cuts: one notation for text, HTML, JSON
notes and the debugging tools.

* A checkpoint is ``PROC:N`` — process ``PROC``'s checkpoint number ``N`` (0 the
  initial state, ``V`` its current state at the end of the trace).
* A cut (a global checkpoint, one checkpoint per process) is ``{P0: 1, P1: V}``;
  on a command line it is given as ``P0=1,P1=V`` (the printed form is read too), or
  as a JSON object ``{"P0": 1, "P1": "V"}`` for process ids that hold ``,``, ``=`` or
  ``:``.
* A failure set is ``P0,P1``, ``all`` or ``none``, or a JSON list of process ids
  (``["a,b", "all"]``: there ``all`` is a process).
"""

from __future__ import annotations

import json

from snapcheck.traces.errors import UsageError


def fmt_checkpoint(proc: str, ckpt) -> str:
    """Process ``proc``'s checkpoint ``ckpt`` (a number, or ``V`` for its current state).

    >>> fmt_checkpoint("O1", 2), fmt_checkpoint("P1", "V")
    ('O1:2', 'P1:V')
    """
    return f"{proc}:{ckpt}"


def fmt_cut(cut: dict) -> str:
    """A cut ``{process: checkpoint}`` in the order given.

    >>> fmt_cut({"P0": 1, "P1": "V"})
    '{P0: 1, P1: V}'
    """
    return "{" + ", ".join(f"{p}: {v}" for p, v in cut.items()) + "}"


def parse_cut(text: str) -> dict:
    """A cut written ``P0=1,P1=V`` (or as ``fmt_cut`` prints it) as ``{process: checkpoint}``
    with checkpoint numbers as ints and ``V`` for a current state; a ``UsageError`` names
    the item that is neither.

    >>> parse_cut("P0=1, P1=v") == parse_cut("{P0: 1, P1: V}") == {"P0": 1, "P1": "V"}
    True
    >>> parse_cut("P0=last")
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: cut 'P0=last': 'P0=last' is not PROC=CKPT ...
    >>> parse_cut("P0=1,P1=1,P0=2")
    Traceback (most recent call last):
    snapcheck.traces.errors.UsageError: cut 'P0=1,P1=1,P0=2': P0 is given twice (one checkpoint per process)
    >>> parse_cut('{"map[0],a": 2, "all": "V"}')
    {'map[0],a': 2, 'all': 'V'}
    """
    as_json = _json(text, dict)
    if as_json is not None:
        bad = [
            k
            for k, v in as_json.items()
            if not (v == "V" or (isinstance(v, int) and not isinstance(v, bool) and v >= 0))
        ]
        if bad or not as_json:
            raise UsageError(f'cut {text!r}: a JSON cut maps each process to a checkpoint number or "V"')
        return as_json
    items = [item.strip() for item in text.strip().strip("{}").split(",") if item.strip()]
    if not items:
        raise UsageError(f"cut {text!r}: empty (write PROC=CKPT pairs, e.g. P0=1,P1=V)")
    cut: dict = {}
    for item in items:
        proc, sep, value = item.rpartition("=") if "=" in item else item.rpartition(":")
        proc, value = proc.strip(), value.strip()
        if not sep or not proc or not (value.isdigit() or value.upper() == "V"):
            raise UsageError(
                f"cut {text!r}: {item!r} is not PROC=CKPT with CKPT a checkpoint number or V (e.g. P0=1,P1=V; "
                'a process id with a comma or "=" in it: give the cut as JSON, e.g. {"A,B": 1, "C": "V"})'
            )
        if proc in cut:
            raise UsageError(f"cut {text!r}: {proc} is given twice (one checkpoint per process)")
        cut[proc] = "V" if value.upper() == "V" else int(value)
    return cut


def parse_failure_set(text: str) -> str | list[str]:
    """A failure set as written on a command line: ``"all"``, ``"none"`` or the list of
    process ids of ``P0,P1`` or of a JSON list (for ids that hold ``,``, or are named
    ``all`` or ``none``).

    >>> parse_failure_set("P1, P0"), parse_failure_set("ALL"), parse_failure_set('["all", "a,b"]')
    (['P1', 'P0'], 'all', ['all', 'a,b'])
    """
    as_json = _json(text, list)
    if as_json is not None:
        if not as_json or not all(isinstance(p, str) for p in as_json):
            raise UsageError(f"failure set {text!r}: a JSON failure set is a non-empty list of process ids")
        return as_json
    if text.strip().lower() in ("all", "none"):
        return text.strip().lower()
    procs = [p.strip() for p in text.split(",") if p.strip()]
    if not procs:
        raise UsageError(f"the failure set {text!r} names no process (write P0,P1, all or none)")
    return procs


def _json(text: str, kind: type):
    """``text`` read as JSON when it is a JSON value of ``kind`` (an object with string keys
    for a cut, a list for a failure set); None when it is not JSON of that kind."""
    if not text.strip().startswith("{" if kind is dict else "["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, kind) else None

"""How a verdict writes checkpoints and cuts: one notation for text, HTML, JSON
notes and the debugging tools.

* A checkpoint is ``PROC:N`` — process ``PROC``'s checkpoint number ``N`` (0 the
  initial state, ``V`` its current state at the end of the trace).
* A cut (a global checkpoint, one checkpoint per process) is ``{P0: 1, P1: V}``;
  on a command line it is given as ``P0=1,P1=V`` (the printed form is read too).
"""

from __future__ import annotations

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
    """
    items = [item.strip() for item in text.strip().strip("{}").split(",") if item.strip()]
    if not items:
        raise UsageError(f"cut {text!r}: empty (write PROC=CKPT pairs, e.g. P0=1,P1=V)")
    cut: dict = {}
    for item in items:
        proc, sep, value = item.rpartition("=") if "=" in item else item.rpartition(":")
        proc, value = proc.strip(), value.strip()
        if not sep or not proc or not (value.isdigit() or value.upper() == "V"):
            raise UsageError(
                f"cut {text!r}: {item!r} is not PROC=CKPT with CKPT a checkpoint number or V (e.g. P0=1,P1=V)"
            )
        if proc in cut:
            raise UsageError(f"cut {text!r}: {proc} is given twice (one checkpoint per process)")
        cut[proc] = "V" if value.upper() == "V" else int(value)
    return cut

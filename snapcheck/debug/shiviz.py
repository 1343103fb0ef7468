"""Export a trace as a ShiViz log (Beschastnikh et al., "Debugging distributed
systems", CACM 2016; https://bestchai.bitbucket.io/shiviz/).

ShiViz reads unstructured log text plus a regular expression with the named
groups ``host``, ``clock`` (a JSON vector clock) and ``event``. We write one
line per trace event, in an order consistent with happened-before::

    P1 {"P0":2,"P1":3} | L9 recv c01:1 on c01 from P0

and the regular expression that parses it (``SHIVIZ_REGEX``). Vector clocks are
computed from the trace (``history.vector_clocks``): every event increments its
own process's component, and the first arrival (``arrive``, ``recv`` or
``discard``) of a message merges the clock of its send, so ShiViz draws every
message as an edge from its send (ShiViz requires each host's own component to
start at 1 and grow by one per event, which this construction satisfies). The
``L<line>`` tag points back to the trace file.

The file has the layout ShiViz expects for an uploaded log: the parsing regex
on the first line, the multiple-executions delimiter on the second (empty: one
execution), then the log. To paste instead, copy the lines after the blank
line into ShiViz's log box and the first line into its "log parsing regular
expression" field.
"""

from __future__ import annotations

import json
import re

from snapcheck.debug.history import causal_order, describe_event, message_table, vector_clocks
from snapcheck.traces.atomic import write_atomic
from snapcheck.traces.model import Trace

SHIVIZ_REGEX = r"(?<host>\S+) (?<clock>\{.*?\}) \| (?<event>.*)"
# The same expression in Python's syntax (named groups are spelled (?P<name>...)).
PYTHON_REGEX = re.compile(SHIVIZ_REGEX.replace("(?<", "(?P<"))


_LINE_BREAK = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")  # what a reader may split lines at


def shiviz_lines(trace: Trace) -> list[str]:
    """The log lines (without the regex header), in a causal order."""
    msgs = message_table(trace)
    clocks = vector_clocks(trace)
    out = []
    for i in causal_order(trace):
        e = trace.events[i]
        clock = json.dumps({_host(p): v for p, v in clocks[i].items()}, separators=(",", ":"), sort_keys=True)
        text = _LINE_BREAK.sub(" ", describe_event(e, msgs))
        out.append(f"{_host(e.proc)} {clock} | L{e.line} {text}")
    return out


def shiviz_log(trace: Trace) -> str:
    """The whole ShiViz input: the regex line, a blank line, then the log."""
    return SHIVIZ_REGEX + "\n\n" + "\n".join(shiviz_lines(trace)) + "\n"


def write_shiviz(trace: Trace, path: str) -> int:
    """Write the ShiViz log to ``path`` (atomically, never onto the trace); returns the
    number of event lines."""
    write_atomic(path, shiviz_log(trace), inputs=[trace.path] if trace.path != "<memory>" else [])
    return len(trace.events)


def _host(proc: str) -> str:
    """A process id as a ShiViz host name: whitespace (which would end the ``host``
    group) and ``%`` percent-encoded, so that two processes never share a host name
    (``A B`` is ``A%20B``, ``A_B`` stays itself, ``A%20B`` is ``A%2520B``).

    >>> _host("src 0"), _host("50%")
    ('src%200', '50%25')
    """
    return re.sub(r"[\s%]", lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), proc)

"""Space-time diagrams of traces (the ShiViz / Lamport picture), drawn with matplotlib.

One horizontal lane per process (header order, top to bottom), time to the
right. Messages are arrows from the send to the processing (``recv``); a
message that was only buffered ends at its ``arrive``, a discarded one ends in
a cross, one never received ends at the right border, dotted. Barriers are
dashed, replays dash-dotted. Checkpoints are marked by kind: initial (hollow
square), basic (black square), forced (red triangle), coordinated (blue
diamond); failures are red crosses, restores green circles.

With checker findings the diagram also shows the recovery line (green), the
cut each violation concerns (grey dash-dot), orphan messages (red), dropped or
lost ones (magenta), phantom / duplicate / order ones (orange), and Z-cycle
witnesses (purple, numbered in chain order) with their useless checkpoints
ringed. In SVG output every element has an ``id`` (``lane-P``, ``msg-M``,
``ckpt-P-x``, ``orphan-msg-M``, ``zcycle-msg-M``, ``useless-ckpt-P-x``,
``recovery-line``, ``cut-N``) so the pictures can be checked and styled.

Layouts: ``lamport`` (default; compact: each event one column right of its
predecessor and of the send it receives), ``file`` (one column per event in
file order) and ``time`` (the events' ``t``, when every event has one). A
*window* (event numbers, 1-based, inclusive) draws a part of a long trace.

A picture shows at most ``DRAW_LIMIT`` events on at most ``LANE_LIMIT`` lanes.
``plan_view`` picks the part of a bigger trace to draw when none is given (the
first highlighted violation's witness region in full detail, else the beginning;
the lanes with events there, witness processes first) and refuses an explicit
window or lane list over the limits with options that fit. On a trace of more than
``DRAW_LIMIT`` events the diagram is laid out from the window's events and the
other end of each of their messages only (``focus``), so drawing a window of a
trace of millions of events costs about as much as drawing a small trace.
"""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.text import Text

from snapcheck.console import INVISIBLE, escape_char
from snapcheck.debug.findings import Finding, Findings
from snapcheck.debug.history import Message, lamport_columns, message_table
from snapcheck.traces.atomic import atomic_open
from snapcheck.traces.errors import UsageError
from snapcheck.traces.model import Event, Trace

CKPT_STYLE = {  # kind -> (marker, face colour, edge colour, size)
    "initial": ("s", "white", "black", 7),
    "basic": ("s", "black", "black", 7),
    "forced": ("^", "#d62728", "#8b0000", 8),
    "coordinated": ("D", "#1f77b4", "#0b3d91", 7),
}
HIGHLIGHT = {  # finding style -> colour
    "orphan": "#e41a1c",
    "dropped": "#d41cc8",
    "phantom": "#ff7f00",
    "zcycle": "#6a3d9a",
    "other": "#1b9e77",
}
RECOVERY_COLOUR = "#2ca02c"
CUT_COLOUR = "#555555"
DATA_COLOUR = "#444444"
BARRIER_COLOUR = "#4a7fb5"
REPLAY_COLOUR = "#17becf"
LAYOUTS = ("lamport", "file", "time")
AUTO_LABEL_LIMIT = 40
DRAW_LIMIT = 2000  # events in one picture
LANE_LIMIT = 40  # lanes in one picture
WITNESS_MARGIN = 60  # events drawn on each side of a witness
_MESSAGE_EVENTS = ("send", "replay", "arrive", "recv", "discard")


@dataclass
class RenderOptions:
    layout: str = "lamport"
    window: tuple[int, int] | None = None  # event numbers, 1-based, inclusive
    procs: list[str] | None = None  # lanes to draw (default: all)
    recovery_line: str | None = "auto"  # label in report.recovery_lines, None = do not draw;
    # "auto": a failure set, else "all", unless a violation has a cut
    only: list[int] | None = None  # highlight only these findings (numbers); None = all
    labels: bool | None = None  # message labels; None = only when few messages
    title: str | None = None
    dpi: int = 110
    cut: dict | None = None  # the global checkpoint that was checked (drawn grey)


_CONTROL = re.compile(rf"[\x00-\x09\x0b-\x1f\x7f-\x9f{INVISIBLE}\ufffe\uffff\ud800-\udfff]")


def _shown(text: str) -> str:
    """``text`` as drawn: control characters (which no font has and SVG may not hold),
    the bidirectional controls (which would reorder what a reader sees, U+202E), the
    invisible formatting characters (zero-width spaces and joiners, U+FEFF, which the
    PDF backend cannot lay out) and the
    characters XML cannot hold at all (U+FFFE, U+FFFF, lone surrogates) written as
    escapes.

    >>> _shown("A\\x01B\\uffffC")
    'A\\\\x01B\\\\uffffC'
    """
    return _CONTROL.sub(escape_char, text)


def _plain_text(fig: Figure) -> None:
    """Every text of ``fig`` drawn as it is written: no mathtext (a process named
    ``$x^2$`` is not a formula, and ``a$\\q$`` no parse error) and no control characters."""
    for t in fig.findobj(Text):
        t.set_parse_math(False)
        t.set_text(_shown(t.get_text()))


def _unique_ids(fig: Figure) -> None:
    """Every element id of ``fig`` unique: ``_gid`` writes each character an id may not
    hold as '_', so processes ``a b``, ``a_b`` and ``a:b`` share ``lane-a_b``; the second
    and later elements of one id get ``.2``, ``.3`` (the next such suffix no element has;
    in drawing order: the same on every render)."""
    artists = fig.findobj(lambda a: a.get_gid() is not None)
    used = {a.get_gid() for a in artists}
    seen: set[str] = set()
    for artist in artists:
        gid = artist.get_gid()
        if gid in seen:
            n = 2
            while f"{gid}.{n}" in used:
                n += 1
            artist.set_gid(f"{gid}.{n}")
            used.add(f"{gid}.{n}")
        seen.add(gid)


def _gid(*parts) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.-]", "_", str(p)) for p in parts)


def _name(m: Message) -> str:
    """A message's label: its ``value`` when that is a short name (as in the golden
    traces' "m1", "m2"), else its mid."""
    v = m.origin.value
    return v if isinstance(v, str) and 0 < len(v) <= 6 else m.mid


def columns(trace: Trace, layout: str, numbers: list[int] | None = None) -> list[float]:
    """The x coordinate of every event for ``layout`` (``numbers``: the events' numbers in
    the whole trace when ``trace`` is a part of it, for the ``file`` layout)."""
    if layout == "lamport":
        return [float(c) for c in lamport_columns(trace)]
    if layout == "file":
        return [float(k) for k in numbers] if numbers else [float(i + 1) for i in range(len(trace.events))]
    if layout == "time":
        ts = [e.t for e in trace.events]
        if any(t is None for t in ts):
            raise UsageError("layout 'time' needs a 't' on every event; use --layout lamport or file")
        lo, hi = min(ts, default=0.0), max(ts, default=0.0)
        span = (hi / 2 - lo / 2) or 1.0  # in halves: the difference of two extreme times overflows
        n = max(lamport_columns(trace), default=1)
        return [1.0 + (t / 2 - lo / 2) / span * max(n - 1, 1) for t in ts]
    raise UsageError(f"unknown layout {layout!r} (choose from {', '.join(LAYOUTS)})")


def focus(trace: Trace, window: tuple[int, int]) -> tuple[Trace, list[int], tuple[int, int]]:
    """The events of ``window`` and the other end of every message one of them sends or
    receives, in trace order: (that part as a trace, each event's number in ``trace``,
    the window's event numbers within the part)."""
    a, b = window
    inside = trace.events[a - 1 : b]
    mids = {e.mid for e in inside if e.type in _MESSAGE_EVENTS}
    numbers = [k for k, e in enumerate(trace.events, 1) if a <= k <= b or (e.type in _MESSAGE_EVENTS and e.mid in mids)]
    part = Trace(trace.header, [trace.events[k - 1] for k in numbers], trace.path)
    first = numbers.index(a)
    return part, numbers, (first + 1, first + len(inside))


@dataclass
class View:
    """What ``plan_view`` chose to draw, and why (``notes``, for the user)."""

    window: tuple[int, int] | None
    procs: list[str] | None
    notes: list[str]


def chosen(findings: Findings | None, opts: RenderOptions) -> list[Finding]:
    """The findings to highlight: those ``opts.only`` names (all by default).

    >>> f = Findings(items=[Finding(n, "orphan", "consistency", "cut", "...", [n], n) for n in (1, 2, 3)])
    >>> [fi.number for fi in chosen(f, RenderOptions(only=[2]))], len(chosen(None, RenderOptions()))
    ([2], 0)
    """
    return [fi for fi in (findings.items if findings else []) if opts.only is None or fi.number in opts.only]


def in_window(trace: Trace, finding: Finding, window: tuple[int, int] | None) -> bool:
    """Whether a line ``finding`` cites is that of an event of ``window`` (every finding is
    in a picture of the whole trace).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["P"], []); _ = [rec.checkpoint("P") for _ in range(4)]
    >>> t = rec.trace(); fi = Finding(1, "orphan", "consistency", "cut", "...", [t.events[3].line], 4)
    >>> in_window(t, fi, (1, 2)), in_window(t, fi, (3, 4)), in_window(t, fi, None)
    (False, True, True)
    """
    if window is None or not trace.events:
        return True
    a, b = max(window[0], 1), min(window[1], len(trace.events))
    return a <= b and any(trace.events[a - 1].line <= line <= trace.events[b - 1].line for line in finding.lines)


def plan_view(trace: Trace, findings: Findings | None, opts: RenderOptions) -> View:
    """The window and lanes to draw (see the module docstring); ``UsageError`` for a given
    window or lane list over the limits, naming options that fit."""
    n, procs = len(trace.events), [p.id for p in trace.processes]
    notes = []
    window = opts.window
    picked = chosen(findings, opts)
    if window is not None and window[1] - window[0] + 1 > DRAW_LIMIT:
        a = window[0]
        raise UsageError(
            f"--window {a}:{window[1]} has {window[1] - a + 1:,} events; a picture shows at most "
            f"{DRAW_LIMIT:,}: use --window {a}:{a + DRAW_LIMIT - 1} (and further windows after it)"
        )
    if window is None and n > DRAW_LIMIT:
        if picked:
            a, b = within_limit(finding_window(trace, picked[0], WITNESS_MARGIN))
            why = f"the witness of violation #{picked[0].number} ({picked[0].kind})"
        else:
            a, b = 1, DRAW_LIMIT
            why = "the beginning"
        window = (a, b)
        notes.append(
            f"the trace has {n:,} events: drawing events {a:,}-{b:,} ({why}); choose another part with "
            f"--window A:B (at most {DRAW_LIMIT:,} events)"
        )
    lanes = opts.procs
    if lanes is not None and len(lanes) > LANE_LIMIT:
        raise UsageError(
            f"--procs names {len(lanes)} processes; a picture shows at most {LANE_LIMIT}: use --procs "
            f"{','.join(lanes[:LANE_LIMIT])} (and the others in further pictures)"
        )
    if lanes is None and len(procs) > LANE_LIMIT:
        a, b = window or (1, n)
        active = dict.fromkeys(p for fi in picked for p, _ in fi.checkpoints)
        for fi in picked:
            active.update(dict.fromkeys(p for p in (fi.cut or {})))
        active.update(dict.fromkeys(e.proc for e in trace.events[a - 1 : b]))
        known = set(procs)
        lanes = [p for p in active if p in known][:LANE_LIMIT] or procs[:LANE_LIMIT]
        notes.append(
            f"the trace has {len(procs):,} processes: drawing {len(lanes)} lanes (those with events in the "
            f"picture{', witness processes first' if picked else ''}); choose with --procs P,Q,... (at most "
            f"{LANE_LIMIT})"
        )
    if opts.layout == "time":
        notes += backwards_time(trace)
    return View(window, lanes, notes)


def backwards_time(trace: Trace) -> list[str]:
    """What the ``time`` layout cannot draw in order: the first event whose ``t`` is before
    the ``t`` of its process's previous event, and the first receive timed before its
    message's send (each drawn to the left of what precedes it).

    >>> from snapcheck.traces import TraceRecorder
    >>> rec = TraceRecorder(["A", "B"], [("a2b", "A", "B")])
    >>> m = rec.send("A", "a2b", t=5.0); rec.recv("B", m, t=3.0); _ = rec.checkpoint("B", t=1.0)
    >>> for note in backwards_time(rec.trace()): print(note)
    line 3 receives a2b:1 at t=3.0, before its send at t=5.0 (line 2); the time layout draws its arrow backwards (--layout lamport draws causal order)
    time goes backwards at line 4: B's event at t=1.0 follows one at t=3.0 (line 3); the time layout draws it to the left of its predecessor (--layout lamport draws causal order)
    """
    last: dict[str, Event] = {}
    sent: dict[str, Event] = {}
    notes: list[str] = []
    hint = "(--layout lamport draws causal order)"
    lane = arrow = False
    for e in trace.events:
        if e.t is None:
            continue
        prev = last.get(e.proc)
        if not lane and prev is not None and prev.t is not None and e.t < prev.t:
            lane = True
            notes.append(
                f"time goes backwards at line {e.line}: {e.proc}'s event at t={e.t} follows one at t={prev.t} "
                f"(line {prev.line}); the time layout draws it to the left of its predecessor {hint}"
            )
        last[e.proc] = e
        if e.type == "send" and e.mid is not None:
            sent[e.mid] = e
        elif not arrow and e.type == "recv" and e.mid in sent and (s := sent[e.mid]).t is not None and e.t < s.t:
            arrow = True
            notes.append(
                f"line {e.line} receives {e.mid} at t={e.t}, before its send at t={s.t} (line {s.line}); the time "
                f"layout draws its arrow backwards {hint}"
            )
    return notes


class _Diagram:
    def __init__(self, trace: Trace, findings: Findings | None, opts: RenderOptions):
        self.f, self.o = findings or Findings(), opts
        numbers = None
        self.total = len(trace.events)
        if opts.window and len(trace.events) > DRAW_LIMIT and 1 <= opts.window[0] <= len(trace.events):
            window = (opts.window[0], min(opts.window[1], len(trace.events)))
            trace, numbers, local = focus(trace, window)
        self.trace = trace
        procs = [p.id for p in trace.processes]
        if opts.procs:
            unknown = [p for p in opts.procs if p not in procs]
            if unknown:
                raise UsageError(f"unknown process(es) {', '.join(unknown)} (trace has {', '.join(procs)})")
            procs = [p for p in procs if p in opts.procs]
        self.procs = procs
        drawn = set(procs)
        self.roles = {p.id: p.role for p in trace.processes if p.id in drawn}
        self.y = {p: -k for k, p in enumerate(procs)}
        self.x = columns(trace, opts.layout, numbers)
        self.msgs = message_table(trace)
        self.ev_x = {id(e): x for e, x in zip(trace.events, self.x)}
        n = len(trace.events)
        if opts.window:
            a, b = local if numbers else opts.window
            if not (1 <= a <= b) or a > max(n, 1):
                raise UsageError(f"bad window {a}:{b}: the trace has events 1..{self.total}")
            sel = range(a - 1, min(b, n))
        else:
            sel = range(n)
        xs = [self.x[i] for i in sel if trace.events[i].proc in self.y] or [1.0]
        self.xmin, self.xmax = min(xs) - 1.5, max(xs) + 1.5
        if not opts.window:
            self.xmin = min(self.xmin, 0.0)
        self.ckpt_x = {}  # (proc, ckpt) -> x
        for e, x in zip(trace.events, self.x):
            if e.type == "checkpoint":
                self.ckpt_x[(e.proc, e.ckpt)] = x
        first = {}
        for e, x in zip(trace.events, self.x):
            first.setdefault(e.proc, x)
        for p in procs:
            self.ckpt_x.setdefault((p, 0), min(first.get(p, 1.0), min(self.x, default=1.0)) - 0.6)
        self.end_x = max(self.x, default=1.0) + 0.7  # where "V" (current state) sits
        self.highlight: dict[str, tuple[str, int | None]] = {}  # mid -> (style, order)
        self.rings: dict[tuple[str, int], str] = {}
        self.findings = chosen(self.f, opts)
        for fi in self.findings:
            for k, m in enumerate(fi.messages, 1):
                self.highlight.setdefault(m, (fi.style, k if fi.style == "zcycle" else None))
            for pc in fi.checkpoints:
                self.rings.setdefault(pc, fi.style)

    def visible(self, x: float) -> bool:
        return self.xmin - 0.5 <= x <= self.xmax + 0.5

    # -- drawing ----------------------------------------------------------------
    def figure(self) -> Figure:
        ncols = self.xmax - self.xmin
        width = min(max(4.0 + 0.3 * ncols, 7.0), 60.0)
        handles = self._legend_handles()
        ncol = max(1, min(len(handles), int(width // 1.8)))
        bottom = 0.6 + 0.22 * -(-len(handles) // ncol)
        height = min(max(0.8 + 0.62 * len(self.procs), 2.0), 16.0) + bottom + 0.5
        left = 0.35 + 0.075 * max(len(line) for p in self.procs for line in self._lane_label(p).split("\n"))
        width += max(0.0, left - 0.9)
        fig = Figure(figsize=(width, height), dpi=self.o.dpi)
        ax = fig.add_axes((left / width, bottom / height, 1 - (left + 0.3) / width, 1 - (bottom + 0.5) / height))
        ax.set_xlim(self.xmin, self.xmax)
        ax.set_ylim(-len(self.procs) + 0.4, 0.75)
        ax.set_yticks([self.y[p] for p in self.procs], [_shown(self._lane_label(p)) for p in self.procs], fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel(
            {
                "lamport": "logical time (Lamport column)",
                "file": "event number (file order)",
                "time": "trace time t (scaled)",
            }[self.o.layout],
            fontsize=8,
        )
        for s in ("top", "right", "left"):
            ax.spines[s].set_visible(False)
        ax.set_title(self._title(), fontsize=10, loc="left")
        self._lanes(ax)
        self._messages(ax)
        self._events(ax)
        self._overlays(ax)
        fig.legend(
            handles=handles, loc="lower left", bbox_to_anchor=(0.6 / width, 0.02), ncol=ncol, fontsize=7, frameon=False
        )
        _plain_text(fig)
        _unique_ids(fig)
        return fig

    def _lane_label(self, p: str) -> str:
        role = self.roles[p]
        return p if role == "task" else f"{p}\n({role})"

    def _title(self) -> str:
        if self.o.title:
            return self.o.title
        name = "trace" if self.trace.path == "<memory>" else self.trace.path.rsplit("/", 1)[-1]
        proto = self.trace.header.protocol.get("name", "unknown")
        t = f"{name} · protocol {proto} · {self.total} events"
        if self.o.window:
            t += f" · window {self.o.window[0]}–{self.o.window[1]}"
        if self.f.items:
            kinds = sorted({fi.kind for fi in self.findings})
            t += " · " + ", ".join(kinds)
        elif self.f.verdict == "not-judged":
            t += " · nothing judged"
        elif self.f.ok and (self.f.recovery_lines or self.f.useless):
            t += " · clean"
        return t

    def _lanes(self, ax) -> None:
        for p in self.procs:
            ln = Line2D([self.xmin, self.xmax], [self.y[p]] * 2, color="#999999", lw=1.0, zorder=1)
            ln.set_gid(_gid("lane", p))
            ax.add_line(ln)

    def _end_point(self, m: Message) -> tuple[float, Event | None, str]:
        """x of the arrow head and how the message ended: processed, discarded, arrived, in flight."""
        for ev, how in ((m.recv, "processed"), (m.discard, "discarded"), (m.arrive, "arrived")):
            if ev is not None:
                return self.ev_x[id(ev)], ev, how
        return self.end_x, None, "in-flight"

    def _messages(self, ax) -> None:
        shown = [m for m in self.msgs.values() if m.src in self.y and m.dst in self.y]
        inview = [m for m in shown if self.visible(self.ev_x[id(m.origin)]) or self.visible(self._end_point(m)[0])]
        labels = self.o.labels if self.o.labels is not None else len(inview) <= AUTO_LABEL_LIMIT
        for m in inview:
            x1, y1 = self.ev_x[id(m.origin)], self.y[m.src]
            x2, end_ev, how = self._end_point(m)
            y2 = self.y[m.dst]
            if how == "in-flight":
                y2 = y1 + (y2 - y1) * 0.6
            if m.replay_of is not None:
                colour, ls = REPLAY_COLOUR, "dashdot"
            elif m.is_barrier:
                colour, ls = BARRIER_COLOUR, (0, (4, 2))
            else:
                colour, ls = DATA_COLOUR, "solid"
            if how in ("in-flight", "arrived"):
                ls = (0, (1, 2)) if how == "in-flight" else ls
            arrow = FancyArrowPatch(
                (x1, y1),
                (x2, y2),
                arrowstyle="-|>",
                mutation_scale=9,
                lw=1.0,
                linestyle=ls,
                color=colour,
                shrinkA=3,
                shrinkB=4,
                zorder=3,
            )
            arrow.set_gid(_gid("msg", m.mid))
            ax.add_patch(arrow)
            if how == "discarded":
                ax.plot([x2], [y2], marker="x", color=colour, ms=6, mew=1.5, zorder=4)
            hl = self.highlight.get(m.mid)
            if hl is not None:
                style, order = hl
                over = FancyArrowPatch(
                    (x1, y1),
                    (x2, y2),
                    arrowstyle="-|>",
                    mutation_scale=13,
                    lw=2.6,
                    linestyle="solid" if how != "in-flight" else (0, (2, 1.5)),
                    color=HIGHLIGHT[style],
                    shrinkA=3,
                    shrinkB=4,
                    zorder=6,
                    alpha=0.9,
                )
                over.set_gid(_gid(style, "msg", m.mid))
                ax.add_patch(over)
                tag = _name(m) if order is None else f"z{order}: {_name(m)}"
                ax.annotate(
                    tag,
                    ((x1 + x2) / 2, (y1 + y2) / 2),
                    fontsize=7.5,
                    color=HIGHLIGHT[style],
                    fontweight="bold",
                    ha="center",
                    va="bottom",
                    zorder=8,
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.8),
                )
            elif labels and not m.is_barrier:
                ax.annotate(
                    _name(m),
                    (x1 + (x2 - x1) * 0.3, y1 + (y2 - y1) * 0.3),
                    fontsize=6.5,
                    color=colour,
                    ha="center",
                    va="bottom",
                    zorder=5,
                )

    def _events(self, ax) -> None:
        seen_initial = set()
        for e, x in zip(self.trace.events, self.x):
            if e.proc not in self.y or not self.visible(x):
                continue
            y = self.y[e.proc]
            if e.type == "checkpoint":
                if e.ckpt == 0:
                    seen_initial.add(e.proc)
                self._checkpoint(ax, e.proc, e.ckpt, e.kind, x, y, e.round)
            elif e.type == "fail":
                ax.plot(
                    [x],
                    [y],
                    marker="X",
                    color="#d62728",
                    ms=11,
                    mec="black",
                    mew=0.6,
                    zorder=7,
                    gid=_gid("fail", e.proc, e.idx),
                )
            elif e.type == "restore":
                ax.plot(
                    [x],
                    [y],
                    marker="o",
                    color="#2ca02c",
                    ms=8,
                    mec="black",
                    mew=0.6,
                    zorder=7,
                    gid=_gid("restore", e.proc, e.idx),
                )
                ax.annotate(
                    f"↺C{e.ckpt}",
                    (x, y),
                    xytext=(0, -11),
                    textcoords="offset points",
                    fontsize=7,
                    ha="center",
                    color="#2ca02c",
                    zorder=8,
                )
            elif e.type == "record":
                ax.plot([x], [y], marker="P", color="#8c564b", ms=6, zorder=5, gid=_gid("record", e.proc, e.idx))
            elif e.type in ("log", "log_truncate"):
                ax.plot([x], [y], marker="v", color="#7f7f7f", ms=5, zorder=5, gid=_gid(e.type, e.proc, e.idx))
            elif e.type == "arrive" and (self.msgs[e.mid].recv or self.msgs[e.mid].discard):
                ax.plot([x], [y], marker="|", color="#7f7f7f", ms=7, zorder=4)
            elif e.type in ("round_start", "round_complete", "round_abort"):
                sym = {"round_start": "▶", "round_complete": "✓", "round_abort": "✗"}[e.type]
                ax.plot([x], [y], marker="|", color="black", ms=10, zorder=5, gid=_gid(e.type, e.round))
                ax.annotate(
                    f"r{e.round}{sym}",
                    (x, y),
                    xytext=(0, 7),
                    textcoords="offset points",
                    fontsize=7,
                    ha="center",
                    zorder=8,
                )
            elif e.type == "output":
                ax.plot([x], [y], marker="*", color="#bcbd22", ms=8, zorder=5)
        for p in self.procs:
            if p not in seen_initial:
                x = self.ckpt_x[(p, 0)]
                if self.visible(x):
                    self._checkpoint(ax, p, 0, "initial", x, self.y[p], None)

    def _checkpoint(self, ax, p: str, c: int, kind: str, x: float, y: float, rnd) -> None:
        marker, face, edge, size = CKPT_STYLE.get(kind, CKPT_STYLE["basic"])
        ax.plot(
            [x], [y], marker=marker, mfc=face, mec=edge, ms=size, mew=1.0, ls="none", zorder=7, gid=_gid("ckpt", p, c)
        )
        ring = self.rings.get((p, c))
        ringed = ring is not None or (p, c) in self.f.useless
        ax.annotate(
            f"C{c}" + (f"·r{rnd}" if rnd is not None else ""),
            (x, y),
            xytext=(0, 11 if ringed else 6),
            textcoords="offset points",
            fontsize=7,
            ha="center",
            zorder=9,
        )
        if (p, c) in self.f.useless or ring == "zcycle":
            ax.plot(
                [x],
                [y],
                marker="o",
                mfc="none",
                mec=HIGHLIGHT["zcycle"],
                ms=17,
                mew=2.0,
                zorder=8,
                gid=_gid("useless-ckpt", p, c),
            )
        elif ring is not None:
            ax.plot(
                [x],
                [y],
                marker="o",
                mfc="none",
                mec=HIGHLIGHT[ring],
                ms=16,
                mew=2.0,
                zorder=8,
                gid=_gid("witness-ckpt", p, c),
            )

    def _point(self, p: str, c) -> tuple[float, float] | None:
        if p not in self.y:
            return None
        if c == "V":
            return self.end_x, self.y[p]
        x = self.ckpt_x.get((p, int(c)))
        return None if x is None else (x, self.y[p])

    def _polyline(
        self, ax, cut: dict, colour: str, lw: float, ls, gid: str, label: str | None, zorder: float = 2
    ) -> None:
        pts = [pt for p in self.procs if p in cut for pt in [self._point(p, cut[p])] if pt is not None]
        if not pts:
            return
        xs, ys = zip(*pts)
        ln = Line2D(xs, ys, color=colour, lw=lw, ls=ls, zorder=zorder, alpha=0.85, marker="o", ms=4)
        ln.set_gid(gid)
        ax.add_line(ln)
        if label is not None:
            right = xs[-1] > (self.xmin + self.xmax) / 2
            ax.annotate(
                label,
                (xs[-1], ys[-1]),
                xytext=(-6 if right else 6, -13),
                textcoords="offset points",
                ha="right" if right else "left",
                fontsize=7.5,
                color=colour,
                fontweight="bold",
                zorder=8,
            )

    def _overlays(self, ax) -> None:
        label = self._recovery_label()
        if label is not None:
            line = self.f.recovery_lines[label]
            what = {"none": "no failure", "all": "all failed"}.get(label, f"F={{{label}}}")
            bound = self.f.recovery_bounds.get(label)
            if bound and bound != line:
                self._polyline(ax, bound, RECOVERY_COLOUR, 1.2, (0, (1, 1.5)), "recovery-start", None)
            self._polyline(ax, line, RECOVERY_COLOUR, 3.0, "solid", "recovery-line", f"recovery line ({what})")
        cuts = [fi for fi in self.findings if fi.cut]
        for fi in cuts:
            self._polyline(
                ax, fi.cut, CUT_COLOUR, 1.6, "dashdot", _gid("cut", fi.number), f"cut of #{fi.number}", zorder=2.5
            )
        if self._checked_cut_apart():
            self._polyline(ax, self.o.cut, CUT_COLOUR, 1.6, "dashdot", "checked-cut", "checked cut", zorder=2.5)

    def _checked_cut_apart(self) -> bool:
        """The checked cut is drawn as a line of its own (no violation's cut is the same)."""
        return bool(self.o.cut) and not any(fi.cut == self.o.cut for fi in self.findings)

    def _recovery_label(self) -> str | None:
        lines = self.f.recovery_lines
        want = self.o.recovery_line
        if want is None or not lines:
            return None
        if want != "auto":
            if want not in lines:
                raise UsageError(f"no recovery line {want!r} in the report (have: {', '.join(lines)})")
            return want
        if self.o.cut or any(fi.cut for fi in self.findings):  # the checked cuts are the lines to look at
            return None
        for label in lines:
            if label not in ("none", "all"):
                return label
        return "all" if "all" in lines else next(iter(lines))

    def _zpath_label(self) -> str:
        """The legend of the purple witnesses: a Z-cycle (useless checkpoints) or a Z-path that
        RDT forbids (not a cycle: calling it one misled a reader of an RDT witness)."""
        kinds = {fi.kind for fi in self.findings if fi.style == "zcycle"}
        if kinds == {"rdt"}:
            return "Z-path witness (RDT)"
        return "Z-cycle witness" if "rdt" not in kinds else "Z-cycle / Z-path witness"

    def _legend_handles(self) -> list:
        h = [
            Line2D(
                [],
                [],
                marker=CKPT_STYLE[k][0],
                mfc=CKPT_STYLE[k][1],
                mec=CKPT_STYLE[k][2],
                ls="none",
                label=f"{k} checkpoint",
            )
            for k in ("initial", "basic", "forced", "coordinated")
            if self._uses_kind(k)
        ]
        h.append(Line2D([], [], color=DATA_COLOUR, label="message"))
        if any(m.is_barrier for m in self.msgs.values()):
            h.append(Line2D([], [], color=BARRIER_COLOUR, ls=(0, (4, 2)), label="barrier"))
        if any(m.replay_of for m in self.msgs.values()):
            h.append(Line2D([], [], color=REPLAY_COLOUR, ls="dashdot", label="replay"))
        label = self._recovery_label()
        if label is not None:
            h.append(Line2D([], [], color=RECOVERY_COLOUR, lw=3, label="recovery line"))
            if self.f.recovery_bounds.get(label, self.f.recovery_lines[label]) != self.f.recovery_lines[label]:
                h.append(
                    Line2D([], [], color=RECOVERY_COLOUR, lw=1.2, ls=(0, (1, 1.5)), label="rollback start (bound)")
                )
        drawn = (
            ("cut of a violation", any(fi.cut for fi in self.findings)),
            ("checked cut", self._checked_cut_apart()),
        )
        cuts = [name for name, shown in drawn if shown]
        if cuts:
            h.append(Line2D([], [], color=CUT_COLOUR, lw=1.6, ls="dashdot", label=" / ".join(cuts)))
        for etypes, marker, colour, name in (
            (("record",), "P", "#8c564b", "recorded channel state"),
            (("fail",), "X", "#d62728", "failure"),
            (("restore",), "o", "#2ca02c", "restore"),
            (("log", "log_truncate"), "v", "#7f7f7f", "log entry / truncation"),
            (("arrive",), "|", "#7f7f7f", "arrival (buffered)"),
            (("discard",), "x", DATA_COLOUR, "discard"),
            (("round_start", "round_complete", "round_abort"), "|", "black", "round start / complete / abort"),
            (("output",), "*", "#bcbd22", "output"),
        ):
            if any(e.type in etypes for e in self.trace.events):
                h.append(Line2D([], [], marker=marker, color=colour, ls="none", label=name))
        for style in sorted({s for s, _ in self.highlight.values()} | set(self.rings.values())):
            name = {
                "orphan": "orphan",
                "dropped": "dropped / lost",
                "phantom": "phantom / duplicate",
                "zcycle": self._zpath_label(),
                "other": "other violation",
            }[style]
            h.append(Line2D([], [], color=HIGHLIGHT[style], lw=2.6, label=name))
        if self.f.useless:
            h.append(
                Line2D(
                    [],
                    [],
                    marker="o",
                    mfc="none",
                    mec=HIGHLIGHT["zcycle"],
                    ls="none",
                    ms=10,
                    mew=2,
                    label="useless checkpoint",
                )
            )
        return h

    def _uses_kind(self, kind: str) -> bool:
        if kind == "initial":
            return True
        return any(e.type == "checkpoint" and e.kind == kind for e in self.trace.events)


def render_figure(trace: Trace, findings: Findings | None = None, options: RenderOptions | None = None) -> Figure:
    """The space-time diagram of ``trace`` as a matplotlib ``Figure`` (of the part
    ``plan_view`` chooses when the trace is over the limits)."""
    opts = options or RenderOptions()
    view = plan_view(trace, findings, opts)
    opts = replace(opts, window=view.window, procs=view.procs)
    return _Diagram(trace, findings, opts).figure()


# text.parse_math: tick labels are made again when the figure is drawn
_SAVE_RC = {"svg.fonttype": "none", "svg.hashsalt": "snapcheck", "text.parse_math": False}
# the metadata that would date a file: without it, one diagram drawn twice is the same bytes
_NO_DATE = {"svg": {"Date": None}, "pdf": {"CreationDate": None}}


@contextmanager
def _saving():
    """Matplotlib as a figure is written: ``_SAVE_RC``, and no warning for a character of a
    name that the layout font lacks. An SVG keeps every name as text, which the viewer
    draws with its own fonts; a PNG or PDF draws such a character as an empty box."""
    with matplotlib.rc_context(_SAVE_RC), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
        yield


def render(
    trace: Trace,
    path: str,
    findings: Findings | None = None,
    options: RenderOptions | None = None,
    fmt: str | None = None,
) -> None:
    """Write the diagram to ``path`` (atomically, never onto the trace); the format is
    ``fmt`` or follows the extension (.svg, .png, .pdf)."""
    ext = image_format(path, fmt)
    fig = render_figure(trace, findings, options)
    with _saving(), atomic_open(path, "wb", inputs=[trace.path] if trace.path != "<memory>" else []) as f:
        fig.savefig(f, format=ext, metadata=_NO_DATE.get(ext))


def image_format(path: str, fmt: str | None = None) -> str:
    """The image format of an output path (svg, png or pdf): ``fmt`` when given (a path
    without an extension, say ``/dev/stdout``), else its extension; or a usage error.

    >>> image_format("a.SVG"), image_format("/dev/stdout", "png")
    ('svg', 'png')
    """
    if fmt is not None:
        return fmt
    ext = str(path).rsplit(".", 1)[-1].lower()
    if ext not in ("svg", "png", "pdf"):
        raise UsageError(f"cannot tell the image format of {path!r}: use .svg, .png or .pdf, or give --format")
    return ext


def render_svg(
    trace: Trace, findings: Findings | None = None, options: RenderOptions | None = None, ids: str = ""
) -> str:
    """The diagram as SVG text (embedded by the HTML report); ``ids`` prefixes every element
    id and every reference to one, so that several diagrams in one document keep their ids
    apart (``lane-P`` becomes ``v2-lane-P``)."""
    import io

    fig = render_figure(trace, findings, options)
    buf = io.StringIO()
    with _saving():
        fig.savefig(buf, format="svg", metadata=_NO_DATE["svg"])
    text = buf.getvalue()
    return prefix_ids(text[text.index("<svg") :], ids)


_ID_OR_REFERENCE = re.compile(r'(\bid="|url\(#|href="#)')


def prefix_ids(svg: str, prefix: str) -> str:
    """``svg`` with ``prefix`` before every element id and every reference to one
    (``url(#...)``, ``href="#..."``).

    >>> prefix_ids('<path id="lane-A" clip-path="url(#p1)"/><use xlink:href="#m0"/>', "v2-")
    '<path id="v2-lane-A" clip-path="url(#v2-p1)"/><use xlink:href="#v2-m0"/>'
    """
    return _ID_OR_REFERENCE.sub(lambda m: m.group(1) + prefix, svg) if prefix else svg


def within_limit(window: tuple[int, int]) -> tuple[int, int]:
    """The part of ``window`` (event numbers, inclusive) one picture draws: its first
    ``DRAW_LIMIT`` events.

    >>> within_limit((5, 9)), within_limit((1, DRAW_LIMIT + 100))
    ((5, 9), (1, 2000))
    """
    a, b = window
    return a, min(b, a + DRAW_LIMIT - 1)


def finding_window(trace: Trace, finding: Finding, margin: int = 6) -> tuple[int, int]:
    """Event numbers (1-based, inclusive) around a finding's trace lines."""
    lines = set(finding.lines or [trace.events[-1].line if trace.events else 1])
    nums = [i + 1 for i, e in enumerate(trace.events) if e.line in lines]
    if not nums:
        return 1, max(len(trace.events), 1)
    return max(1, min(nums) - margin), min(len(trace.events), max(nums) + margin)

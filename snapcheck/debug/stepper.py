"""The interactive trace stepper of ``snapcheck replay`` (a terminal debugger for traces).

``Stepper`` wraps a ``Replay`` cursor and the checker's ``Findings``. Each
command (``execute``) moves the cursor or changes breakpoints; ``screen()``
renders the state at the cursor with rich: the events around it, one row per
process (interval, last checkpoint, blocked and recording channels, protocol
variables), one row per channel with something in it (in-flight messages,
recorded channel state, sender log), and the violations: in full those that
appear at this position, in one line each those that appeared earlier (a
violation stays from the event that completes it to the end of the trace). Commands come from any line source (``input()`` on a
terminal, a pipe, or a list in tests), so the stepper is scriptable.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from snapcheck.checker.notation import fmt_checkpoint
from snapcheck.console import make_console
from snapcheck.debug.findings import Findings
from snapcheck.debug.history import describe_event
from snapcheck.debug.replay import Breakpoint, ProcessView, Replay, ReplayState
from snapcheck.traces.model import EVENT_TYPES, Trace

HELP = """\
commands (a number k repeats or selects; Enter repeats the last command):
  n [k]            next event(s)                p [k]          previous event(s)
  g N              go to event N (0 = start)    line L         go to file line L
  start / end      first / last position        v / pv         next / previous violation
  b proc P         break on events of P         b msg M        break on message M
  b type T         break on event type T        b ckpt P       break on checkpoints of P
  b                list breakpoints             d N            delete breakpoint N
  c / rc           continue / reverse-continue to a breakpoint
  s                show the state again         json           the state as JSON
  all              toggle showing empty channels   h / ?       this help      q   quit
a name with spaces goes in quotes: b proc "map 0" (or 'map 0')"""

_CONTEXT = 3
_VAR_WIDTH = 60
_EARLIER_SHOWN = 8


def _short(mid: str, ch: str) -> str:
    """``ch:N`` shown as ``:N`` in the row of channel ``ch``."""
    return mid[len(ch) :] if mid.startswith(ch + ":") else mid


def _compact(value) -> str:
    s = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return s if len(s) <= _VAR_WIDTH else s[: _VAR_WIDTH - 1] + "…"


# Commands that take no argument: one given is a mistake, not ignored (``v 5`` is not "the 5th violation")
_NO_ARGUMENTS = frozenset(
    {"start", "end", "v", "violation", "pv", "c", "continue", "rc", "s", "show", "json", "all", "q", "quit", "exit"}
)


# The most arguments the other commands take (n 5, g 12, line 40, b proc P, d 2); more is a mistake
_MOST_ARGUMENTS = {"n": 1, "next": 1, "p": 1, "prev": 1, "g": 1, "goto": 1, "line": 1, "l": 1, "b": 2, "break": 2}
_MOST_ARGUMENTS |= {"d": 1, "delete": 1, "h": 0, "help": 0, "?": 0}


class Stepper:
    def __init__(
        self,
        trace: Trace,
        findings: Findings | None = None,
        console: Console | None = None,
        show_all_channels: bool = False,
        navigable: bool = True,
    ):
        """``navigable=False``: the state is shown at one position only (no snapshots kept)."""
        self.trace = trace
        self.replay = Replay(trace, navigable=navigable)
        self.findings = findings or Findings()
        self.console = console or make_console()
        self.show_all_channels = show_all_channels
        self.message = ""  # feedback of the last command, shown above the state
        self.mistakes: list[str] = []  # commands that could not run, and why (a script's exit code)
        self._last = "n"

    # -- commands ---------------------------------------------------------------
    def execute(self, line: str) -> bool:
        """Run one command; return False when the user quits."""
        line = line.strip()
        if not line:
            line = self._last
        self._last = line
        self.message = ""
        try:
            parts = shlex.split(line)  # a name with a space in quotes: b proc "map 0"
        except ValueError:
            self._mistake(f"unbalanced quote in {line!r} (h for help)")
            return True
        if not parts:
            return True
        cmd, args = parts[0], parts[1:]
        handler = self._commands().get(cmd)
        if handler is None:
            self._mistake(f"unknown command {cmd!r} (h for help)")
            return True
        if args and cmd in _NO_ARGUMENTS:
            self._mistake(f"{cmd} takes no argument, not {' '.join(args)!r} (h for help)")
            return True
        most = _MOST_ARGUMENTS.get(cmd)
        if most is not None and len(args) > most:
            self._mistake(
                f"{cmd} takes {'no argument' if most == 0 else f'at most {most} argument(s)'}, not "
                f"{' '.join(args)!r} (h for help)"
            )
            return True
        try:
            return handler(args) is not False
        except (ValueError, IndexError, OverflowError):
            self._mistake(f"bad arguments for {cmd!r} (h for help)")
            return True

    def _mistake(self, why: str) -> None:
        """A command that could not run: said above the state, and remembered."""
        self.message = why
        self.mistakes.append(why)

    def _commands(self) -> dict[str, Callable]:
        return {
            "n": self._next,
            "next": self._next,
            "p": self._prev,
            "prev": self._prev,
            "g": self._goto,
            "goto": self._goto,
            "line": self._line,
            "l": self._line,
            "start": lambda a: self.replay.goto(0),
            "end": lambda a: self.replay.goto(len(self.replay)),
            "v": self._violation,
            "violation": self._violation,
            "pv": lambda a: self._violation(a, forward=False),
            "b": self._break,
            "break": self._break,
            "d": self._delete,
            "delete": self._delete,
            "c": self._continue,
            "continue": self._continue,
            "rc": lambda a: self._continue(a, forward=False),
            "s": lambda a: None,
            "show": lambda a: None,
            "json": self._json,
            "all": self._toggle_all,
            "h": self._help,
            "help": self._help,
            "?": self._help,
            "q": lambda a: False,
            "quit": lambda a: False,
            "exit": lambda a: False,
        }

    def _next(self, args):
        if args:
            return self._move(int(args[0]), "next", args[0])
        self.replay.forward(1)

    def _prev(self, args):
        if args:
            return self._move(-int(args[0]), "prev", args[0])
        self.replay.backward(1)

    def _move(self, by: int, what: str, given: str):
        """Move ``by`` events (the count ``given`` to n or p: at least 1; a relative move
        stops at the end of the trace it reaches, as a pager's does)."""
        if by == 0 or (by > 0) != (what == "next"):
            return self._mistake(f"{what} {given}: a count is at least 1")
        self.replay.goto(max(0, min(self.replay.position + by, len(self.replay))))

    def _goto(self, args):
        k = int(args[0])
        if not 0 <= k <= len(self.replay):
            return self._mistake(f"goto {k}: the trace has events 0..{len(self.replay)}")
        self.replay.goto(k)

    def _line(self, args):
        n = int(args[0])
        events = self.replay.events
        last = events[-1].line if events else 1
        if not 1 <= n <= last:
            return self._mistake(f"line {n}: the trace has lines 1..{last}")
        self.replay.goto_line(n)

    def _violation(self, args, forward: bool = True):
        pos = self.replay.next_of(self.findings.positions(), forward)
        if pos is None:
            what = (
                "no violation known: the checker did not run (--no-check)"
                if not self.findings.checked
                else "no violations"
                if not self.findings.items
                else f"no {'later' if forward else 'earlier'} violation"
            )
            self.message = what
            return
        self.replay.goto(pos)

    def _break(self, args):
        if not args:
            bps = self.replay.breakpoints
            self.message = "breakpoints: " + (", ".join(f"[{i}] {b}" for i, b in enumerate(bps, 1)) if bps else "none")
            return
        what, value = args[0], args[1]
        if what not in ("proc", "msg", "type", "ckpt"):
            raise ValueError(what)
        if what in ("proc", "ckpt") and value not in self.trace.process_map():
            self._mistake(f"unknown process {value!r}")
            return
        if what == "msg" and value not in self.replay.messages:
            self._mistake(f"unknown message {value!r}")
            return
        if what == "type" and value not in EVENT_TYPES:
            self._mistake(f"unknown event type {value!r} (event types: {', '.join(EVENT_TYPES)})")
            return
        self.replay.breakpoints.append(Breakpoint(what, value))
        self.message = f"breakpoint [{len(self.replay.breakpoints)}] {what} {value}"

    def _delete(self, args):
        k, bps = int(args[0]), self.replay.breakpoints
        if not 1 <= k <= len(bps):
            return self._mistake(
                f"delete {k}: no breakpoint [{k}] (b lists them: " + (f"1..{len(bps)})" if bps else "none)")
            )
        b = bps.pop(k - 1)
        self.message = f"deleted breakpoint [{k}] {b}"

    def _continue(self, args, forward: bool = True):
        if not self.replay.breakpoints:
            self.message = "no breakpoints (b proc P, b msg M, b type T, b ckpt P)"
            return
        hit = self.replay.run_to_break(forward)
        self.message = f"breakpoint {hit}" if hit else ("end of trace" if forward else "start of trace")

    def _json(self, args):
        self.message = json.dumps(self.replay.state.to_json(), indent=1, default=str)

    def _toggle_all(self, args):
        self.show_all_channels = not self.show_all_channels

    def _help(self, args):
        self.message = HELP

    # -- display ----------------------------------------------------------------
    def screen(self):
        """The rich renderable of the current state."""
        st = self.replay.state
        parts = []
        if self.message:
            parts.append(Text(self.message))
        parts.append(self._header(st))
        parts.append(self._context(st))
        parts.append(self._process_table(st))
        chans = self._channel_table(st)
        if chans is not None:
            parts.append(chans)
        parts.extend(self._violation_panels(st))
        return Group(*parts)

    def show(self) -> None:
        self.console.print(self.screen())

    def _header(self, st: ReplayState) -> Text:
        n = len(self.replay)
        t = Text()
        t.append(f"event {st.position}/{n}", style="bold")
        if st.event is not None:
            e = st.event
            t.append(f" · line {e.line} · ")
            t.append(e.proc, style="bold cyan")
            t.append(" " + describe_event(e, self.replay.messages))
        else:
            t.append(" · start of trace (nothing applied yet)")
        later = self.replay.next_of(self.findings.positions())
        if later is not None:
            t.append(f"   next violation at event {later}", style="yellow")
        if self.replay.breakpoints:
            t.append(f"   {len(self.replay.breakpoints)} breakpoint(s)", style="dim")
        return t

    def _context(self, st: ReplayState) -> Text:
        events = self.replay.events
        lo, hi = max(0, st.position - _CONTEXT), min(len(events), st.position + _CONTEXT - 1)
        t = Text()
        for i in range(lo, hi):
            e = events[i]
            mark = "→" if i == st.position - 1 else " "
            style = "bold" if i == st.position - 1 else ("dim" if i >= st.position else "")
            t.append(
                f"{mark} {i + 1:>5}  L{e.line:<5} {e.proc:<8} {describe_event(e, self.replay.messages)}\n", style=style
            )
        return t

    def _involved(self, st: ReplayState) -> tuple[set[str], set[str]]:
        procs, mids = set(), set()
        for f in self.findings.visible(st.position):
            procs.update(p for p, _ in f.checkpoints)
            mids.update(f.messages)
        msgs = self.replay.messages
        for m in mids:
            if m in msgs:
                procs.update((msgs[m].src, msgs[m].dst))
        return procs, mids

    def _process_table(self, st: ReplayState) -> Table:
        involved, _ = self._involved(st)
        tab = Table(title="processes", title_justify="left")
        for col in ("process", "interval", "last checkpoint", "status", "blocked", "recording", "protocol vars"):
            tab.add_column(col, overflow="fold")
        current = st.event.proc if st.event is not None else None
        for p, v in st.processes.items():
            style = "bold" if p == current else None
            name = Text(p, style="bold red" if p in involved else None)
            if v.role != "task":
                name.append(f" ({v.role})", style="dim")
            tab.add_row(
                name,
                f"I{v.interval}",
                self._ckpt_text(p, v),
                self._status(v),
                ", ".join(f"{c} (r{r})" for c, r in sorted(v.blocked.items())) or "-",
                ", ".join(f"{c} (r{r})" for c, r in sorted(v.recording.items())) or "-",
                self._vars_text(v),
                style=style,
            )
        return tab

    def _ckpt_text(self, p: str, v: ProcessView) -> Text:
        c = v.last_checkpoint
        label = f"C{c.ckpt} {c.kind}"
        if c.round is not None:
            label += f" r{c.round}"
        if c.restored:
            label += " (restored)"
        if c.line:
            label += f" @L{c.line}"
        return Text(label, style="red" if (p, c.ckpt) in self.findings.useless else None)

    @staticmethod
    def _status(v: ProcessView) -> str:
        s = "FAILED" if v.failed else "up"
        return s + (f" epoch {v.epoch}" if v.epoch else "")

    @staticmethod
    def _vars_text(v: ProcessView) -> str:
        parts = []
        if v.vars:
            parts.append(_compact(v.vars))
        if v.piggyback is not None:
            parts.append("pb " + _compact(v.piggyback))
        return "\n".join(parts) or "-"

    def _channel_table(self, st: ReplayState) -> Table | None:
        _, hot = self._involved(st)
        rows = [c for c in st.channels.values() if self.show_all_channels or c.in_flight or c.recorded or c.log]
        if not rows:
            return None
        tab = Table(
            title=Text(
                "channels   (* arrived in the receiver's buffer · [bR] barrier of round R · :N the channel's message N)"
            ),
            title_justify="left",
        )
        for col in ("channel", "in flight (send order)", "recorded state", "sender log"):
            tab.add_column(col, overflow="fold")
        for c in rows:
            flight = Text()
            for k, m in enumerate(c.in_flight):
                if k:
                    flight.append(" ")
                label = (f"[b{m.round}]" if m.kind == "barrier" else _short(m.mid, c.id)) + ("*" if m.arrived else "")
                flight.append(label, style="bold red" if m.mid in hot else ("dim" if m.kind == "barrier" else None))
            rec = (
                "; ".join(
                    f"{r.part} {fmt_checkpoint(r.proc, r.ckpt)}: [{', '.join(_short(m, c.id) for m in r.mids)}]"
                    for r in c.recorded.values()
                )
                or "-"
            )
            name = c.id if c.id in (f"{c.src}->{c.dst}", f"{c.src}>{c.dst}") else f"{c.id} {c.src}→{c.dst}"
            tab.add_row(name, flight if c.in_flight else "-", rec, ", ".join(_short(m, c.id) for m in c.log) or "-")
        return tab

    def _violation_panels(self, st: ReplayState) -> list:
        """A full panel for each violation that appears at this position; one line for each
        that appeared earlier and still exists."""
        out = []
        earlier = [f for f in self.findings.visible(st.position) if f.position < st.position]
        if earlier:
            body = _prose(
                "\n".join(
                    f"{f.title()}: since event {f.position} (lines {', '.join(map(str, f.lines))})"
                    for f in earlier[:_EARLIER_SHOWN]
                )
            )
            if len(earlier) > _EARLIER_SHOWN:
                body.append(f"\n... and {len(earlier) - _EARLIER_SHOWN} more")
            out.append(
                Panel(body, title=f"{len(earlier)} violation(s) still present", border_style="red", title_align="left")
            )
        for f in self.findings.at(st.position):
            body = _prose(f.message)
            if f.messages:
                body.append("\nwitness messages: " + " → ".join(f.messages))
            if f.checkpoints:
                body.append("\nwitness checkpoints: " + ", ".join(fmt_checkpoint(p, c) for p, c in f.checkpoints))
            if f.cut:
                body.append("\ncut: " + ", ".join(f"{p}:{c}" for p, c in f.cut.items()))
            body.append(f"\ntrace lines: {', '.join(map(str, f.lines))}")
            out.append(Panel(body, title=f.title(), border_style="red", title_align="left"))
        return out

    # -- the loop ---------------------------------------------------------------
    def loop(self, lines: Iterable[str] | None = None, prompt: str = "(snapcheck) ") -> None:
        """Show the state, read a command, repeat until ``q`` or end of input.

        ``lines`` defaults to ``input()`` (with readline history on a terminal)."""
        self.show()
        source = iter(lines) if lines is not None else _input_lines(prompt)
        for line in source:
            if not self.execute(line):
                break
            self.show()


def _input_lines(prompt: str):
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    while True:
        try:
            yield input(prompt)
        except EOFError:
            return


def _prose(text: str) -> Text:
    """Text of a panel that wraps at the panel's width, also on a console that soft-wraps
    (``make_console``: a panel would clip every line longer than itself)."""
    return Text(text, no_wrap=False, overflow="fold")

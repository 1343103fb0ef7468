"""A self-contained HTML report of one checked trace (``snapcheck check --html``).

One file, no external resources (inline CSS, inline SVG diagrams), fit to keep
as a CI artifact: the verdict, one row per property result, every violation
with its explanation, trace lines, machine-readable witness and, for the first
``DIAGRAMS_SHOWN``, a space-time diagram that highlights exactly that witness (a
window around it on long traces), useless checkpoints, recovery lines, notes, an
overview diagram and the JSON report. Each inline diagram's element ids carry its
own prefix (``v3-``, ``overview-``), so that ids are unique in the document.
"""

from __future__ import annotations

import html
import json
import os
import shlex
from pathlib import Path

from snapcheck import __version__
from snapcheck.checker.notation import fmt_checkpoint
from snapcheck.console import printable
from snapcheck.debug.findings import Findings, findings_from_report
from snapcheck.debug.render import RenderOptions, finding_window, render_svg, within_limit
from snapcheck.traces.atomic import write_atomic
from snapcheck.traces.model import Trace

OVERVIEW_LIMIT = 1500  # events: above this the overview diagram is replaced by a note
WINDOW_ABOVE = 120  # events: above this a violation's diagram shows a window around it
DIAGRAMS_SHOWN = 20  # violations drawn (the first, in the report's order); the others are listed

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#222;max-width:1400px}
h1{font-size:1.5em;margin-bottom:.2em} h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.verdict{display:inline-block;padding:.25em .8em;border-radius:4px;font-weight:bold;color:white}
.ok{background:#2ca02c} .bad{background:#d62728}
table{border-collapse:collapse;margin:.6em 0} td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3} tr.fail td{background:#fff0f0}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;white-space:pre-wrap}
.violation{border-left:4px solid #d62728;padding:.2em 1em;margin:1.2em 0;background:#fffafa}
.diagram{overflow-x:auto;border:1px solid #eee;margin:.5em 0} .diagram svg{height:auto;max-width:none}
.muted{color:#777} code{background:#f3f3f3;padding:0 .2em}
"""


def _e(x) -> str:
    return html.escape(printable(str(x)))  # no control character of the data acts on the page (U+202E)


def _diagram(trace: Trace, findings: Findings, opts: RenderOptions, ids: str) -> str:
    return f'<div class="diagram">{render_svg(trace, findings, opts, ids)}</div>'


def html_report(trace: Trace, report, findings: Findings | None = None) -> str:
    """The report as one HTML document (a string)."""
    f = findings or findings_from_report(trace, report)
    name = trace.path
    proto = trace.header.protocol.get("name", "unknown")
    n_ev = len(trace.events)
    kinds = sorted({x.kind for x in f.items})
    out = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>snapcheck: {_e(name)}</title>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1>snapcheck report: <code>{_e(name)}</code></h1>",
        f"<p>protocol <b>{_e(proto)}</b> · {len(trace.processes)} processes · {len(trace.channels)} channels · "
        f"{n_ev} events · snapcheck {__version__}</p>",
    ]
    verdict = getattr(report, "verdict", "clean" if f.ok else "violation")
    if verdict == "not-judged":
        out.append(
            '<p><span class="verdict bad">NOTHING JUDGED</span> no property applied to this trace '
            '(see "not judged" below): this is not a clean verdict</p>'
        )
    elif f.ok:
        out.append('<p><span class="verdict ok">CLEAN</span> no violation found in the properties judged</p>')
    else:
        out.append(
            f'<p><span class="verdict bad">VIOLATION</span> {len(f.items)} violation(s): {_e(", ".join(kinds))}</p>'
        )
    out.append(_results_table(report))
    if f.items:
        out.append("<h2>Violations</h2>")
        undrawn = len(f.items) - DIAGRAMS_SHOWN
        if undrawn > 0:
            out.append(
                f"<p class='muted'>Diagrams are drawn for the first {DIAGRAMS_SHOWN} violations; the other "
                f"{undrawn} are listed without one. See violation K with <code>snapcheck replay {_e(shlex.quote(name))} "
                f"--at-violation K</code> or <code>snapcheck render {_e(shlex.quote(name))} --violation K -o vK.svg</code>.</p>"
            )
        for k, fi in enumerate(f.items):
            out.append(_violation(trace, f, fi, drawn=k < DIAGRAMS_SHOWN))
    out.append(_checkpoints_and_lines(trace, f))
    if f.notes:
        out.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in f.notes) + "</ul>")
    out.append("<h2>Space-time diagram</h2>")
    if n_ev <= OVERVIEW_LIMIT:
        out.append(_diagram(trace, f, RenderOptions(), "overview-"))
    else:
        out.append(
            f"<p class='muted'>The trace has {n_ev} events; render parts of it with "
            f"<code>snapcheck render {_e(name)} --window A:B -o part.svg</code>.</p>"
        )
    out.append(_processes_table(trace))
    text = report.render_text(True) if hasattr(report, "render_text") else None
    if text:
        out.append(f"<details><summary>text report</summary><pre>{_e(text)}</pre></details>")
    if hasattr(report, "to_json"):
        out.append(
            "<details><summary>JSON report</summary><pre>"
            f"{_e(json.dumps(report.to_json(), indent=1, default=str))}</pre></details>"
        )
    out.append("</body></html>\n")
    return "\n".join(out)


def _results_table(report) -> str:
    rows = []
    for r in getattr(report, "results", ()):
        n = len(r.violations) + getattr(r, "omitted", 0)
        rows.append(
            f"<tr class='{'' if r.ok else 'fail'}'><td>{_e(r.property)}</td><td>{_e(r.subject)}</td>"
            f"<td>{'ok' if r.ok else 'VIOLATED'}</td><td>{n}</td></tr>"
        )
    for f in getattr(report, "faults", ()):
        rows.append(
            f"<tr class='{'' if f['exercised'] else 'fail'}'><td>fault injection</td><td>{_e(f['fault'])}</td>"
            f"<td>{'exercised' if f['exercised'] else 'NOT EXERCISED'}</td><td>{_e(f['detail'])}</td></tr>"
        )
    for prop, reason in getattr(report, "not_judged", {}).items():
        rows.append(f"<tr class='muted'><td>{_e(prop)}</td><td>-</td><td>not judged</td><td>{_e(reason)}</td></tr>")
    if not rows:
        return ""
    return (
        "<h2>Properties</h2><table><tr><th>property</th><th>subject</th><th>verdict</th>"
        "<th>violations / why</th></tr>" + "".join(rows) + "</table>"
    )


def _violation(trace: Trace, f: Findings, fi, drawn: bool) -> str:
    parts = [
        f'<div class="violation" id="violation-{fi.number}"><h3>{_e(fi.title())}</h3>',
        f"<pre>{_e(fi.message)}</pre>",
        f"<p>trace lines: {_e(', '.join(map(str, fi.lines)) or '-')} · replay position {fi.position} "
        f"(<code>snapcheck replay {_e(shlex.quote(trace.path))} --at-violation {fi.number}</code>)</p>",
    ]
    witness = {k: v for k, v in (("messages", fi.messages), ("checkpoints", fi.checkpoints), ("cut", fi.cut)) if v}
    if witness:
        parts.append(f"<p>witness: <code>{_e(json.dumps(witness))}</code></p>")
    if drawn:
        window = finding_window(trace, fi) if len(trace.events) > WINDOW_ABOVE else None
        if window is not None and within_limit(window) != window:  # wider than a picture: its beginning
            (a, b), window = window, within_limit(window)
            parts.append(
                f"<p>The witness spans events {a:,}–{b:,}; the diagram shows the first {window[1] - a + 1:,} of "
                f"them (<code>snapcheck render {_e(trace.path)} --window A:B -o part.svg</code> draws another part).</p>"
            )
        options = RenderOptions(window=window, only=[fi.number], recovery_line=None)
        parts.append(_diagram(trace, f, options, f"v{fi.number}-"))
    parts.append("</div>")
    return "\n".join(parts)


def _checkpoints_and_lines(trace: Trace, f: Findings) -> str:
    out = []
    if f.useless:
        items = ", ".join(fmt_checkpoint(p, c) for p, c in sorted(f.useless))
        out.append(f"<h2>Useless checkpoints (on a Z-cycle)</h2><p>{_e(items)}</p>")
    if f.recovery_lines:
        procs = [p.id for p in trace.processes if p.checkpoints]
        head = "".join(f"<th>{_e(p)}</th>" for p in procs)
        rows = "".join(
            f"<tr><td>{_e(label)}</td>" + "".join(f"<td>{_e(line.get(p, '-'))}</td>" for p in procs) + "</tr>"
            for label, line in f.recovery_lines.items()
        )
        out.append(
            '<h2>Recovery lines</h2><p class=\'muted\'>per failure set ("none", "all", or the failed '
            "processes); <code>V</code> = the process keeps its current state</p>"
            f"<table><tr><th>failed</th>{head}</tr>{rows}</table>"
        )
    return "\n".join(out)


def _processes_table(trace: Trace) -> str:
    rows = "".join(
        f"<tr><td>{_e(p.id)}</td><td>{_e(p.role)}</td><td>{_e(p.operator or '')}</td></tr>" for p in trace.processes
    )
    chans = "".join(
        f"<tr><td>{_e(c.id)}</td><td>{_e(c.src)} → {_e(c.dst)}</td><td>{'fifo' if c.fifo else 'non-fifo'}"
        f"{', ' + c.kind if c.kind != 'data' else ''}{', back edge' if c.back_edge else ''}"
        f"{', logged' if c.logged else ''}</td></tr>"
        for c in trace.channels
    )
    return (
        "<details><summary>processes and channels</summary><table><tr><th>process</th><th>role</th>"
        f"<th>operator</th></tr>{rows}</table><table><tr><th>channel</th><th>endpoints</th>"
        f"<th>properties</th></tr>{chans}</table></details>"
    )


def write_html_report(trace: Trace, report, path: str) -> None:
    """Write the HTML report of ``report`` (a ``checker.Report`` for ``trace``) to ``path``
    (atomically; never onto the trace itself)."""
    write_atomic(path, html_report(trace, report), inputs=[trace.path] if trace.path != "<memory>" else [])


def html_targets(html_path: str, trace_paths: list[str]) -> list[str]:
    """Where ``snapcheck check --html PATH`` writes the report of each trace: PATH
    itself for one trace, else ``PATH`` with the trace's file stem inserted
    (``report.html`` -> ``report-fig2b.html``; PATH is then the index, ``html_index``).
    Traces whose stems are equal (``a/t.jsonl`` and ``b/t.jsonl``, ``run.1.jsonl`` and
    ``run.2.jsonl``) also get their position in the list, so that no report overwrites
    another.

    >>> html_targets("report.html", ["traces/fig2b.jsonl", "x/y.parquet"])
    ['report-fig2b.html', 'report-y.html']
    >>> html_targets("out/r.html", ["a/t.jsonl", "b/t.jsonl", "c.jsonl"])
    ['out/r-t-1.html', 'out/r-t-2.html', 'out/r-c.html']

    A stem that spells another's numbered name (``a-1``) gets its position too:

    >>> html_targets("r.html", ["a.jsonl", "b/a.jsonl", "a-1.jsonl"])
    ['r-a-1.html', 'r-a-2.html', 'r-a-1-3.html']
    """
    if len(trace_paths) == 1:
        return [html_path]
    stems = [Path(p).name.split(".")[0] for p in trace_paths]
    shared = {s for s in stems if stems.count(s) > 1}
    base, ext = os.path.splitext(html_path)
    ext = ext or ".html"
    out: list[str] = []
    taken = {html_path} | {f"{base}-{t}-{j}{ext}" for j, t in enumerate(stems, 1) if t in shared}
    for k, s in enumerate(stems, 1):
        name = f"{base}-{s}-{k}{ext}"
        if s not in shared and f"{base}-{s}{ext}" not in taken:
            name = f"{base}-{s}{ext}"
        taken.add(name)
        out.append(name)
    return out


def _link(file_name: str) -> str:
    """A relative link to the file ``file_name`` beside the page: every character a URL
    gives a meaning percent-encoded (a ':' would start a scheme, '#' a fragment, '%' an
    escape), behind './'.

    >>> _link("idx-run-2026-11-28T15:00:00.html"), _link("idx-run#2 50%.html")
    ('./idx-run-2026-11-28T15%3A00%3A00.html', './idx-run%232%2050%25.html')
    """
    from urllib.parse import quote

    return "./" + quote(file_name, safe="")


def html_index(rows: list[tuple[str, str, str, str | None]]) -> str:
    """The index page of a multi-trace ``check --html``: one row per trace given, in the
    order given — ``(trace path, verdict, violation kinds or the reason it was not read,
    its report's file name or None when it has none)``.

    >>> page = html_index([("a.jsonl", "clean", "", "r-a.html"), ("b.jsonl", "bad input", "b.jsonl:3: ...", None)])
    >>> "<a href='./r-a.html'>a.jsonl</a>" in page and "bad input" in page
    True
    """
    bad = sum(1 for _, verdict, _, _ in rows if verdict != "clean")
    out = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>snapcheck: {len(rows)} traces</title>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1>snapcheck: {len(rows)} traces</h1>",
        f"<p><span class='verdict {'bad' if bad else 'ok'}'>{bad} not clean</span> snapcheck {__version__}</p>",
        "<table><tr><th>trace</th><th>verdict</th><th>details</th></tr>",
    ]
    for path, verdict, detail, href in rows:
        name = f"<a href='{_e(_link(href))}'>{_e(path)}</a>" if href else _e(path)
        cls = "" if verdict == "clean" else " class='fail'"
        out.append(f"<tr{cls}><td>{name}</td><td>{_e(verdict)}</td><td>{_e(detail)}</td></tr>")
    out.append("</table></body></html>\n")
    return "\n".join(out)

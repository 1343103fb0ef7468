"""``snapcheck validate-trace`` and ``snapcheck convert``: the trace format's own tools."""

from __future__ import annotations

import sys

import click

from snapcheck.console import echo
from snapcheck.options import OUTPUT_FILE
from snapcheck.traces.errors import EXIT_BAD_INPUT, TraceErrors, UsageError
from snapcheck.traces.jsonl import validate_file
from snapcheck.traces.validate import DEFAULT_MAX_ERRORS


@click.command("validate-trace")
# any path (a directory: reported unreadable like a missing file)
@click.argument("files", nargs=-1, required=True, type=click.Path(readable=False))
@click.option(
    "--max-errors",
    default=DEFAULT_MAX_ERRORS,
    type=click.IntRange(min=1),  # at least the first, which names the file
    show_default=True,
    help="Report at most this many errors per file (all are counted).",
)
@click.option("--trace-id", default=None, help="Which trace of a multi-trace Parquet file to validate.")
def validate_trace(files: tuple[str, ...], max_errors: int, trace_id: str | None) -> None:
    """Check that trace FILES (JSONL or Parquet) conform to trace format v1.

    Every problem is printed as FILE:LINE: reason. Exit 0 if all are valid, 2 otherwise.
    """
    bad = 0
    for path in files:
        v = validate_file(path, max_errors, trace_id)
        if v.ok:
            h = v.header_obj
            echo(
                f"{path}: OK ({v.events_seen} events, {len(h.processes)} processes, "
                f"{len(h.channels)} channels, protocol {h.protocol.get('name')})"
            )
        else:
            bad += 1
            echo(TraceErrors(v.errors, v.total_errors).render(), err=True)
    if bad:
        sys.exit(EXIT_BAD_INPUT)


@click.command("convert")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False, readable=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=OUTPUT_FILE,
    help="Destination: .parquet (one or more traces) or .jsonl (exactly one trace).",
)
@click.option("--trace-id", default=None, help="Which trace of a multi-trace Parquet source to convert.")
def convert(sources: tuple[str, ...], output: str, trace_id: str | None) -> None:
    """Convert traces between JSON Lines and Parquet (lossless: the same header and events; validated first).

    Directions: JSONL -> Parquet (many JSONL traces into one file), Parquet -> JSONL (one
    trace; --trace-id picks it from a multi-trace file), JSONL -> JSONL and Parquet ->
    Parquet (a validated, normalizing copy). The output is written atomically: a failed
    conversion leaves an existing file untouched, and the output may not be an input.
    """
    from snapcheck.traces.atomic import refuse_inputs
    from snapcheck.traces.convert import write_jsonl, write_parquet
    from snapcheck.traces.errors import TraceError, TraceErrors
    from snapcheck.traces.jsonl import _is_parquet
    from snapcheck.traces.parquet import trace_ids

    refuse_inputs(output, sources)
    if _is_parquet(output):
        items = []
        for src in sources:
            if _is_parquet(src):
                ids = [trace_id] if trace_id is not None else trace_ids(src)
                if not ids:
                    raise TraceErrors([TraceError(src, 0, "empty trace: the Parquet file has no rows")])
                items.extend((src, t if len(ids) > 1 or trace_id else None, t) for t in ids)
            elif trace_id is not None:
                raise UsageError(f"--trace-id picks a trace of a Parquet source; {src} is JSONL (one trace)")
            else:
                items.append((src, None, src))
        rows = write_parquet(items, output)
        echo(f"wrote {rows} rows ({len(items)} trace(s)) to {output}")
    elif output.endswith(".jsonl"):
        if len(sources) != 1:
            raise UsageError(
                f"converting to JSONL writes one trace: give exactly one source (got {len(sources)}); "
                "to gather several traces, convert to .parquet"
            )
        if trace_id is not None and not _is_parquet(sources[0]):
            raise UsageError(f"--trace-id picks a trace of a Parquet source; {sources[0]} is JSONL (one trace)")
        n = write_jsonl(sources[0], output, trace_id)
        echo(f"wrote {n} lines to {output}")
    else:
        raise UsageError(
            f"cannot tell the output format of {output!r}: name it .parquet or .jsonl (directions: "
            "JSONL or Parquet to .parquet, one trace of either to .jsonl)"
        )


def register(group: click.Group) -> None:
    group.add_command(validate_trace)
    group.add_command(convert)

"""``snapcheck validate-trace`` and ``snapcheck convert``: the trace format's own tools."""

from __future__ import annotations

import sys

import click
from snapcheck.traces.errors import EXIT_BAD_INPUT, UsageError
from snapcheck.traces.errors import TraceErrors
from snapcheck.traces.validate import DEFAULT_MAX_ERRORS, validate_file


@click.command("validate-trace")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--max-errors", default=DEFAULT_MAX_ERRORS, show_default=True,
              help="Report at most this many errors per file (all are counted).")
def validate_trace(files: tuple[str, ...], max_errors: int) -> None:
    """Check that trace FILES (JSONL or Parquet) conform to trace format v1.

    Every problem is printed as FILE:LINE: reason. Exit 0 if all are valid, 2 otherwise.
    """
    bad = 0
    for path in files:
        v = validate_file(path, max_errors)
        if v.ok:
            h = v.header_obj
            click.echo(f"{path}: OK ({v.events_seen} events, {len(h.processes)} processes, "
                       f"{len(h.channels)} channels, protocol {h.protocol.get('name')})")
        else:
            bad += 1
            click.echo(TraceErrors(v.errors, v.total_errors).render(), err=True)
    if bad:
        sys.exit(EXIT_BAD_INPUT)


@click.command("convert")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Destination: .parquet (many JSONL traces in, one file out) or .jsonl (one trace out).")
@click.option("--trace-id", default=None, help="Which trace of a multi-trace Parquet file to write as JSONL.")
def convert(sources: tuple[str, ...], output: str, trace_id: str | None) -> None:
    """Convert traces between JSON Lines and Parquet (lossless, validated on the way)."""
    from snapcheck.traces.parquet import jsonl_to_parquet, parquet_to_jsonl

    if output.endswith((".parquet", ".pq")):
        rows = jsonl_to_parquet(list(sources), output)
        click.echo(f"wrote {rows} rows ({len(sources)} trace(s)) to {output}")
    elif output.endswith(".jsonl"):
        if len(sources) != 1:
            raise UsageError("converting to JSONL takes exactly one Parquet source")
        n = parquet_to_jsonl(sources[0], output, trace_id)
        v = validate_file(output)
        if not v.ok:
            raise TraceErrors(v.errors, v.total_errors)
        click.echo(f"wrote {n} lines to {output}")
    else:
        raise UsageError(f"cannot tell the output format of {output!r}: use .parquet or .jsonl")


def register(group: click.Group) -> None:
    group.add_command(validate_trace)
    group.add_command(convert)

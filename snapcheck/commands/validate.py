"""``snapcheck validate``: randomized validation at scale on Spark, and Parquet trace checking.

    snapcheck validate --traces 5000 --output val/                       # local[*], default protocols + mutants
    snapcheck validate --traces 1000000 --master spark://host:7077 --output /shared/val/   # ships the kit
    snapcheck validate --traces 200 --engine python --protocols unaligned --mutants none
    snapcheck validate --input traces.parquet --output checked/ [--cut P0=1,P1=V] [--failures all]   # DuckDB
    snapcheck validate --input /shared/t.parquet --master spark://host:7077 --conf spark.executor.memory=4g

See docs/spark.md.
"""

from __future__ import annotations

import os
import sys
import tempfile

import click

from snapcheck.console import make_console
from snapcheck.options import DefaultsFromCode, catalogue_protocols, cut_option, exploration_strategies
from snapcheck.traces.errors import UsageError


def _names(values: tuple[str, ...], option: str) -> tuple[str, ...] | None:
    """The names of a comma-list option (None: not given); given but naming nothing is a usage error."""
    out = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
    if values and not out:
        raise UsageError(f"{option} {','.join(values)!r} names nothing (leave the option out for the default)")
    return out or None


def _parse_conf(values: tuple[str, ...]) -> dict:
    conf = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf {v!r}: expected KEY=VALUE, e.g. spark.executor.memory=4g")
        conf[key.strip()] = value
    return conf


def _writable(out_dir: str) -> None:
    """``--output`` must be a directory this process can create and write in (exit 2, not a
    traceback). Directories made to find out are removed again: a later usage error leaves
    nothing behind, and the job makes them when it writes."""
    made = []  # the directories this test creates, deepest first
    d = os.path.abspath(out_dir)
    while not os.path.exists(d) and d != os.path.dirname(d):
        made.append(d)
        d = os.path.dirname(d)
    try:
        os.makedirs(out_dir, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".snapcheck-write-test-"):
            pass
    except OSError as exc:
        raise UsageError(f"--output {out_dir}: cannot write there ({exc.strerror or exc})") from None
    finally:
        for d in made:
            try:
                os.rmdir(d)
            except OSError:
                break


# the files ``validate --input`` writes under ``--output``
INPUT_OUTPUTS = ("summary.md", "summary.json", "violations.parquet", "quarantine.parquet", "traces.parquet")


def _outside_input(out_dir: str, input_path: str) -> None:
    """``validate --input`` never writes over its input, nor into an input directory (whose
    Parquet files it reads: its own results would become input of the next run)."""
    from snapcheck.traces.atomic import refuse_inputs

    for name in INPUT_OUTPUTS:
        refuse_inputs(os.path.join(out_dir, name), [input_path])
    if os.path.isdir(input_path):
        out, inp = os.path.realpath(out_dir), os.path.realpath(input_path)
        if out == inp or out.startswith(inp + os.sep):
            raise UsageError(
                f"--output {out_dir} is inside the input directory {input_path}: the results would "
                "be read as traces next time; write them elsewhere"
            )


@click.command("validate")
@click.option("--traces", "-n", type=int, default=None, help="Simulate and check this many random runs.")
@click.option(
    "--input",
    "input_path",
    type=click.Path(exists=True),
    default=None,
    help="Check the traces of a v1 Parquet file (or directory) instead.",
)
@click.option(
    "--protocols",
    "-p",
    multiple=True,
    cls=DefaultsFromCode,
    defaults=catalogue_protocols,
    help="Protocols to validate, comma-separated: catalogue names, MODULE:CLASS or path/to/file.py:CLASS "
    "(your own protocols; shipped to the executors). Default: every protocol of the catalogue: "
    "{defaults}.",
)
@click.option("--workloads", "-w", multiple=True, help="Workloads to draw from (comma-separated; default: all).")
@click.option(
    "--mutants",
    "-m",
    multiple=True,
    help="Mutants to run, comma-separated: catalogue names or MODULE:CLASS of a "
    "class declaring mutant_of (default: every mutant of a selected protocol: the catalogue's, and for your "
    "own protocol the classes its module defines with mutant_of naming it; 'none' for none).",
)
@click.option(
    "--explore",
    cls=DefaultsFromCode,
    defaults=exploration_strategies,
    default=None,
    help="Exploration strategy: {defaults}.",
)
@click.option("--no-failures", is_flag=True, help="Do not inject crashes into correct-protocol runs.")
@click.option(
    "--no-oracle",
    is_flag=True,
    help="Skip the end-to-end exactly-once oracle (re-simulation without failures; about a quarter of the cost).",
)
@click.option(
    "--conform",
    type=float,
    default=None,
    metavar="FRACTION",
    help="Also validate this fraction of the runs (0 < FRACTION <= 1, chosen from their seeds) against "
    "their protocol's TLA+ trace specification with TLC, on the executors (needs Java 17+ there), and "
    "compare the specification's verdict with the checker's. See docs/specs.md.",
)
@click.option("--seed", "-s", type=int, default=0, show_default=True, help="Base seed: run i uses seed SEED+i.")
@click.option(
    "--master",
    default=None,
    help="Spark master (default local[*]; e.g. local[2], spark://host:7077, yarn, k8s://https://host:443).",
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "python", "duckdb"]),
    default=None,
    help="--traces: spark (default) or python (the same work in a plain single-process loop). "
    "--input: duckdb (default on a local master: in this process) or spark (default on a cluster).",
)
@click.option(
    "--conf",
    "confs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Spark setting, repeatable (e.g. --conf spark.executor.memory=4g); wins over snapcheck's own.",
)
@click.option(
    "--ship/--no-ship",
    default=None,
    help="Send the kit, its Python environment (venv-pack) and user protocol modules to the executors "
    "(default: on for cluster masters). --no-ship: the executors have them already (e.g. an image), or "
    "give --conf spark.archives=... --conf spark.pyspark.python=... yourself. See docs/spark.md.",
)
@click.option(
    "--output",
    "-o",
    "out_dir",
    type=click.Path(file_okay=False),
    default="snapcheck-validation",
    show_default=True,
    help="Output directory (results, summary.md, summary.json).",
)
@cut_option("--input: also analyse this cut of every trace, e.g. P0=1,P1=V.")
@click.option(
    "--failures",
    "failure_set",
    default=None,
    help="--input: failure set for the recovery line (comma-separated processes or 'all').",
)
@click.option(
    "--semantics",
    type=click.Choice(["partial", "restart-all"]),
    default="partial",
    show_default=True,
    help="--input: recovery semantics.",
)
@click.option("--native-only", is_flag=True, help="--input: only the SQL checks (no per-trace checker).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def validate_cmd(
    traces,
    input_path,
    protocols,
    workloads,
    mutants,
    explore,
    no_failures,
    no_oracle,
    conform,
    seed,
    master,
    engine,
    confs,
    ship,
    out_dir,
    cut,
    failure_set,
    semantics,
    native_only,
    no_progress,
) -> None:
    """Validate protocols on many random simulated runs on Spark, or check Parquet traces (DuckDB
    in this process on a local master, Spark on a cluster).

    Exit codes: 0 clean; 1 a correct protocol failed, a mutant escaped, or an input trace
    has a violation; 2 bad input or usage (also: input rows were quarantined); 4 (--input)
    nothing judged in a trace (no property applied to it: no verdict).
    """
    console = make_console()
    if (traces is None) == (input_path is None):
        raise UsageError("validate: give either --traces N or --input FILE")
    session_options = {"conf": _parse_conf(confs), "ship": ship}
    if input_path is not None:
        if engine == "python":
            raise UsageError("validate --input runs on duckdb or spark, not python")
        if conform is not None:
            raise UsageError(
                "--conform applies to --traces (campaign runs); validate trace files with snapcheck conform"
            )
        from snapcheck.checker.notation import parse_failure_set
        from snapcheck.spark_validation.input_job import input_engine, markdown, validate_input

        if input_engine(master, engine) == "duckdb" and (confs or ship):
            raise UsageError(
                "--conf and --ship configure Spark; --input on a local master runs on DuckDB "
                "(give --engine spark to use Spark)"
            )
        failures = None
        if failure_set:
            failures = parse_failure_set(failure_set)
        _writable(out_dir)
        _outside_input(out_dir, input_path)
        res = validate_input(
            input_path,
            out_dir,
            master=master,
            engine=engine,
            cut=cut,
            failures=failures,
            semantics=semantics,
            native_only=native_only,
            session_options=session_options,
        )
        console.print(markdown(res.summary), markup=False)
        console.print(
            f"written: {out_dir}/summary.md, summary.json, violations.parquet, quarantine.parquet"
            + ("" if native_only else ", traces.parquet"),
            markup=False,
        )
        sys.exit(res.exit_code)
    if cut or failure_set or native_only:
        raise UsageError("--cut, --failures and --native-only apply to --input only")
    if conform is not None and not 0 < conform <= 1:
        raise UsageError(f"--conform {conform}: give the fraction of runs to validate, 0 < FRACTION <= 1")
    if traces < 1:
        raise UsageError("--traces must be at least 1")
    if engine == "duckdb":
        raise UsageError("--engine duckdb applies to --input; --traces runs on spark or python")
    engine = engine or "spark"
    if engine == "python" and (confs or ship or master):
        raise UsageError("--master, --conf and --ship configure Spark; --engine python runs in this process")
    _writable(out_dir)
    from snapcheck.spark_validation.main_job import run_validation

    summary = run_validation(
        traces,
        out_dir,
        protocols=_names(protocols, "--protocols"),
        workloads=_names(workloads, "--workloads"),
        mutants=_names(mutants, "--mutants"),  # "none": none (run_validation)
        failures=not no_failures,
        oracle=not no_oracle,
        conform=conform or 0.0,
        seed=seed,
        master=master,
        engine=engine,
        progress=not no_progress,
        console=console,
        explore=explore,
        session_options=session_options,
    )
    sys.exit(0 if summary["ok"] else 1)


def register(group) -> None:
    group.add_command(validate_cmd)

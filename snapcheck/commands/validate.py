"""``snapcheck validate``: randomized validation at scale on Spark, and Parquet trace checking.

    snapcheck validate --traces 5000 --out val/                       # local[*], default protocols + mutants
    snapcheck validate --traces 1000000 --master spark://host:7077 --out val/
    snapcheck validate --traces 200 --engine python --protocols unaligned --mutants none
    snapcheck validate --input traces.parquet --out checked/ [--cut P0=1,P1=V] [--failures all]

See docs/spark.md.
"""

from __future__ import annotations

import sys

import click

from snapcheck.options import DefaultsFromCode, catalogue_protocols, cut_option, exploration_strategies
from snapcheck.console import make_console

from snapcheck.traces.errors import UsageError


def _names(values: tuple[str, ...]) -> tuple[str, ...] | None:
    out = tuple(n.strip() for v in values for n in v.split(",") if n.strip())
    return out or None


@click.command("validate")
@click.option("--traces", "-n", type=int, default=None, help="Simulate and check this many random runs.")
@click.option("--input", "input_path", type=click.Path(exists=True), default=None,
              help="Check the traces of a v1 Parquet file (or directory) instead.")
@click.option("--protocols", multiple=True, cls=DefaultsFromCode, defaults=catalogue_protocols,
              help="Protocols to validate, comma-separated: catalogue names, MODULE:CLASS or path/to/file.py:CLASS "
                   "(your own protocols; shipped to the executors). Default: every protocol of the catalogue: "
                   "{defaults}.")
@click.option("--workloads", multiple=True, help="Workloads to draw from (comma-separated; default: all).")
@click.option("--mutants", multiple=True, help="Mutants to run, comma-separated: catalogue names or MODULE:CLASS of a "
              "class declaring mutant_of (default: every catalogue mutant of a selected protocol; 'none' for none).")
@click.option("--explore", cls=DefaultsFromCode, defaults=exploration_strategies, default=None,
              help="Exploration strategy: {defaults}.")
@click.option("--no-failures", is_flag=True, help="Do not inject crashes into correct-protocol runs.")
@click.option("--no-oracle", is_flag=True, help="Skip the end-to-end exactly-once oracle (re-simulation "
              "without failures; about a quarter of the cost).")
@click.option("--seed", type=int, default=0, show_default=True, help="Base seed: run i uses seed SEED+i.")
@click.option("--master", default=None, help="Spark master (default local[*]; e.g. local[2], spark://host:7077).")
@click.option("--engine", type=click.Choice(["spark", "python"]), default="spark", show_default=True,
              help="python: the same work in a plain single-process loop.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="snapcheck-validation",
              show_default=True, help="Output directory (results, summary.md, summary.json).")
@cut_option("--input: also analyse this cut of every trace, e.g. P0=1,P1=V.")
@click.option("--failures", "failure_set", default=None,
              help="--input: failure set for the recovery line (comma-separated processes or 'all').")
@click.option("--semantics", type=click.Choice(["partial", "restart-all"]), default="partial", show_default=True,
              help="--input: recovery semantics.")
@click.option("--native-only", is_flag=True, help="--input: only the Spark-native checks (no per-trace checker).")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
def validate_cmd(traces, input_path, protocols, workloads, mutants, explore, no_failures, no_oracle, seed, master, engine,
                 out_dir, cut, failure_set, semantics, native_only, no_progress) -> None:
    """Validate protocols on many random simulated runs, or check Parquet traces, on Spark.

    Exit codes: 0 clean; 1 a correct protocol failed, a mutant escaped, or an input trace
    has a violation; 2 bad input or usage (also: input rows were quarantined).
    """
    console = make_console()
    if (traces is None) == (input_path is None):
        raise UsageError("validate: give either --traces N or --input FILE")
    if input_path is not None:
        if engine != "spark":
            raise UsageError("validate --input runs on Spark only")
        from snapcheck.spark_validation.input_job import markdown, validate_input

        failures = None
        if failure_set:
            failures = "all" if failure_set == "all" else [p.strip() for p in failure_set.split(",") if p.strip()]
        res = validate_input(input_path, out_dir, master=master, cut=cut,
                             failures=failures, semantics=semantics, native_only=native_only)
        console.print(markdown(res.summary), markup=False)
        console.print(f"written: {out_dir}/summary.md, summary.json, violations.parquet, quarantine.parquet"
                      + ("" if native_only else ", traces.parquet"), markup=False)
        sys.exit(res.exit_code)
    if cut or failure_set or native_only:
        raise UsageError("--cut, --failures and --native-only apply to --input only")
    if traces < 1:
        raise UsageError("--traces must be at least 1")
    from snapcheck.spark_validation.main_job import run_validation

    names = _names(mutants)
    sel_mutants = () if names == ("none",) else names
    summary = run_validation(traces, out_dir, protocols=_names(protocols), workloads=_names(workloads),
                             mutants=sel_mutants, failures=not no_failures, oracle=not no_oracle, seed=seed,
                             master=master, engine=engine, progress=not no_progress, console=console,
                             explore=explore)
    sys.exit(0 if summary["ok"] else 1)


def register(group) -> None:
    group.add_command(validate_cmd)


"""Command-line options that mean the same thing in every command, defined once: a
cut (``--cut P0=1,P1=V``, parsed by ``checker.notation.parse_cut``), the JSON report
(``--json``) and the JUnit file (``--junit FILE``)."""

from __future__ import annotations

import click

from snapcheck.checker.notation import parse_cut
from snapcheck.traces.errors import UsageError


class CutType(click.ParamType):
    """``P0=1,P1=V`` (or the printed form ``{P0: 1, P1: V}``) -> ``{"P0": 1, "P1": "V"}``."""

    name = "CUT"

    def convert(self, value, param, ctx):
        if isinstance(value, dict):
            return value
        try:
            return parse_cut(value)
        except UsageError as exc:
            self.fail(str(exc), param, ctx)


CUT = CutType()


class OutputFile(click.Path):
    """A file a command writes. ``-`` is refused: no command writes the file to standard
    output (which carries its report), and ``-o -`` made a file named ``-``."""

    def __init__(self) -> None:
        super().__init__(dir_okay=False)

    def convert(self, value, param, ctx):
        if value == "-":
            self.fail("'-' is not a file: give a file name (standard output carries the report)", param, ctx)
        return super().convert(value, param, ctx)


OUTPUT_FILE = OutputFile()


def cut_option(help: str = "Global checkpoint to analyse: a checkpoint number or V per process, e.g. P0=1,P1=V."):
    return click.option("--cut", type=CUT, default=None, metavar="P0=1,P1=V", help=help)


def json_option(what: str):
    """``--json`` (``as_json``): one JSON document on stdout instead of text; ``what`` says what it holds."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print one JSON document {what}.")


def junit_option(what: str):
    """``--junit FILE`` (``junit_file``): JUnit XML, written atomically and never over an input."""
    return click.option("--junit", "junit_file", type=OUTPUT_FILE, default=None, help=f"Write JUnit XML: {what}.")


class DefaultsFromCode(click.Option):
    """An option whose help text ends with defaults read from the code when help is shown
    (``defaults``: a function returning the text), so help never retypes them."""

    def __init__(self, *args, defaults=None, **kw):
        self.defaults = defaults
        super().__init__(*args, **kw)

    def get_help_record(self, ctx):
        if self.defaults is not None and "{defaults}" in (self.help or ""):
            self.help = self.help.replace("{defaults}", self.defaults())
        return super().get_help_record(ctx)


def catalogue_protocols() -> str:
    from snapcheck.reference.catalogue import PROTOCOLS

    return ", ".join(PROTOCOLS)


def recovery_choices() -> str:
    from snapcheck.reference.catalogue import PROTOCOLS

    return ", ".join(name for name, cls in PROTOCOLS.items() if len(cls.recovery_modes) > 1)


def exploration_strategies() -> str:
    from snapcheck.spark_validation.configs import DEFAULT_STRATEGY
    from snapcheck.spark_validation.strategies import STRATEGIES

    return ", ".join(f"{s} (default)" if s == DEFAULT_STRATEGY else s for s in STRATEGIES)

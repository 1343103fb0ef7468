"""Command-line options that mean the same thing in every command, defined once: a
cut (``--cut P0=1,P1=V``, parsed by ``checker.notation.parse_cut``)."""

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


def cut_option(help: str = "Global checkpoint to analyse: a checkpoint number or V per process, e.g. P0=1,P1=V."):
    return click.option("--cut", type=CUT, default=None, metavar="P0=1,P1=V", help=help)

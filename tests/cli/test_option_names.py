"""One way to say each thing on the command line: every command's options are walked,
and a flag that means one thing must be spelled the same everywhere.

Rules (a conflicting pair fails the test, naming both commands):

* a short form names one long option across all commands (``-p`` is ``--protocol`` in
  ``simulate`` and ``--protocols`` in ``validate``: a list-valued option takes the
  plural; never ``--property`` somewhere else);
* a long option has the same short form in every command that has it (or none in all);
* the meanings listed in ``CANONICAL`` (protocol, runs, output, seed, JSON, cut,
  parallelism) use their canonical spelling wherever a command offers them.
"""

from __future__ import annotations

from collections import defaultdict

import click

from snapcheck.cli import cli

# meaning -> (long option, its short form or None); the parameter names that carry it
CANONICAL = {
    "protocol": (("--protocol", "--protocols"), "-p", {"protocol", "protocols"}),
    "runs": (("--traces",), "-n", {"traces", "n_traces", "runs"}),
    "output": (("--output",), "-o", {"output", "out_dir"}),
    "seed": (("--seed",), "-s", {"seed"}),
    "json": (("--json",), None, {"as_json"}),
    "cut": (("--cut",), None, {"cut"}),
    "parallelism": (("--parallelism",), "-P", {"parallelism"}),
}


def commands(group: click.Group = cli, path: tuple = ()):
    """(command path, command) of every leaf command of the ``snapcheck`` group."""
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from commands(cmd, path + (name,))
        else:
            yield " ".join(path + (name,)), cmd


def options():
    """(command, long names, short names, parameter name) of every option."""
    for where, cmd in commands():
        for p in cmd.params:
            if isinstance(p, click.Option):
                names = p.opts + p.secondary_opts
                yield (
                    where,
                    tuple(sorted(n for n in names if n.startswith("--"))),
                    tuple(sorted(n for n in names if not n.startswith("--"))),
                    p.name,
                )


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def test_a_short_form_names_one_option_everywhere():
    meaning = defaultdict(set)
    for where, longs, shorts, _ in options():
        for s in shorts:
            meaning[s].add((tuple(_singular(x) for x in longs), where))
    conflicts = {s: sorted(v) for s, v in meaning.items() if len({longs for longs, _ in v}) > 1}
    assert not conflicts, conflicts


def test_a_long_option_has_one_short_form_everywhere():
    shorts_of = defaultdict(set)
    for where, longs, shorts, _ in options():
        for x in longs:
            shorts_of[x].add((shorts, where))
    conflicts = {x: sorted(v) for x, v in shorts_of.items() if len({s for s, _ in v}) > 1}
    assert not conflicts, conflicts


def test_canonical_meanings_use_their_canonical_spelling():
    wrong = []
    for where, longs, shorts, name in options():
        for meaning, (spellings, short, params) in CANONICAL.items():
            if name in params and not (set(longs) & set(spellings) and (short is None or short in shorts)):
                wrong.append((where, meaning, longs, shorts))
    assert not wrong, wrong


def test_the_walk_sees_every_command_and_the_rules_can_fail():
    where = {w for w, *_ in options()}
    assert {"check", "simulate", "validate", "replay", "render", "shrink", "flink run", "flink campaign"} <= where

    @click.command()
    @click.option("--property", "-p")
    def bad(property):
        """A command that reuses -p for another meaning."""

    cli.add_command(bad, "zz-bad")
    try:
        try:
            test_a_short_form_names_one_option_everywhere()
        except AssertionError as exc:
            assert "-p" in str(exc)
        else:
            raise AssertionError("a conflicting -p was not found")
    finally:
        del cli.commands["zz-bad"]


def test_every_file_a_command_writes_refuses_dash():
    """``-o -`` wrote a file named ``-``: every option naming a file a command writes is an
    ``OutputFile`` (``-`` is a usage error, exit 2), and one is checked end to end."""
    from click.testing import CliRunner

    from snapcheck.options import OutputFile

    writes = {"output", "junit_file", "html_file", "metrics_json"}
    seen = []
    for path, cmd in commands():
        for p in cmd.params:
            if p.name in writes and isinstance(p.type, click.Path) and p.type.file_okay:
                assert isinstance(p.type, OutputFile), (path, p.name)
                seen.append(path)
    assert {"simulate", "check", "convert", "render", "shrink", "shiviz"} <= set(seen)
    res = CliRunner().invoke(cli, ["simulate", "-o", "-"])
    assert res.exit_code == 2 and "'-' is not a file" in res.output

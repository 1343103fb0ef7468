"""Every example in a docstring of the kit runs and gives what it shows (doctest), so the
documentation in the code cannot drift from the code."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

# Modules whose import starts something heavy or optional (a JVM, Flink's Python package).
SKIP = ("snapcheck.__main__",)


def modules() -> list[str]:
    """Every module of every package the build maps under ``snapcheck`` (each from its own
    directory: the repository keeps them apart)."""
    names = set()
    for top in (
        "snapcheck",
        "snapcheck.traces",
        "snapcheck.checker",
        "snapcheck.reference",
        "snapcheck.spark_validation",
        "snapcheck.flink",
    ):
        package = importlib.import_module(top)
        names.add(top)
        names |= {m.name for m in pkgutil.walk_packages(package.__path__, top + ".")}
    return sorted(n for n in names if not n.startswith(SKIP))


@pytest.mark.parametrize("name", [n for n in modules()])
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} doctest example(s) failed"

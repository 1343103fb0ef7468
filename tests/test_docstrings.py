"""Every public function and class of the checker (``snapcheck.checker``, without the
TLA+ package ``snapcheck.checker.tla``) has a docstring with at least one runnable
example (``>>>``); ``tests/test_doctests.py`` runs the examples."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import inspect
import pkgutil

import pytest

import snapcheck.checker

EXCLUDED = ("snapcheck.checker.tla",)


def checker_modules() -> list[str]:
    """The modules of ``snapcheck.checker``, the package itself included, without ``EXCLUDED``."""
    names = {"snapcheck.checker"} | {
        m.name for m in pkgutil.walk_packages(snapcheck.checker.__path__, "snapcheck.checker.")
    }
    return sorted(n for n in names if not any(n == x or n.startswith(x + ".") for x in EXCLUDED))


def undocumented(module) -> list[str]:
    """The public functions and classes defined in ``module`` (not imported into it) whose own
    docstring has no doctest example."""
    out = []
    for name, obj in vars(module).items():
        if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        doc = obj.__doc__ or ""  # a class's own docstring: ``__doc__`` is not inherited
        if not doctest.DocTestParser().get_examples(doc):
            out.append(name)
    return out


@pytest.mark.parametrize("name", checker_modules())
def test_public_names_have_a_docstring_with_an_example(name):
    missing = undocumented(importlib.import_module(name))
    assert not missing, f"{name}: no docstring with a >>> example for {', '.join(missing)}"


def test_the_tla_package_is_left_out_and_the_rest_is_walked():
    names = checker_modules()
    assert not [n for n in names if n.startswith("snapcheck.checker.tla")]
    assert {"snapcheck.checker", "snapcheck.checker.api", "snapcheck.checker.zcycles"} <= set(names)


def test_undocumented_names_are_found(tmp_path):
    source = tmp_path / "fake_checker_module.py"
    source.write_text('''
from inspect import getdoc            # imported: not this module's to document

def bare(): pass

def prose():
    """A docstring without an example."""

def taught():
    """Doubles.

    >>> taught() * 2
    2
    """
    return 1

def _helper(): pass

class Plain:
    """A class without an example."""

class Sub(Plain):
    pass

class Taught:
    """A class with an example.

    >>> Taught().x
    1
    """
    x = 1
''')
    spec = importlib.util.spec_from_file_location("fake_checker_module", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert undocumented(module) == ["bare", "prose", "Plain", "Sub"]

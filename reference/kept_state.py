"""What a user's protocol keeps outside a run: the data attributes of its modules and
classes (a cache in a module, a registry on a class), and what they held when the kit
imported them, before anything ran.

A run's reproduction command starts a fresh process: the user's modules are imported
and the run begins from that state. A campaign's run in a process where earlier runs (or
the dry runs of an exploration strategy) filled such a cache begins from another one, so
the kit simulates a failing run again from the state as imported
(``spark_validation.runner.UserState``) to tell whether its command reproduces it.
"""

from __future__ import annotations

import copy
import inspect
import sys
from types import ModuleType

_FIRST: dict[tuple[object, str], object] = {}  # (module or class, attribute) -> a deep copy, as imported
_UNCOPIED = object()  # a value that cannot be copied (a lock, a file)


def data_attributes(owner) -> list[tuple[str, object]]:
    """``(name, value)`` of the data attributes of a module or class: neither dunder names,
    functions, classes, modules nor descriptors.

    >>> import types
    >>> m = types.ModuleType("m"); m.CACHE = {}; m.f = len; m.LIMIT = 3
    >>> data_attributes(m)
    [('CACHE', {}), ('LIMIT', 3)]
    """
    return [
        (k, v)
        for k, v in list(vars(owner).items())
        if not k.startswith("__")
        and not callable(v)
        and not inspect.ismodule(v)
        and not isinstance(v, (classmethod, staticmethod, property))
    ]


def users_modules(names) -> list[ModuleType]:
    """The modules among ``names`` (of ``sys.modules``) that are the user's: neither the
    kit's nor installed with Python (the standard library, site-packages)."""
    prefixes = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix})
    out = []
    for name in names:
        m = sys.modules.get(name)
        where = getattr(m, "__file__", None)
        if m is None or not where or name.split(".")[0] == "snapcheck" or where.startswith(prefixes):
            continue
        out.append(m)
    return out


def remember(modules: list[ModuleType]) -> None:
    """Keep a deep copy of every data attribute of ``modules`` (just imported) and of the
    classes they define, for ``first_value``; an attribute already kept is left as it was."""
    for m in modules:
        owners = [m, *(c for c in vars(m).values() if inspect.isclass(c) and c.__module__ == m.__name__)]
        for owner in owners:
            for k, v in data_attributes(owner):
                remember_value(owner, k, v)


def remember_value(owner, name: str, value) -> None:
    """Keep a deep copy of ``value`` as the first value of attribute ``name`` of ``owner``
    (a module or class), unless one is kept already (``remember``: as imported); a value
    that cannot be copied is never given back."""
    if (owner, name) in _FIRST:
        return
    try:
        _FIRST[(owner, name)] = copy.deepcopy(value)
    except Exception:  # noqa: BLE001 - a lock, a file, an object that refuses copying
        _FIRST[(owner, name)] = _UNCOPIED


def first_value(owner, name: str) -> tuple[bool, object]:
    """``(True, a deep copy of the value)`` attribute ``name`` of ``owner`` had when it was
    first kept (``remember``, ``remember_value``); ``(False, None)`` when none was kept or
    it could not be copied.

    >>> import types
    >>> m = types.ModuleType("m"); m.CACHE = {}
    >>> remember([m]); m.CACHE["k"] = 1
    >>> first_value(m, "CACHE"), first_value(m, "OTHER")
    ((True, {}), (False, None))
    """
    value = _FIRST.get((owner, name), _UNCOPIED)
    if value is _UNCOPIED:
        return False, None
    return True, copy.deepcopy(value)

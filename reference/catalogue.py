"""The protocol catalogue: every protocol and mutant the kit knows, with the facts
each declares on its class (``snapcheck.reference.protocol.Protocol``), and the
protocols a user writes in a module of their own.

A protocol is named either by its catalogue name (``abs-aligned``) or by where
its class lives: ``MODULE:CLASS`` (a module importable from the current
directory or ``PYTHONPATH``) or ``path/to/file.py:CLASS``. Both kinds get the
same treatment everywhere: the simulator, the campaigns, the listings and the
checker read the same class attributes.

>>> resolve("abs-aligned").topologies
'acyclic'
>>> resolve("hmnr-clock").header_name()
'hmnr'
>>> sorted(m for m in MUTANTS if MUTANTS[m].mutant_of == "abs-cyclic")
['abs-cyclic-as-printed', 'abs-cyclic-early-back-edge']
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from snapcheck.reference.changelog import mutants as changelog_mutants
from snapcheck.reference.changelog.protocol import GicChangelog
from snapcheck.reference.cic import mutants as cic_mutants
from snapcheck.reference.cic.bcs import BCS
from snapcheck.reference.cic.hmnr import HMNR, HMNRClock
from snapcheck.reference.commit import mutants as commit_mutants
from snapcheck.reference.commit.protocol import TwoPhaseCommitABS
from snapcheck.reference.coordinated import mutants as coordinated_mutants
from snapcheck.reference.coordinated import rescale_mutants
from snapcheck.reference.coordinated.abs_aligned import AlignedABS
from snapcheck.reference.coordinated.abs_cyclic import CyclicABS
from snapcheck.reference.coordinated.aligned_timeout import AlignedTimeout
from snapcheck.reference.coordinated.chandy_lamport import ChandyLamport
from snapcheck.reference.coordinated.unaligned import Unaligned
from snapcheck.reference.kept_state import remember, users_modules
from snapcheck.reference.protocol import Protocol, TaskProtocol
from snapcheck.reference.regional import mutants as regional_mutants
from snapcheck.reference.regional.protocol import RegionalAligned, RegionalUnaligned
from snapcheck.reference.replication import mutants as replication_mutants
from snapcheck.reference.replication.protocol import KaZoo, LiveRobin
from snapcheck.reference.uncoordinated import mutants as uncoordinated_mutants
from snapcheck.reference.uncoordinated.protocol import UNC
from snapcheck.reference.user_code import module_name, user_frame
from snapcheck.traces.errors import UsageError
from snapcheck.traces.protocol_facts import CIC_FORMS, PROMISABLE, TlaMapping

PROTOCOLS: dict[str, type[Protocol]] = {
    cls.name: cls
    for cls in (
        ChandyLamport,
        AlignedABS,
        CyclicABS,
        Unaligned,
        AlignedTimeout,
        UNC,
        HMNR,
        HMNRClock,
        BCS,
        TwoPhaseCommitABS,
        GicChangelog,
        LiveRobin,
        KaZoo,
        RegionalAligned,
        RegionalUnaligned,
    )
}


def _mutants_of(module) -> list[type[Protocol]]:
    """The mutants a family module defines, in definition order."""
    return [
        cls
        for cls in vars(module).values()
        if inspect.isclass(cls) and issubclass(cls, Protocol) and cls.mutant_of and cls.__module__ == module.__name__
    ]


MUTANTS: dict[str, type[Protocol]] = {
    cls.name: cls
    for module in (
        coordinated_mutants,
        uncoordinated_mutants,
        cic_mutants,
        commit_mutants,
        changelog_mutants,
        replication_mutants,
        rescale_mutants,
        regional_mutants,
    )
    for cls in _mutants_of(module)
}

_LOADED: dict[str, type[Protocol]] = {}
_NAMED: dict[type[Protocol], str] = {}  # classes named by a spec they were not loaded by (name_as)
_BASES: dict[type[Protocol], str] = {}  # user mutants' base specs as the driver read them (set_base)


def is_reference(spec: str) -> bool:
    """Does ``spec`` name a class in a module (``MODULE:CLASS`` or ``FILE.py:CLASS``)?"""
    return isinstance(spec, str) and ":" in spec


def load(spec: str) -> type[Protocol]:
    """The ``Protocol`` subclass named by ``MODULE:CLASS`` or ``path/to/file.py:CLASS``.

    A file is imported under a module name derived from its resolved path, so the
    same file always gives the same class (and Spark executors that receive the
    file import it the same way); its directory goes last on ``sys.path``, so it may
    import its siblings, and a file of the user's named like a module of Python or of
    the kit's environment (``random.py``) does not replace that module. A module that fails to import, a missing class or
    a class that is not a ``Protocol`` is a ``UsageError`` naming the reason.
    """
    if spec in _LOADED:
        return _LOADED[spec]
    where, _, clsname = spec.rpartition(":")
    if not where or not clsname.isidentifier():
        raise UsageError(f"protocol {spec!r}: expected MODULE:CLASS or path/to/file.py:CLASS")
    imported = set(sys.modules)
    try:
        with redirect_stdout(sys.stderr):  # what it prints is not the command's output (--json)
            module = _import_file(where) if where.endswith(".py") or os.sep in where else _import_module(where)
        remember(users_modules(set(sys.modules) - imported))  # their state before anything ran
    except UsageError:
        raise
    except BaseException as exc:  # noqa: BLE001 - a user module may raise anything while importing
        raise UsageError(
            f"protocol {spec!r}: importing {where} failed: {type(exc).__name__}: {exc}{user_frame(exc.__traceback__)}"
            + _package_hint(where, exc)
        ) from None
    cls = getattr(module, clsname, None)
    if cls is None:
        raise UsageError(f"protocol {spec!r}: {where} has no class {clsname}")
    if not (inspect.isclass(cls) and issubclass(cls, Protocol)):
        raise UsageError(f"protocol {spec!r}: {clsname} is not a subclass of snapcheck.reference.protocol.Protocol")
    _LOADED[spec] = checked(cls, spec)
    return cls


_CHECKED: set[type[Protocol]] = set()


def checked(cls: type[Protocol], spec: str | None = None) -> type[Protocol]:
    """``cls`` once its declarations are checked (``declaration_problems``, once per class;
    the kit's own are not): a problem is a ``UsageError`` naming the protocol (``spec``, or
    ``spec_of(cls)``), whether the class came by name, as a class or as an instance."""
    if cls in _CHECKED or is_builtin(cls):
        return cls
    problems = declaration_problems(cls)
    if problems:
        raise UsageError(f"protocol {spec or spec_of(cls)!r}: " + "; ".join(problems))
    _CHECKED.add(cls)
    return cls


TOPOLOGIES = ("any", "acyclic", "cyclic", "own")
BOOLEAN_FACTS = (  # the facts a protocol declares as True or False (reference.protocol.Protocol)
    "aligned",
    "observe_arrivals",
    "observe_processing",
    "dedup",
    "fifo",
    "abort_notices",
    "failure_free_oracle",
    "barriers_delimit_channel_state",
    "finished_inputs",
    "rescalable",
)


def declaration_problems(cls: type[Protocol]) -> list[str]:
    """What is wrong with the facts and handlers ``cls`` declares, as a user would fix it
    (empty when nothing is): ``topologies`` one of ``TOPOLOGIES``, ``guarantees`` a tuple
    of promisable properties, ``cic`` None or a known form, ``recovery_modes`` a
    tuple of names, ``BOOLEAN_FACTS`` booleans (``rescalable`` and ``finished_inputs`` False with its own ``simulator``), ``max_rounds_in_flight`` None or a positive integer, ``mutant_of`` a
    protocol that exists, and — for the shared simulator — a topology it can run (not
    ``own``), ``recovery_modes`` it implements (``restart-all``) and a ``task_class`` subclassing ``TaskProtocol`` whose handlers take
    the arguments the simulator passes them.

    >>> class Typo(Protocol):
    ...     topologies = "acylic"
    ...     mutant_of = "no-such-protocol"
    >>> for p in declaration_problems(Typo): print(p)
    topologies = 'acylic': expected one of any, acyclic, cyclic, own
    mutant_of = 'no-such-protocol': unknown protocol 'no-such-protocol' (known: ...; or give MODULE:CLASS)
    >>> [cls for cls in {**PROTOCOLS, **MUTANTS}.values() if declaration_problems(cls)]
    []
    """
    if cls is Protocol:
        return ["Protocol itself is the base class every protocol subclasses: name your subclass"]
    out = []
    for attr in ("name", "trace_name"):
        value = getattr(cls, attr)
        if not (isinstance(value, str) and value.strip()) and not (attr == "trace_name" and value is None):
            out.append(f"{attr} = {value!r}: expected a non-empty string (the protocol's name in the trace header)")
    if out:
        return out
    if cls.simulator is not None and not inspect.isclass(cls.simulator):
        out.append(
            f"simulator = {cls.simulator!r}: expected a simulator class (e.g. UncoordinatedSimulator itself, "
            "not its name), or None for the shared dataflow simulator"
        )
        return out
    namesake = by_trace_name(cls.header_name()) if not cls.mutant_of else None
    if namesake is not None and namesake is not cls and facts_of(namesake) != facts_of(cls):
        out.append(
            f"name = {cls.header_name()!r}: the catalogue's protocol of that name declares other facts "
            f"({facts_of(namesake)}, this one {facts_of(cls)}), and a trace is judged by the facts of the "
            "protocol it names: give yours a name of its own (or declare it a mutant_of that protocol)"
        )
    kit_mutant = MUTANTS.get(cls.name) if isinstance(cls.name, str) else None
    if kit_mutant is not None and kit_mutant is not cls:
        out.append(
            f"name = {cls.name!r}: the name of the kit's mutant {cls.name} (of {base_of(kit_mutant)}); "
            "traces, reports and campaign tables would show yours as the kit's: give yours a name of its own"
        )
    if cls.topologies not in TOPOLOGIES:
        out.append(f"topologies = {cls.topologies!r}: expected one of {', '.join(TOPOLOGIES)}")
    modes = cls.recovery_modes
    if not (isinstance(modes, (tuple, list)) and modes and all(isinstance(m, str) and m for m in modes)):
        out.append(f"recovery_modes = {modes!r}: expected a tuple of recovery names, e.g. ('restart-all',)")
    promised = cls.guarantees
    if not isinstance(promised, (tuple, list)) or any(g not in PROMISABLE for g in promised):
        out.append(f"guarantees = {promised!r}: expected a tuple of {', '.join(map(repr, PROMISABLE))} (or empty)")
    for fact in BOOLEAN_FACTS:
        if not isinstance(getattr(cls, fact), bool):
            out.append(f"{fact} = {getattr(cls, fact)!r}: expected True or False")
    for fact, what in (
        ("rescalable", "a rescale (SimConfig.rescale)"),
        ("finished_inputs", "finishing sources (SimConfig.finish_sources)"),
    ):
        if getattr(cls, fact) is True and cls.simulator is not None:
            out.append(
                f"{fact} = True: {what} is modelled by the shared simulator only, "
                f"not by {getattr(cls.simulator, '__name__', cls.simulator)}: declare it False"
            )
    if cls.cic is not None and cls.cic not in CIC_FORMS:
        out.append(f"cic = {cls.cic!r}: expected None or one of {', '.join(map(repr, CIC_FORMS))}")
    rounds = cls.max_rounds_in_flight
    if rounds is not None and not (isinstance(rounds, int) and not isinstance(rounds, bool) and rounds >= 1):
        out.append(f"max_rounds_in_flight = {rounds!r}: expected None (any) or a positive integer")
    for names, what in (("situations", "situation names"), ("job_faults", "fault names")):
        value = getattr(cls, names)
        if not (isinstance(value, (tuple, list)) and all(isinstance(n, str) and n for n in value)):
            out.append(f"{names} = {value!r:.80}: expected a tuple of {what}, e.g. ({value!r:.40},)")
    if cls.tla is not None and not isinstance(cls.tla, TlaMapping):
        out.append(f"tla = {cls.tla!r:.80}: expected None or a TlaMapping (traces.protocol_facts)")
    if cls.crash_targets is not None and not isinstance(cls.crash_targets, str):
        out.append(f"crash_targets = {cls.crash_targets!r:.80}: expected None or a sentence naming the tasks to crash")
    base = cls.mutant_of
    if base:
        if inspect.isclass(base):
            if not issubclass(base, Protocol):
                out.append(f"mutant_of = {base.__qualname__}: not a subclass of Protocol")
        elif not isinstance(base, str):
            out.append(f"mutant_of = {base!r}: expected a protocol class, a catalogue name or MODULE:CLASS")
        else:
            try:
                resolve(base_of(cls))
            except UsageError as exc:
                out.append(f"mutant_of = {base!r}: {exc}")
    if cls.simulator is None:
        if cls.topologies == "own":
            out.append(
                "topologies = 'own': the shared dataflow simulator runs a protocol on the campaign's "
                "workloads; a protocol that builds its own processes brings its own simulator (Protocol.simulator)"
            )
        if isinstance(modes, (tuple, list)) and any(m != "restart-all" for m in modes):
            out.append(
                f"recovery_modes = {tuple(modes)!r}: the shared dataflow simulator recovers by restarting "
                "every task from the last completed round ('restart-all') only; a protocol with another "
                "recovery brings its own simulator (Protocol.simulator)"
            )
        out.extend(_handler_problems(cls.task_class))
    elif inspect.isclass(cls.task_class):  # a simulator of the kit's calls the hooks of its task class
        out.extend(_signature_problems(cls.task_class))
    return out


def _handler_problems(task_class) -> list[str]:
    """Why the shared simulator cannot call ``task_class``'s handlers as
    ``TaskProtocol`` documents them (empty when it can)."""
    if not (inspect.isclass(task_class) and issubclass(task_class, TaskProtocol)):
        what = task_class.__qualname__ if inspect.isclass(task_class) else f"an instance of {type(task_class).__name__}"
        return [
            f"task_class = {what}: expected a subclass of snapcheck.reference.protocol.TaskProtocol "
            "(the class, not an instance)"
        ]
    return _signature_problems(task_class)


_A = {bool: "True or False", int: "an int", float: "a float", str: "a string"}


def _signature_problems(task_class: type) -> list[str]:
    """The handlers of ``task_class`` that cannot be called as the kit's class it derives
    from (the nearest base class of the kit: ``TaskProtocol``, ``UncoordinatedTask``, a
    catalogue protocol's task class) declares them, which is how its simulator calls them.

    >>> from snapcheck.reference.uncoordinated.protocol import UncoordinatedTask
    >>> class Mine(UncoordinatedTask):
    ...     def must_force(self, pb): return None
    ...     piggyback_size = "4"
    >>> for p in _signature_problems(Mine): print(p)
    Mine.must_force(self, pb) cannot be called as must_force(self, ch, pb)
    Mine.piggyback_size = '4': expected an int (as UncoordinatedTask.piggyback_size = 0)
    """
    kit = next((c for c in task_class.__mro__[1:] if c.__module__.startswith("snapcheck.")), None)
    if kit is None:
        return []
    out = []
    for name in dir(kit):
        documented = getattr(kit, name)
        mine = getattr(task_class, name)
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(documented, (bool, int, float, str)) and type(mine) is not type(documented):
            out.append(
                f"{task_class.__qualname__}.{name} = {mine!r}: expected {_A[type(documented)]} "
                f"(as {kit.__qualname__}.{name} = {documented!r})"
            )
            continue
        if not inspect.isfunction(documented) or mine is documented:
            continue
        params = list(inspect.signature(documented).parameters)
        if not callable(mine):
            out.append(
                f"{task_class.__qualname__}.{name} = {mine!r}: not a method (called as {name}({', '.join(params)}))"
            )
            continue
        bound = inspect.ismethod(mine) or isinstance(inspect.getattr_static(task_class, name), staticmethod)
        try:  # self (unless a static or class method) plus what the simulator passes, positionally
            inspect.signature(mine).bind(*params[1 if bound else 0 :])
        except TypeError:
            out.append(
                f"{task_class.__qualname__}.{name}{inspect.signature(mine)} cannot be called as "
                f"{name}({', '.join(params)})"
            )
        except ValueError:  # no signature to read (a builtin): the call will tell
            continue
    return out


def register(spec: str, cls: type[Protocol]) -> None:
    """Make ``load(spec)`` return ``cls`` in this process without importing ``spec``'s module
    or file: for a process that got the class another way, e.g. a Spark executor to which the
    driver sent the module (a ``FILE.py`` path of the driver need not exist there).

    >>> register("elsewhere/mine.py:Mine", resolve("unaligned")); load("elsewhere/mine.py:Mine").name
    'unaligned'
    """
    if not (is_reference(spec) and inspect.isclass(cls) and issubclass(cls, Protocol)):
        raise UsageError(f"cannot register {spec!r}: expected MODULE:CLASS or FILE.py:CLASS and a Protocol class")
    _LOADED[spec] = cls


def name_as(cls: type[Protocol], spec: str) -> None:
    """Have ``spec_of(cls)`` give ``spec``: on a Spark executor, the name the driver gave the
    base protocol of a user's mutant (a class the executor loads from a shipped copy of
    its file, whose path would name it otherwise)."""
    _NAMED[cls] = spec


def _package_hint(where: str, exc: BaseException) -> str:
    """How to name a file of a package whose relative imports failed (a file is imported
    on its own, not as a package's module).

    >>> _package_hint("pkg/proto.py", ImportError("attempted relative import with no known parent package"))
    '; a file of a package with relative imports is named as its module: pkg.proto:CLASS, from the directory above pkg'
    """
    p = Path(where)
    if not (isinstance(exc, ImportError) and "relative import" in str(exc) and p.suffix == ".py"):
        return ""
    module = ".".join([*p.parent.parts[-1:], p.stem]) if p.parent.parts else p.stem
    return f"; a file of a package with relative imports is named as its module: {module}:CLASS, from the directory above {p.parent.name or '.'}"


def _import_module(name: str):
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())  # "importable from the current directory", after Python's own
    return importlib.import_module(name)


def _import_file(path: str):
    p = Path(path).resolve()
    if not p.is_file():
        raise UsageError(f"protocol module {path}: no such file")
    name = module_name(p)
    if name in sys.modules:
        return sys.modules[name]
    _no_namesake(p)
    if str(p.parent) not in sys.path:
        sys.path.append(str(p.parent))  # its sibling modules import (after Python's own: see ``load``)
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:  # a file no importer takes (no .py suffix, ...)
        raise UsageError(f"protocol module {path}: not a Python module (a file.py)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _no_namesake(p: Path) -> None:
    """A protocol file whose directory holds a module (``common.py``, a package) that this
    process already imported from another directory of the user's is refused: Python keeps
    one module per name, so the file would silently get the other directory's module."""
    for sib in p.parent.iterdir():
        name = (
            sib.stem if sib.suffix == ".py" and sib.is_file() else sib.name if (sib / "__init__.py").is_file() else None
        )
        other = sys.modules.get(name) if name and name != "snapcheck" else None  # (the kit's own wins)
        where = Path(getattr(other, "__file__", None) or "")
        if other is None or not where.is_file() or where.resolve().is_relative_to(p.parent):
            continue
        if any(where.resolve().is_relative_to(Path(x).resolve()) for x in {sys.prefix, sys.base_prefix}):
            continue  # a module of Python or of the environment (the sibling is never imported)
        raise UsageError(
            f"protocol module {p}: its directory holds {sib.name}, but this process already imported "
            f"{name} from {where}: one process holds one module of a name, so the protocol would get that "
            "one; rename one of them (or run the protocols in separate commands)"
        )


def resolve(spec, kind: str = "protocol") -> type[Protocol]:
    """The protocol class named by ``spec``: a catalogue name (a protocol or a mutant),
    ``MODULE:CLASS``, ``FILE.py:CLASS``, a ``Protocol`` subclass or instance. ``kind``
    ("protocol" or "mutant") words the error for an unknown name."""
    if inspect.isclass(spec) and issubclass(spec, Protocol):
        return checked(spec)
    if isinstance(spec, Protocol):
        return checked(type(spec))
    if not isinstance(spec, str):
        raise UsageError(f"a protocol is a name, MODULE:CLASS or a Protocol subclass, not {type(spec).__name__}")
    if is_reference(spec):
        return load(spec)
    cls = PROTOCOLS.get(spec) or MUTANTS.get(spec)
    if cls is None:
        known = MUTANTS if kind == "mutant" else PROTOCOLS
        raise UsageError(
            f"unknown {kind} {spec!r} (known: {', '.join(known)}; see snapcheck protocols; or give MODULE:CLASS)"
        )
    return cls


def as_list(value, what: str = "protocols") -> list | None:
    """Protocols (or mutants, workloads) given to an API function as a list: None stays
    None (the default selection); one string is a comma list, as on the command line
    (``"abs-aligned,unaligned"``; one name is a list of one); one ``Protocol`` class or
    instance is a list of one. Anything else that is not iterable is a ``UsageError``
    naming ``what``.

    >>> as_list("abs-aligned, unaligned"), as_list(resolve("unaligned")) == [resolve("unaligned")]
    (['abs-aligned', 'unaligned'], True)
    """
    if value is None:
        return None
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    if isinstance(value, Protocol) or inspect.isclass(value):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise UsageError(
            f"{what}: expected a list of names, MODULE:CLASS specs or Protocol classes (or one of them), "
            f"not {type(value).__name__}"
        ) from None


def is_builtin(cls: type[Protocol]) -> bool:
    """Is ``cls`` one of the kit's own protocols or mutants (not a user's)?"""
    return PROTOCOLS.get(cls.name) is cls or MUTANTS.get(cls.name) is cls


@contextmanager
def user_hook(cls: type[Protocol], hook: str) -> Iterator[None]:
    """Run ``hook`` of protocol class ``cls`` (its ``adjust``, its constructor): whatever a
    user's hook raises, ``sys.exit`` too, is the user's mistake, a ``UsageError`` naming
    the protocol, the hook and the line of the user's file. The kit's own protocols
    raise through: their errors are bugs of the kit.

    >>> from snapcheck.reference.protocol import Protocol
    >>> class Mine(Protocol):
    ...     name = "mine"
    >>> try:
    ...     with user_hook(Mine, "adjust"):
    ...         raise SystemExit(0)
    ... except UsageError as exc:
    ...     print(exc)
    protocol '...:Mine': adjust raised SystemExit: 0
    """
    try:
        yield
    except UsageError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a user's hook may raise anything
        if is_builtin(cls):
            raise
        raise UsageError(
            f"protocol {spec_of(cls)!r}: {hook} raised {type(exc).__name__}: {exc}{user_frame(exc.__traceback__)}"
        ) from None


def user_files(specs) -> list[str]:
    """The source files of the user's protocol classes among ``specs`` (names, specs,
    classes; None skipped): inputs of a command, never to be overwritten by its output."""
    out = []
    for spec in specs:
        if spec is None or (isinstance(spec, str) and not is_reference(spec)):
            continue
        cls = resolve(spec)
        if is_builtin(cls):
            continue
        try:
            out.append(inspect.getfile(cls))
        except (TypeError, OSError):  # a class without a file (made in memory)
            continue
    return out


def spec_of(cls: type[Protocol]) -> str:
    """How to name ``cls`` on a command line: its catalogue name, the ``MODULE:CLASS`` it
    was loaded by, or ``path/to/file.py:CLASS`` for a class defined in a file (which a
    Spark executor can load from the shipped copy)."""
    if is_builtin(cls):
        return cls.name
    if cls in _NAMED:
        return _NAMED[cls]
    for spec, loaded in _LOADED.items():
        if loaded is cls:
            return spec
    path = _file_of(cls)
    if "." not in cls.__qualname__:  # a class beside one the user named: named as the user wrote that one
        for spec, loaded in list(_LOADED.items()):  # (a mutant's base, or a base imported by a mutant's file)
            if loaded.__module__ == cls.__module__ or (path is not None and _file_of(loaded) == path):
                _NAMED[cls] = f"{spec.rpartition(':')[0]}:{cls.__qualname__}"  # (asked once per run)
                _LOADED.setdefault(_NAMED[cls], cls)  # what that spec loads in this process
                return _NAMED[cls]
    module = cls.__module__
    if path and path.endswith(".py") and "." not in cls.__qualname__ and module != "__main__":
        # a module of a package by its name, when that name finds this file (its relative
        # imports work only so); else by the file's path, which loads from any directory
        found = _find_spec(module) if "." in module else None
        same = found is not None and found.origin and os.path.realpath(found.origin) == os.path.realpath(path)
        spec = f"{module}:{cls.__qualname__}" if same else f"{_as_typed(path)}:{cls.__qualname__}"
        _LOADED[spec] = cls
        return spec
    return f"{module}:{cls.__qualname__}"  # a name for the record; not loadable (a local class, __main__)


def _as_typed(path: str) -> str:
    """A protocol file's path as a user names it: relative to the current directory when
    the file is under it (so a command naming it works on another machine, and a class
    found beside the user's named the same way whether the user named it or not), else
    absolute.

    >>> _as_typed(os.path.join(os.getcwd(), "protocols", "mine.py"))
    'protocols/mine.py'
    >>> _as_typed("/elsewhere/mine.py") == os.path.abspath("/elsewhere/mine.py")
    True
    """
    full = os.path.abspath(path)
    here = os.getcwd()
    return os.path.relpath(full, here) if full.startswith(here + os.sep) else full


def _find_spec(module: str):
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def as_spec(protocol, kind: str = "protocol") -> str:
    """A catalogue name or ``MODULE:CLASS`` string for ``protocol`` (a name, a spec, a
    ``Protocol`` subclass, or an instance made without constructor parameters); ``kind``
    words the error for an unknown name, as in ``resolve``."""
    if isinstance(protocol, str):
        resolve(protocol, kind)
        return protocol
    if isinstance(protocol, Protocol):
        if protocol.params:
            raise UsageError(
                f"protocol {type(protocol).__name__}({protocol.params}): a campaign names protocols by "
                "class; give constructor parameters defaults in a subclass"
            )
        protocol = type(protocol)
    cls = resolve(protocol)
    if cls.__module__ == "__main__":
        raise UsageError(
            f"protocol class {cls.__qualname__} is defined in the script that runs the campaign (__main__): "
            "its reproduction commands would run that script again; define it in a module of its own and "
            "import it"
        )
    spec = spec_of(cls)
    if not is_builtin(cls) and _LOADED.get(spec) is not cls:
        raise UsageError(
            f"protocol class {cls.__qualname__} cannot be loaded by name in another process (define "
            "it at the top level of a module or file)"
        )
    return spec


def mutant_class(spec) -> type[Protocol]:
    """The mutant class named by ``spec`` (as ``resolve``); a class that declares no
    ``mutant_of`` is a ``UsageError``."""
    cls = resolve(spec, "mutant")
    if not cls.mutant_of:
        raise UsageError(f"{spec} is not a mutant: its class declares no mutant_of")
    return cls


def _file_of(cls: type) -> str | None:
    """The resolved path of the file that defines ``cls`` (None: none)."""
    try:
        return os.path.realpath(inspect.getfile(cls))
    except (TypeError, OSError):
        return None


def base_of(mutant: type[Protocol]) -> str:
    """The spec of the correct protocol ``mutant`` mutates (its ``mutant_of``). A relative
    ``path/to/file.py:CLASS`` is read from the mutant's own file's directory, when the file
    is there (else from the current directory), so the mutant loads from anywhere; a Spark
    executor, which loads a shipped copy of the file, gets the spec the driver named it by
    (``set_base``)."""
    base = mutant.mutant_of
    assert base, f"{mutant.__qualname__} declares no mutant_of"  # every caller checks it first
    if isinstance(base, type):
        return spec_of(base)
    if mutant in _BASES:
        return _BASES[mutant]
    where, _, name = base.rpartition(":")
    if where.endswith(".py") and not os.path.isabs(where) and (home := _file_of(mutant)):
        beside = os.path.join(os.path.dirname(home), where)
        if os.path.isfile(beside):
            return f"{_as_typed(beside)}:{name}"
    return base


def set_base(mutant: type[Protocol], spec: str) -> None:
    """Have ``base_of(mutant)`` give ``spec``: on a Spark executor, the spec the driver gave
    the base protocol that ``mutant`` names by a relative file path."""
    _BASES[mutant] = spec


def mutants_of(base: str) -> list[type[Protocol]]:
    """The mutants of protocol ``base``: the catalogue's, of a built-in name; those its own
    module defines, of a user's protocol (``MODULE:CLASS`` or ``path/to/file.py:CLASS``).

    >>> [m.name for m in mutants_of("chandy-lamport")]
    ['chandy-lamport-no-channel-state', 'chandy-lamport-non-fifo']
    """
    if is_reference(base):
        return _mutants_beside(resolve(base))
    return [m for m in MUTANTS.values() if base_of(m) == base]


def by_trace_name(name: str) -> type[Protocol] | None:
    """The correct catalogue protocol whose traces carry ``name`` in their header."""
    for cls in PROTOCOLS.values():
        if cls.header_name() == name:
            return cls
    return None


def header_facts(protocol: dict | None) -> dict | None:
    """The facts the catalogue knows for a trace header's protocol (``params`` to
    complete what the header itself declares), or None for an unknown name."""
    cls = by_trace_name(str((protocol or {}).get("name", "")))
    return None if cls is None else facts_of(cls)


def facts_of(cls: type[Protocol]) -> dict:
    """What the checker reads of protocol ``cls`` (what it promises, what delimits its
    channel state), as ``header_facts`` gives it for a trace that names ``cls``."""
    facts: dict = {"aligned": cls.aligned}
    if cls.barriers_delimit_channel_state is False:
        facts["barriers_delimit_channel_state"] = False
    if cls.guarantees:
        facts["guarantees"] = list(cls.guarantees)
    if cls.cic:
        facts["cic"] = cls.cic
    return facts


def tla_mappings() -> dict:
    """Trace protocol name -> ``TlaMapping`` for every catalogue protocol with a TLA+
    trace specification."""
    out: dict[str, TlaMapping] = {}
    for cls in PROTOCOLS.values():
        if cls.tla is not None:
            out.setdefault(cls.header_name(), cls.tla)
    return out


def entry(cls: type[Protocol]) -> dict:
    """The catalogue row of a protocol: every fact it declares (JSON-serialisable)."""
    row = {
        "name": cls.name,
        "family": cls.family,
        "summary": cls.summary,
        "trace_name": cls.header_name(),
        "topologies": cls.topologies,
        "max_rounds_in_flight": cls.max_rounds_in_flight,
        "recovery_modes": list(cls.recovery_modes),
        "failure_free_oracle": cls.failure_free_oracle,
        "aligned": cls.aligned,
        "barriers_delimit_channel_state": cls.barriers_delimit_channel_state,
        "guarantees": list(cls.guarantees),
        "cic": cls.cic,
        "tla": cls.tla.module if cls.tla else None,
        "demo": _jsonable(cls.demo),
    }
    row.update({fact: getattr(cls, fact) for fact in BOOLEAN_FACTS if fact not in row})
    if cls.mutant_of:
        row.update(mutant_of=base_of(cls), bug=cls.bug, expect=list(cls.expect), prop=cls.prop)
    elif is_builtin(cls):
        row["mutants"] = [m.name for m in mutants_of(cls.name)]
    else:
        row["mutants"] = [spec_of(m) for m in _mutants_beside(cls)]
    return row


def _mutants_beside(cls: type[Protocol]) -> list[type[Protocol]]:
    """The mutants of user protocol ``cls`` that its own module defines."""
    out = []
    for m in vars(sys.modules.get(cls.__module__, object)).values():
        if not (inspect.isclass(m) and issubclass(m, Protocol) and m.mutant_of and m.__module__ == cls.__module__):
            continue
        try:
            if m.mutant_of is cls or (isinstance(m.mutant_of, str) and resolve(base_of(m)) is cls):
                out.append(m)
        except UsageError:  # a mutant_of naming nothing: its own listing says so
            continue
    return out


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value

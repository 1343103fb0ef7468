"""What a Spark cluster's executors need, sent with the job, so nothing has to be installed on them.

* **The kit**: the ``snapcheck`` packages as one zip (``SparkContext.addPyFile``),
  built from the installation the driver runs (an editable checkout: the
  packages and package data its ``pyproject.toml`` declares; an installed wheel:
  the files its record lists), so executors run exactly the driver's code.
* **Its Python dependencies**: the driver's virtual environment packed with
  venv-pack for ``spark.archives`` (unpacked as ``./environment`` in each
  executor's working directory; ``PYSPARK_PYTHON=./environment/bin/python``),
  without pyspark (the cluster's Spark puts its own, matching version on the
  Python path of every worker) and without the kit's own installation (shipped
  as the zip above). A virtual environment does not contain its base
  interpreter: ``bin/python`` links to the base Python the environment was made
  from, so executors need that Python (same version, same path) — true for a
  cluster of identical machines or images; see docs/spark.md for YARN and
  Kubernetes.
* **User protocol modules** (``MODULE:CLASS``, ``path/file.py:CLASS``): each
  module the driver loaded, and every module it imported from its own
  directory, is sent under the module name the driver gave it
  (``SparkContext.addPyFile``: a single file as is, a package as a zip), and
  every task registers the classes under their specs
  (``catalogue.register``), so executors import the same module and resolve
  the same spec to the same class.

Built archives are cached under ``$XDG_CACHE_HOME/snapcheck/spark`` (default
``~/.cache/snapcheck/spark``), named by a digest of their content (the kit) or of
the environment's installed distributions (the environment): the first run
after an install packs (≈ 30 s for a 1 GB environment), later runs reuse it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata as md
import importlib.util
import json
import os
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from snapcheck.traces.atomic import atomic_open, write_atomic

ENV_DIR = "environment"  # where executors unpack the environment
ENV_PYTHON = f"./{ENV_DIR}/bin/python"
NOT_PACKED = ("pyspark", "snapcheck")  # distributions left out of the packed environment
KEEP_KITS = 8  # kit zips kept in the cache


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base, "snapcheck", "spark")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _installed(name: str):
    """The distribution ``name`` as installed in this interpreter's environment (not a source
    checkout's ``*.egg-info`` that the current directory may put first on ``sys.path``)."""
    prefix = Path(sys.prefix).resolve()
    inside = [p for p in sys.path if p and Path(p).resolve().is_relative_to(prefix)]
    return next(iter(md.distributions(name=name, path=inside)), None) or md.distribution(name)


# -- the kit -------------------------------------------------------------------------------------


def kit_files() -> list[tuple[Path, str]]:
    """(file, name in the zip) for every module and data file of the installed kit."""
    dist = _installed("snapcheck")
    direct = dist.read_text("direct_url.json")
    info = json.loads(direct) if direct else {}
    if info.get("dir_info", {}).get("editable") and info.get("url", "").startswith("file://"):
        return _checkout_files(Path(info["url"][len("file://") :]))
    base = Path(dist.locate_file(""))
    return [
        (base / f, str(f).replace(os.sep, "/"))
        for f in dist.files or ()
        if str(f).startswith("snapcheck/") and "__pycache__" not in str(f)
    ]


def _checkout_files(root: Path) -> list[tuple[Path, str]]:
    """The files a wheel of the checkout at ``root`` would hold: each package of
    ``[tool.setuptools] packages`` from its ``package-dir`` directory (its ``.py`` files)
    plus its ``package-data`` patterns."""
    import tomllib

    cfg = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs, data = cfg.get("package-dir", {}), cfg.get("package-data", {})
    out = []
    for pkg in cfg["packages"]:
        parent = max((p for p in dirs if pkg == p or pkg.startswith(p + ".")), key=len, default="")
        src = (
            root / dirs.get(parent, "") / Path(*pkg[len(parent) :].lstrip(".").split("."))
            if parent
            else root / Path(*pkg.split("."))
        )
        arc = pkg.replace(".", "/")
        names = {p.name for p in src.glob("*.py")}
        names |= {str(p.relative_to(src)) for pat in data.get(pkg, ()) for p in src.glob(pat) if p.is_file()}
        out += [(src / n, f"{arc}/{n}") for n in sorted(names)]
    return out


def build_kit(dest: Path | None = None) -> str:
    """The kit as a zip (``snapcheck-kit-<digest>.zip``; an existing one with the same content is reused).

    >>> import zipfile; names = zipfile.ZipFile(build_kit()).namelist()
    >>> "snapcheck/traces/schema/trace-v1.schema.json" in names and "snapcheck/cli.py" in names
    True
    """
    files = kit_files()
    digest = hashlib.sha256()
    for src, arc in files:
        digest.update(arc.encode() + b"\0" + src.read_bytes() + b"\0")
    path = (dest or cache_dir()) / f"snapcheck-kit-{digest.hexdigest()[:16]}.zip"
    if not path.exists():
        with atomic_open(path) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for src, arc in files:
                z.write(src, arc)
        kits = sorted(path.parent.glob("snapcheck-kit-*.zip"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in kits[KEEP_KITS:]:  # a few stay: other checkouts may be running theirs
            old.unlink(missing_ok=True)
    return str(path)


# -- the environment -----------------------------------------------------------------------------


def _not_packed_patterns(prefix: Path) -> list[str]:
    """venv-pack exclusion patterns (paths relative to the environment) for the files of the
    distributions in ``NOT_PACKED``, from their records: a top-level directory of site-packages
    as a whole, any other file by its path."""
    patterns = set()
    for name in NOT_PACKED:
        try:
            dist = _installed(name)
        except md.PackageNotFoundError:
            continue
        site = Path(os.path.normpath(dist.locate_file("")))
        for f in dist.files or ():
            full = Path(os.path.normpath(site / f))
            if not full.is_relative_to(prefix):
                continue
            inner = full.relative_to(site).parts if full.is_relative_to(site) else ()
            if len(inner) > 1 and inner[0] != "__pycache__":
                patterns.add(f"{(site / inner[0]).relative_to(prefix)}/*")
            else:
                patterns.add(str(full.relative_to(prefix)))
    return sorted(patterns)


def environment_key(prefix: Path) -> str:
    """Digest of what the packed environment holds: the environment's path, Python version and
    installed distributions with their versions (the kit's own left out: it ships as the zip)."""
    paths = [p for p in sys.path if p and Path(p).resolve().is_relative_to(prefix)]
    dists = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in md.distributions(path=paths)
        if d.metadata["Name"] and d.metadata["Name"].lower() not in NOT_PACKED
    )
    return hashlib.sha256("\n".join([str(prefix), sys.version, *dists]).encode()).hexdigest()[:16]


def pack_environment(dest: Path | None = None) -> str:
    """The driver's virtual environment as a venv-pack archive (cached; see the module docstring).
    A driver that does not run in a virtual environment is a usage error naming the alternatives."""
    from snapcheck.traces.errors import UsageError

    prefix = Path(sys.prefix).resolve()  # venv-pack reports paths under the resolved prefix
    if sys.prefix == sys.base_prefix:
        raise UsageError(
            f"--ship packs the driver's virtual environment, but {sys.executable} does not run in "
            "one; run snapcheck from a venv, or give the executors an environment yourself with "
            "--no-ship --conf spark.archives=ENV.tar.gz#environment "
            "--conf spark.pyspark.python=./environment/bin/python"
        )
    try:
        import venv_pack
    except ImportError:
        raise UsageError("--ship needs venv-pack (pip install venv-pack)") from None
    dest = dest or cache_dir()
    tag = hashlib.sha256(str(prefix).encode()).hexdigest()[:8]
    path = dest / f"env-{tag}-{environment_key(prefix)}.tar.gz"
    if path.exists():
        return str(path)
    env = venv_pack.Env(str(prefix))
    for pattern in _not_packed_patterns(prefix):
        env = env.exclude(pattern)
    tmp = dest / f"{path.name[: -len('.tar.gz')]}.{os.getpid()}.partial.tar.gz"
    env.pack(output=str(tmp), format="tar.gz", compress_level=1, force=True)
    os.replace(tmp, path)
    for old in dest.glob(f"env-{tag}-*.tar.gz"):  # earlier packs of the same environment
        if old != path and ".partial." not in old.name:
            old.unlink(missing_ok=True)
    return str(path)


# -- user protocol modules -----------------------------------------------------------------------


@dataclass(frozen=True)
class UserProtocols:
    """Specs of user protocol classes and the classes (pickled by reference: module name and
    qualified name), sent with every task; ``register`` makes each spec resolve on an executor."""

    classes: dict = field(default_factory=dict)
    bases: dict = field(default_factory=dict)  # spec -> the base class of a user mutant, named by that spec
    named_bases: dict = field(default_factory=dict)  # a user mutant naming its base by a string -> its spec

    def register(self) -> None:
        from snapcheck.reference.catalogue import name_as, register, set_base

        for spec, cls in self.classes.items():
            register(spec, cls)
        for spec, cls in self.bases.items():
            name_as(cls, spec)
        for mutant, spec in self.named_bases.items():
            set_base(mutant, spec)


def user_protocols(specs) -> UserProtocols:
    """The user classes (``MODULE:CLASS`` / ``FILE.py:CLASS``) among ``specs``, loaded on the
    driver, and the correct protocol each user mutant among them mutates, under the spec the
    driver names it by (``catalogue.base_of``): an executor, which loads the shipped copies
    of the files, then names a run's protocol as the driver does, not by the copy's path."""
    from snapcheck.reference.catalogue import base_of, is_builtin, is_reference, resolve

    classes = {s: resolve(s) for s in specs if is_reference(s)}
    bases = {
        base_of(cls): cls.mutant_of
        for cls in classes.values()
        if isinstance(cls.mutant_of, type) and not is_builtin(cls.mutant_of)
    }
    named = {cls: base_of(cls) for cls in classes.values() if isinstance(cls.mutant_of, str)}
    classes |= {spec: resolve(spec) for spec in named.values() if is_reference(spec)}
    return UserProtocols(classes, bases, {cls: spec for cls, spec in named.items() if is_reference(spec)})


def module_files(protocols: UserProtocols, dest: Path | None = None) -> list[str]:
    """Files to ``addPyFile`` so that executors import every module of ``protocols`` by the name the
    driver gave it, and every module of its own directory that it may import (its siblings, e.g.
    a ``helpers.py`` next to it, or a package there; also those it imports only inside a handler,
    which the driver has not imported): a top-level module as ``NAME.py``, a package (or a module
    inside one) as a zip of its top-level package. Modules of the kit and of the packed
    environment are not sent, nor a sibling named like one of Python's or the environment's
    modules (it would replace that module on the executors; the driver does not import it
    either)."""
    dest = dest or cache_dir()
    tops = {cls.__module__.split(".")[0] for cls in [*protocols.classes.values(), *protocols.bases.values()]}
    roots = {root for top in tops if (root := _user_root(sys.modules.get(top) or importlib.import_module(top)))}
    tops |= {name for name, m in list(sys.modules.items()) if "." not in name and _user_root(m) in roots}
    files = {top: Path(sys.modules[top].__file__ or "") for top in tops if _user_root(sys.modules[top])}
    for root in roots:
        for name, origin in _siblings(root):
            if origin not in files.values():  # (a protocol file is shipped under the name it was loaded by)
                files.setdefault(name, origin)
    return [_shipped(top, origin, dest) for top, origin in sorted(files.items())]


def _siblings(root: Path) -> list[tuple[str, Path]]:
    """The top-level modules of directory ``root`` a protocol there may import: ``NAME.py``
    files and packages (``NAME/__init__.py``) whose name no module of Python or of the
    environment has."""
    out = []
    for p in sorted(root.iterdir()):
        name = p.stem if p.suffix == ".py" and p.is_file() else p.name if (p / "__init__.py").is_file() else None
        if name is None or not name.isidentifier() or name in sys.stdlib_module_names:
            continue
        found = importlib.util.find_spec(name) if name not in sys.modules else None
        theirs = sys.modules.get(name)
        if (theirs is not None and _user_root(theirs) is None) or (
            found is not None and found.origin and Path(found.origin).parent not in (root, p)
        ):
            continue  # a module of the environment has this name
        out.append((name, p / "__init__.py" if p.is_dir() else p))
    return out


def _user_root(module) -> Path | None:
    """The directory a top-level user module was imported from (None for the kit, the
    environment's and the standard library's modules, and modules without a file)."""
    origin = Path(getattr(module, "__file__", None) or "")
    if getattr(module, "__name__", None) in ("snapcheck", "__main__") or not origin.is_file():
        return None
    if any(origin.is_relative_to(Path(prefix)) for prefix in {sys.prefix, sys.base_prefix}):
        return None
    return origin.parent.parent if hasattr(module, "__path__") else origin.parent


def _shipped(top: str, origin: Path, dest: Path) -> str:
    """The cached file (``TOP.py``, or ``TOP.zip`` for a package) that ships the module whose
    file is ``origin`` (a package's ``__init__.py``)."""
    if origin.name == "__init__.py":  # a package: zip its directory
        root = origin.parent
        data = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        digest = hashlib.sha256(b"".join(p.read_bytes() for p in data)).hexdigest()[:12]
        path = dest / f"{top}-{digest}" / f"{top}.zip"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_open(path) as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
                for p in data:
                    z.write(p, f"{top}/{p.relative_to(root)}")
    else:  # one file, under its module name
        text = origin.read_bytes()
        path = dest / f"{top}-{hashlib.sha256(text).hexdigest()[:12]}" / f"{top}.py"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
    return str(path)


def ship_user_modules(sc, protocols: UserProtocols) -> None:
    """Send the modules of ``protocols`` to the executors of ``sc`` (once per file per context)."""
    sent: set[str] = getattr(sc, "_snapcheck_sent", set())
    for path in module_files(protocols):
        if path not in sent:
            sc.addPyFile(path)
            sent.add(path)
    sc._snapcheck_sent = sent

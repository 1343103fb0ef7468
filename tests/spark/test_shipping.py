"""What ``validate`` ships to a cluster's executors: the kit zip holds every module of the kit, the
packed environment leaves out pyspark and the kit's own installation, and a user protocol module
reaches an executor-like process (another interpreter, another directory, where the driver's file
path does not exist) under the driver's module name, its spec resolving to the same class."""

import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from snapcheck.spark_validation import shipping

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = """
from snapcheck.reference.coordinated.unaligned import Unaligned


class Shipped(Unaligned):
    name = "shipped"
"""


def test_kit_zip_holds_every_module_of_the_checkout(tmp_path):
    """Every .py file under the directories the build maps onto packages is in the kit (a package
    directory missing from pyproject's list would be missing from a wheel and from the executors)."""
    import tomllib

    names = set(zipfile.ZipFile(shipping.build_kit(tmp_path)).namelist())
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    expected = set()
    for pkg, d in dirs.items():
        for f in (ROOT / d).rglob("*.py"):
            rel = f.relative_to(ROOT / d)
            if "__pycache__" not in rel.parts:
                expected.add(f"{pkg.replace('.', '/')}/{rel.as_posix()}")
    assert expected <= names, sorted(expected - names)[:10]
    assert "snapcheck/traces/schema/trace-v1.schema.json" in names
    assert shipping.build_kit(tmp_path) == shipping.build_kit(tmp_path)  # same content, same file


def test_environment_leaves_out_pyspark_and_the_kit():
    prefix = Path(sys.prefix).resolve()
    patterns = shipping._not_packed_patterns(prefix)
    assert any(p.endswith("site-packages/pyspark/*") for p in patterns)
    assert not any("pyarrow" in p or p.endswith("site-packages/*") for p in patterns)
    kit_files = [p for p in patterns if "snapcheck" in p]
    assert kit_files, "the kit's own installation must be left out (it ships as the zip)"


def test_user_protocol_module_reaches_another_process(tmp_path, monkeypatch):
    from snapcheck.reference.catalogue import resolve

    src = tmp_path / "driver"
    src.mkdir()
    (src / "my_protocol.py").write_text(PROTOCOL)
    monkeypatch.chdir(src)
    spec = "my_protocol.py:Shipped"
    user = shipping.user_protocols(["unaligned", spec])
    assert list(user.classes) == [spec] and user.classes[spec] is resolve(spec)
    files = shipping.module_files(user, tmp_path / "cache")
    assert [Path(f).name for f in files] == [f"{resolve(spec).__module__}.py"]
    assert Path(files[0]).read_text() == PROTOCOL
    out = _in_executor(tmp_path, user, files, f"c = resolve({spec!r}); print(c.name, c.__module__, c.mutant_of)")
    assert out.split() == ["shipped", resolve(spec).__module__, "None"]


def test_packages_are_shipped_as_zips_and_the_kit_is_not(tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "myprotos"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "proto.py").write_text(PROTOCOL)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    user = shipping.user_protocols(["myprotos.proto:Shipped", "snapcheck.reference.coordinated.unaligned:Unaligned"])
    files = shipping.module_files(user, tmp_path / "cache")
    assert [Path(f).name for f in files] == ["myprotos.zip"]
    assert set(zipfile.ZipFile(files[0]).namelist()) == {"myprotos/__init__.py", "myprotos/proto.py"}


def test_a_protocol_file_ships_with_the_modules_it_imports_from_its_directory(tmp_path, monkeypatch):
    """A protocol file that imports a sibling module and a sibling package loads from another
    directory (as ``python path/file.py`` would), and an executor that never saw the driver's
    directory imports them, and a sibling only a handler imports, from what was shipped."""
    from snapcheck.reference.catalogue import resolve

    src = tmp_path / "proj"
    (src / "sibpkg").mkdir(parents=True)
    (src / "sibpkg" / "__init__.py").write_text("NAME = 'sib-pkg'\n")
    (src / "sibhelp.py").write_text(PROTOCOL)
    (src / "sibproto.py").write_text(
        "from sibhelp import Shipped\nfrom sibpkg import NAME\n\n\nclass Sib(Shipped):\n    name = NAME\n"
    )
    (src / "lazyhelp.py").write_text("X = 'lazy'\n")  # imported only inside a handler: shipped too
    (src / "random.py").write_text("")  # named like Python's own: never shipped (it would replace it)
    (src / "orjson.py").write_text("")  # named like a module of the environment: never shipped
    monkeypatch.chdir(tmp_path)
    spec = "proj/sibproto.py:Sib"
    user = shipping.user_protocols([spec])
    assert resolve(spec).name == "sib-pkg"
    files = shipping.module_files(user, tmp_path / "cache")
    names = sorted(Path(f).name for f in files)
    assert names == sorted(["lazyhelp.py", "sibhelp.py", "sibpkg.zip", f"{resolve(spec).__module__}.py"])
    out = _in_executor(tmp_path, user, files, f"print(resolve({spec!r}).name); import lazyhelp; print(lazyhelp.X)")
    assert out.split() == ["sib-pkg", "lazy"]


MUTANT_OF_IMPORTED = """
from base import Base


class Early(Base):
    name = "early"
    mutant_of = Base
    bug = "a bug"
    expect = ("orphan",)
    prop = "consistency"
"""


@pytest.mark.parametrize("base_given", [True, False])
def test_a_user_mutants_base_is_named_as_the_driver_names_it_on_an_executor_too(tmp_path, monkeypatch, base_given):
    """A mutant in its own file whose base it imports (``from base import Base``): its runs
    name the base as the user wrote the base's file (``base.py:Base``; given in
    ``--protocols`` or not), on the driver and on an executor, which loads both files from
    shipped copies: never by a copy's path (a reproduction command naming a temporary file
    of Spark's does not work when pasted), and the mutant is grouped with its base."""
    from snapcheck.reference.catalogue import base_of, resolve

    src = tmp_path / "driver"
    src.mkdir()
    (src / "base.py").write_text(PROTOCOL.replace("Shipped", "Base"))
    (src / "early.py").write_text(MUTANT_OF_IMPORTED)
    monkeypatch.chdir(src)
    specs = ["base.py:Base", "early.py:Early"] if base_given else ["early.py:Early"]
    user = shipping.user_protocols(specs)
    assert base_of(resolve("early.py:Early")) == "base.py:Base"
    files = shipping.module_files(user, tmp_path / "cache")
    out = _in_executor(
        tmp_path,
        user,
        files,
        "from snapcheck.reference.catalogue import base_of; print(base_of(resolve('early.py:Early')))",
    )
    assert out.split() == ["base.py:Base"]


def test_a_mutant_naming_its_base_by_a_path_beside_it_names_it_the_same_on_an_executor(tmp_path, monkeypatch):
    """``mutant_of = "root.py:Base"`` is read beside the mutant's file, here from another
    directory, and an executor (whose copy of the file lies elsewhere, with no ``root.py``
    beside it) gets the base by the same spec as the driver."""
    from snapcheck.reference.catalogue import base_of, resolve

    src = tmp_path / "driver"
    src.mkdir()
    (src / "root.py").write_text(PROTOCOL.replace("Shipped", "Base"))
    (src / "early.py").write_text(
        MUTANT_OF_IMPORTED.replace("from base", "from root").replace("mutant_of = Base", "mutant_of = 'root.py:Base'")
    )
    monkeypatch.chdir(tmp_path)
    user = shipping.user_protocols(["driver/early.py:Early"])
    assert base_of(resolve("driver/early.py:Early")) == "driver/root.py:Base"
    files = shipping.module_files(user, tmp_path / "cache")
    out = _in_executor(
        tmp_path,
        user,
        files,
        "from snapcheck.reference.catalogue import base_of; b = base_of(resolve('driver/early.py:Early')); "
        "print(b, resolve(b).name)",
    )
    assert out.split() == ["driver/root.py:Base", "shipped"]


def _in_executor(tmp_path, user, files, statement: str) -> str:
    """Run ``statement`` in a fresh interpreter, in a directory of its own, that has only the
    shipped ``files`` on its path and the unpickled ``user`` protocols registered, as an executor
    does; its standard output."""
    executor = tmp_path / "executor"
    executor.mkdir(exist_ok=True)
    paths = [f if f.endswith(".zip") else str(Path(f).parent) for f in files]
    code = (
        f"import sys, pickle; sys.path[:0] = {paths!r}; "
        f"u = pickle.loads({pickle.dumps(user)!r}); u.register(); "
        f"from snapcheck.reference.catalogue import resolve; {statement}"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=executor, capture_output=True, text=True, check=True).stdout


@pytest.mark.spark
def test_a_users_file_named_like_a_standard_module_breaks_neither_the_driver_nor_the_workers(tmp_path):
    """A ``random.py`` in the current directory and a protocol file named ``json.py``: Spark
    starts its Python workers with ``python -m`` from the current directory, which would put
    that ``random.py`` in place of Python's (``tempfile`` imports it) in every worker; the
    driver appends user directories after Python's own."""
    (tmp_path / "random.py").write_text("# a user's own random: no Random in it\n")
    (tmp_path / "json.py").write_text(
        "from snapcheck.reference.catalogue import PROTOCOLS\n\n\n"
        "class Mine(PROTOCOLS['abs-aligned']):\n    name = 'mine'\n"
    )
    snapcheck = str(Path(sys.executable).parent / "snapcheck")  # as a user runs it (not python -m)
    cmd = [snapcheck, "validate", "-n", "4", "-p", "json.py:Mine", "--mutants", "none"]
    res = subprocess.run(
        [*cmd, "--master", "local[1]", "--no-progress", "-o", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["runs"] == 4

"""The build installs every package of the source tree under the one ``snapcheck`` namespace."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_source_package_is_listed_for_the_build():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    found = set()
    for package, directory in config["package-dir"].items():
        base = ROOT / directory
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            found.add(".".join((package, *rel.parts)) if rel.parts else package)
    assert found - listed == set(), "packages missing from [tool.setuptools] packages"
    assert {p for p in listed - found if p != "snapcheck.specs"} == set(), "listed packages that do not exist"

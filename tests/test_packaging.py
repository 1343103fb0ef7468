"""The build installs every package of the source tree under the one ``snapcheck`` namespace."""

import tomllib
from pathlib import Path

import pytest

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


def _wheel(tmp_path) -> "Path":
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("snapcheck-*.whl")
    return wheel


def test_the_wheel_installs_one_top_level_package_with_its_data(tmp_path):
    import zipfile

    names = zipfile.ZipFile(_wheel(tmp_path)).namelist()
    assert {n.split("/")[0] for n in names} == {
        "snapcheck",
        next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA")),
    }
    for data in (
        "snapcheck/traces/schema/trace-v1.schema.json",
        "snapcheck/specs/manifest.json",
        "snapcheck/specs/ABS.tla",
        "snapcheck/traces/examples/checkmate_fig2b_orphan.jsonl",
    ):
        assert data in names


@pytest.mark.slow
def test_the_wheel_lives_next_to_the_pypi_package_traces(tmp_path):
    """``traces`` (unevenly-spaced time series) is a PyPI package: installing snapcheck next
    to it must break neither."""
    import subprocess
    import sys

    wheel = _wheel(tmp_path)
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel), "traces"], check=True, capture_output=True, timeout=1800
    )
    probe = (
        "import traces, snapcheck.traces, snapcheck.checker; "
        "ts = traces.TimeSeries(); ts[1] = 2; assert ts[1] == 2; "
        "print(traces.__file__); print(snapcheck.traces.__file__)"
    )
    out = subprocess.run([str(py), "-c", probe], check=True, capture_output=True, text=True, cwd=tmp_path).stdout
    pypi, ours = out.split()
    assert "site-packages/traces" in pypi and "site-packages/snapcheck/traces" in ours

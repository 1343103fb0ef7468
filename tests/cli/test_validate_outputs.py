"""``validate --input`` never destroys a user's file: it refuses an ``--output`` that would
write over the input or into an input directory (exit 2, before any work, the input
untouched)."""

from __future__ import annotations

import pytest


@pytest.fixture
def parquet_input(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    f = d / "traces.parquet"
    f.write_bytes(b"PAR1 not really parquet, never read")
    return d, f


def test_an_output_that_is_the_input_file_is_refused(snapcheck_cli, parquet_input):
    d, f = parquet_input
    before = f.read_bytes()
    code, text = snapcheck_cli("validate", "--input", str(f), "--output", str(d), stderr=True)
    assert code == 2 and "the output is the input" in text and "Traceback" not in text
    assert f.read_bytes() == before


@pytest.mark.parametrize("sub", ["", "results"])
def test_an_output_inside_the_input_directory_is_refused(snapcheck_cli, parquet_input, sub):
    d, f = parquet_input
    code, text = snapcheck_cli("validate", "--input", str(d), "--output", str(d / sub) if sub else str(d), stderr=True)
    assert code == 2 and "inside the input directory" in text
    assert sorted(p.name for p in d.iterdir()) == ["traces.parquet"]  # nothing written, no directory left behind

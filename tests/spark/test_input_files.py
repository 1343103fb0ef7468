"""``validate --input`` checks every file of its input before any work (``parquet_input.load``):
a directory with one unreadable or mistyped file is bad input naming that file (exit 2), never an
engine's error in the middle of the work, and a file that is not Parquet says how to convert it."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from snapcheck.spark_validation.input_job import validate_input
from snapcheck.traces.convert import jsonl_to_parquet
from snapcheck.traces.errors import TraceErrors

TRACE = Path(__file__).resolve().parents[2] / "traces" / "examples" / "theory_d_recorded.jsonl"


@pytest.fixture
def good(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    jsonl_to_parquet([str(TRACE)], str(d / "a.parquet"))
    return d


def _truncated(d: Path) -> str:
    data = (d / "a.parquet").read_bytes()
    (d / "b.parquet").write_bytes(data[: len(data) // 2])
    return "cannot read Parquet"


def _without_mid(d: Path) -> str:
    pq.write_table(pq.read_table(d / "a.parquet").drop_columns(["mid"]), d / "b.parquet")
    return "missing column(s) 'mid'"


def _mistyped(d: Path) -> str:
    table = pq.read_table(d / "a.parquet")
    pq.write_table(table.set_column(1, "line", table.column("line").cast("string")), d / "b.parquet")
    return "column 'line' has type string, expected bigint"


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("damage", [_truncated, _without_mid, _mistyped])
def test_a_bad_file_of_a_directory_is_bad_input_naming_it(request, good, tmp_path, engine, damage):
    if engine == "spark":
        request.getfixturevalue("spark")
    reason = damage(good)
    with pytest.raises(TraceErrors) as info:
        validate_input(str(good), str(tmp_path / "out"), master="local[2]", engine=engine)
    [error] = info.value.errors
    assert error.file == str(good / "b.parquet") and reason in error.reason


def test_the_command_says_which_file_and_why_exit_2(snapcheck_cli, good, tmp_path):
    _without_mid(good)
    code, text = snapcheck_cli("validate", "--input", str(good), "-o", str(tmp_path / "out"), stderr=True)
    assert code == 2 and "Traceback" not in text
    assert f"{good / 'b.parquet'}: not a snapcheck Parquet trace: missing column(s) 'mid'" in text


def test_a_jsonl_input_is_not_parquet_and_the_message_says_how_to_convert(snapcheck_cli, tmp_path):
    code, text = snapcheck_cli("validate", "--input", str(TRACE), "-o", str(tmp_path / "out"), stderr=True)
    assert code == 2 and "Traceback" not in text
    assert f"{TRACE}: not a Parquet file" in text and "snapcheck convert" in text


@pytest.mark.parametrize("name", ["_b.parquet", ".b.parquet", "_tmp/part-0.parquet"])
def test_a_parquet_file_no_engine_would_read_is_bad_input_naming_it(snapcheck_cli, good, tmp_path, name):
    """Spark skips files and folders whose names start with '_' or '.'; a trace file named so
    would be left out of the verdict without a word, so it is bad input (exit 2) naming it.
    Spark's own bookkeeping beside the data (``_SUCCESS``, ``.crc`` checksums) is not Parquet
    and stays allowed."""
    (good / "_SUCCESS").write_bytes(b"")
    (good / ".a.parquet.crc").write_bytes(b"crc")
    code, _ = snapcheck_cli("validate", "--input", str(good), "-o", str(tmp_path / "ok"), stderr=True)
    assert code == 4  # accepted as input (this example trace has nothing the checker judges)
    hidden = good / name
    hidden.parent.mkdir(exist_ok=True)
    hidden.write_bytes((good / "a.parquet").read_bytes())
    code, text = snapcheck_cli("validate", "--input", str(good), "-o", str(tmp_path / "out"), stderr=True)
    assert code == 2 and "Traceback" not in text
    assert f"{hidden}: a Parquet file named (or in a folder named) with a leading '_' or '.' is not read" in text


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_an_input_without_a_row_is_bad_input_not_a_clean_verdict(request, good, tmp_path, engine):
    """Zero rows (an empty table; or empty files beside a real one, which Spark writes for
    empty partitions and are fine): "0 traces, OK" read as a pass in CI."""
    if engine == "spark":
        request.getfixturevalue("spark")
    table = pq.read_table(good / "a.parquet")
    pq.write_table(table.slice(0, 0), good / "b.parquet")  # an empty part beside a trace: accepted
    empty = tmp_path / "empty"
    empty.mkdir()
    pq.write_table(table.slice(0, 0), empty / "a.parquet")
    with pytest.raises(TraceErrors) as info:
        validate_input(str(empty), str(tmp_path / "out"), master="local[2]", engine=engine)
    [error] = info.value.errors
    assert error.file == str(empty) and "empty input: no row in any Parquet file" in error.reason
    validate_input(str(good), str(tmp_path / "ok"), master="local[2]", engine=engine)


def test_converting_a_parquet_file_without_a_trace_is_bad_input(snapcheck_cli, good, tmp_path):
    empty = tmp_path / "empty.parquet"
    pq.write_table(pq.read_table(good / "a.parquet").slice(0, 0), empty)
    code, text = snapcheck_cli("convert", str(empty), "-o", str(tmp_path / "x.parquet"), stderr=True)
    assert code == 2 and f"{empty}: empty trace: the Parquet file has no rows" in text
    assert not (tmp_path / "x.parquet").exists()

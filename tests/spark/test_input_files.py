"""``validate --input`` checks every file of its input before any work (``parquet_input.load``):
a directory with one unreadable or mistyped file is bad input naming that file (exit 2), never an
engine's error in the middle of the work, and a file that is not Parquet says how to convert it."""

from pathlib import Path

import pyarrow as pa
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


@pytest.fixture
def violating(snapcheck_cli, tmp_path) -> Path:
    """A Parquet trace with a violation (a channel-state bug's demo run: ``dropped``)."""
    trace = tmp_path / "violating.jsonl"
    snapcheck_cli("simulate", "--mutant", "chandy-lamport-no-channel-state", "--demo", "-o", str(trace))
    jsonl_to_parquet([str(trace)], str(tmp_path / "violating.parquet"))
    return tmp_path / "violating.parquet"


def _as_pandas_writes_it(source: Path, target: Path) -> None:
    """The trace as pandas writes a frame it read: text columns of the ``category`` dtype
    (dictionary-encoded in the file) and integer columns with missing values as ``Int64``."""
    frame = pq.read_table(source).to_pandas()
    for name in frame.columns:
        frame[name] = frame[name].astype("category" if frame[name].dtype == object else "Int64")
    frame.to_parquet(target)


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
def test_a_trace_written_by_pandas_with_category_columns_reads_as_the_same_trace(request, violating, tmp_path, engine):
    """A dictionary-encoded column stores the same strings: refusing it refused every trace a
    user round-tripped through pandas with ``category`` columns."""
    if engine == "spark":
        request.getfixturevalue("spark")
    plain, encoded = tmp_path / "plain", tmp_path / "encoded"
    plain.mkdir(), encoded.mkdir()
    violating.rename(plain / "a.parquet")
    _as_pandas_writes_it(plain / "a.parquet", encoded / "a.parquet")
    assert "dictionary" in str(pq.read_schema(encoded / "a.parquet").field("proc").type)
    want = validate_input(str(plain), str(tmp_path / "want"), master="local[2]", engine=engine).summary
    got = validate_input(str(encoded), str(tmp_path / "got"), master="local[2]", engine=engine).summary
    assert want["exit_code"] == 1 and want["checker_kinds"] and want["rows_quarantined"] == 0
    for key in ("rows_checked", "rows_quarantined", "checker_kinds", "native_violations", "exit_code"):
        assert got[key] == want[key], key


def test_check_reads_a_pandas_written_trace_and_names_a_float_column_pandas_made(snapcheck_cli, violating, tmp_path):
    plain, encoded = violating, tmp_path / "encoded.parquet"
    _as_pandas_writes_it(plain, encoded)
    code, want = snapcheck_cli("check", str(plain))
    assert code == 1 and "dropped" in want
    assert snapcheck_cli("check", str(encoded)) == (1, want.replace(str(plain), str(encoded)))
    floats = tmp_path / "floats.parquet"
    pq.read_table(plain).to_pandas().to_parquet(floats)  # nullable integers become double
    code, text = snapcheck_cli("check", str(floats), stderr=True)
    assert code == 2 and "column 'seq' has type double, expected bigint" in text
    assert text.count("give such columns the Int64 dtype") == 1


def _damaged_page(d: Path) -> str:
    table = pq.read_table(d / "a.parquet")
    pq.write_table(table, d / "b.parquet")
    chunk = pq.ParquetFile(d / "b.parquet").metadata.row_group(0).column(1)  # the column 'line'
    data = bytearray((d / "b.parquet").read_bytes())
    middle = chunk.data_page_offset + chunk.total_compressed_size // 2
    data[middle : middle + 6] = bytes(b ^ 0xFF for b in data[middle : middle + 6])
    (d / "b.parquet").write_bytes(data)
    return "cannot read Parquet: "


def _not_utf8(d: Path) -> str:
    table = pq.read_table(d / "a.parquet")
    types = table.column("type").to_pylist()
    k = types.index("checkpoint")
    raw = pa.array([t.encode() if i != k else b"c\xffeckpoint" for i, t in enumerate(types)]).view(pa.string())
    pq.write_table(table.set_column(2, "type", raw), d / "b.parquet")
    return (
        f"cannot read Parquet: row {k + 1} of the file (trace '{TRACE}', line {k + 1}): column 'type' is not UTF-8 text"
    )


@pytest.mark.parametrize("damage", [_damaged_page, _not_utf8])
def test_a_damaged_page_or_a_string_not_utf8_is_bad_input_before_any_engine(snapcheck_cli, good, tmp_path, damage):
    """The columns of such a file are right: only reading its rows shows the damage, which an
    engine would meet in the middle of its work (a traceback, no file named)."""
    reason = damage(good)
    code, text = snapcheck_cli("validate", "--input", str(good), "-o", str(tmp_path / "out"), stderr=True)
    assert code == 2 and "Traceback" not in text
    assert f"{good / 'b.parquet'}: {reason}" in text
    for command in (("check", "--trace-id", str(TRACE)), ("convert", "-o", str(tmp_path / "x.jsonl"))):
        code, text = snapcheck_cli(*command[:1], str(good / "b.parquet"), *command[1:], stderr=True)
        assert code == 2 and "Traceback" not in text and reason in text, (command, text)


@pytest.mark.parametrize("where", ["results", "violations.parquet"])
def test_an_output_directory_holding_a_users_file_is_refused_not_emptied(snapcheck_cli, good, tmp_path, where):
    """A campaign's ``results`` dataset, or a dataset of ``--input``'s, is replaced by the
    next run: only when it holds nothing but what a dataset writer writes. A file of the
    user's there was deleted without a word (``rmtree``, Spark's overwrite mode)."""
    out = tmp_path / "out"
    (out / where).mkdir(parents=True)
    (out / where / "mine.txt").write_text("precious")
    if where == "results":
        args = ["validate", "-n", "2", "-p", "chandy-lamport", "-m", "none", "--engine", "python"]
    else:
        args = ["validate", "--input", str(good)]
    code, text = snapcheck_cli(*args, "-o", str(out), stderr=True)
    assert code == 2 and "mine.txt" in text and "Traceback" not in text
    assert (out / where / "mine.txt").read_text() == "precious"
    (out / where / "mine.txt").unlink()  # then the dataset is the kit's: written, and written again
    for _ in range(2):
        assert snapcheck_cli(*args, "-o", str(out), stderr=True)[0] in (0, 1, 4)  # a verdict, not exit 2


def test_a_value_longer_than_a_line_may_be_is_bad_input(snapcheck_cli, good, tmp_path):
    """A compressed Parquet file can hold a value far larger than itself (21 KB held 400 MB
    of ``extra``: 2.9 GB of memory, then a verdict): every reader holds each string to the
    line limit, as the JSONL readers hold each line."""
    table = pq.read_table(good / "a.parquet")
    extra = table.column("extra").to_pylist()
    k = next(i for i, t in enumerate(table.column("type").to_pylist()) if t != "header")
    extra[k] = '{"value": "' + "a" * 5000 + '"}'
    pq.write_table(table.set_column(11, "extra", pa.array(extra, pa.string())), good / "b.parquet")
    reason = f"row {k + 1} of the file (trace '{TRACE}', line {k + 1}): column 'extra' holds 5,013 bytes, more than"
    limit = ("--max-line-bytes", "4000")
    code, text = snapcheck_cli(*limit, "validate", "--input", str(good), "-o", str(tmp_path / "out"), stderr=True)
    assert code == 2 and reason in text and "Traceback" not in text
    for command in (("check", "--trace-id", str(TRACE)), ("convert", "-o", str(tmp_path / "x.jsonl"))):
        code, text = snapcheck_cli(*limit, command[0], str(good / "b.parquet"), *command[1:], stderr=True)
        assert code == 2 and reason in text, (command, text)
    assert snapcheck_cli("check", str(good / "b.parquet"), "--trace-id", str(TRACE))[0] != 2  # within the default

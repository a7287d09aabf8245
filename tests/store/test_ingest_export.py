"""Ingest of Parquet exports: the manifest and every row held to the rules of JSONL traces,
clean errors that name the file, row, field and value, and nothing stored on refusal."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.errors import StoreError
from sweep.store import SCHEMA_VERSION, export_parquet, ingest

from .conftest import counts, export_of, make_trace

runner = CliRunner()

_FIX = (
    "nothing of {folder} was stored (fix the file, or export the store again with 'sweep export --parquet')"
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid export: one definition, one solution, two workloads, three traces on two hardware."""
    traces = [
        (make_trace("s1", "wl-1", "NVIDIA_H100", latency=1.0), "a.jsonl"),
        (make_trace("s1", "wl-2", "NVIDIA_H100", latency=1.0), "a.jsonl"),
        (make_trace("s1", "wl-1", "NVIDIA_H200", latency=0.5), "b.jsonl"),
    ]
    return export_of(tmp_path_factory.mktemp("export"), traces)


@pytest.fixture
def exp(pristine: Path, tmp_path: Path) -> Path:
    """A copy of the valid export, to damage."""
    return Path(shutil.copytree(pristine, tmp_path / "exp"))


def _h100(exp: Path) -> Path:
    return next((exp / "traces" / "hardware=NVIDIA_H100").glob("*.parquet"))


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    pq.write_table(change(pq.read_table(path)), path)


def _set(table: pa.Table, column: str, values: list[object], type: pa.DataType | None = None) -> pa.Table:
    i = table.schema.get_field_index(column)
    return table.set_column(
        i, pa.field(column, type or table.schema.field(column).type), pa.array(values, type)
    )


def _record(table: pa.Table, row: int, **changes: object) -> pa.Table:
    """``table`` with row ``row``'s record changed at dotted paths (``a__b``)."""
    records = [str(r) for r in table.column("record").to_pylist()]
    obj = json.loads(records[row])
    for path, value in changes.items():
        *parents, last = path.split("__")
        cur = obj
        for p in parents:
            cur = cur[p]
        cur[last] = value
    records[row] = json.dumps(obj)
    return _set(table, "record", records, pa.string())


def _refused(exp: Path, db: Path, message: str) -> None:
    """Ingest through the CLI: exit 1, ``error: <message>``, and the store unchanged."""
    before = counts(db)
    res = runner.invoke(app, ["ingest", str(exp), "--store", str(db)])
    assert res.exit_code == 1, res.output
    assert res.stderr == f"error: {message}\n"
    assert res.stdout == ""
    assert counts(db) == before


def test_the_valid_export_ingests_whole(exp: Path, tmp_path: Path) -> None:
    r = ingest([exp], tmp_path / "s.duckdb")
    assert (r.added.traces, r.added.definitions, r.added.solutions, r.added.workloads) == (3, 1, 1, 2)
    assert counts(tmp_path / "s.duckdb") == (3, 1, 1, 2)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"schema_version": "3"}, "schema_version must be a whole number (got '3')"),
        ({"schema_version": 3.5}, "schema_version must be a whole number (got 3.5)"),
        ({"schema_version": True}, "schema_version must be a whole number (got True)"),
        ({"schema_version": None}, "schema_version must be a whole number (got None)"),
        ({"schema_version": 1}, f"schema_version must be from 2 to {SCHEMA_VERSION} (got 1)"),
        ({"rows": {"traces": "3"}}, "rows must map each table to a row count (got {'traces': '3'})"),
        ({"rows": [3]}, "rows must map each table to a row count (got [3])"),
        ({"format": "other"}, "format must be 'kernel-sweep-export' (got 'other')"),
    ],
)
def test_a_bad_manifest_is_refused(
    exp: Path, tmp_path: Path, manifest: dict[str, object], message: str
) -> None:
    data = json.loads((exp / "manifest.json").read_text())
    data.update(manifest)
    (exp / "manifest.json").write_text(json.dumps(data))
    _refused(
        exp,
        tmp_path / "s.duckdb",
        f"{exp / 'manifest.json'}: {message}; export the store again with 'sweep export --parquet'",
    )


def test_a_manifest_from_a_newer_version_says_upgrade(exp: Path, tmp_path: Path) -> None:
    data = json.loads((exp / "manifest.json").read_text())
    (exp / "manifest.json").write_text(json.dumps({**data, "schema_version": 99}))
    _refused(
        exp,
        tmp_path / "s.duckdb",
        f"{exp}: exported by a newer kernel-sweep (schema 99, this one reads up to {SCHEMA_VERSION}); upgrade "
        "kernel-sweep to ingest it",
    )


def test_a_damaged_manifest_beside_parquet_files_is_refused_not_read_as_loose_files(
    exp: Path, tmp_path: Path
) -> None:
    (exp / "manifest.json").write_text('{"format": "kernel-sweep-ex')
    before = counts(tmp_path / "s.duckdb")
    res = runner.invoke(app, ["ingest", str(exp), "--store", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 1
    assert res.stderr.startswith(f"error: {exp / 'manifest.json'}: cannot read the export manifest (")
    assert counts(tmp_path / "s.duckdb") == before


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "flipped"])
def test_a_damaged_parquet_file_is_refused(exp: Path, tmp_path: Path, damage: str) -> None:
    path = _h100(exp)
    data = path.read_bytes()
    path.write_bytes(
        {
            "garbage": b"not parquet at all" * 10,
            "truncated": data[: len(data) // 2],
            "empty": b"",
            "flipped": data[:4] + bytes(b ^ 0xFF for b in data[4:-8]) + data[-8:],
        }[damage]
    )
    res = runner.invoke(app, ["ingest", str(exp), "--store", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith(f"error: {path}: not a readable Parquet file (")
    assert res.stderr.endswith(_FIX.format(folder=exp) + "\n")
    assert counts(tmp_path / "s.duckdb") == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: pa.table({"foo": [1]}),
            "has no column 'record' (columns: 'foo'); not a traces file written by 'sweep export'",
        ),
        (
            lambda t: _set(t, "latency_ms", ["fast"] * t.num_rows, pa.string()),
            "column 'latency_ms' is string, expected double",
        ),
        (
            lambda t: _set(t, "record", [1] * t.num_rows, pa.int64()),
            "column 'record' is int64, expected string",
        ),
        (
            lambda t: _set(t, "status", ["BOGUS"] * t.num_rows),
            (
                "row 1: status: column is 'BOGUS' but the row's record says 'PASSED'; the export was "
                "altered after it was written"
            ),
        ),
        (
            lambda t: _set(t, "latency_ms", [-1.0] * t.num_rows),
            (
                "row 1: latency_ms: column is -1.0 but the row's record says 1.0; the export was altered "
                "after it was written"
            ),
        ),
        (
            lambda t: _record(t, 1, evaluation__status="BOGUS"),
            (
                "row 2: not a valid trace: evaluation.status: Input should be 'PASSED', 'INCORRECT_SHAPE', "
                "'INCORRECT_NUMERICAL', 'INCORRECT_DTYPE', 'RUNTIME_ERROR', 'COMPILE_ERROR' or 'TIMEOUT' "
                "(got 'BOGUS')"
            ),
        ),
        (
            lambda t: _record(t, 1, evaluation__performance__latency_ms=-1),
            (
                "row 2: not a valid trace: evaluation.performance.latency_ms: Input should be greater than "
                "or equal to 0 (got -1)"
            ),
        ),
        (
            lambda t: _record(t, 0, evaluation__timestamp="0001-01-01T00:00:00+05:00"),
            (
                "row 1: not a valid trace: evaluation.timestamp: must be a time between 1970-01-01 and "
                "2200-01-01 UTC (write the real time of the run, e.g. 2025-06-01T12:00:00Z), got "
                "'0001-01-01T00:00:00+05:00'"
            ),
        ),
        (
            lambda t: _record(t, 0, workload__axes={"batch": 2**70}),
            (
                "row 1: not a valid trace: workload.axes.batch: Input should be less than or equal to "
                f"9223372036854775807 (got {2**70})"
            ),
        ),
        (
            lambda t: _record(t, 0, evaluation__seed=2**64),
            (
                f"row 1: not a valid trace: evaluation.seed: Input should be less than or equal to "
                f"9223372036854775807 (got {2**64})"
            ),
        ),
        (
            lambda t: _record(t, 0, evaluation=None, solution=None),
            "row 1: record: a workload-only record (no evaluation) in the traces table",
        ),
        (
            lambda t: _set(t, "record", [None] * t.num_rows, pa.string()),
            "row 1: record: must be the record's JSON text (got None)",
        ),
        (
            lambda t: _set(t, "record", ["{not json"] * t.num_rows, pa.string()),
            "row 1: not valid JSON (key must be a string at column 2)",
        ),
        (
            lambda t: _set(t, "ingested_at", [-(2**62)] * t.num_rows, pa.timestamp("us", tz="UTC")),
            (
                "row 1: ingested_at: must be a time between 1970-01-01 and 2200-01-01 UTC (got "
                f"{-(2**62)} microseconds since 1970)"
            ),
        ),
    ],
)
def test_a_bad_traces_file_or_row_is_refused(
    exp: Path, tmp_path: Path, change: Callable[[pa.Table], pa.Table], message: str
) -> None:
    path = _h100(exp)
    _rewrite(path, change)
    _refused(exp, tmp_path / "s.duckdb", f"{path}: {message}; " + _FIX.format(folder=exp))


def test_bad_rows_of_the_other_tables_are_refused(exp: Path, tmp_path: Path) -> None:
    wl = exp / "workloads" / "workloads.parquet"
    _rewrite(wl, lambda t: _set(t, "definition", [None] * t.num_rows, pa.string()))
    _refused(
        exp,
        tmp_path / "s.duckdb",
        f"{wl}: row 1: definition: must name the workload's definition (got None); "
        + _FIX.format(folder=exp),
    )
    _rewrite(wl, lambda t: _set(_record(t, 0, axes={"batch": 0}), "definition", ["vec_add"] * t.num_rows))
    _refused(
        exp,
        tmp_path / "s.duckdb",
        f"{wl}: row 1: not a valid workload: workload.axes.batch: must be a whole number from 1 to "
        "9223372036854775807 (the size of a dimension) (got 0); " + _FIX.format(folder=exp),
    )
    defs = exp / "definitions" / "definitions.parquet"
    _rewrite(defs, lambda t: _record(t, 0, op_type=5))
    _refused(
        exp,
        tmp_path / "s.duckdb",
        f"{defs}: row 1: not a valid definition: op_type: Input should be a valid string (got 5); "
        + _FIX.format(folder=exp),
    )


def test_a_missing_file_is_caught_by_the_manifestcounts(exp: Path, tmp_path: Path) -> None:
    _h100(exp).unlink()
    _refused(
        exp,
        tmp_path / "s.duckdb",
        f"{exp}: manifest.json promises 3 traces rows but the files hold 1: the export is incomplete; "
        "nothing of it was stored (export the store again with 'sweep export --parquet')",
    )


def test_a_refusal_late_in_the_export_leaves_the_store_as_it_was(exp: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    log = tmp_path / "t.jsonl"
    log.write_text(make_trace("s9", "wl-9").to_json() + "\n")
    ingest([log], db)
    assert counts(db) == (1, 0, 0, 1)
    # Definitions, solutions, workloads and the H100 traces are fine; the last H200 row is not.
    h200 = next((exp / "traces" / "hardware=NVIDIA_H200").glob("*.parquet"))
    _rewrite(h200, lambda t: _record(t, t.num_rows - 1, evaluation__performance__latency_ms=-5))
    with pytest.raises(StoreError, match=f"^{h200}: row 1: not a valid trace"):
        ingest([exp], db, lock_timeout_s=1)
    assert counts(db) == (1, 0, 0, 1)
    # With small batches too (several inserts inside the one transaction).
    from sweep.store.ingestion._ingest import ingest_into
    from sweep.store.rows._writable_store import WritableStore

    store = WritableStore(db)
    with pytest.raises(StoreError):
        ingest_into(store, [exp], batch_rows=1)
    assert counts(db) == (1, 0, 0, 1)


def test_an_export_of_schema_version_2_still_ingests(exp: Path, tmp_path: Path) -> None:
    from sweep.store.db._schema import V3_TRACE_COLUMNS

    for path in (exp / "traces").rglob("*.parquet"):
        _rewrite(path, lambda t: t.drop_columns([c for c, _ in V3_TRACE_COLUMNS]))
    data = json.loads((exp / "manifest.json").read_text())
    (exp / "manifest.json").write_text(json.dumps({**data, "schema_version": 2}))
    assert ingest([exp], tmp_path / "s.duckdb").added.traces == 3


def test_real_traces_round_trip_through_an_export_with_nothing_lost(
    shared_data: Path, tmp_path: Path
) -> None:
    src = tmp_path / "src.duckdb"
    ingest([shared_data / "flashinfer-trace"], src)
    export_parquet(src, tmp_path / "exp")
    merged = tmp_path / "merged.duckdb"
    ingest([tmp_path / "exp"], merged)
    a, b = duckdb.connect(str(src), read_only=True), duckdb.connect(str(merged), read_only=True)
    try:
        for table, key in [("traces", "trace_key"), ("definitions", "name"), ("workloads", "uuid")]:
            want = a.sql(f"SELECT * FROM {table} ORDER BY {key}").to_arrow_table()
            got = b.sql(f"SELECT * FROM {table} ORDER BY {key}").to_arrow_table()
            assert want.num_rows > 0 and got.equals(want), table
    finally:
        a.close()
        b.close()

"""Schema versions: a stored v1 file (tests/data/store/v1.duckdb, made by make_v1_store.py)
migrates to the current schema on open; newer or foreign files are refused."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sweep.errors import StoreError
from sweep.store import SCHEMA_VERSION, Store, ingest, query

from .conftest import DATA


def test_fixture_is_really_version_1(v1_store: Path) -> None:
    con = duckdb.connect(str(v1_store), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert tables == {"store_meta", "traces", "definitions", "solutions"}
        assert con.execute("SELECT typeof(timestamp) FROM traces LIMIT 1").fetchall() == [("VARCHAR",)]
    finally:
        con.close()


def test_opening_a_v1_store_migrates_it(v1_store: Path) -> None:
    with Store(v1_store).writing() as con:
        assert con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchall() == [
            (str(SCHEMA_VERSION),)
        ]
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'traces'"
            ).fetchall()
        )
    assert (types["timestamp"], types["axes"], types["tags"]) == (
        "TIMESTAMP WITH TIME ZONE",
        "MAP(VARCHAR, BIGINT)",
        "VARCHAR[]",
    )
    got = query(
        v1_store,
        "SELECT workload_uuid, hardware, hardware_raw, status, op_type, tags, author, language, "
        "sweep, run_id, config_hash, settings_hash, source FROM traces ORDER BY timestamp",
    ).rows
    assert got[0] == (
        "wl-1",
        "NVIDIA_H100",
        "NVIDIA H100 80GB HBM3",
        "PASSED",
        "elementwise",
        ["demo", "v1"],
        "alice",
        "triton",
        "legacy-sweep",
        "run-2026-01",
        "cfg0001",
        "set0001",
        "migrated from schema v1",
    )
    assert [r[:4] for r in got[1:]] == [
        ("wl-2", "NVIDIA_H100", "NVIDIA H100 80GB HBM3", "PASSED"),
        ("wl-1", "NVIDIA_H200", "NVIDIA_H200", "PASSED"),
        ("wl-2", "NVIDIA_H200", "NVIDIA_H200", "RUNTIME_ERROR"),
    ]
    # Records survive exactly, and tables the old store lacked are filled from them.
    lines = (DATA / "v1_traces.jsonl").read_text().splitlines()
    recs = [
        json.loads(str(r[0])) for r in query(v1_store, "SELECT record FROM traces ORDER BY timestamp").rows
    ]
    assert recs == [json.loads(x) for x in lines]
    assert query(v1_store, "SELECT count(*) FROM workloads").rows == [(2,)]
    assert query(
        v1_store, "SELECT hardware_a, hardware_b, latency_ratio FROM cross_hardware WHERE status_b = 'PASSED'"
    ).rows == [("NVIDIA_H100", "NVIDIA_H200", 0.8)]


def test_migrated_keys_match_fresh_ingest(v1_store: Path) -> None:
    r = ingest([DATA / "v1_traces.jsonl"], v1_store)
    assert (r.added.traces, r.added.present) == (0, 4)


def test_reading_a_v1_store_migrates_it_first(v1_store: Path) -> None:
    assert query(v1_store, "SELECT value FROM store_meta WHERE key = 'schema_version'").rows == [
        (str(SCHEMA_VERSION),)
    ]


def test_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    with Store(path).writing() as con:
        con.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError) as e:
        query(path, "SELECT 1")
    assert str(e.value) == (
        f"{path} has schema version 99, newer than this kernel-sweep supports "
        f"({SCHEMA_VERSION}); upgrade kernel-sweep to read it"
    )


def test_foreign_duckdb_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE sales (x INT)")
    con.close()
    with pytest.raises(StoreError) as e:
        ingest([DATA / "v1_traces.jsonl"], path)
    assert str(e.value) == (
        "not a kernel-sweep store: it has tables sales but no store_meta; point --store "
        "at a store made by sweep, or at a new file"
    )

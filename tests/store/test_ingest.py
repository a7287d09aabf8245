"""Ingest: real FlashInfer-Bench files, torn and invalid lines, JSON records, Parquet merges."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sweep.errors import StoreError
from sweep.store import RowBatch, Store, StoreContext, export_parquet, ingest, query

from .conftest import make_definition, make_solution, make_trace


def test_real_flashinfer_trace_folder(shared_data: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    r = ingest([shared_data / "flashinfer-trace"], db)
    assert (r.files, r.traces_read, r.added.traces, r.added.present) == (5, 14, 14, 0)
    assert (r.workload_records, r.added.definitions, r.skipped) == (57, 2, 0)
    res = query(db, "SELECT DISTINCT op_type, hardware, hardware_raw, status FROM traces")
    assert res.rows == [("rmsnorm", "NVIDIA_A800", "NVIDIA A800-SXM4-80GB", "PASSED")]
    # Workload-only records are workloads, not evaluations.
    assert query(db, "SELECT count(*) FROM workloads").rows == [(57,)]
    # The stored record is the line, as an object.
    first = (shared_data / "flashinfer-trace/traces/rmsnorm/rmsnorm_h4096.jsonl").read_text().splitlines()[0]
    rec = query(db, "SELECT record FROM traces ORDER BY timestamp LIMIT 1").rows[0][0]
    assert json.loads(str(rec)) == json.loads(first)


def test_ingesting_the_same_files_twice_adds_nothing(shared_data: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ingest([shared_data / "flashinfer-trace/traces"], db)
    again = ingest([shared_data / "flashinfer-trace/traces"], db)
    assert (again.added.traces, again.added.present) == (0, 14)
    assert query(db, "SELECT count(*) FROM traces").rows == [(14,)]


def test_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    whole = make_trace("s1", "wl-1").to_json() + "\n" + make_trace("s1", "wl-2").to_json() + "\n"
    log.write_text(whole + make_trace("s1", "wl-3").to_json()[:70])
    r = ingest([log], tmp_path / "s.duckdb")
    assert (r.added.traces, r.skipped) == (2, 1)
    assert r.warnings == [f"{log}:3: incomplete last line (a write cut short?), skipped"]


def test_invalid_lines_are_skipped_with_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    bad_status = make_trace("s1", "wl-2").to_json_obj()
    bad_status["evaluation"]["status"] = "GREAT"
    log.write_text(
        "\n".join([make_trace("s1", "wl-1").to_json(), "{not json", json.dumps(bad_status), ""]) + "\n"
    )
    r = ingest([log], tmp_path / "s.duckdb")
    assert (r.added.traces, r.skipped) == (1, 2)
    assert r.warnings[0] == f"{log}:2: not valid JSON (key must be a string at column 2), skipped"
    assert r.warnings[1].startswith(
        f"{log}:3: not a valid trace: evaluation.status: Input should be 'PASSED'"
    )
    assert r.warnings[1].endswith(" (got 'GREAT'), skipped")


def test_json_files_of_each_kind(tmp_path: Path) -> None:
    d, s = make_definition(), make_solution("s1")
    (tmp_path / "def.json").write_text(d.to_json())
    (tmp_path / "sol.json").write_text(s.to_json())
    (tmp_path / "traces.json").write_text(
        json.dumps([make_trace("s1").to_json_obj(), make_trace("s1", "wl-2").to_json_obj()])
    )
    (tmp_path / "other.json").write_text('{"hello": 1}')
    r = ingest([tmp_path], tmp_path / "s.duckdb")
    assert (r.added.definitions, r.added.solutions, r.added.traces, r.skipped) == (1, 1, 2, 1)
    assert r.warnings == [
        f"{tmp_path / 'other.json'}: not a trace, definition or solution (keys: hello), skipped"
    ]
    assert query(tmp_path / "s.duckdb", "SELECT DISTINCT op_type, author FROM traces").rows == [
        ("elementwise", "alice")
    ]


def test_nan_infinity_strings_and_missing_optional_fields(tmp_path: Path) -> None:
    line = {
        "definition": "d",
        "workload": {"uuid": "u", "axes": {}, "inputs": {}},
        "solution": "s",
        "evaluation": {
            "status": "PASSED",
            "environment": {"hardware": "NVIDIA A100-SXM4-40GB"},
            "timestamp": "2025-01-01T00:00:00",
            "correctness": {"max_relative_error": "NaN", "max_absolute_error": "Infinity"},
            "performance": {"latency_ms": 1.0, "reference_latency_ms": 2.0, "speedup_factor": 2.0},
        },
    }
    (tmp_path / "f.jsonl").write_text(json.dumps(line) + "\n")
    r = ingest([tmp_path / "f.jsonl"], tmp_path / "s.duckdb")
    assert (r.added.traces, r.skipped) == (1, 0)
    got = query(
        tmp_path / "s.duckdb",
        "SELECT isnan(max_relative_error), max_absolute_error, hardware, log, libs FROM traces",
    ).rows
    assert got == [(True, float("inf"), "NVIDIA_A100", "", [])]


def test_missing_path_and_empty_folder_are_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=f"^no such file or folder: {tmp_path / 'nope'}$"):
        ingest([tmp_path / "nope"], tmp_path / "s.duckdb")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match=r"^nothing to ingest under .*empty: no \*\.jsonl or \*\.json files"):
        ingest([tmp_path / "empty"], tmp_path / "s.duckdb")
    (tmp_path / "x.parquet").write_bytes(b"")
    with pytest.raises(StoreError, match="ingest a whole Parquet export, not one of its files"):
        ingest([tmp_path / "x.parquet"], tmp_path / "s.duckdb")


def _cluster_store(path: Path, hardware: str, speed: float) -> Path:
    """A store as one cluster would have it: two solutions, two workloads, one hardware."""
    ctx = StoreContext.of(
        [make_definition()], [make_solution("s1"), make_solution("s2", body="out.copy_(x+x)")]
    )
    b = RowBatch()
    b.add_context(ctx)
    for sol in ("s1", "s2"):
        for wl in ("wl-1", "wl-2"):
            b.add_trace(make_trace(sol, wl, hardware, latency=1.0 / speed), context=ctx)
    st = Store(path)
    st.add(b)
    return path


def test_exports_of_two_clusters_merge_into_one_store(tmp_path: Path) -> None:
    h100 = _cluster_store(tmp_path / "h100" / "sweep.duckdb", "NVIDIA_H100", 1.0)
    h200 = _cluster_store(tmp_path / "h200" / "sweep.duckdb", "NVIDIA_H200", 2.0)
    e1 = export_parquet(h100, tmp_path / "exp-h100")
    e2 = export_parquet(h200, tmp_path / "exp-h200")
    assert (e1.traces, e1.hardware, e2.hardware) == (4, ["NVIDIA_H100"], ["NVIDIA_H200"])
    assert (tmp_path / "exp-h100" / "traces" / "hardware=NVIDIA_H100").is_dir()
    merged = tmp_path / "merged.duckdb"
    r = ingest([tmp_path / "exp-h100", tmp_path / "exp-h200"], merged)
    assert (r.exports, r.added.traces, r.added.definitions, r.added.solutions) == (2, 8, 1, 2)
    got = query(
        merged,
        "SELECT solution, workload_uuid, hardware_a, hardware_b, latency_ratio "
        "FROM cross_hardware ORDER BY ALL",
    ).rows
    assert got == [
        ("s1", "wl-1", "NVIDIA_H100", "NVIDIA_H200", 0.5),
        ("s1", "wl-2", "NVIDIA_H100", "NVIDIA_H200", 0.5),
        ("s2", "wl-1", "NVIDIA_H100", "NVIDIA_H200", 0.5),
        ("s2", "wl-2", "NVIDIA_H100", "NVIDIA_H200", 0.5),
    ]
    again = ingest([tmp_path / "exp-h100"], merged)
    assert (again.added.traces, again.added.present) == (0, 4)
    # Records come back exactly, with the columns the source store filled.
    src = query(h100, "SELECT trace_key, record::VARCHAR, op_type, author FROM traces ORDER BY 1").rows
    dst = query(
        merged,
        "SELECT trace_key, record::VARCHAR, op_type, author FROM traces "
        "WHERE hardware = 'NVIDIA_H100' ORDER BY 1",
    ).rows
    assert src == dst


def test_export_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    db = _cluster_store(tmp_path / "s.duckdb", "NVIDIA_H100", 1.0)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("")
    with pytest.raises(
        StoreError, match=f"^export folder {tmp_path / 'out'} is not empty; give a new folder"
    ):
        export_parquet(db, tmp_path / "out")


def test_results_folder_rebuilds_the_store(tmp_path: Path, shared_data: Path) -> None:
    """A results folder laid out by the writer (logs, definitions) is a dataset ingest reads whole."""
    results = tmp_path / "results"
    shutil.copytree(shared_data / "flashinfer-trace", results)
    r = ingest([results], results / "sweep.duckdb")
    assert r.added.traces == 14
    # The store file itself is not read as input.
    assert ingest([results], results / "sweep.duckdb").skipped == 0

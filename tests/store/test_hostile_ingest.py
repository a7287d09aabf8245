"""Ingest reads regular files only, each under a bound: devices, FIFOs and links to them in
loose folders and in export folders are skipped or refused with a word (never read, never a
hang), a line longer than any trace ends its file with a warning, folders linked back up the
tree are walked once; what is valid beside them is stored."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sweep.cli import app
from sweep.errors import StoreError
from sweep.schema import Trace
from sweep.store import export_parquet, ingest, query

from .conftest import make_trace

pytestmark = pytest.mark.hostile
runner = CliRunner()


def _soon(fn: Callable[[], object], limit_s: float = 120.0) -> object:
    """``fn()``, failed if it has not returned within ``limit_s`` (a read that blocks on a FIFO
    or never ends on /dev/zero)."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), f"did not return within {limit_s} s (a blocking or endless read)"
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def _good(folder: Path, name: str = "good.jsonl", n: int = 2) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(make_trace(f"s{i}").to_json() + "\n" for i in range(n)))


def _stored(db: Path) -> int:
    return int(str(query(db, "SELECT count(*) FROM traces").rows[0][0]))


HOSTILE: dict[str, Callable[[Path], None]] = {
    "json to /dev/zero": lambda d: (d / "zero.json").symlink_to("/dev/zero"),
    "jsonl to /dev/zero": lambda d: (d / "zero.jsonl").symlink_to("/dev/zero"),
    "json to /dev/urandom": lambda d: (d / "random.json").symlink_to("/dev/urandom"),
    "fifo jsonl": lambda d: os.mkfifo(d / "pipe.jsonl"),
    "fifo json": lambda d: os.mkfifo(d / "pipe.json"),
    "link to a fifo": lambda d: (
        os.mkfifo(d.parent / "outside_pipe"),
        (d / "lp.jsonl").symlink_to(d.parent / "outside_pipe"),
    ),
    "folder named json": lambda d: (d / "dir.json").mkdir(),
    "loop": lambda d: (d / "loop").symlink_to(d),
}


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(kinds=st.sets(st.sampled_from(sorted(HOSTILE)), min_size=1))
def test_a_loose_folder_with_devices_and_fifos_stores_what_is_valid(tmp_path: Path, kinds: set[str]) -> None:
    import shutil

    base = tmp_path / "case"
    shutil.rmtree(base, ignore_errors=True)
    folder = base / "traces"
    _good(folder)
    for k in kinds:
        HOSTILE[k](folder)
    db = base / "s.duckdb"
    res = _soon(lambda: runner.invoke(app, ["ingest", str(folder), "--store", str(db)]))
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
    assert _stored(db) == 2
    out = res.stderr  # type: ignore[attr-defined]
    files = {k for k in kinds if k not in ("loop", "folder named json")}
    assert out.count("ingest reads regular files only") == len(files), out
    assert "Traceback" not in res.output  # type: ignore[attr-defined]


@pytest.mark.parametrize("make", ["dev_zero", "fifo", "folder"])
def test_a_named_file_that_is_no_regular_file_is_refused(tmp_path: Path, make: str) -> None:
    path = tmp_path / "t.jsonl"
    if make == "dev_zero":
        path.symlink_to("/dev/zero")
    elif make == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    db = tmp_path / "s.duckdb"
    res = _soon(lambda: runner.invoke(app, ["ingest", str(path), "--store", str(db)]))
    assert res.exit_code == 1, res.output  # type: ignore[attr-defined]
    assert res.stderr.startswith("error:")  # type: ignore[attr-defined]
    if make != "folder":
        assert "ingest reads regular files only" in res.stderr  # type: ignore[attr-defined]


@pytest.fixture
def export(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    _good(src, n=3)
    db = tmp_path / "a.duckdb"
    ingest([src], db)
    out = tmp_path / "export"
    export_parquet(db, out)
    return out


@pytest.mark.parametrize("make", ["dev_zero", "fifo", "urandom"])
@pytest.mark.parametrize("what", ["parquet", "manifest"])
def test_an_export_folder_with_a_device_or_fifo_stores_nothing(
    tmp_path: Path, export: Path, make: str, what: str
) -> None:
    target = next((export / "traces").rglob("*.parquet")) if what == "parquet" else export / "manifest.json"
    if what == "manifest":  # keep a table's Parquet beside it: still an export folder
        pass
    target.unlink()
    if make == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero" if make == "dev_zero" else "/dev/urandom")
    db = tmp_path / "b.duckdb"
    res = _soon(lambda: runner.invoke(app, ["ingest", str(export), "--store", str(db)]))
    assert res.exit_code == 1, res.output  # type: ignore[attr-defined]
    assert res.stderr.startswith("error:") and "regular file" in res.stderr, res.stderr  # type: ignore[attr-defined]
    assert not db.exists() or _stored(db) == 0


def test_a_line_longer_than_any_trace_ends_its_file_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.store.ingestion import _ingest, _jsonl_chunks

    monkeypatch.setattr(_jsonl_chunks, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(_ingest, "MAX_LINE_BYTES", 4096)
    log = tmp_path / "t.jsonl"
    good = make_trace("s1").to_json() + "\n"
    log.write_text(good + "x" * 10_000 + "\n" + make_trace("s2").to_json() + "\n")
    db = tmp_path / "s.duckdb"
    report = ingest([log], db, workers=1)
    assert report.added.traces == 1 and report.skipped == 1
    assert report.warnings == [
        f"{log}:2: a line longer than 4,096 bytes (no trace is that long); it and the rest of the file were not read, skipped"
    ]
    log.write_text(good + "y" * 10_000)  # and one without its newline, as long
    report = ingest([log], tmp_path / "t.duckdb", workers=1)
    assert report.added.traces == 1 and report.skipped == 1


def test_a_log_of_the_results_folder_that_is_a_device_is_left_out_of_queries(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _good(results / "traces" / "elementwise", "vec_add.jsonl")
    (results / "traces" / "elementwise" / "zero.jsonl").symlink_to("/dev/zero")
    os.mkfifo(results / "traces" / "elementwise" / "pipe.jsonl")
    db = results / "sweep.duckdb"
    result = _soon(lambda: query(db, "SELECT count(*) FROM traces"))
    assert result.rows == [(2,)]  # type: ignore[attr-defined]
    assert sum("regular file" in n for n in result.notes) == 2, result.notes  # type: ignore[attr-defined]


def test_a_store_error_names_a_file_swapped_for_a_fifo(tmp_path: Path) -> None:
    from sweep.store.ingestion._jsonl_chunks import split_log

    pipe = tmp_path / "p.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(StoreError, match="ingest reads regular files only"):
        _soon(lambda: list(split_log(pipe)))


# ---- numbers no measurement gives (issue 27, 9.6) ----

_TIMING = {
    "clock": "cuda_event",
    "iterations": 10,
    "p10_ms": 1.0,
    "p50_ms": 1.5,
    "p90_ms": 2.0,
    "mean_ms": 1.5,
    "cv": 0.1,
}


def _trace_obj(**at: object) -> dict[str, object]:
    """A PASSED trace with timing stats as JSON, with values set at dotted paths."""
    obj = make_trace(
        "s1", extra_eval={"timing": dict(_TIMING), "reference_timing": dict(_TIMING)}
    ).to_json_obj()
    obj["provenance"] = {"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:05Z"}
    for path, value in at.items():
        *parents, last = path.split(".")
        cur: dict[str, object] = obj
        for p in parents:
            cur = cur[p]  # type: ignore[assignment]
        cur[last] = value
    return obj


IMPOSSIBLE = {
    "evaluation.timing.p50_ms": -1.0,
    "evaluation.timing.p10_ms": "NaN",
    "evaluation.timing.mean_ms": "Infinity",
    "evaluation.timing.cv": -0.5,
    "evaluation.timing.rel_error": "NaN",
    "evaluation.reference_timing.p90_ms": -3.0,
    "evaluation.reference_timing.mean_ms": "-Infinity",
    "evaluation.performance.latency_ms": "Infinity",
    "evaluation.performance.speedup_factor": "Infinity",
    "evaluation.performance.tflops": "Infinity",
    "evaluation.performance.floor_ms": "Infinity",
}


@pytest.mark.parametrize(("path", "value"), sorted(IMPOSSIBLE.items()))
def test_a_trace_with_an_impossible_number_is_refused_naming_file_line_and_field(
    tmp_path: Path, path: str, value: object
) -> None:
    import json

    log = tmp_path / "t.jsonl"
    log.write_text(make_trace("s0").to_json() + "\n" + json.dumps(_trace_obj(**{path: value})) + "\n")
    db = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", str(log), "--store", str(db)])
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stderr.splitlines() if x.startswith("warning:"))
    assert line.startswith(f"warning: {log}:2: ") and path in line, line
    assert _stored(db) == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"evaluation.timing.p10_ms": 3.0},
        {"evaluation.reference_timing.p90_ms": 0.5},
        {"provenance.finished_at": "2025-12-31T23:59:59Z"},
    ],
)
def test_a_trace_whose_numbers_contradict_each_other_is_refused(changes: dict[str, object]) -> None:
    from sweep.errors import ValidationError
    from sweep.schema import Trace
    from sweep.store import RowBatch

    field = next(iter(changes)).rsplit(".", 1)[0]
    with pytest.raises(
        ValidationError, match=field.split(".", 1)[1] if field.startswith("evaluation") else "finished_at"
    ):
        RowBatch().add_trace(Trace.model_validate(_trace_obj(**changes)))


_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5).map(float))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(p10=_NUMBER, p50=_NUMBER, cv=_NUMBER, latency=_NUMBER)
def test_any_number_is_stored_only_when_a_measurement_could_give_it(
    p10: float, p50: float, cv: float, latency: float
) -> None:
    import math

    from sweep.errors import ValidationError
    from sweep.schema import Trace
    from sweep.store import RowBatch

    obj = _trace_obj(
        **{"evaluation.timing.p10_ms": p10, "evaluation.timing.p50_ms": p50, "evaluation.timing.cv": cv}
    )
    try:
        obj = _trace_obj(
            **{
                "evaluation.timing.p10_ms": p10,
                "evaluation.timing.p50_ms": p50,
                "evaluation.timing.cv": cv,
                "evaluation.performance.latency_ms": latency,
            }
        )
        trace = Trace.model_validate(obj)
    except Exception:  # noqa: BLE001 - the schema refuses some already (a negative latency)
        return
    good = all(math.isfinite(v) and v >= 0 for v in (p10, p50, cv, latency)) and p10 <= p50 <= 2.0
    try:
        RowBatch().add_trace(trace)
    except ValidationError:
        assert not good
    else:
        assert good


# ---- a claimed time never outranks the time a trace was stored (issue 27, 9.10) ----


def _now_iso(delta_s: float = 0.0) -> str:
    from datetime import datetime, timedelta, timezone

    return (datetime.now(timezone.utc) + timedelta(seconds=delta_s)).isoformat()


def _run(ts: str, latency: float, run: str, hw: str = "NVIDIA_H100") -> str:
    t = make_trace(
        "s1",
        "wl-1",
        hw,
        latency=latency,
        ts=ts,
        provenance={"sweep": "nightly", "run_id": run, "task_id": f"t-{hw}"},
    )
    return t.to_json()


def _views(db: Path) -> dict[str, object]:
    return {
        "latest": query(db, "SELECT run_id, latency_ms FROM latest ORDER BY hardware").rows,
        "best": query(db, "SELECT latency_ms FROM best ORDER BY hardware").rows,
        "cross": query(db, "SELECT latency_ms_a, latency_ms_b FROM cross_hardware").rows,
        "compare": query(db, "SELECT run_id_a, run_id_b FROM compare ORDER BY hardware").rows,
    }


@pytest.mark.parametrize(
    "future", ["2199-12-31T23:59:59Z", "2150-01-01T00:00:00+05:00", "2027-01-01T00:00:00"]
)
def test_a_trace_dated_in_the_future_never_outranks_newer_genuine_runs(tmp_path: Path, future: str) -> None:
    from sweep.store import RowBatch, Store

    db = tmp_path / "s.duckdb"
    genuine = [_run(_now_iso(-3600), 3.0, "r1", hw) for hw in ("NVIDIA_H100", "NVIDIA_H200")]
    b = RowBatch()
    for line in genuine:
        b.add_trace(Trace.model_validate_json(line), record=line)
    Store(db).add(b)
    other = tmp_path / "other_cluster.jsonl"  # dated in the future, faster: would win for good
    other.write_text("".join(_run(future, 0.1, "evil", hw) + "\n" for hw in ("NVIDIA_H100", "NVIDIA_H200")))
    assert ingest([other], db, workers=1).added.traces == 2
    time.sleep(0.01)
    later = tmp_path / "later.jsonl"  # genuine runs after the ingest
    later.write_text("".join(_run(_now_iso(), 2.0, "r2", hw) + "\n" for hw in ("NVIDIA_H100", "NVIDIA_H200")))
    assert ingest([later], db, workers=1).added.traces == 2
    views = _views(db)
    assert views["latest"] == [("r2", 2.0), ("r2", 2.0)]
    assert views["best"] == [(2.0,), (2.0,)]
    assert views["cross"] == [(2.0, 2.0)]
    assert views["compare"] == [("evil", "r2"), ("evil", "r2")]  # the claim ranks at its storing


def test_an_export_claiming_a_future_storing_time_is_clamped(tmp_path: Path) -> None:
    import duckdb

    src = tmp_path / "src.duckdb"
    other = tmp_path / "other.jsonl"
    other.write_text(
        "".join(_run("2199-01-01T00:00:00Z", 0.1, "evil", hw) + "\n" for hw in ("NVIDIA_H100", "NVIDIA_H200"))
    )
    ingest([other], src, workers=1)
    con = duckdb.connect(str(src))
    con.execute("UPDATE traces SET ingested_at = TIMESTAMPTZ '2199-06-01 00:00:00+00'")
    con.close()
    export_parquet(src, tmp_path / "export")
    db = tmp_path / "s.duckdb"
    ingest([tmp_path / "export"], db, workers=1)
    assert query(db, "SELECT count(*) FROM traces WHERE ingested_at > now()").rows == [(0,)]
    time.sleep(0.01)
    later = tmp_path / "later.jsonl"
    later.write_text("".join(_run(_now_iso(), 2.0, "r2", hw) + "\n" for hw in ("NVIDIA_H100", "NVIDIA_H200")))
    ingest([later], db, workers=1)
    assert _views(db)["latest"] == [("r2", 2.0), ("r2", 2.0)]


def test_a_store_of_schema_7_with_future_storing_times_migrates_to_the_rule(tmp_path: Path) -> None:
    import duckdb

    db = tmp_path / "s.duckdb"
    other = tmp_path / "other.jsonl"
    other.write_text(_run("2199-01-01T00:00:00Z", 0.1, "evil") + "\n")
    ingest([other], db, workers=1)
    con = duckdb.connect(str(db))  # as an older kernel-sweep left it: a claimed storing time
    con.execute("UPDATE traces SET ingested_at = TIMESTAMPTZ '2199-06-01 00:00:00+00'")
    con.execute("ALTER TABLE cross_hardware_latest DROP COLUMN ingested_at")
    con.execute("UPDATE store_meta SET value = '7' WHERE key = 'schema_version'")
    con.close()
    from sweep.store import RowBatch, Store

    Store(db).add(RowBatch())  # the migration, at the next write
    assert query(db, "SELECT count(*) FROM traces WHERE ingested_at > now()").rows == [(0,)]
    time.sleep(0.01)
    later = tmp_path / "later.jsonl"
    later.write_text(_run(_now_iso(), 2.0, "r2") + "\n")
    ingest([later], db, workers=1)
    assert _views(db)["latest"] == [("r2", 2.0)]

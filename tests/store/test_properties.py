"""Property-based tests of ingest: whatever a trace file or a Parquet export holds, the answer
is either a clean error (exit 1, one ``error:`` line, nothing stored) or a correct result
(every valid record stored once, every other one reported with its file and line), and the
store can always be read afterwards.

Examples are derandomized (the same ones every run: never flaky) and few (fast on 2 cores).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sweep.cli import app
from sweep.errors import ValidationError
from sweep.schema import Status, Trace
from sweep.schema.trace import EARLIEST_TIME, LATEST_TIME
from sweep.store import Store
from sweep.store.db._checks import check_trace
from sweep.store.read._query import run_sql
from sweep.store.render import build_report
from sweep.store.rows._row_batch import trace_key

from .conftest import counts, export_of, make_trace

runner = CliRunner()


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
    )


# ---- strategies ----------------------------------------------------------------------------

_TIMES = [
    "0001-01-01T00:00:00+05:00",
    "9999-12-31T23:59:59-05:00",
    "1969-12-31T23:59:59Z",
    "2200-01-01T00:00:00Z",
    "2025-01-01T00:00:00Z",
    "2025-13-01",
    "yesterday",
    "",
]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -5, 2**63 - 1, 2**63, -(2**63) - 1, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(_TIMES),
)
_json = st.recursive(
    _scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
    max_leaves=6,
)
# Places in a trace where a hostile value goes.
_PATHS = [
    "definition",
    "solution",
    "workload",
    "workload.uuid",
    "workload.axes",
    "workload.axes.batch",
    "workload.inputs",
    "evaluation",
    "evaluation.status",
    "evaluation.timestamp",
    "evaluation.log",
    "evaluation.seed",
    "evaluation.environment",
    "evaluation.environment.hardware",
    "evaluation.environment.libs",
    "evaluation.performance.latency_ms",
    "evaluation.performance.speedup_factor",
    "evaluation.correctness.max_absolute_error",
    "evaluation.timing",
    "evaluation.clocks.sm_clock_mhz_max",
    "evaluation.flags",
    "provenance",
    "provenance.worker_pid",
    "provenance.attempt",
    "provenance.started_at",
    "provenance.finished_at",
]


@st.composite
def valid_traces(draw: st.DrawFn) -> Trace:
    """A trace that is valid by construction."""
    when = draw(
        st.datetimes(
            min_value=EARLIEST_TIME.replace(tzinfo=None, year=1971),
            max_value=LATEST_TIME.replace(tzinfo=None, year=2199),
            timezones=st.just(timezone.utc),
        )
    )
    return make_trace(
        draw(st.sampled_from(["s1", "s2"])),
        draw(st.text("abcdef0123456789-", min_size=1, max_size=8)),
        draw(st.sampled_from(["NVIDIA_H100", "NVIDIA_H200", "NVIDIA A100-SXM4-40GB"])),
        status=draw(st.sampled_from([s.value for s in Status])),
        latency=draw(st.floats(min_value=1e-4, max_value=1e4)),
        ts=when.isoformat(),
        batch=draw(st.integers(min_value=1, max_value=2**63 - 1)),
        log=draw(st.text(max_size=20)),
        provenance=draw(st.none() | st.just({"worker_pid": 123, "started_at": when.isoformat()})),
    )


@st.composite
def hostile_objects(draw: st.DrawFn) -> object:
    """A valid trace with one field set to a hostile value or removed, or any JSON value."""
    if draw(st.integers(0, 9)) == 0:
        return draw(_json)
    obj: Any = draw(valid_traces()).to_json_obj()
    *parents, last = draw(st.sampled_from(_PATHS)).split(".")
    cur = obj
    for p in parents:
        if not isinstance(cur, dict):
            return obj
        cur = cur.setdefault(p, {})
    if not isinstance(cur, dict):
        return obj
    if draw(st.booleans()):
        cur.pop(last, None)
    else:
        cur[last] = draw(_json)
    return obj


@st.composite
def lines(draw: st.DrawFn) -> tuple[bytes, Trace | None]:
    """One line of a JSONL file (without its newline) and the trace it must store, if any."""
    kind = draw(st.sampled_from(["valid", "valid", "hostile", "hostile", "cut", "bytes"]))
    if kind == "valid":
        t = draw(valid_traces())
        return t.to_json().encode(), t
    if kind == "hostile":
        return json.dumps(draw(hostile_objects())).encode(), None
    if kind == "cut":
        text = draw(valid_traces()).to_json().encode()
        return text[: draw(st.integers(1, len(text) - 1))], None
    return draw(st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b)), None


def _accepted(text: bytes | str) -> Trace | None:
    """What the rules make of one record: the trace to store, or None (refused)."""
    try:
        t = Trace.model_validate_json(text)
        check_trace(t)
    except (ValueError, ValidationError):  # pydantic's ValidationError is a ValueError
        return None
    return t if t.evaluation is not None else None


def _readable(db: Path) -> list[str]:
    """Read every view and the report (nothing may fail); return the stored records."""
    if not db.exists():  # nothing was valid: ingest made no store
        return []
    with Store(db).session() as s:
        for rel in ("latest", "best", "leaderboard", "cross_hardware", "op_scores", "backend_scores"):
            run_sql(s, f"SELECT * FROM {rel}")
        res = run_sql(s, "SELECT record::VARCHAR, timestamp FROM traces")
    build_report(db)
    for _, ts in res.rows:
        assert isinstance(ts, datetime) and EARLIEST_TIME <= ts < LATEST_TIME
    return [str(r[0]) for r in res.rows]


# ---- JSONL ---------------------------------------------------------------------------------


@_settings(20)
@given(st.lists(lines(), min_size=1, max_size=6), st.booleans())
def test_any_trace_file_ingests_what_is_valid_and_reports_the_rest(
    items: list[tuple[bytes, Trace | None]], final_newline: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log, db = Path(tmp) / "t.jsonl", Path(tmp) / "s.duckdb"
        log.write_bytes(b"\n".join(text for text, _ in items) + (b"\n" if final_newline else b""))
        res = runner.invoke(app, ["ingest", str(log), "--store", str(db)])
        assert res.exit_code == 0, res.output
        # The expected outcome, line by line: what the rules accept is stored, once.
        want = {}
        refused = 0
        for text, _ in items:
            if not text.strip():
                continue
            t = _accepted(text)
            if t is None:
                refused += 1
            else:
                want[trace_key(t.to_json())] = t
        for text, t in items:
            if t is not None and t.evaluation is not None:  # valid by construction: never lost
                assert trace_key(t.to_json()) in want
        warnings = [w for w in res.stderr.splitlines() if w.startswith("warning: ")]
        assert len(warnings) == refused
        for w in warnings:
            assert w.startswith(f"warning: {log}:") and w.endswith(", skipped") and len(w) < 500
            assert 1 <= int(w.split(":")[2]) <= len(items)
        records = _readable(db)
        assert {trace_key(r) for r in records} == set(want)
        for r in records:  # what was stored reads back as the same record
            assert Trace.model_validate_json(r).to_json() == r


# ---- Parquet exports -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    hardware = ["NVIDIA_H100", "NVIDIA_H100", "NVIDIA_H200"]
    traces = [(make_trace("s1", f"wl-{i}", hw), "a.jsonl") for i, hw in enumerate(hardware)]
    return export_of(tmp_path_factory.mktemp("prop-export"), traces)


_PRISTINE = (3, 1, 1, 3)


def _ingest_export(exp: Path, db: Path) -> tuple[int, str]:
    """Ingest through the CLI; a refusal is one ``error:`` line and changes nothing."""
    before = counts(db)
    res = runner.invoke(app, ["ingest", str(exp), "--store", str(db)])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    if res.exit_code != 0:
        assert res.exit_code == 1
        assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr
        assert "Traceback" not in res.output
        assert counts(db) == before
    return res.exit_code, res.stderr


@_settings(20)
@given(data=st.data())
def test_any_damage_to_an_export_file_is_refused_cleanly_or_changes_nothing(
    pristine: Path, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        exp = Path(shutil.copytree(pristine, Path(tmp) / "exp"))
        files = sorted(exp.rglob("*.parquet"))
        path = data.draw(st.sampled_from(files))
        raw = path.read_bytes()
        start = data.draw(st.integers(0, len(raw) - 1))
        if data.draw(st.booleans()):
            path.write_bytes(raw[:start])  # cut short
        else:
            junk = data.draw(st.binary(min_size=1, max_size=64))
            path.write_bytes(raw[:start] + junk + raw[start + len(junk) :])
        code, err = _ingest_export(exp, Path(tmp) / "s.duckdb")
        if code == 0:
            # The damage missed what is read (padding, statistics): the result is the export's.
            assert counts(Path(tmp) / "s.duckdb") == _PRISTINE
            _readable(Path(tmp) / "s.duckdb")
        else:
            assert f"{path}" in err or "manifest.json" in err


@st.composite
def export_rows(draw: st.DrawFn) -> str | None:
    kind = draw(st.sampled_from(["valid", "valid", "hostile", "text", "null"]))
    if kind == "valid":
        return draw(valid_traces()).to_json()
    if kind == "hostile":
        return json.dumps(draw(hostile_objects()))
    if kind == "text":
        return draw(st.text(max_size=30))
    return None


@_settings(15)
@given(st.lists(export_rows(), min_size=1, max_size=5), st.booleans())
def test_any_rows_of_an_export_are_all_stored_or_none(
    pristine: Path, records: list[str | None], preloaded: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        exp = Path(shutil.copytree(pristine, Path(tmp) / "exp"))
        db = Path(tmp) / "s.duckdb"
        if preloaded:  # a store that holds something already keeps it on refusal
            log = Path(tmp) / "t.jsonl"
            log.write_text(make_trace("s9", "wl-9").to_json() + "\n")
            assert runner.invoke(app, ["ingest", str(log), "--store", str(db)]).exit_code == 0
        # The H100 file rewritten as a file of a mere 'record' column (as an older or foreign
        # export might be), the manifest's counts kept true.
        h100 = next((exp / "traces" / "hardware=NVIDIA_H100").glob("*.parquet"))
        pq.write_table(pa.table({"record": pa.array(records, pa.string())}), h100)
        manifest = json.loads((exp / "manifest.json").read_text())
        manifest["rows"]["traces"] = len(records) + 1
        (exp / "manifest.json").write_text(json.dumps(manifest))
        before = counts(db)
        code, err = _ingest_export(exp, db)
        accepted = [_accepted(r) if r is not None else None for r in records]
        if all(t is not None for t in accepted):
            assert code == 0, err
            keys = {trace_key(r) for r in records if r is not None}
            assert counts(db)[0] == before[0] + len(keys) + 1  # + the untouched H200 trace
            _readable(db)
        else:
            assert code == 1
            first_bad = next(i for i, t in enumerate(accepted) if t is None)
            assert err.startswith(f"error: {h100}: row {first_bad + 1}: ")
            assert err.endswith(
                f"nothing of {exp} was stored (fix the file, or export the store again with 'sweep export --parquet')\n"
            )


@_settings(30)
@given(st.one_of(_scalars, st.text(max_size=5)), st.sampled_from(["schema_version", "rows", "format"]))
def test_any_manifest_value_is_read_or_refused_cleanly(pristine: Path, value: object, key: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        exp = Path(shutil.copytree(pristine, Path(tmp) / "exp"))
        manifest = json.loads((exp / "manifest.json").read_text())
        manifest[key] = value
        (exp / "manifest.json").write_text(json.dumps(manifest))
        code, err = _ingest_export(exp, Path(tmp) / "s.duckdb")
        ok = {
            "schema_version": value in (2, 3) and not isinstance(value, bool),
            "rows": isinstance(value, dict) and not value,  # an empty map promises nothing
            "format": value == "kernel-sweep-export",
        }[key]
        assert code == (0 if ok else 1), err
        if ok:
            assert counts(Path(tmp) / "s.duckdb") == _PRISTINE

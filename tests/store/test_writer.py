"""ResultsWriter: log layout, durability, batching, catch-up, and completed task ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweep.errors import StoreError
from sweep.schema import Definition, Solution, Trace
from sweep.store import ResultsWriter, Store, StoreContext, completed_task_ids, ingest, query

from ..conftest import wait_until
from .conftest import make_definition, make_solution, make_trace

_HOLD = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"


@pytest.fixture
def ctx() -> StoreContext:
    wl = make_trace(uuid="wl-ctx", batch=5, evaluated=False)
    return StoreContext.of([make_definition()], [make_solution("s1")], [wl])


def _paths(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "results", tmp_path / "results" / "sweep.duckdb"


def test_layout_stamping_and_records_next_to_the_logs(tmp_path: Path, ctx: StoreContext) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="nightly", run_id="r-1", context=ctx) as w:
        w.write(make_trace("s1", "wl-1", provenance={"task_id": "t-1"}))
        w.write(make_trace("s1", "wl-2", provenance={"task_id": "t-2", "run_id": "kept"}))
    log = results / "traces" / "elementwise" / "vec_add.jsonl"
    lines = [Trace.model_validate_json(x) for x in log.read_text().splitlines()]
    assert [
        (t.provenance.task_id, t.provenance.sweep, t.provenance.run_id) for t in lines if t.provenance
    ] == [("t-1", "nightly", "r-1"), ("t-2", "nightly", "kept")]
    assert (
        Definition.model_validate_json((results / "definitions" / "elementwise" / "vec_add.json").read_text())
        == ctx.definitions["vec_add"]
    )
    assert (
        Solution.model_validate_json(
            (results / "solutions" / "alice" / "elementwise" / "vec_add" / "s1.json").read_text()
        )
        == ctx.solutions["s1"]
    )
    got = query(
        db, "SELECT task_id, sweep, run_id, op_type, author, solution_hash FROM traces ORDER BY 1"
    ).rows
    h = ctx.solutions["s1"].content_hash
    assert got == [
        ("t-1", "nightly", "r-1", "elementwise", "alice", h),
        ("t-2", "nightly", "kept", "elementwise", "alice", h),
    ]


def test_context_records_are_stored_at_start(tmp_path: Path, ctx: StoreContext) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", context=ctx):
        pass
    assert query(
        db,
        "SELECT (SELECT count(*) FROM definitions), (SELECT count(*) FROM solutions), "
        "(SELECT list(uuid) FROM workloads)",
    ).rows == [(1, 1, ["wl-ctx"])]


def test_store_sees_a_trace_without_flush(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=0.2) as w:
        w.write(make_trace())
        w.write(make_trace("s1", "wl-2"))  # synced a moment after the first: its end held back
        # The follower stores them on its own (no flush); how soon is the machine's business.
        assert wait_until(lambda: w.pending == 0), f"{w.pending} traces never reached the store"
        # Read the file alone (no log tail) to prove the row itself is in it.
        with Store(db).session(tmp_path / "elsewhere") as s:
            assert s.con.execute("SELECT count(*) FROM traces").fetchall() == [(2,)]


def test_readers_see_logged_traces_the_store_has_not_received(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=3600) as w:
        for i in range(3):
            w.write(make_trace("s1", f"wl-{i}"))
        assert w.pending == 3
        with Store(db).session(results) as s:
            assert (s.source, s.tail) == ("store", 3)
            assert s.con.execute("SELECT count(*) FROM traces").fetchall() == [(3,)]
        w.flush()
        assert w.pending == 0
        with Store(db).session(results) as s:
            assert (s.source, s.tail) == ("store", 0)
            assert s.con.execute("SELECT count(*) FROM traces").fetchall() == [(3,)]


def test_readers_fall_back_to_the_logs_while_the_file_is_held(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=3600) as w:
        w.write(make_trace("s1", "wl-1"))
        w.write(make_trace("s1", "wl-2"))
        # Another process holds the file, as a long batch would.
        holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(db)], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            res = query(db, "SELECT count(*) FROM traces", lock_timeout_s=0.2)
        finally:
            holder.kill()
            holder.wait()
    assert (res.rows, res.source) == ([(2,)], "log")
    assert res.notes[0] == (
        f"store {db} is held by a writer; answered from the JSONL logs under {results} (2 traces)"
    )


def test_in_process_connection_is_waited_for_too(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=3600) as w:
        w.write(make_trace("s1", "wl-1"))
        with Store(db).writing():  # this process holds the file (a writer batch in progress)
            res = query(db, "SELECT count(*) FROM traces", lock_timeout_s=0.2)
    assert (res.rows, res.source) == ([(1,)], "log")


def test_completed_task_ids_come_from_store_and_logs(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    assert completed_task_ids(results, db) == set()
    with ResultsWriter(results, db, sweep="s", run_id="r") as w:
        w.write(make_trace("s1", "wl-1", provenance={"task_id": "t-1"}))
    # A killed run's line that never reached the store.
    log = results / "traces" / "vec_add" / "vec_add.jsonl"
    with log.open("a") as f:
        f.write(make_trace("s1", "wl-2", provenance={"task_id": "t-2"}).to_json() + "\n")
    assert completed_task_ids(results, db) == {"t-1", "t-2"}
    # Logs alone (no store file yet) are enough.
    db.unlink()
    assert completed_task_ids(results, db) == {"t-1", "t-2"}


def test_a_new_writer_catches_up_what_a_killed_run_logged(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    log = results / "traces" / "vec_add" / "vec_add.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("".join(make_trace("s1", f"wl-{i}").to_json() + "\n" for i in range(4)))
    with ResultsWriter(results, db, sweep="s", run_id="r"), Store(db).session(tmp_path / "elsewhere") as s:
        assert s.con.execute("SELECT count(*) FROM traces").fetchall() == [(4,)]


def test_torn_line_from_a_killed_run_is_closed_off(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    log = results / "traces" / "vec_add" / "vec_add.jsonl"
    log.parent.mkdir(parents=True)
    torn = make_trace("s1", "wl-0").to_json()[:50]
    log.write_text(make_trace("s1", "wl-1").to_json() + "\n" + torn)
    with ResultsWriter(results, db, sweep="s", run_id="r") as w:
        w.write(make_trace("s1", "wl-2"))
    assert log.read_text().splitlines()[1] == torn
    assert query(db, "SELECT list(workload_uuid ORDER BY workload_uuid) FROM traces").rows == [
        (["wl-1", "wl-2"],)
    ]
    report = ingest([results], db)
    assert (report.added.traces, report.added.present) == (0, 2)
    assert report.warnings == [f"{log}:2: not valid JSON (EOF while parsing a value), skipped"]


def test_second_writer_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    refused = r"^another sweep is writing to .*results \(pid \d+, lock file"
    with ResultsWriter(results, db, sweep="s", run_id="r"), pytest.raises(StoreError, match=refused):
        ResultsWriter(results, db, sweep="s", run_id="r2")
    with ResultsWriter(results, db, sweep="s", run_id="r3"):  # free again after close
        pass


def test_write_after_close_is_an_error(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    w = ResultsWriter(results, db, sweep="s", run_id="r")
    w.close()
    with pytest.raises(StoreError, match="^ResultsWriter.write after close"):
        w.write(make_trace())


def test_every_logged_line_is_valid_json_for_flashinfer_bench(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r") as w:
        w.write(
            make_trace(extra_eval={"correctness": {"max_relative_error": "NaN", "max_absolute_error": 0.0}})
        )
    (line,) = (results / "traces" / "vec_add" / "vec_add.jsonl").read_text().splitlines()
    obj = json.loads(line)
    assert obj["evaluation"]["correctness"]["max_relative_error"] == "NaN"
    assert obj["definition"] == "vec_add" and obj["workload"]["uuid"] == "wl-1"


def test_results_folder_passes_sweep_validate(tmp_path: Path, ctx: StoreContext) -> None:
    from sweep.plan.dataset import validate_roots

    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", context=ctx) as w:
        w.write(make_trace("s1", "wl-1"))
        w.write(make_trace("s1", "wl-2", status="RUNTIME_ERROR"))
    ds, errors = validate_roots([results])
    assert (errors, ds.warnings) == ([], [])
    assert (len(ds.traces), list(ds.definitions), list(ds.solutions)) == (2, ["vec_add"], ["s1"])


def _fsync_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the file each ``os.fsync`` in the writer syncs (by name, via /proc)."""
    import os

    from sweep.store.write import _writer

    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name)
        real(fd)

    monkeypatch.setattr(_writer.os, "fsync", spy)
    return synced


def test_write_many_syncs_each_log_once_per_group_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, db = _paths(tmp_path)
    synced = _fsync_spy(monkeypatch)
    group = [make_trace("s1", f"wl-{i}", definition="vec_add" if i % 2 else "vec_mul") for i in range(6)]
    with ResultsWriter(results, db, sweep="s", run_id="r") as w:
        w.write_many(group)
        assert sorted(synced) == ["vec_add.jsonl", "vec_mul.jsonl"]  # one sync per file, not per trace
        assert w.written == 6 and w.pending == 6
    for name, odd in (("vec_add", 1), ("vec_mul", 0)):
        lines = (results / "traces" / name / f"{name}.jsonl").read_text().splitlines()
        assert [json.loads(x)["workload"]["uuid"] for x in lines] == [
            f"wl-{i}" for i in range(6) if i % 2 == odd
        ]
    assert query(db, "SELECT count(*) FROM traces").rows == [(6,)]


def test_write_many_syncs_a_log_evicted_mid_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sweep.store.write import _log_files

    monkeypatch.setattr(_log_files, "MAX_OPEN_LOGS", 1)
    results, db = _paths(tmp_path)
    synced = _fsync_spy(monkeypatch)
    names = ["d_a", "d_b", "d_c"]
    with ResultsWriter(results, db, sweep="s", run_id="r") as w:
        w.write_many([make_trace("s1", "wl-1", definition=n) for n in names])
        # the first two were closed to make room, after a sync; the last one is synced at the end
        assert sorted(synced) == [f"{n}.jsonl" for n in names]
    assert query(db, "SELECT count(*) FROM traces").rows == [(3,)]

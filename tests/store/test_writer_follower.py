"""The writer's group commit and its store follower: a group counts only once synced, the
follower stores only synced lines, exactly once, and a killed driver resumes exactly."""

from __future__ import annotations

import io
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pydantic
import pytest

from sweep.schema import Trace
from sweep.store import ResultsWriter, StoreContext, ingest, query
from sweep.store.ingestion import is_json
from sweep.store.write import _follower
from sweep.store.write._follower import Start, Stored, _catch_up, _Follower

from ..conftest import wait_until
from .conftest import make_trace

HERE = Path(__file__).resolve().parent


def _paths(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "results", tmp_path / "results" / "sweep.duckdb"


def _logged_task_ids(results: Path) -> list[str]:
    """The task ids of the logs' whole lines. A kill mid-write leaves a torn last line, which a
    relaunch ends with a newline before appending (readers skip it with a warning): at most one
    such line a log, and no other line may fail to parse."""
    ids = []
    for log in sorted((results / "traces").rglob("*.jsonl")):
        torn = 0
        for line in log.read_bytes().splitlines(keepends=True):
            if line.endswith(b"\n") and line.strip():
                try:
                    t = Trace.model_validate_json(line)
                except pydantic.ValidationError:
                    torn += 1
                    cut = line.startswith(b'{"definition":') and not is_json(line)  # a record cut short
                    assert torn == 1 and cut, f"{log}: a line that is not a torn write: {line[:200]!r}"
                    continue
                ids.append(t.provenance.task_id if t.provenance and t.provenance.task_id else "")
    return ids


def _blocked_fsync(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make ``os.fsync`` wait until the returned event is set."""
    release = threading.Event()
    real = os.fsync

    def slow(fd: int) -> None:
        release.wait(30)
        real(fd)

    monkeypatch.setattr(os, "fsync", slow)
    return release


def test_a_submitted_group_is_called_back_only_once_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, db = _paths(tmp_path)
    got: list[str] = []

    def then(uuids: Sequence[str]) -> Callable[[], None]:
        return lambda: got.extend(uuids)

    with ResultsWriter(results, db, sweep="s", run_id="r") as w:
        release = _blocked_fsync(monkeypatch)
        w.submit([make_trace("s1", "wl-1"), make_trace("s1", "wl-2")], then(["wl-1", "wl-2"]))
        w.submit([make_trace("s1", "wl-3")], then(["wl-3"]))
        time.sleep(0.3)
        w.poll()
        assert got == []  # appended (the OS has the lines), not yet durable: not done
        assert (results / "traces" / "vec_add" / "vec_add.jsonl").read_bytes().count(b"\n") == 3
        release.set()
        w.drain()
        assert got == ["wl-1", "wl-2", "wl-3"]  # in order, once each
        w.poll()
        assert got == ["wl-1", "wl-2", "wl-3"]


def test_a_group_of_no_traces_is_called_back_after_those_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, db = _paths(tmp_path)
    got: list[str] = []
    with ResultsWriter(results, db, sweep="s", run_id="r") as w:

        def drains() -> bool:  # within 30 s (a group waiting for a sync nobody asks for never does)
            done = threading.Event()
            threading.Thread(target=lambda: (w.drain(), done.set()), daemon=True).start()
            return done.wait(30)

        w.submit([], lambda: got.append("first, empty"))
        assert drains()
        assert got == ["first, empty"]
        w.submit([make_trace("s1", "wl-1")], lambda: got.append("wl-1"))
        w.drain()  # every group synced: nothing left for a sync to carry the next
        release = _blocked_fsync(monkeypatch)
        w.submit([make_trace("s1", "wl-2")], lambda: got.append("wl-2"))
        w.submit([], lambda: got.append("empty"))
        time.sleep(0.3)
        w.poll()
        assert got == ["first, empty", "wl-1"]  # the empty group waits for the one before it
        release.set()
        assert drains()  # the empty group needs no sync of its own
        assert got == ["first, empty", "wl-1", "wl-2", "empty"]


def test_the_follower_stores_only_what_is_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=0.05) as w:
        w.write(make_trace("s1", "wl-1"))
        w.flush()
        release = _blocked_fsync(monkeypatch)
        w.submit([make_trace("s1", "wl-2")])
        time.sleep(0.5)  # ten of the follower's passes
        assert w.pending == 1
        assert query(db, "SELECT list(workload_uuid) FROM traces", results_dir=tmp_path / "none").rows == [
            (["wl-1"],)
        ]
        release.set()
        w.flush()
        assert w.pending == 0
    # Closing ended the follower: its last pass, then it exited on its own.
    assert (w._follower.proc.returncode, w.last_error) == (0, None)
    assert query(db, "SELECT list(workload_uuid ORDER BY 1) FROM traces").rows == [(["wl-1", "wl-2"],)]


def test_a_follower_pass_reads_up_to_the_synced_end_only(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    log = results / "traces" / "vec_add" / "vec_add.jsonl"
    log.parent.mkdir(parents=True)
    lines = [make_trace("s1", f"wl-{i}").to_json_bytes() + b"\n" for i in range(3)]
    log.write_bytes(b"".join(lines) + lines[0][:40])  # and a line being written
    follower = _Follower(Start(str(db), StoreContext(), 1.0, 5.0))
    key = str(log.resolve())
    stored = follower.run_pass({key: len(lines[0]) + len(lines[1])}, 5.0)
    assert (stored.ends, stored.traces, stored.error) == ({key: len(lines[0]) + len(lines[1])}, 2, None)
    again = follower.run_pass({key: len(lines[0]) + len(lines[1])}, 5.0)
    assert again.ends == {}  # nothing new synced: nothing read, nothing stored
    last = follower.run_pass({key: sum(map(len, lines))}, 5.0)
    assert (last.traces, last.ends) == (1, {key: sum(map(len, lines))})
    assert query(db, "SELECT list(workload_uuid ORDER BY 1) FROM traces").rows == [
        (["wl-0", "wl-1", "wl-2"],)
    ]
    # Warnings name the line, counted from the start of the log.
    with log.open("ab") as f:
        f.write(b"x" * 20 + b'{"definition": "vec_add"}\n')
    bad = follower.run_pass({key: log.stat().st_size}, 5.0)
    assert bad.traces == 0 and bad.warnings[0].startswith(f"{key}:4: ")


def test_an_ingest_beside_the_follower_stores_nothing_twice(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=0.02) as w:
        for k in range(20):
            w.write_many(
                [make_trace("s1", f"wl-{k}-{i}", provenance={"task_id": f"t-{k}-{i}"}) for i in range(10)]
            )
            if k % 5 == 0:
                ingest([results], db)  # another process stores the same lines meanwhile
    assert query(db, "SELECT count(*), count(DISTINCT task_id) FROM traces").rows == [(200, 200)]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_a_killed_driver_resumes_with_no_trace_lost_or_doubled(tmp_path: Path) -> None:
    results, db = _paths(tmp_path)
    n = 3000
    argv = [sys.executable, str(HERE / "submit_proc.py"), str(results), str(db), str(n), "16"]
    driver = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    follower = int(driver.stdout.readline().split()[1])
    acknowledged: list[str] = []
    while len(acknowledged) < 600:
        line = driver.stdout.readline()
        assert line.startswith("done "), line
        acknowledged.append(line.split()[1])
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(timeout=30)
    acknowledged += [x.split()[1] for x in driver.stdout.read().splitlines() if x.startswith("done ")]
    driver.stdout.close()
    assert len(acknowledged) < n, "the driver finished before it was killed"
    # Its follower sees its parent gone (the end of its stdin), stores what was synced, exits.
    assert wait_until(lambda: _gone(follower))
    logged = _logged_task_ids(results)
    assert set(acknowledged) <= set(logged), "a trace counted done is not in the log"
    assert len(logged) == len(set(logged))
    # The relaunch runs only what is not logged, and the store ends with one trace per task.
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True).stdout
    second = [x.split()[1] for x in out.splitlines() if x.startswith("done ")]
    assert not set(second) & set(logged)
    assert sorted(_logged_task_ids(results)) == sorted(f"task-{i}" for i in range(n))
    assert query(
        db, "SELECT count(*), count(DISTINCT task_id), count(DISTINCT trace_key) FROM traces"
    ).rows == [(n, n, n)]


def test_a_follower_far_behind_catches_up_in_passes_of_bounded_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results, db = _paths(tmp_path)
    log = results / "traces" / "vec_add" / "vec_add.jsonl"
    log.parent.mkdir(parents=True)
    lines = [make_trace("s1", f"wl-{i}").to_json_bytes() + b"\n" for i in range(20)]
    log.write_bytes(b"".join(lines))
    monkeypatch.setattr(_follower, "_PASS_BYTES", 3 * len(lines[0]))
    follower = _Follower(Start(str(db), StoreContext(), 1.0, 5.0))
    said = io.BytesIO()
    key = str(log.resolve())
    last = _catch_up(follower, {key: log.stat().st_size}, 5.0, whole=True, out=said)
    assert last is not None and last.ends == {key: log.stat().st_size}
    said.seek(0)
    passes = [last]
    while said.tell() < len(said.getvalue()):
        passes.insert(-1, pickle.load(said))
    assert all(isinstance(p, Stored) for p in passes) and len(passes) >= 5  # bounded, one after the other
    assert sum(p.traces for p in passes) == 20
    assert query(db, "SELECT count(*) FROM traces").rows == [(20,)]


def test_the_follower_runs_this_sweep_from_a_folder_holding_another(tmp_path: Path, decoy_cwd: Path) -> None:
    results, db = _paths(tmp_path)
    with ResultsWriter(results, db, sweep="s", run_id="r", flush_interval_s=0.02) as w:
        w.write_many([make_trace("s1", f"wl-{i}", provenance={"task_id": f"t-{i}"}) for i in range(5)])
    # Stored by the follower: a follower that could not start leaves them in the logs only.
    assert (w.pending, w.last_error) == (0, None)
    assert query(db, "SELECT count(*) FROM traces").rows == [(5,)]

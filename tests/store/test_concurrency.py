"""Two processes: a writer writing continuously while a reader queries; and a writer killed
with SIGKILL mid-run, whose results folder then catches the store up exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from sweep.store import ingest, query

from ..conftest import wait_until

HERE = Path(__file__).resolve().parent


def _complete_lines(results: Path) -> int:
    n = 0
    for log in (results / "traces").rglob("*.jsonl"):
        n += log.read_bytes().count(b"\n")
    return n


def test_reader_never_meets_the_lock_and_sees_counts_grow(tmp_path: Path) -> None:
    results, store, done = tmp_path / "results", tmp_path / "results" / "sweep.duckdb", tmp_path / "done"
    seen_file = tmp_path / "seen"
    n = 200
    writer = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "writer_proc.py"),
            str(results),
            str(store),
            str(n),
            "0.02",
            str(seen_file),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().startswith("wrote 0")  # the store exists, writing has begun
    reader = subprocess.Popen(
        [sys.executable, str(HERE / "reader_proc.py"), str(results), str(store), str(done), str(seen_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    writer.stdout.read()
    assert writer.wait(timeout=120) == 0
    done.touch()
    out, _ = reader.communicate(timeout=120)
    seen = json.loads(out)
    assert seen["errors"] == []
    counts = seen["counts"]
    assert counts == sorted(counts), "a later query saw fewer traces than an earlier one"
    assert counts[-1] == n
    # The reader ran while the writer wrote: it saw the count at several values along the way
    # (the writer waits at a quarter, half and three quarters until the reader has seen them).
    assert len({c for c in counts if 0 < c < n}) >= 3, counts
    # Every query got the store file between the follower's inserts (none fell back to the logs).
    assert set(seen["sources"]) == {"store"}, seen["sources"]
    assert query(store, "SELECT count(*), count(DISTINCT trace_key) FROM traces").rows == [(n, n)]


def test_sigkill_mid_run_loses_nothing(tmp_path: Path) -> None:
    results, store = tmp_path / "results", tmp_path / "results" / "sweep.duckdb"
    writer = subprocess.Popen(
        [sys.executable, str(HERE / "writer_proc.py"), str(results), str(store), "1000000", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None
    wait_until(lambda: _complete_lines(results) >= 400, 60, every_s=0.05)
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    writer.stdout.close()
    written = _complete_lines(results)
    assert written >= 400
    report = ingest([results], store)
    # Every whole line is in the store exactly once; a torn last line is only warned about.
    assert query(
        store, "SELECT count(*), count(DISTINCT trace_key), count(DISTINCT task_id) FROM traces"
    ).rows == [(written, written, written)]
    assert report.traces_read == written
    assert all("incomplete last line" in w for w in report.warnings)

"""sweep ingest / query / report / export, in-process, with exact messages."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.store import INGEST_LOGGER

from .conftest import make_trace

runner = CliRunner()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    log = tmp_path / "in" / "t.jsonl"
    log.parent.mkdir()
    log.write_text(
        "".join(
            t.to_json() + "\n"
            for t in [
                make_trace("s1", "wl-1", "NVIDIA_H100", latency=1.0, reference=2.0, batch=4),
                make_trace("s1", "wl-1", "NVIDIA_H200", latency=0.5, reference=2.0, batch=4),
            ]
        )
    )
    path = tmp_path / "sweep.duckdb"
    res = runner.invoke(app, ["ingest", str(log), "--store", str(path)])
    assert res.exit_code == 0, res.output
    return path


def test_ingest_timeline_prints_each_insert_on_stderr_and_only_then(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text("".join(make_trace("s1", f"wl-{i}").to_json() + "\n" for i in range(3)))
    store = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", str(log), "--store", str(store), "--timeline"])
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 3, lines
    assert re.fullmatch(r" *\d+\.\d{3} s  logs read in \d+\.\d{3} s by 1 worker\(s\)", lines[0])
    waited = r" *\d+\.\d{3} s  insert of 3 trace rows: reading waited \d+\.\d{3} s for the writer \(0 batch\(es\) waiting\)"
    assert re.fullmatch(waited, lines[1])
    assert re.fullmatch(r" *\d+\.\d{3} s  insert done in \d+\.\d{3} s", lines[2])
    assert res.stdout.startswith(f"ingested 3 traces from 1 file into {store}: 3 added")
    # Without the flag nothing is printed, and the logger is as it was (no handler left behind).
    res = runner.invoke(app, ["ingest", str(log), "--store", str(tmp_path / "t.duckdb")])
    assert res.exit_code == 0 and res.stderr == ""
    assert not logging.getLogger(INGEST_LOGGER).handlers


def test_ingest_messages(shared_data: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    res = runner.invoke(app, ["ingest", str(shared_data / "flashinfer-trace"), "--store", str(store)])
    assert res.exit_code == 0
    assert res.stdout == (
        f"ingested 14 traces from 5 files into {store}: 14 added, 0 already stored\n"
        "workloads: 57 workload-only records, 57 new workloads; definitions: 2 new; solutions: 0 new\n"
    )
    res = runner.invoke(app, ["ingest", str(shared_data / "flashinfer-trace"), "--store", str(store)])
    assert (
        res.stdout.splitlines()[0]
        == f"ingested 14 traces from 5 files into {store}: 0 added, 14 already stored"
    )


def test_ingest_warns_on_stderr_about_a_torn_line(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_text(make_trace().to_json() + "\n" + '{"definition": "vec')
    res = runner.invoke(app, ["ingest", str(log), "--store", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 0
    assert res.stderr == f"warning: {log}:2: incomplete last line (a write cut short?), skipped\n"
    assert res.stdout.endswith(
        "skipped 1 invalid record (warnings above); fix or delete them and ingest again: "
        "what is stored already is not added twice\n"
    )


def test_ingest_missing_path_fails(tmp_path: Path) -> None:
    res = runner.invoke(app, ["ingest", str(tmp_path / "nope"), "--store", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 1
    assert res.stderr == f"error: no such file or folder: {tmp_path / 'nope'}\n"


def test_query_table_json_csv(db: Path) -> None:
    sql = "SELECT hardware, latency_ms, axes FROM traces ORDER BY hardware"
    res = runner.invoke(app, ["query", sql, "--store", str(db)])
    assert res.exit_code == 0
    assert res.stdout == (
        "hardware     latency_ms  axes\n"
        "-----------  ----------  -----------\n"
        'NVIDIA_H100           1  {"batch":4}\n'
        'NVIDIA_H200         0.5  {"batch":4}\n'
        "(2 rows)\n"
    )
    res = runner.invoke(app, ["query", sql, "--store", str(db), "--json"])
    assert json.loads(res.stdout) == [
        {"hardware": "NVIDIA_H100", "latency_ms": 1.0, "axes": {"batch": 4}},
        {"hardware": "NVIDIA_H200", "latency_ms": 0.5, "axes": {"batch": 4}},
    ]
    res = runner.invoke(app, ["query", sql, "--store", str(db), "--csv"])
    assert (
        res.stdout
        == 'hardware,latency_ms,axes\nNVIDIA_H100,1.0,"{""batch"":4}"\nNVIDIA_H200,0.5,"{""batch"":4}"\n'
    )


def test_query_views(db: Path) -> None:
    res = runner.invoke(
        app,
        [
            "query",
            "SELECT hardware_a, hardware_b, latency_ratio FROM cross_hardware",
            "--store",
            str(db),
            "--csv",
        ],
    )
    assert res.stdout == "hardware_a,hardware_b,latency_ratio\nNVIDIA_H100,NVIDIA_H200,0.5\n"


def test_query_errors(db: Path) -> None:
    res = runner.invoke(app, ["query", "SELECT * FROM leaderbord", "--store", str(db)])
    assert res.exit_code == 1
    assert res.stderr.startswith("error: unknown table 'leaderbord' (did you mean 'leaderboard'?); tables: ")
    res = runner.invoke(app, ["query", "SELECT 1", "--store", str(db), "--json", "--csv"])
    assert (res.exit_code, res.stderr) == (1, "error: choose one of --json and --csv\n")
    res = runner.invoke(app, ["query", "SELECT 1", "--store", str(db.parent / "none.duckdb")])
    assert res.stderr == (
        f"error: no store at {db.parent / 'none.duckdb'} and no trace logs under "
        f"{db.parent / 'traces'}; run 'sweep launch CONFIG' or 'sweep ingest PATH...' first\n"
    )


def test_report_and_html(db: Path, tmp_path: Path) -> None:
    html = tmp_path / "out" / "report.html"
    res = runner.invoke(app, ["report", "--store", str(db), "--html", str(html)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"store: {db}"
    assert "== Cross-hardware (same solution and workload) ==" in lines
    assert lines[-1] == f"wrote {html}"
    assert html.read_text().startswith("<!DOCTYPE html>")


def test_export_then_ingest(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "exp"
    res = runner.invoke(app, ["export", "--parquet", str(out), "--store", str(db)])
    assert res.exit_code == 0
    assert res.stdout == (
        f"exported 2 traces (hardware: NVIDIA_H100, NVIDIA_H200), 0 definitions, "
        f"0 solutions, 1 workload to {out}\n"
    )
    res = runner.invoke(app, ["ingest", str(out), "--store", str(tmp_path / "merged.duckdb")])
    assert res.stdout.splitlines()[0] == (
        f"ingested 1 export into {tmp_path / 'merged.duckdb'}: 2 traces added, 0 already stored"
    )


@pytest.mark.parametrize("command", ["ingest", "query", "report", "export"])
def test_help_has_an_example(command: str) -> None:
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0
    assert "Example: sweep " in res.stdout


def test_export_into_a_folder_that_cannot_be_made_names_the_path(db: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("")
    res = runner.invoke(app, ["export", "--parquet", str(afile / "sub"), "--store", str(db)])
    assert (res.exit_code, res.stdout) == (1, "")
    assert res.stderr == (
        f"error: cannot create export folder {afile / 'sub'}: Not a directory; give a folder you can write\n"
    )
    res = runner.invoke(app, ["export", "--parquet", str(afile), "--store", str(db)])
    assert (res.exit_code, res.stderr) == (1, f"error: export folder {afile} is a file; give a new folder\n")


def test_export_write_failure_names_the_folder(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    res = runner.invoke(app, ["export", "--parquet", str(tmp_path / "out"), "--store", str(db)])
    assert (res.exit_code, res.stdout) == (1, "")
    assert res.stderr == (
        f"error: cannot create export folder {tmp_path / 'out'}: Permission denied; give a folder you can write\n"
    )

"""sweep compare, in-process: the table, --json, --csv, the CI gate and the refusals."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from sweep.cli import app

from ..store.test_compare import faster_and_slower, write_store

runner = CliRunner()


def _store(tmp_path: Path) -> Path:
    return write_store(tmp_path, faster_and_slower())


def test_table_and_summary(tmp_path: Path) -> None:
    db = _store(tmp_path)
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0].split() == [
        "definition", "solution", "workload_uuid", "hardware", "latency_ms_a", "latency_ms_b", "ratio", "ci", "verdict",
    ]  # fmt: skip
    assert lines[2].split()[2:4] == ["wl-2", "NVIDIA_H100"] and lines[2].endswith("slower")
    assert lines[3].endswith("faster")
    assert lines[4:] == [
        "A: run:r1 (2 traces, NVIDIA_H100)",
        "B: run:r2 (2 traces, NVIDIA_H100)",
        "2 tasks matched: 1 faster, 1 slower; threshold 5.0%",
        "geomean ratio: 0.9798 (B/A; under 1: B is faster)",
    ]


def test_json_and_csv(tmp_path: Path) -> None:
    db = _store(tmp_path)
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--json"])
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    assert [(d["workload_uuid"], d["verdict"], d["basis_a"]) for d in data] == [
        ("wl-2", "slower", "samples"),
        ("wl-1", "faster", "samples"),
    ]
    assert data[0]["ratio"] == 1.2000000476837158 or abs(data[0]["ratio"] - 1.2) < 1e-6
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--csv"])
    assert res.exit_code == 0
    table = list(csv.DictReader(io.StringIO(res.stdout)))
    assert [r["verdict"] for r in table] == ["slower", "faster"]
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--csv", "--json"])
    assert (res.exit_code, res.stderr) == (1, "error: choose one of --json and --csv\n")


def test_fail_on_slower_gates_ci(tmp_path: Path) -> None:
    db = _store(tmp_path)
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--fail-on-slower", "10"])
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [
        "error: 1 tasks slower than A by more than 10% (or failing on B):",
        "  vec_add/s1/wl-2 on NVIDIA_H100: ratio 1.2",
    ]
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--fail-on-slower", "25"])
    assert res.exit_code == 0
    # B against itself reversed: wl-1 is the slowed one now.
    res = runner.invoke(
        app, ["compare", "run:r2", "run:r1", "--store", str(db), "--fail-on-slower", "5", "--json"]
    )
    assert res.exit_code == 1 and "vec_add/s1/wl-1 on NVIDIA_H100: ratio 1.25" in res.stderr


def test_refusals(tmp_path: Path) -> None:
    db = _store(tmp_path)
    res = runner.invoke(app, ["compare", "rnu:r1", "run:r2", "--store", str(db)])
    assert res.exit_code == 1
    assert res.stderr.startswith("error: unknown side kind 'rnu:' (did you mean 'run'?)")
    res = runner.invoke(app, ["compare", "r1", "run:r2", "--store", str(db)])
    assert res.exit_code == 1 and res.stderr.endswith("(did you mean 'run:r1'?)\n")
    res = runner.invoke(app, ["compare", "hw:H100", "hw:H200", "--store", str(db)])
    assert res.exit_code == 1
    assert res.stderr == "error: no hardware 'NVIDIA_H200' in the store; hardware there: NVIDIA_H100\n"
    res = runner.invoke(app, ["compare", "run:r1", "run:r2", "--store", str(tmp_path / "none.duckdb")])
    assert res.exit_code == 1 and res.stderr.startswith("error: no store at")


def test_the_report_shows_a_comparison(tmp_path: Path) -> None:
    db = _store(tmp_path)
    html = tmp_path / "report.html"
    res = runner.invoke(
        app, ["report", "--store", str(db), "--compare", "run:r1", "run:r2", "--html", str(html)]
    )
    assert res.exit_code == 0, res.output
    assert "compare: run:r2 (B) against run:r1 (A)" in res.stdout
    assert "slower" in res.stdout and "faster" in res.stdout
    page = html.read_text()
    assert "compare: run:r2 (B) against run:r1 (A)" in page and "geomean ratio" in page
    # the picture: one dot per task, the latency ratio B/A (0.8 and 1.2) as the table and the
    # CLI say it, on a log axis
    assert "Comparison: run:r2 (B) against run:r1 (A)" in page
    assert page.count("on B vs A: B/A ") == 2
    assert "s1 on B vs A: B/A 0.8x" in page and "s1 on B vs A: B/A 1.2x" in page
    assert "latency ratio B/A per solution" in page and "1.25x" not in page
    as_json = runner.invoke(app, ["report", "--store", str(db), "--compare", "run:r1", "run:r2", "--json"])
    tables = json.loads(as_json.stdout)["tables"]
    (cmp,) = [t for t in tables if t["title"].startswith("compare:")]
    assert sorted(r["verdict"] for r in cmp["rows"]) == ["faster", "slower"]
    bad = runner.invoke(app, ["report", "--store", str(db), "--compare", "rn:r1", "run:r2"])
    assert bad.exit_code == 1 and bad.stderr.startswith("error:") and "did you mean" in bad.stderr

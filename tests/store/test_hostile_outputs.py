"""Outputs of the store's commands (export-tuning --out, report --html, export --parquet) are
never the store, its write-ahead log, its logs, a folder, a device or a FIFO, and never go
through a link planted beside them: refused with ``error:`` naming the path, nothing written."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.store import Store, query

from .conftest import batch_of, make_definition, make_trace, tuned_point, tuned_solution

pytestmark = pytest.mark.hostile
runner = CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "sweep.duckdb"
    st = Store(path)
    points = (tuned_point({"B": 64}, 1.0), tuned_point({"B": 32}, 0.5))
    st.add(batch_of(*points, definitions=(make_definition(),), solutions=(tuned_solution(),)))
    st.close()
    log = tmp_path / "results" / "traces" / "elementwise" / "vec_add.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text(make_trace("s9").to_json() + "\n")
    return path


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(folder.rglob("*"))
        if not p.is_fifo()
    }


def _targets(tmp_path: Path, store: Path) -> dict[str, tuple[Path, str]]:
    """Outputs that must be refused, and the words that say why."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    other = tmp_path / "other.duckdb"
    other.write_bytes(store.read_bytes())
    link = tmp_path / "link.json"
    link.symlink_to(store)
    wal = Path(f"{store}.wal")
    wal.write_bytes(b"pretend wal")
    return {
        "the store": (store, "is the store"),
        "its wal": (wal, "is the store"),
        "a link to it": (link, "is the store"),
        "a relative path to it": (Path(os.path.relpath(store)), "is the store"),
        "a log": (store.parent / "traces" / "elementwise" / "vec_add.jsonl", "which the store reads"),
        "another store": (other, "is a DuckDB store"),
        "a fifo": (fifo, "FIFO"),
        "a folder": (tmp_path, "folder"),
        "a device": (Path("/dev/null"), "device"),
    }


COMMANDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "export-tuning": lambda store, out: ["export-tuning", "--store", str(store), "--out", str(out)],
    "report": lambda store, out: ["report", "--store", str(store), "--html", str(out)],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_output_that_is_the_store_or_no_file_is_refused(tmp_path: Path, store: Path, command: str) -> None:
    for what, (out, words) in _targets(tmp_path, store).items():
        before = _digest(tmp_path)
        res = runner.invoke(app, COMMANDS[command](store, out))
        assert res.exit_code == 1, (what, res.output)
        assert res.stderr.startswith("error: cannot write") and words in res.stderr, (what, res.stderr)
        assert "Traceback" not in res.output
        assert _digest(tmp_path) == before, what
    Path(f"{store}.wal").unlink()  # the pretend one
    assert query(store, "SELECT count(*) FROM traces").rows == [(3,)]  # two stored, one logged


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_links_planted_beside_an_output_are_never_written_through(
    tmp_path: Path, store: Path, command: str
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep")
    out = tmp_path / "out" / "o.json"
    out.parent.mkdir()
    for name in (".o.json.tmp", "o.json.tmp", "o.tmp", f".o.json.{os.getpid()}.tmp"):
        (out.parent / name).symlink_to(victim)
    res = runner.invoke(app, COMMANDS[command](store, out))
    assert res.exit_code == 0, res.output
    assert victim.read_text() == "keep" and out.stat().st_size > 0 and not out.is_symlink()
    assert sorted(p.name for p in out.parent.iterdir() if not p.is_symlink()) == ["o.json"]


def test_an_export_folder_that_is_no_new_folder_is_refused(tmp_path: Path, store: Path) -> None:
    empty_target = tmp_path / "empty"
    empty_target.mkdir()
    linked = tmp_path / "linked"
    linked.symlink_to(empty_target)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = {
        store: "is a file",
        store.parent: "not empty",
        store.parent / "traces" / "new": "which the store reads",
        linked: "is a link",
        fifo: "is a file",
    }
    for folder, words in cases.items():
        before = _digest(tmp_path)
        res = runner.invoke(app, ["export", "--store", str(store), "--parquet", str(folder)])
        assert res.exit_code == 1, (folder, res.output)
        assert res.stderr.startswith("error: export folder") and words in res.stderr, res.stderr
        assert _digest(tmp_path) == before, folder
    assert not any(empty_target.iterdir())


def test_an_export_is_published_whole_or_not_at_all(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweep.store import _export

    def fail(*_args: object) -> list[str]:
        raise OSError(28, "No space left on device")

    out = tmp_path / "exports" / "x"
    monkeypatch.setattr(_export, "_write_tables", fail)
    res = runner.invoke(app, ["export", "--store", str(store), "--parquet", str(out)])
    assert res.exit_code == 1 and "No space left on device" in res.stderr
    assert not out.exists() and list((tmp_path / "exports").iterdir()) == []
    monkeypatch.undo()
    res = runner.invoke(app, ["export", "--store", str(store), "--parquet", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "manifest.json").is_file() and sorted(p.name for p in (tmp_path / "exports").iterdir()) == [
        "x"
    ]


@pytest.mark.parametrize("hardware", ["../../escaped", "NVIDIA ../../x", "a/b", "x\x00y", "/abs"])
def test_a_calibration_named_by_a_hostile_device_stays_in_its_folder(tmp_path: Path, hardware: str) -> None:
    from sweep.errors import StoreError
    from sweep.schema import Ceilings
    from sweep.store import save_calibration

    results = tmp_path / "deep" / "results"
    results.mkdir(parents=True)
    ceilings = Ceilings(hardware=hardware, gbps=100.0, measured_at="2026-01-01T00:00:00Z")
    try:
        path = save_calibration(ceilings, results, None)
    except StoreError as e:
        assert "cannot name a calibration file" in str(e) or "cannot write" in str(e)
        assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == []
    else:
        assert path.parent == results / "calibration"
        assert [p for p in tmp_path.rglob("*") if p.is_file()] == [path]

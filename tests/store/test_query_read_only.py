"""``sweep query`` is read-only in fact: one statement, a query, in a session that can reach no
file and cannot change its own settings; every table and view still answers."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.errors import StoreError
from sweep.store import NODE_TABLES, TABLES, VIEW_NAMES, Store, export_parquet, ingest, query
from sweep.store.read import run_sql

from .conftest import counts, make_definition, make_solution, make_trace

runner = CliRunner()

_READ_ONLY = (
    "the query session is read-only: only a query (SELECT, WITH, FROM, DESCRIBE, SHOW, EXPLAIN) "
    "can run; to change the store, use 'sweep ingest' or 'sweep launch'\n"
)


def _write_log(path: Path, *traces: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(t.to_json() + "\n" for t in traces))  # type: ignore[attr-defined]
    return path


@pytest.fixture(scope="module")
def shared_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of three traces on two hardware, with definition and solution. Shared by the
    tests of this module: none of them may change it, which each one checks."""
    tmp = tmp_path_factory.mktemp("query")
    src = tmp / "in"
    _write_log(
        src / "t.jsonl",
        make_trace("s1", "wl-1", "NVIDIA_H100", latency=1.0),
        make_trace("s1", "wl-1", "NVIDIA_H200", latency=0.5),
        make_trace("s1", "wl-2", "NVIDIA_H100", latency=2.0),
    )
    (src / "def.json").write_text(make_definition().to_json())
    (src / "sol.json").write_text(make_solution("s1").to_json())
    path = tmp / "store" / "sweep.duckdb"
    ingest([src], path)
    return path


@pytest.fixture
def db(shared_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared store, with a HOME of the test's own (DuckDB puts extensions in ~/.duckdb)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return shared_db


def _counts(db: Path) -> tuple[int, ...]:
    return counts(db, "traces", "definitions", "duckdb_views() WHERE NOT internal")


@pytest.mark.parametrize(
    ("sql", "error"),
    [
        # The reported attack: re-attach the file read-write and delete every trace.
        (
            "DETACH store; ATTACH '{db}' AS rw; DELETE FROM rw.traces",
            (
                "3 SQL statements given; a query session runs exactly one (remove the others, or run "
                "them one at a time)\n"
            ),
        ),
        ("SELECT 1; SELECT 2", "2 SQL statements given; a query session runs exactly one"),
        ("DROP VIEW latest", "refused DROP: " + _READ_ONLY),
        ("/* hidden */ drop table traces", "refused DROP: " + _READ_ONLY),
        ("CREATE TABLE x AS SELECT 1", "refused CREATE: " + _READ_ONLY),
        ("INSERT INTO traces SELECT * FROM traces", "refused INSERT: " + _READ_ONLY),
        ("DELETE FROM traces", "refused DELETE: " + _READ_ONLY),
        ("UPDATE traces SET status = 'PASSED'", "refused UPDATE: " + _READ_ONLY),
        ("COPY (SELECT 1) TO '{tmp}/out.csv'", "refused COPY: " + _READ_ONLY),
        ("EXPORT DATABASE '{tmp}/dump'", "refused EXPORT: " + _READ_ONLY),
        ("ATTACH '{tmp}/new.duckdb' AS x", "refused ATTACH: " + _READ_ONLY),
        ("DETACH store", "refused DETACH: " + _READ_ONLY),
        ("INSTALL httpfs", "refused INSTALL: " + _READ_ONLY),
        ("LOAD httpfs", "refused LOAD: " + _READ_ONLY),
        ("SET enable_external_access = true", "refused SET: " + _READ_ONLY),
        ("PRAGMA show_tables", "refused PRAGMA: " + _READ_ONLY),
        ("CALL pragma_version()", "refused CALL: " + _READ_ONLY),
        ("CHECKPOINT", "refused CHECKPOINT: " + _READ_ONLY),
        ("BEGIN", "refused BEGIN: " + _READ_ONLY),
        ("EXPLAIN ANALYZE DELETE FROM traces", "refused EXPLAIN of a statement that is not a query: "),
        ("PIVOT traces ON hardware USING count(*)", "refused a statement that DuckDB runs as several"),
        ("", "no SQL statement given; write one query, e.g. 'SELECT * FROM leaderboard'\n"),
        (" ; ", "no SQL statement given"),
        # A query that would read or list files outside the store.
        ("SELECT * FROM read_text('/etc/hostname')", "query failed: Permission Error: Cannot access file"),
        ("SELECT * FROM glob('{tmp}/*')", "query failed: Permission Error: Cannot access file"),
        ("SELECT * FROM read_parquet('{tmp}/x.parquet')", "query failed: Permission Error"),
    ],
)
def test_anything_but_one_query_is_refused_and_changes_nothing(
    db: Path, tmp_path: Path, sql: str, error: str
) -> None:
    before = _counts(db)
    files_before = sorted(p.name for p in tmp_path.iterdir())
    res = runner.invoke(app, ["query", sql.format(db=db, tmp=tmp_path), "--store", str(db)])
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("error: " + error)
    assert res.stdout == ""
    assert _counts(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files_before  # no file made or copied
    assert not (tmp_path / "home" / ".duckdb").exists()  # no extension was fetched


def test_file_access_error_says_what_a_query_reads(db: Path) -> None:
    res = runner.invoke(app, ["query", "SELECT * FROM read_text('/etc/hostname')", "--store", str(db)])
    assert res.stderr.endswith("; a query session reads the store's tables and views only, no other file\n")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ';' AS semicolon_in_a_string",
        "SELECT 1; -- a trailing comment",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
        "FROM traces SELECT count(*)",
        "DESCRIBE traces",
        "SHOW TABLES",
        "SUMMARIZE SELECT latency_ms FROM traces",
        "VALUES (1), (2)",
        "EXPLAIN SELECT * FROM leaderboard",
        "EXPLAIN ANALYZE SELECT count(*) FROM traces",
        "PIVOT traces ON hardware IN ('NVIDIA_H100', 'NVIDIA_H200') USING count(*) GROUP BY solution",
    ],
)
def test_read_queries_of_every_form_run(db: Path, sql: str) -> None:
    res = runner.invoke(app, ["query", sql, "--store", str(db), "--json"])
    assert res.exit_code == 0, res.output


_RELATIONS = [*TABLES, *NODE_TABLES, *VIEW_NAMES, "perf_at(1.0)"]


def _every_relation_answers(db: Path, results: Path | None = None) -> dict[str, int]:
    """Rows of each relation, each read as ``query`` reads it (``run_sql`` in a read session),
    in one session: opening one per relation (with its log tail) repeated the same set-up."""
    got = {}
    with Store(db).session(results) as session:
        for rel in _RELATIONS:
            got[rel] = len(run_sql(session, f"SELECT * FROM {rel}").rows)
    return got


def test_every_table_view_and_macro_answers(db: Path) -> None:
    got = _every_relation_answers(db)
    assert got["traces"] == 3
    assert got["latest"] == 3
    assert got["best"] == 3
    assert got["cross_hardware"] == 1
    assert got["leaderboard"] == 2
    assert got["backend_scores"] == 2
    assert got["perf_at(1.0)"] == 2


def test_every_relation_answers_with_a_log_tail_and_from_logs_alone(tmp_path: Path) -> None:
    results = tmp_path / "results"
    db = results / "sweep.duckdb"
    ingest([_write_log(tmp_path / "a.jsonl", make_trace("s1", "wl-1"))], db)
    # Lines logged but not stored yet come from the log (temporary tables of the session).
    _write_log(results / "traces" / "vec_add" / "vec_add.jsonl", make_trace("s1", "wl-2"))
    assert _every_relation_answers(db, results)["traces"] == 2
    # No store file: the session is built from the logs in memory, and locked down too.
    db.unlink()
    assert _every_relation_answers(db, results)["traces"] == 1
    with pytest.raises(StoreError, match="^refused DROP: the query session is read-only"):
        query(db, "DROP VIEW latest", results_dir=results)
    with pytest.raises(StoreError, match="Permission Error"):
        query(db, "SELECT * FROM read_text('/etc/hostname')", results_dir=results)


def test_every_relation_answers_on_a_store_merged_from_exports(db: Path, tmp_path: Path) -> None:
    export_parquet(db, tmp_path / "exp")
    merged = tmp_path / "merged.duckdb"
    ingest([tmp_path / "exp"], merged)
    want = _every_relation_answers(db)
    want["log_progress"] = 0  # bookkeeping of the source's logs: not exported
    assert _every_relation_answers(merged) == want


def test_the_session_itself_is_read_only_and_locked(db: Path) -> None:
    """Beyond the statement check: the connection refuses writes and setting changes."""
    with Store(db).session() as s:
        with pytest.raises(duckdb.Error, match="read-only mode"):
            s.con.execute("CREATE TABLE main.x (a INTEGER)")
        with pytest.raises(duckdb.Error, match="the configuration has been locked"):
            s.con.execute("SET enable_external_access = true")
        # The reported attack, past the statement check: the file comes back read-only.
        s.con.execute(f"ATTACH '{db}' AS rw")
        with pytest.raises(duckdb.Error, match="read-only mode"):
            s.con.execute("DELETE FROM rw.traces")
        with pytest.raises(duckdb.Error, match="file system operations are disabled"):
            s.con.execute(f"ATTACH '{db.parent / 'other.duckdb'}' AS other")
        with pytest.raises(duckdb.Error, match="disabled"):
            s.con.execute("LOAD httpfs")


def test_two_sessions_of_one_process_share_the_locked_file(db: Path, tmp_path: Path) -> None:
    with Store(db).session() as a, Store(db).session() as b:
        assert a.con.execute("SELECT count(*) FROM traces").fetchall() == [(3,)]
        assert b.con.execute("SELECT count(*) FROM traces").fetchall() == [(3,)]
    # And an export (which writes files) still can, once they are closed.
    assert export_parquet(db, tmp_path / "exp").traces == 3

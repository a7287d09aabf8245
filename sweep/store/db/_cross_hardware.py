"""What ``cross_hardware`` reads, kept up to date as traces are stored (schema version 7; 8
ranks as every view does).

Two tables, both computed from ``traces``: ``cross_hardware_latest``, the newest trace (by the
time it claims, never later than when it was stored, then its key: ``_newest.py``) of each
(definition, pair_key, hardware), and
``cross_hardware_pairs``, every two of those rows of one (definition, pair_key) on two
hardware. The view is then a scan of the second instead of a window over every trace and a
self-join, at every query.

Every insert of traces updates both in its own transaction (:func:`add_new_traces`, called by
``_insert.insert_relations``, the one insert every write goes through); a change of stored
traces' columns (the backfill of op type and solution hash, which moves a trace to another
pair key) recomputes the groups it touched (:func:`refresh_traces`); a migration builds them
whole (:func:`rebuild`); a read session over a store file whose logs hold traces the file does
not yet, overlays the groups of those on the stored tables with temporary views
(:func:`overlay_tail`). The SQL takes the tables' names, so the same statements serve each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep.store.db._connection import count, fetch_one
from sweep.store.db._newest import NEWEST_FIRST
from sweep.store.db._schema import column_names

if TYPE_CHECKING:
    import duckdb

__all__ = ["add_new_traces", "last_rowid", "overlay_tail", "rebuild", "refresh_traces"]

LATEST = "cross_hardware_latest"
PAIRS = "cross_hardware_pairs"

_GROUP = ("definition", "pair_key", "hardware")
# Newest first, as every view ranks (_newest.py; DuckDB puts NULLs last either way).
_NEWEST = NEWEST_FIRST


def _cols(prefix: str = "") -> str:
    return ", ".join(f'{prefix}"{c}"' for c in column_names(LATEST))


def _same_group(a: str, b: str, columns: tuple[str, ...] = _GROUP) -> str:
    # Plain equality (a hash join; IS NOT DISTINCT FROM took three times as long at 1M rows):
    # none of the columns is NULL (a trace names its definition and hardware; every insert
    # computes pair_key).
    return " AND ".join(f"{a}.{c} = {b}.{c}" for c in columns)


def _winners_sql(candidates: str) -> str:
    """The newest row of each group among ``candidates`` (latest's columns)."""
    return f"SELECT * FROM ({candidates}) QUALIFY row_number() OVER (PARTITION BY {', '.join(_GROUP)} {_NEWEST}) = 1"


def _pairs_sql(latest: str, keys: str | None) -> str:
    """The pairs of ``latest``'s rows of the (definition, pair_key) in ``keys`` (``None``: all of
    its rows): the join of the view of schema 6, over its newest traces per hardware.

    A trace with neither solution hash nor name pairs with none (as ever).
    """
    # Both sides of the join only the keys' rows: a few, where a batch changed a few groups.
    only_keys = (
        f"WHERE EXISTS (SELECT 1 FROM {keys} k WHERE k.definition = l.definition AND k.pair_key = l.pair_key)"
        if keys is not None
        else ""
    )
    return f"""WITH rows_of_keys AS (
    SELECT * FROM {latest} l
    {only_keys}
)
SELECT a.definition, a.pair_key, a.op_type, a.solution,
       coalesce(a.solution_hash, b.solution_hash) AS solution_hash, a.workload_uuid, a.axes,
       a.hardware AS hardware_a, b.hardware AS hardware_b, a.status AS status_a, b.status AS status_b,
       a.latency_ms AS latency_ms_a, b.latency_ms AS latency_ms_b,
       a.speedup_factor AS speedup_a, b.speedup_factor AS speedup_b,
       a.settings_hash AS settings_hash_a, b.settings_hash AS settings_hash_b,
       a.trace_key AS trace_key_a, b.trace_key AS trace_key_b
FROM rows_of_keys a
JOIN rows_of_keys b ON a.definition = b.definition AND a.pair_key = b.pair_key AND a.hardware < b.hardware
WHERE a.solution_hash IS NOT NULL OR a.solution IS NOT NULL"""


# Up to this many pair keys, the stored rows of a batch's keys are read with a filter naming
# them (a scan that reads only the vectors holding them) rather than a join, which reads every
# column of every row (at 1M traces, most of a 100-trace batch's maintenance).
_FEW_KEYS = 1024


def _few_keys(con: duckdb.DuckDBPyConnection, new: str) -> list[tuple[int]] | None:
    """The distinct pair keys of ``new``, or ``None`` when it has more than :data:`_FEW_KEYS`."""
    rows = con.execute(f"SELECT DISTINCT pair_key FROM ({new}) LIMIT {_FEW_KEYS + 1}").fetchall()
    return rows if len(rows) <= _FEW_KEYS else None


def _rows_named_sql(con: duckdb.DuckDBPyConnection, keys: list[tuple[int]], latest: str) -> str | None:
    """A SELECT of the rows of ``latest`` of the pair keys ``keys``; ``None`` when there are none."""
    named = f"SELECT * FROM {latest} WHERE pair_key IN ({', '.join(f'{int(k)}::UHUGEINT' for (k,) in keys)})"
    return named if keys and count(con, f"SELECT count(*) FROM ({named})") else None


def _rows_of_keys_sql(con: duckdb.DuckDBPyConnection, new: str, latest: str) -> str | None:
    """A SELECT of the rows of ``latest`` whose pair key ``new`` has; ``None`` when there are none."""
    keys = _few_keys(con, new)
    if keys is not None:
        return _rows_named_sql(con, keys, latest)
    shares = f"EXISTS (SELECT 1 FROM ({new}) n WHERE n.pair_key = l.pair_key)"
    # First over pair_key alone: a batch of new tasks (most of an ingest) shares no key with
    # the store, and then no other column needs reading (at 1M traces, most of the cost).
    if count(con, f"SELECT count(*) FROM {latest} l WHERE {shares}") == 0:
        return None
    return f"SELECT * FROM {latest} l WHERE {shares}"


def _changes(
    con: duckdb.DuckDBPyConnection, new: str, latest: str, rows: str, winners: str
) -> tuple[str, str, bool]:
    """What ``new`` rows change in ``latest``, as two temporary tables: ``rows``, the stored rows
    of their pair keys, read once (rivals of the same group, partners on other hardware), and
    ``winners``, the new rows now newest of their group. Returns SQL of the pair keys that
    changed, and of those keys' rows after the change, and whether any stored row shares a
    pair key with ``new`` (if not, nothing stored needs replacing)."""
    stored = _rows_of_keys_sql(con, new, latest) or f"SELECT * FROM {latest} WHERE false"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {rows} AS {stored}")
    candidates = f"SELECT *, true AS _new FROM ({new}) UNION ALL SELECT *, false AS _new FROM {rows}"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {winners} AS SELECT {_cols()} FROM ({_winners_sql(candidates)}) WHERE _new"
    )
    keys = f"(SELECT DISTINCT definition, pair_key FROM {winners})"
    after = f"""(SELECT * FROM {rows} r WHERE NOT EXISTS (SELECT 1 FROM {winners} w WHERE {_same_group("w", "r")})
UNION ALL SELECT * FROM {winners})"""
    return keys, after, count(con, f"SELECT count(*) FROM {rows}") > 0


def last_rowid(con: duckdb.DuckDBPyConnection) -> int:
    """The highest rowid of ``traces`` (-1 when empty): the rows an insert adds after this call
    have higher ones (appended, in this transaction; nothing deletes traces)."""
    row = fetch_one(con, "SELECT coalesce(max(rowid), -1) FROM traces")
    assert row is not None and isinstance(row[0], int)
    return row[0]


def add_new_traces(con: duckdb.DuckDBPyConnection, after_rowid: int) -> None:
    """Update both tables with the traces inserted since :func:`last_rowid` gave ``after_rowid``.

    A group changes only where a new trace is newer than its stored one; only those groups'
    rows, and their pair keys' pairs, are replaced. A batch of many pair keys is cut in two:
    the traces of keys the tables hold already (a few, at the seams of an ingest's batches)
    take the path that replaces rows; the rest are appended (:func:`_append`), as the whole of
    a first batch is. At 1M traces in batches of ~500,000 on 16 cores, the statements that keep
    the tables took a quarter less time (2.3 s against 1.8 s, bench/store_writer_profile.py).
    """
    new = f"SELECT {_cols()} FROM traces WHERE rowid > {int(after_rowid)}"
    keys = _few_keys(con, new)
    if keys is not None:
        if _rows_named_sql(con, keys, LATEST) is None:
            _append(con, new)
        else:
            _replace(con, new)
        return
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _xh_shared AS
SELECT DISTINCT pair_key FROM {LATEST} l WHERE EXISTS (SELECT 1 FROM ({new}) n WHERE n.pair_key = l.pair_key)""")
    try:
        shared = "EXISTS (SELECT 1 FROM _xh_shared k WHERE k.pair_key = n.pair_key)"
        if count(con, "SELECT count(*) FROM _xh_shared"):
            _replace(con, f"SELECT * FROM ({new}) n WHERE {shared}")
            new = f"SELECT * FROM ({new}) n WHERE NOT {shared}"
        _append(con, new)
    finally:
        con.execute("DROP TABLE IF EXISTS _xh_shared")


def _append(con: duckdb.DuckDBPyConnection, new: str) -> None:
    """Add ``new`` traces, none of whose pair keys the tables hold (a first ingest, new tasks):
    their groups' newest are among them alone, and no stored pair has their keys. So nothing is
    replaced: their winners are appended, then paired among themselves, read back from the
    table (no temporary copy of the winners: at 1M traces, a fifth of the tables' upkeep). Rows
    appended get higher rowids than any before."""
    before = count(con, f"SELECT coalesce(max(rowid), -1) FROM {LATEST}")
    con.execute(f"INSERT INTO {LATEST} {_winners_sql(new)}")
    con.execute(f"INSERT INTO {PAIRS} {_pairs_sql(f'(SELECT * FROM {LATEST} WHERE rowid > {before})', None)}")


def _replace(con: duckdb.DuckDBPyConnection, new: str) -> None:
    """Add ``new`` traces, some of whose pair keys the tables hold: the groups where one is
    newest get it in place of their stored row, and those pair keys' pairs are computed anew."""
    try:
        keys, after, stored = _changes(con, new, LATEST, "_xh_rows", "_xh_winners")
        if stored:
            con.execute(f"DELETE FROM {LATEST} l USING _xh_winners w WHERE {_same_group('w', 'l')}")
            con.execute(f"DELETE FROM {PAIRS} p USING {keys} k WHERE {_same_group('k', 'p', _GROUP[:2])}")
        con.execute(f"INSERT INTO {LATEST} SELECT * FROM _xh_winners")
        con.execute(f"INSERT INTO {PAIRS} {_pairs_sql(after, keys)}")
    finally:
        con.execute("DROP TABLE IF EXISTS _xh_rows")
        con.execute("DROP TABLE IF EXISTS _xh_winners")


def refresh_traces(con: duckdb.DuckDBPyConnection, trace_keys: str) -> None:
    """Recompute the groups that the stored traces ``trace_keys`` (a relation with a column
    ``trace_key``) were in and are in now, after their columns changed in place."""
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _xh_groups AS
SELECT DISTINCT definition, pair_key, hardware FROM traces t
WHERE EXISTS (SELECT 1 FROM {trace_keys} k WHERE k.trace_key = t.trace_key)
UNION
SELECT definition, pair_key, hardware FROM {LATEST} l
WHERE EXISTS (SELECT 1 FROM {trace_keys} k WHERE k.trace_key = l.trace_key)""")
    try:
        # Every trace of those groups competes: a group's old winner may have left it.
        members = f"SELECT {_cols()} FROM traces t WHERE EXISTS (SELECT 1 FROM _xh_groups g WHERE {_same_group('g', 't')})"
        con.execute(f"DELETE FROM {LATEST} l USING _xh_groups g WHERE {_same_group('g', 'l')}")
        keys = "(SELECT DISTINCT definition, pair_key FROM _xh_groups)"
        con.execute(f"DELETE FROM {PAIRS} p USING {keys} k WHERE {_same_group('k', 'p', _GROUP[:2])}")
        con.execute(f"INSERT INTO {LATEST} {_winners_sql(members)}")
        con.execute(f"INSERT INTO {PAIRS} {_pairs_sql(LATEST, keys)}")
    finally:
        con.execute("DROP TABLE IF EXISTS _xh_groups")


def rebuild(con: duckdb.DuckDBPyConnection) -> None:
    """Compute both tables whole from ``traces`` (a migration)."""
    con.execute(f"DELETE FROM {LATEST}")
    con.execute(f"DELETE FROM {PAIRS}")
    con.execute(f"INSERT INTO {LATEST} {_winners_sql(f'SELECT {_cols()} FROM traces')}")
    keys = f"(SELECT DISTINCT definition, pair_key FROM {LATEST})"
    con.execute(f"INSERT INTO {PAIRS} {_pairs_sql(LATEST, keys)}")


def overlay_tail(con: duckdb.DuckDBPyConnection, main: str, tail: str) -> None:
    """In a read session, temporary views of both tables that add the traces of ``tail`` (a
    table with the columns of ``traces``, none of them stored) to the stored ones of ``main``
    (the store file's schema, qualified), without writing the file.

    The groups where a tail trace is newest get their new rows; the pairs of their pair keys
    are recomputed over the overlaid rows; every other row is the stored one.
    """
    keys, after, _ = _changes(
        con, f"SELECT {_cols()} FROM {tail}", f"{main}.{LATEST}", "tail_xh_rows", f"tail_{LATEST}"
    )
    con.execute(f"CREATE TEMP TABLE tail_{PAIRS} AS {_pairs_sql(after, keys)}")
    con.execute(f"""CREATE TEMP VIEW {LATEST} AS
SELECT * FROM {main}.{LATEST} l WHERE NOT EXISTS (SELECT 1 FROM tail_{LATEST} w WHERE {_same_group("w", "l")})
UNION ALL SELECT * FROM tail_{LATEST}""")
    con.execute(f"""CREATE TEMP VIEW {PAIRS} AS
SELECT * FROM {main}.{PAIRS} p WHERE NOT EXISTS (SELECT 1 FROM {keys} k WHERE {_same_group("k", "p", _GROUP[:2])})
UNION ALL SELECT * FROM tail_{PAIRS}""")

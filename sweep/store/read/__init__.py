"""Reading: a session over the store file and the results folder's log tails, and read-only SQL
queries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.store.read._query import QueryResult as QueryResult
    from sweep.store.read._query import run_sql as run_sql
    from sweep.store.read._store import Session as Session
    from sweep.store.read._store import Store as Store
    from sweep.store.read._store import read_log_tails as read_log_tails

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "QueryResult": "_query",
    "read_log_tails": "_store",
    "run_sql": "_query",
    "Session": "_store",
    "Store": "_store",
}
__all__ = ["QueryResult", "Session", "Store", "read_log_tails", "run_sql"]
__getattr__ = face(__name__, _WHERE)

"""The results store: JSONL logs (the durable record) and a DuckDB file queried with SQL.

Layout under a results folder::

    traces/<op_type>/<definition>.jsonl     one Trace per line (FlashInfer-Bench format)
    definitions/<op_type>/<name>.json       the definitions of logged traces
    solutions/<author>/<op_type>/<definition>/<name>.json
    sweep.duckdb                            tables traces, definitions, solutions, workloads;
                                            views latest, best, cross_hardware, leaderboard,
                                            op_scores, backend_scores; macro perf_at(p)

No DuckDB or Arrow import happens at import time of this package.
"""

from sweep.store._connection import StoreLockedError
from sweep.store._export import ExportReport, export_parquet
from sweep.store._ingest import IngestReport, ingest
from sweep.store._insert import AddCounts
from sweep.store._query import QueryResult, query
from sweep.store._schema import SCHEMA_VERSION, VIEW_NAMES
from sweep.store._store import Session, Store
from sweep.store._store_context import StoreContext
from sweep.store._writer import ResultsWriter, completed_task_ids, log_path

__all__ = [
    "SCHEMA_VERSION",
    "VIEW_NAMES",
    "AddCounts",
    "ExportReport",
    "IngestReport",
    "QueryResult",
    "ResultsWriter",
    "Session",
    "Store",
    "StoreContext",
    "StoreLockedError",
    "completed_task_ids",
    "export_parquet",
    "ingest",
    "log_path",
    "query",
]

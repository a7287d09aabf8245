"""The results store: JSONL logs (the durable record) and a DuckDB file queried with SQL.

Layout under a results folder::

    traces/<op_type>/<definition>.jsonl     one Trace per line (FlashInfer-Bench format)
    definitions/<op_type>/<name>.json       the definitions of logged traces
    solutions/<author>/<op_type>/<definition>/<name>.json
    calibration/<hardware>.json             the newest ceilings measured by 'sweep calibrate'
    sweep.duckdb                            tables traces, definitions, solutions, workloads,
                                            calibrations, profiles, sanitizer_findings; views latest, best, cross_hardware,
                                            leaderboard, op_scores, backend_scores, compare;
                                            macro perf_at(p)

Writing: :class:`ResultsWriter` (the sweep driver's logs and store), :func:`ingest` (files,
folders, Parquet exports), :class:`Store` with :class:`RowBatch` (rows built in Python).
Outputs beside the store (a report page, a tuning table) never go over it: :func:`write_output`,
:func:`check_output`. Reading: :func:`query` (SQL), :meth:`Store.session`, :func:`export_parquet`, :func:`compare`
(two runs, stores, hardware or solution versions, task by task, with verdicts),
:func:`earlier_durations` (how long earlier evaluations took: a launch runs the longest first). Calibrations:
:func:`save_calibration`, :func:`load_calibrations`, :func:`calibration_for`. Showing answers
and the report (text tables, JSON, CSV, HTML) is :mod:`sweep.store.render`, which reads
through this package and is never imported by it.

No DuckDB or Arrow import happens at import time of this package.
"""

from sweep.store._calibration import calibration_for, load_calibrations, save_calibration
from sweep.store._durations import EarlierRun, earlier_durations
from sweep.store._export import ExportReport, export_parquet
from sweep.store._outputs import check_output, write_output
from sweep.store._sweep_state import StatusCount, sweep_state
from sweep.store._tuning import tuning_table, write_tuning
from sweep.store.comparison._compare import (
    VERDICTS,
    CompareSummary,
    Comparison,
    SideInfo,
    TaskComparison,
    compare,
)
from sweep.store.db._compare_stats import Estimate, estimate_from_runs, estimate_single, verdict
from sweep.store.db._connection import StoreLockedError, sql_literal
from sweep.store.db._schema import NODE_TABLES, SCHEMA_VERSION, TABLES, VIEW_NAMES, column_names
from sweep.store.db._store_context import StoreContext
from sweep.store.ingestion._ingest import IngestReport, ingest
from sweep.store.ingestion._inserter import INGEST_LOGGER
from sweep.store.profiles._profile_parse import (
    NCU_METRICS,
    KernelProfile,
    ProfileParseError,
    SanitizerFinding,
    SanitizerReport,
    parse_ncu_csv,
    parse_sanitizer,
)
from sweep.store.profiles._profiles import save_profile_results
from sweep.store.read._query import QueryResult, query
from sweep.store.read._store import Session, Store
from sweep.store.rows._insert import AddCounts
from sweep.store.rows._row_batch import RowBatch
from sweep.store.scores._reveal import RevealReport, reveal
from sweep.store.scores._scores import (
    SET_SUMMARY_COLUMNS,
    DefinitionGain,
    ModelProjection,
    ScoreAtP,
    SetProjection,
    model_projection,
    scores_at,
)
from sweep.store.write._log_files import log_path
from sweep.store.write._writer import ResultsWriter, completed_task_ids

__all__ = [
    "INGEST_LOGGER",
    "NCU_METRICS",
    "NODE_TABLES",
    "SCHEMA_VERSION",
    "SET_SUMMARY_COLUMNS",
    "TABLES",
    "VERDICTS",
    "VIEW_NAMES",
    "AddCounts",
    "CompareSummary",
    "Comparison",
    "DefinitionGain",
    "EarlierRun",
    "Estimate",
    "ExportReport",
    "IngestReport",
    "KernelProfile",
    "ModelProjection",
    "ProfileParseError",
    "QueryResult",
    "ResultsWriter",
    "RevealReport",
    "RowBatch",
    "SanitizerFinding",
    "SanitizerReport",
    "ScoreAtP",
    "Session",
    "SetProjection",
    "SideInfo",
    "StatusCount",
    "Store",
    "StoreContext",
    "StoreLockedError",
    "TaskComparison",
    "calibration_for",
    "check_output",
    "column_names",
    "compare",
    "completed_task_ids",
    "earlier_durations",
    "estimate_from_runs",
    "estimate_single",
    "export_parquet",
    "ingest",
    "load_calibrations",
    "log_path",
    "model_projection",
    "parse_ncu_csv",
    "parse_sanitizer",
    "query",
    "reveal",
    "save_calibration",
    "save_profile_results",
    "scores_at",
    "sql_literal",
    "sweep_state",
    "tuning_table",
    "verdict",
    "write_output",
    "write_tuning",
]

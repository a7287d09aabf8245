"""The DuckDB file: connection and lock, tables and views (schema), the checks a row passes, the store
context, the newest-first order, the cross-hardware key, the statistics the compare view computes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.store.db._checks import (
        check_definition as check_definition,
    )
    from sweep.store.db._checks import (
        check_trace as check_trace,
    )
    from sweep.store.db._checks import (
        check_workload_axes as check_workload_axes,
    )
    from sweep.store.db._checks import (
        describe_invalid as describe_invalid,
    )
    from sweep.store.db._compare_stats import (
        Basis as Basis,
    )
    from sweep.store.db._compare_stats import (
        Estimate as Estimate,
    )
    from sweep.store.db._compare_stats import (
        Verdict as Verdict,
    )
    from sweep.store.db._compare_stats import (
        estimate_from_runs as estimate_from_runs,
    )
    from sweep.store.db._compare_stats import (
        estimate_from_samples as estimate_from_samples,
    )
    from sweep.store.db._compare_stats import (
        estimate_single as estimate_single,
    )
    from sweep.store.db._compare_stats import (
        ratio_interval as ratio_interval,
    )
    from sweep.store.db._compare_stats import (
        verdict as verdict,
    )
    from sweep.store.db._connection import (
        StoreLockedError as StoreLockedError,
    )
    from sweep.store.db._connection import (
        count as count,
    )
    from sweep.store.db._connection import (
        fetch_one as fetch_one,
    )
    from sweep.store.db._connection import (
        init_connection as init_connection,
    )
    from sweep.store.db._connection import (
        lock_down as lock_down,
    )
    from sweep.store.db._connection import (
        open_db as open_db,
    )
    from sweep.store.db._connection import (
        open_read_only as open_read_only,
    )
    from sweep.store.db._connection import (
        schema_version as schema_version,
    )
    from sweep.store.db._connection import (
        set_meta as set_meta,
    )
    from sweep.store.db._connection import sql_literal as sql_literal
    from sweep.store.db._cross_hardware import (
        add_new_traces as add_new_traces,
    )
    from sweep.store.db._cross_hardware import (
        last_rowid as last_rowid,
    )
    from sweep.store.db._cross_hardware import (
        overlay_tail as overlay_tail,
    )
    from sweep.store.db._cross_hardware import (
        rebuild as rebuild,
    )
    from sweep.store.db._cross_hardware import (
        refresh_traces as refresh_traces,
    )
    from sweep.store.db._newest import RANK_TIME as RANK_TIME
    from sweep.store.db._schema import (
        DERIVED_COLUMNS as DERIVED_COLUMNS,
    )
    from sweep.store.db._schema import (
        NODE_TABLES as NODE_TABLES,
    )
    from sweep.store.db._schema import (
        SCHEMA_VERSION as SCHEMA_VERSION,
    )
    from sweep.store.db._schema import (
        TABLES as TABLES,
    )
    from sweep.store.db._schema import (
        V3_TRACE_COLUMNS as V3_TRACE_COLUMNS,
    )
    from sweep.store.db._schema import (
        V5_TRACE_COLUMNS as V5_TRACE_COLUMNS,
    )
    from sweep.store.db._schema import (
        V6_TRACE_COLUMNS as V6_TRACE_COLUMNS,
    )
    from sweep.store.db._schema import (
        V9_TRACE_COLUMNS as V9_TRACE_COLUMNS,
    )
    from sweep.store.db._schema import (
        VIEW_DEPENDS as VIEW_DEPENDS,
    )
    from sweep.store.db._schema import (
        VIEW_NAMES as VIEW_NAMES,
    )
    from sweep.store.db._schema import (
        arrow_schema as arrow_schema,
    )
    from sweep.store.db._schema import (
        built_columns as built_columns,
    )
    from sweep.store.db._schema import (
        column_names as column_names,
    )
    from sweep.store.db._schema import (
        create_tables_sql as create_tables_sql,
    )
    from sweep.store.db._schema import (
        pair_key_sql as pair_key_sql,
    )
    from sweep.store.db._schema import (
        view_statements as view_statements,
    )
    from sweep.store.db._schema import (
        views_hash as views_hash,
    )
    from sweep.store.db._schema import (
        views_sql as views_sql,
    )
    from sweep.store.db._score_views import DEFAULT_BASELINE as DEFAULT_BASELINE
    from sweep.store.db._score_views import REFERENCE_BASELINE as REFERENCE_BASELINE
    from sweep.store.db._score_views import at_p_sql as at_p_sql
    from sweep.store.db._store_context import StoreContext as StoreContext
    from sweep.store.db._views import CURRENT as CURRENT
    from sweep.store.db._views import RANKED as RANKED
    from sweep.store.db._views import SOLUTION_KEY as SOLUTION_KEY
    from sweep.store.db._views import leaderboard_sql as leaderboard_sql

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "DERIVED_COLUMNS": "_schema",
    "add_new_traces": "_cross_hardware",
    "arrow_schema": "_schema",
    "built_columns": "_schema",
    "at_p_sql": "_score_views",
    "DEFAULT_BASELINE": "_score_views",
    "REFERENCE_BASELINE": "_score_views",
    "Basis": "_compare_stats",
    "check_definition": "_checks",
    "check_trace": "_checks",
    "check_workload_axes": "_checks",
    "column_names": "_schema",
    "count": "_connection",
    "sql_literal": "_connection",
    "CURRENT": "_views",
    "create_tables_sql": "_schema",
    "describe_invalid": "_checks",
    "Estimate": "_compare_stats",
    "estimate_from_runs": "_compare_stats",
    "estimate_from_samples": "_compare_stats",
    "estimate_single": "_compare_stats",
    "fetch_one": "_connection",
    "init_connection": "_connection",
    "last_rowid": "_cross_hardware",
    "leaderboard_sql": "_views",
    "lock_down": "_connection",
    "NODE_TABLES": "_schema",
    "open_db": "_connection",
    "open_read_only": "_connection",
    "overlay_tail": "_cross_hardware",
    "pair_key_sql": "_schema",
    "RANK_TIME": "_newest",
    "RANKED": "_views",
    "ratio_interval": "_compare_stats",
    "rebuild": "_cross_hardware",
    "refresh_traces": "_cross_hardware",
    "SCHEMA_VERSION": "_schema",
    "SOLUTION_KEY": "_views",
    "schema_version": "_connection",
    "set_meta": "_connection",
    "StoreContext": "_store_context",
    "StoreLockedError": "_connection",
    "TABLES": "_schema",
    "V3_TRACE_COLUMNS": "_schema",
    "V5_TRACE_COLUMNS": "_schema",
    "V6_TRACE_COLUMNS": "_schema",
    "V9_TRACE_COLUMNS": "_schema",
    "Verdict": "_compare_stats",
    "verdict": "_compare_stats",
    "VIEW_DEPENDS": "_schema",
    "VIEW_NAMES": "_schema",
    "view_statements": "_schema",
    "views_hash": "_schema",
    "views_sql": "_schema",
}
__all__ = [
    "CURRENT",
    "DEFAULT_BASELINE",
    "DERIVED_COLUMNS",
    "NODE_TABLES",
    "RANKED",
    "RANK_TIME",
    "REFERENCE_BASELINE",
    "SCHEMA_VERSION",
    "SOLUTION_KEY",
    "TABLES",
    "V3_TRACE_COLUMNS",
    "V5_TRACE_COLUMNS",
    "V6_TRACE_COLUMNS",
    "V9_TRACE_COLUMNS",
    "VIEW_DEPENDS",
    "VIEW_NAMES",
    "Basis",
    "Estimate",
    "StoreContext",
    "StoreLockedError",
    "Verdict",
    "add_new_traces",
    "arrow_schema",
    "at_p_sql",
    "built_columns",
    "check_definition",
    "check_trace",
    "check_workload_axes",
    "column_names",
    "count",
    "create_tables_sql",
    "describe_invalid",
    "estimate_from_runs",
    "estimate_from_samples",
    "estimate_single",
    "fetch_one",
    "init_connection",
    "last_rowid",
    "leaderboard_sql",
    "lock_down",
    "open_db",
    "open_read_only",
    "overlay_tail",
    "pair_key_sql",
    "ratio_interval",
    "rebuild",
    "refresh_traces",
    "schema_version",
    "set_meta",
    "sql_literal",
    "verdict",
    "view_statements",
    "views_hash",
    "views_sql",
]
__getattr__ = face(__name__, _WHERE)

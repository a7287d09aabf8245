"""Records to rows: one builder, used by the writer, ingest, the JSONL fallback and migrations.

Rows are gathered as tuples and leave as Arrow tables, so inserting 50,000 traces is one
DuckDB statement, not 50,000. Rows built elsewhere (a worker process parsing part of a log,
:mod:`sweep.store.ingestion._jsonl_chunks`) join a batch as Arrow tables (:meth:`RowBatch.add_arrow`),
deduplicated against it by the same keys, in the order they came.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from sweep.schema import Definition, Solution, Trace, Workload
from sweep.schema.distributed import DistributedResult
from sweep.schema.hardware import record_name
from sweep.schema.params import params_json
from sweep.store.db import (
    V9_TRACE_COLUMNS,
    StoreContext,
    arrow_schema,
    built_columns,
    check_definition,
    check_trace,
    check_workload_axes,
)
from sweep.store.rows._arrow_rows import rows_to_arrow

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Known", "RowBatch", "parse_timestamp", "trace_key", "trace_keys"]

_EMPTY = StoreContext()


#: Hex digits of SHA-256 kept in a trace key (128 bits).
_KEY_CHARS = 32


def trace_key(record: str | bytes) -> str:
    """The deterministic key of a trace: a hash of its serialized record.

    ``record`` is ``Trace.to_json()`` (or its UTF-8 bytes, ``Trace.to_json_bytes()``), which
    is stable under a read and write, so a trace written by the sweep and the same line read
    back from its JSONL log get the same key.
    """
    data = record.encode() if isinstance(record, str) else record
    return hashlib.sha256(data).hexdigest()[:_KEY_CHARS]


def trace_keys(records: list[bytes]) -> list[str]:
    """:func:`trace_key` of each record, without a Python call per record."""
    sha = hashlib.sha256
    return [sha(r).hexdigest()[:_KEY_CHARS] for r in records]


def parse_timestamp(text: str | None) -> datetime | None:
    """An ISO 8601 timestamp as an aware datetime; a time without a zone is taken as UTC."""
    if not text:
        return None
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Known:
    """Column values known from elsewhere (an older store), used where the record says nothing."""

    op_type: str | None = None
    tags: list[str] | None = None
    author: str | None = None
    language: str | None = None
    solution_hash: str | None = None
    sweep: str | None = None
    run_id: str | None = None
    config_hash: str | None = None
    settings_hash: str | None = None
    source: str | None = None


_NO_KNOWN = Known()


class _Columns:
    """Columns that hold a sub-record's fields, named as the fields are (after ``prefix``):
    read with one ``attrgetter`` call (a loop in C), all NULL when the sub-record is absent.
    A row is built for every trace ingested, so this is per-trace work."""

    def __init__(self, fields: tuple[str, ...], prefix: str = "") -> None:
        self.names = tuple(prefix + f for f in fields)
        self._get = operator.attrgetter(*fields)
        self._none: dict[str, object] = dict.fromkeys(self.names)

    def of(self, record: object | None) -> Mapping[str, object]:
        """The columns' values for ``record`` (a shared mapping of NULLs for ``None``: read only)."""
        if record is None:
            return self._none
        return dict(zip(self.names, self._get(record)))


_TIMING_FIELDS = ("clock", "iterations", "p10_ms", "p50_ms", "p90_ms", "mean_ms", "cv")
# The solution's timing has three columns more (schema version 3) than the reference's one.
_TIMING = _Columns((*_TIMING_FIELDS, "timer", "rel_error", "target_met"), "timing_")
_REF_TIMING = _Columns((*_TIMING_FIELDS, "timer"), "ref_timing_")
_PERFORMANCE = _Columns(
    (
        "latency_ms",
        "reference_latency_ms",
        "speedup_factor",
        "work_flops",
        "work_bytes",
        "work_source",
        "tflops",
        "gbps",
        "peak_fraction",
        "floor_ms",
    )
)
_CLOCKS = _Columns(("sm_clock_mhz_before", "sm_clock_mhz_after", "sm_clock_mhz_max", "throttled"))
_PROVENANCE = _Columns(("task_id", "node_id", "gpu_id", "worker_pid", "attempt"))


@functools.cache
def _column_order(table: str) -> tuple[int, operator.itemgetter[object]]:
    cols = built_columns(table)
    return len(cols), operator.itemgetter(*cols)


def _ordered(table: str, row: Mapping[str, object]) -> tuple[object, ...]:
    """A row keyed by column name as a tuple in the schema's column order.

    Raises:
        AssertionError: The row misses a column of the schema or has one it lacks (a builder
            out of step with :func:`~sweep.store.db.built_columns`).
    """
    n, get = _column_order(table)
    try:
        values: tuple[object, ...] = get(row)
    except KeyError as e:
        raise AssertionError(f"{table}: the row builder has no value for column {e}") from None
    if len(row) != n:
        extra = sorted(set(row) - set(built_columns(table)))
        raise AssertionError(f"{table}: the row builder has columns the schema lacks: {extra}")
    return values


_DISTRIBUTED_NAMES = tuple(name for name, _ in V9_TRACE_COLUMNS)
#: The columns of a call made by one rank: world size 1, the rest NULL.
_ONE_RANK: dict[str, object] = dict(
    zip(_DISTRIBUTED_NAMES, (1, None, None, None, None, None, None, None, None, None), strict=True)
)


def _distributed(d: DistributedResult | None) -> Mapping[str, object]:
    """The columns of a call made by several ranks (world size 1 and NULLs for one rank)."""
    if d is None:
        return _ONE_RANK
    ranks = sorted(d.ranks, key=lambda r: r.rank)
    values = (
        d.world_size,
        d.collective,
        d.message_bytes,
        d.algbw_gbps,
        d.busbw_gbps,
        d.link_fraction,
        d.straggler_rank,
        d.failed_rank,
        [r.status for r in ranks],
        [r.latency_ms for r in ranks],
    )
    return dict(zip(_DISTRIBUTED_NAMES, values, strict=True))


@functools.lru_cache(maxsize=256)
def _hardware(raw: str) -> str:
    return record_name(raw)


class RowBatch:
    """Rows for every table, deduplicated by key within the batch.

    Args:
        now: The ingest time of the batch's traces (default: when the batch was made).
    """

    def __init__(self, now: datetime | None = None) -> None:
        # One tuple per row, in the table's column order (:func:`_ordered`); transposed once in
        # :meth:`arrow`.
        self._rows: dict[str, list[tuple[object, ...]]] = {t: [] for t in _TABLES}
        # Rows already in Arrow form (:meth:`add_arrow`, and rows frozen before them), in order.
        self._parts: dict[str, list[pa.Table]] = {t: [] for t in _TABLES}
        self._part_rows: dict[str, int] = dict.fromkeys(_TABLES, 0)
        self._trace_keys: set[str] = set()
        self._workload_keys: set[tuple[str, str]] = set()
        self._definition_keys: set[str] = set()
        self._solution_keys: set[tuple[str, str]] = set()
        self._now = now or datetime.now(timezone.utc)
        self.duplicates = 0

    def __len__(self) -> int:
        return sum(self.count(t) for t in _TABLES)

    def count(self, table: str) -> int:
        """Rows gathered for ``table``."""
        return len(self._rows[table]) + self._part_rows[table]

    def has_trace(self, key: str) -> bool:
        """Whether the batch holds the trace of this key."""
        return key in self._trace_keys

    def add_trace(
        self,
        trace: Trace,
        *,
        record: str | None = None,
        context: StoreContext | None = None,
        source: str = "",
        known: Known = _NO_KNOWN,
        now: datetime | None = None,
        line: tuple[bytes, str] | None = None,
    ) -> str | None:
        """Add one trace; a workload-only record goes to ``workloads`` instead.

        Args:
            trace: The record.
            record: ``trace.to_json()`` when the caller has it already.
            context: Fills op_type, tags, author, language and solution hash.
            source: Where the trace came from (a file, or ``writer:<run id>``).
            known: Values for columns the record and context leave empty.
            now: The ingest time (default: the batch's).
            line: The line the trace was read from (without its newline) and its
                :func:`trace_key`: the key, if the line is the canonical record.

        Returns:
            The trace key, or ``None`` for a workload-only record or a key already in the batch.

        Raises:
            ValidationError: The store cannot hold the trace (:func:`~sweep.store.db._checks.check_trace`);
                nothing of it was added.
        """
        check_trace(trace)
        self.add_workload(trace.definition, trace.workload)
        ev = trace.evaluation
        if ev is None:
            return None
        # Bytes from here on: hashed as they are, and turned into the Arrow column without a
        # round trip through Python str (the record is most of a row's bytes).
        data = record.encode() if record is not None else trace.to_json_bytes()
        key = line[1] if line is not None and line[0] == data else trace_key(data)
        if key in self._trace_keys:
            self.duplicates += 1
            return None
        self._trace_keys.add(key)
        ctx = context or _EMPTY
        defn = ctx.definitions.get(trace.definition)
        sol = ctx.solution_for(trace.definition, trace.solution)
        prov = trace.provenance
        corr, perf, env, clocks = ev.correctness, ev.performance, ev.environment, ev.clocks
        extra = corr.extra if corr is not None else None
        # Keyed by column name and put in the schema's order (_schema.built_columns, the one
        # declaration of the table's columns), so the builder cannot drift from the schema.
        row: dict[str, object] = {
            "trace_key": key,
            "definition": trace.definition,
            "solution": trace.solution,
            "workload_uuid": trace.workload.uuid,
            "axes": list(trace.workload.axes.items()),
            "status": ev.status._value_,  # the enum's value, without Enum.value's descriptor
            "max_absolute_error": corr.max_absolute_error if corr else None,
            "max_relative_error": corr.max_relative_error if corr else None,
            "correctness_extra": json.dumps(extra) if extra is not None else None,
            **_PERFORMANCE.of(perf),
            "hardware": _hardware(env.hardware),
            "hardware_raw": env.hardware,
            "device_name": env.device_name,
            "libs": list(env.libs.items()),
            "timestamp": parse_timestamp(ev.timestamp),
            "log": ev.log,
            "seed": ev.seed,
            **_TIMING.of(ev.timing),
            **_REF_TIMING.of(ev.reference_timing),
            **_CLOCKS.of(clocks),
            "throttle_reasons_before": list(clocks.throttle_reasons_before) if clocks else None,
            "throttle_reasons_after": list(clocks.throttle_reasons_after) if clocks else None,
            "op_type": defn.op_type if defn else known.op_type,
            "tags": list(defn.tags) if defn else known.tags,
            "author": sol.author if sol else known.author,
            "language": sol.spec.language.value if sol else known.language,
            "solution_hash": (prov.solution_hash if prov and prov.solution_hash else None)
            or (sol.content_hash if sol else known.solution_hash),
            "sweep": (prov.sweep if prov else None) or known.sweep,
            "run_id": (prov.run_id if prov else None) or known.run_id,
            **_PROVENANCE.of(prov),
            "config_hash": (prov.config_hash if prov else None) or known.config_hash,
            "settings_hash": (prov.settings_hash if prov else None) or known.settings_hash,
            "started_at": parse_timestamp(prov.started_at) if prov else None,
            "finished_at": parse_timestamp(prov.finished_at) if prov else None,
            "record": data,
            "source": known.source or source,
            "ingested_at": now or self._now,
            # Schema version 3 (_schema.V3_TRACE_COLUMNS).
            "flags": list(ev.flags or ()),
            # Schema version 5 (_schema.V5_TRACE_COLUMNS).
            "solution_params": params_json(trace.solution_params)
            if trace.solution_params is not None
            else None,
            # Schema version 9 (_schema.V9_TRACE_COLUMNS).
            **_distributed(ev.distributed),
        }
        self._rows["traces"].append(_ordered("traces", row))
        return key

    def add_workload(self, definition: str, workload: Workload) -> None:
        """Add a workload of ``definition`` (once per uuid).

        Raises:
            ValidationError: An axis is not a size the store can hold.
        """
        key = (definition, workload.uuid)
        if key in self._workload_keys:
            return
        check_workload_axes(workload.axes)
        self._workload_keys.add(key)
        row = {
            "definition": definition,
            "uuid": workload.uuid,
            "axes": list(workload.axes.items()),
            "record": workload.to_json(),
        }
        self._rows["workloads"].append(_ordered("workloads", row))

    def add_definition(self, defn: Definition) -> None:
        """Add a definition (once per name).

        Raises:
            ValidationError: A constant axis does not fit in 64 bits.
        """
        if defn.name in self._definition_keys:
            return
        check_definition(defn)
        self._definition_keys.add(defn.name)
        row = {
            "name": defn.name,
            "op_type": defn.op_type,
            "tags": list(defn.tags),
            "description": defn.description,
            "var_axes": defn.var_axes(),
            "const_axes": list(defn.const_axes().items()),
            "record": defn.to_json(),
        }
        self._rows["definitions"].append(_ordered("definitions", row))

    def add_solution(self, sol: Solution) -> None:
        """Add a solution (once per name and content hash)."""
        key = (sol.name, sol.content_hash)
        if key in self._solution_keys:
            return
        self._solution_keys.add(key)
        row = {
            "name": sol.name,
            "definition": sol.definition,
            "author": sol.author,
            "language": sol.spec.language.value,
            "target_hardware": list(sol.spec.target_hardware),
            "entry_point": sol.spec.entry_point,
            "solution_hash": sol.content_hash,
            "description": sol.description,
            "record": sol.to_json(),
        }
        self._rows["solutions"].append(_ordered("solutions", row))

    def add_context(self, context: StoreContext) -> None:
        """Add every record of a context."""
        for d in context.definitions.values():
            self.add_definition(d)
        for s in context.solutions.values():
            self.add_solution(s)
        for dname, wls in context.workloads.items():
            for w in wls:
                self.add_workload(dname, w)

    def add_arrow(self, table: str, rows: pa.Table, *, duplicates: int = 0) -> None:
        """Add rows of ``traces`` or ``workloads`` built by another batch (:meth:`arrow`),
        leaving out those whose key this batch holds already (counted in :attr:`duplicates`
        for traces, as :meth:`add_trace` counts them).

        Args:
            table: ``"traces"`` or ``"workloads"``.
            rows: The rows, with the table's Arrow schema.
            duplicates: Repeats the other batch left out already, added to :attr:`duplicates`.

        Raises:
            ValueError: Another table, or rows of another schema.
        """
        import pyarrow as pa

        if table not in ("traces", "workloads"):
            raise ValueError(f"add_arrow: rows of {table!r}; only traces and workloads come built")
        if rows.schema != arrow_schema(table):
            raise ValueError(f"add_arrow: the rows of {table} do not have its Arrow schema")
        self.duplicates += duplicates
        if table == "traces":
            keys: list[object] = rows.column("trace_key").to_pylist()
            seen: set[object] = self._trace_keys  # type: ignore[assignment]
        else:
            keys = list(zip(rows.column("definition").to_pylist(), rows.column("uuid").to_pylist()))
            seen = self._workload_keys  # type: ignore[assignment]
        # Usually no key is in the batch and none repeats: then set operations in C, not a
        # Python step per row.
        dropped, before = 0, len(seen)
        if seen.isdisjoint(keys):
            seen.update(keys)
            if len(seen) - before != len(keys):  # repeats among the rows: row by row
                seen.difference_update(keys)
        if len(seen) == before:
            keep = [k not in seen and not seen.add(k) for k in keys]  # type: ignore[func-returns-value]
            dropped = len(keep) - sum(keep)
        if dropped:
            rows = rows.filter(pa.array(keep, type=pa.bool_()))
            if table == "traces":
                self.duplicates += dropped
        if not rows.num_rows:
            return
        self._freeze(table)  # rows built here before these stay before them
        self._parts[table].append(rows)
        self._part_rows[table] += rows.num_rows

    def _freeze(self, table: str) -> None:
        """Turn the rows built so far into an Arrow part, keeping their place in the order."""
        rows = self._rows[table]
        if rows:
            self._parts[table].append(rows_to_arrow(table, rows))
            self._part_rows[table] += len(rows)
            self._rows[table] = []

    def arrow(self, table: str) -> pa.Table:
        """The rows of ``table`` as an Arrow table with the store's column types, in the order
        they were added."""
        import pyarrow as pa

        self._freeze(table)
        parts = self._parts[table]
        if not parts:
            return rows_to_arrow(table, [])
        if len(parts) > 1:
            # One part again: later calls (and DuckDB's scan) read one chunked table.
            self._parts[table] = [pa.concat_tables(parts)]
        return self._parts[table][0]


_TABLES = ("traces", "definitions", "solutions", "workloads")

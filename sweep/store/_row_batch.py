"""Records to rows: one builder, used by the writer, ingest, the JSONL fallback and migrations.

Rows are gathered column by column and leave as Arrow tables, so inserting 50,000 traces is
one DuckDB statement, not 50,000.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from sweep.errors import ValidationError
from sweep.schema import Definition, Solution, TimingStats, Trace, Workload
from sweep.schema.hardware import record_name
from sweep.schema.params import params_json
from sweep.store._checks import check_definition, check_trace, check_workload_axes
from sweep.store._schema import arrow_schema
from sweep.store._store_context import StoreContext

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Known", "RowBatch", "parse_timestamp", "trace_key"]

_EMPTY = StoreContext()


def trace_key(record: str) -> str:
    """The deterministic key of a trace: a hash of its serialized record.

    ``record`` is ``Trace.to_json()``, which is stable under a read and write, so a trace
    written by the sweep and the same line read back from its JSONL log get the same key.
    """
    return hashlib.sha256(record.encode()).hexdigest()[:32]


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


_NO_TIMING = (None,) * 7


def _timing(t: TimingStats | None) -> tuple[object, ...]:
    """clock, iterations, p10, p50, p90, mean, cv (the order of the ``*_timing_*`` columns)."""
    if t is None:
        return _NO_TIMING
    return (t.clock, t.iterations, t.p10_ms, t.p50_ms, t.p90_ms, t.mean_ms, t.cv)


@functools.lru_cache(maxsize=256)
def _hardware(raw: str) -> str:
    return record_name(raw)


class RowBatch:
    """Rows for every table, deduplicated by key within the batch."""

    def __init__(self) -> None:
        # One tuple per row, in the table's column order; transposed once in :meth:`arrow`.
        self._rows: dict[str, list[tuple[object, ...]]] = {
            t: [] for t in ("traces", "definitions", "solutions", "workloads")
        }
        self._trace_keys: set[str] = set()
        self._workload_keys: set[tuple[str, str]] = set()
        self._definition_keys: set[str] = set()
        self._solution_keys: set[tuple[str, str]] = set()
        self.duplicates = 0

    def __len__(self) -> int:
        return sum(len(r) for r in self._rows.values())

    def count(self, table: str) -> int:
        """Rows gathered for ``table``."""
        return len(self._rows[table])

    def add_trace(
        self,
        trace: Trace,
        *,
        record: str | None = None,
        context: StoreContext | None = None,
        source: str = "",
        known: Known = _NO_KNOWN,
        now: datetime | None = None,
    ) -> str | None:
        """Add one trace; a workload-only record goes to ``workloads`` instead.

        Args:
            trace: The record.
            record: ``trace.to_json()`` when the caller has it already.
            context: Fills op_type, tags, author, language and solution hash.
            source: Where the trace came from (a file, or ``writer:<run id>``).
            known: Values for columns the record and context leave empty.
            now: The ingest time (default: now).

        Returns:
            The trace key, or ``None`` for a workload-only record or a key already in the batch.

        Raises:
            ValidationError: The store cannot hold the trace (:func:`~sweep.store._checks.check_trace`);
                nothing of it was added.
        """
        check_trace(trace)
        self.add_workload(trace.definition, trace.workload)
        ev = trace.evaluation
        if ev is None:
            return None
        record = record if record is not None else trace.to_json()
        key = trace_key(record)
        if key in self._trace_keys:
            self.duplicates += 1
            return None
        self._trace_keys.add(key)
        ctx = context or _EMPTY
        defn = ctx.definitions.get(trace.definition)
        sol = ctx.solution_for(trace.definition, trace.solution)
        prov = trace.provenance
        corr, perf, env, clocks = ev.correctness, ev.performance, ev.environment, ev.clocks
        timing, ref_timing = ev.timing, ev.reference_timing
        extra = corr.extra if corr is not None else None
        # Keep in the order of _schema._TRACES (checked by _check_order at import).
        self._rows["traces"].append(
            (
                key,
                trace.definition,
                trace.solution,
                trace.workload.uuid,
                list(trace.workload.axes.items()),
                ev.status.value,
                corr.max_absolute_error if corr else None,
                corr.max_relative_error if corr else None,
                json.dumps(extra) if extra is not None else None,
                perf.latency_ms if perf else None,
                perf.reference_latency_ms if perf else None,
                perf.speedup_factor if perf else None,
                _hardware(env.hardware),
                env.hardware,
                env.device_name,
                list(env.libs.items()),
                parse_timestamp(ev.timestamp),
                ev.log,
                ev.seed,
                *_timing(timing),
                *_timing(ref_timing),
                clocks.sm_clock_mhz_before if clocks else None,
                clocks.sm_clock_mhz_after if clocks else None,
                clocks.sm_clock_mhz_max if clocks else None,
                list(clocks.throttle_reasons_before) if clocks else None,
                list(clocks.throttle_reasons_after) if clocks else None,
                defn.op_type if defn else known.op_type,
                list(defn.tags) if defn else known.tags,
                sol.author if sol else known.author,
                sol.spec.language.value if sol else known.language,
                (prov.solution_hash if prov and prov.solution_hash else None)
                or (sol.content_hash if sol else known.solution_hash),
                (prov.sweep if prov else None) or known.sweep,
                (prov.run_id if prov else None) or known.run_id,
                prov.task_id if prov else None,
                (prov.config_hash if prov else None) or known.config_hash,
                (prov.settings_hash if prov else None) or known.settings_hash,
                prov.node_id if prov else None,
                prov.gpu_id if prov else None,
                prov.worker_pid if prov else None,
                prov.attempt if prov else None,
                parse_timestamp(prov.started_at) if prov else None,
                parse_timestamp(prov.finished_at) if prov else None,
                record,
                known.source or source,
                now or datetime.now(timezone.utc),
                # Schema version 3 (_schema.V3_TRACE_COLUMNS).
                perf.work_flops if perf else None,
                perf.work_bytes if perf else None,
                perf.work_source if perf else None,
                perf.tflops if perf else None,
                perf.gbps if perf else None,
                perf.peak_fraction if perf else None,
                perf.floor_ms if perf else None,
                list(ev.flags or ()),
                timing.timer if timing else None,
                timing.rel_error if timing else None,
                timing.target_met if timing else None,
                ref_timing.timer if ref_timing else None,
                clocks.throttled if clocks else None,
                # Schema version 5 (_schema.V5_TRACE_COLUMNS).
                params_json(trace.solution_params) if trace.solution_params is not None else None,
            )
        )
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
        self._rows["workloads"].append(
            (definition, workload.uuid, list(workload.axes.items()), workload.to_json())
        )

    def add_definition(self, defn: Definition) -> None:
        """Add a definition (once per name).

        Raises:
            ValidationError: A constant axis does not fit in 64 bits.
        """
        if defn.name in self._definition_keys:
            return
        check_definition(defn)
        self._definition_keys.add(defn.name)
        self._rows["definitions"].append(
            (
                defn.name,
                defn.op_type,
                list(defn.tags),
                defn.description,
                defn.var_axes(),
                list(defn.const_axes().items()),
                defn.to_json(),
            )
        )

    def add_solution(self, sol: Solution) -> None:
        """Add a solution (once per name and content hash)."""
        key = (sol.name, sol.content_hash)
        if key in self._solution_keys:
            return
        self._solution_keys.add(key)
        self._rows["solutions"].append(
            (
                sol.name,
                sol.definition,
                sol.author,
                sol.spec.language.value,
                list(sol.spec.target_hardware),
                sol.spec.entry_point,
                sol.content_hash,
                sol.description,
                sol.to_json(),
            )
        )

    def add_context(self, context: StoreContext) -> None:
        """Add every record of a context."""
        for d in context.definitions.values():
            self.add_definition(d)
        for s in context.solutions.values():
            self.add_solution(s)
        for dname, wls in context.workloads.items():
            for w in wls:
                self.add_workload(dname, w)

    def arrow(self, table: str) -> pa.Table:
        """The rows of ``table`` as an Arrow table with the store's column types."""
        import pyarrow as pa

        schema = arrow_schema(table)
        rows = self._rows[table]
        if rows and len(rows[0]) != len(schema):
            raise AssertionError(f"{table}: rows have {len(rows[0])} values for {len(schema)} columns")
        columns = list(zip(*rows)) if rows else [() for _ in schema]
        try:
            arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema)]
        except (OverflowError, pa.ArrowException, UnicodeError) as e:
            # The checks of add_* keep such values out; this names the column if one slips by.
            bad = next((f.name for col, f in zip(columns, schema) if not _converts(col, f.type)), "?")
            raise ValidationError(f"{table}.{bad}: a value the store cannot hold ({e})") from None
        return pa.Table.from_arrays(arrays, schema=schema)


def _converts(values: tuple[object, ...], dtype: pa.DataType) -> bool:
    import pyarrow as pa

    try:
        pa.array(values, type=dtype)
    except (OverflowError, pa.ArrowException, UnicodeError):
        return False
    return True

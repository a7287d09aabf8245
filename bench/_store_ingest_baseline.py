"""The ingest of main as of commit 1b6bf7f, kept callable as the baseline of
``bench/store_ingest.py``: one process, every line parsed with ``Trace.model_validate_json``,
rows built as Python tuples by main's row builder (copied here, unchanged but for names),
and inserted every 20,000 traces, each insert opening and closing the store file.

The inserts go through today's ``Store.add`` (the rows are handed over as Arrow tables), so
the baseline also gets today's table layout (the record column compressed with zstd); its
figures are, if anything, better than main's own.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import pydantic

from sweep.errors import ValidationError
from sweep.schema import Trace, Workload
from sweep.schema.params import params_json
from sweep.store import RowBatch, Store
from sweep.store._checks import check_trace, check_workload_axes, describe_invalid
from sweep.store._insert import LogMark
from sweep.store._row_batch import _EMPTY, _NO_KNOWN, Known, _hardware, _timing, parse_timestamp
from sweep.store._schema import arrow_schema
from sweep.store._store_context import StoreContext
from sweep.store._trace_files import LogReader, head_hash, is_json

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["baseline_ingest"]

BATCH_ROWS = 20_000


def trace_key(record: str) -> str:
    return hashlib.sha256(record.encode()).hexdigest()[:32]


class OldRowBatch:
    """Main's RowBatch, traces and workloads only."""

    def __init__(self) -> None:
        self._rows: dict[str, list[tuple[object, ...]]] = {"traces": [], "workloads": []}
        self._trace_keys: set[str] = set()
        self._workload_keys: set[tuple[str, str]] = set()
        self.duplicates = 0

    def count(self, table: str) -> int:
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


class _BaselineIngest:
    """Main's ``_Ingest`` for JSONL logs (the only input the bench writes)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.batch = OldRowBatch()
        self.marks: list[LogMark] = []
        self.added = 0
        self.skipped = 0

    def flush(self) -> None:
        if self.batch.count("traces") or self.batch.count("workloads") or self.marks:
            batch = RowBatch()
            for table in ("traces", "workloads"):
                batch.add_arrow(table, self.batch.arrow(table))
            batch.duplicates = self.batch.duplicates
            self.added += self.store.add(batch, self.marks).traces
        self.batch = OldRowBatch()
        self.marks = []

    def line(self, data: bytes, source: str) -> None:
        try:
            trace = Trace.model_validate_json(data)
        except pydantic.ValidationError as e:
            describe_invalid(e, data)
            self.skipped += 1
            return
        try:
            self.batch.add_trace(trace, source=source)
        except ValidationError:
            self.skipped += 1
            return
        if self.batch.count("traces") + self.batch.count("workloads") >= BATCH_ROWS:
            self.flush()

    def jsonl(self, path: Path) -> None:
        reader = LogReader(path)
        source = str(path.resolve())
        for line in reader:
            if line.data.strip():
                self.line(line.data, source)
        if reader.torn.strip() and is_json(reader.torn):
            self.line(reader.torn, source)
        if reader.end:
            self.marks.append(LogMark(source, reader.end, head_hash(path, reader.end)))


def baseline_ingest(logs: list[Path], store_path: Path) -> int:
    """Ingest JSONL logs the way main did; returns the traces added."""
    job = _BaselineIngest(Store(store_path, lock_timeout_s=30.0))
    for path in logs:
        job.jsonl(path)
    job.flush()
    return job.added

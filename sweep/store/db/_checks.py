"""What the store needs of a record beyond its schema, and messages that say what is wrong.

A record the schema accepts can still be one the store cannot hold or should not: an axis of
0, -5 or 2**70 (a dimension size; ``MAP(VARCHAR, BIGINT)`` holds 64 bits), a trace that
names a solution but carries no evaluation (a result without an outcome; a workload-only
record has neither), or numbers no measurement gives (a negative, infinite or NaN latency,
rate, percentile or ratio; percentiles out of order; finished before started), which would
rank or average as if measured. Every write builds its rows through :class:`~sweep.store.RowBatch`,
which calls these checks, so a writer's batch, an ingest and a Parquet merge refuse the same
records with the same words.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone

import pydantic
import pydantic_core

from sweep.errors import ValidationError, format_validation_error, shown
from sweep.schema import Definition, Trace
from sweep.schema.limits import INT64_MAX
from sweep.schema.trace import TimingStats

__all__ = ["check_definition", "check_trace", "check_workload_axes", "describe_invalid"]


def check_workload_axes(axes: Mapping[str, object], field: str = "workload.axes") -> None:
    """Refuse axis values that are not dimension sizes a store can hold.

    Raises:
        ValidationError: ``<field>.<axis>: must be ... (got <value>)``.
    """
    for name, value in axes.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= INT64_MAX:
            raise ValidationError(
                f"{field}.{name}: must be a whole number from 1 to {INT64_MAX} (the size of a "
                f"dimension) (got {shown(value)})"
            )


#: Fields of ``evaluation.performance`` that are times, rates, amounts or ratios.
_PERFORMANCE = (
    "latency_ms",
    "reference_latency_ms",
    "speedup_factor",
    "work_flops",
    "work_bytes",
    "tflops",
    "gbps",
    "peak_fraction",
    "floor_ms",
)
#: Fields of a timing's statistics that are times or ratios.
_TIMING = ("p10_ms", "p50_ms", "p90_ms", "mean_ms", "cv", "rel_error", "target_rel_error")
_INF = float("inf")


def _refuse_number(value: object, field: str) -> None:
    raise ValidationError(
        f"{field}: must be a finite number of at least 0 (a time, a rate or a ratio; no run "
        f"measures {shown(value)}) (got {shown(value)})"
    )


_PERFORMANCE_OF = operator.attrgetter(*_PERFORMANCE)
_TIMING_OF = operator.attrgetter(*_TIMING)


def _check_fields(
    record: object, get: Callable[[object], tuple[float | None, ...]], names: tuple[str, ...], where: str
) -> None:
    # One chained comparison per value: false for NaN, infinities and negatives alike. Field
    # names are formatted only for a value refused (this runs for every trace stored).
    for value, name in zip(get(record), names):
        if value is not None and not 0.0 <= value < _INF:
            _refuse_number(value, f"{where}.{name}")


def _check_timing(stats: TimingStats, where: str) -> None:
    _check_fields(stats, _TIMING_OF, _TIMING, where)
    if not stats.p10_ms <= stats.p50_ms <= stats.p90_ms:
        raise ValidationError(
            f"{where}: p10_ms <= p50_ms <= p90_ms must hold, percentiles of one set of samples "
            f"(got {shown(stats.p10_ms)}, {shown(stats.p50_ms)}, {shown(stats.p90_ms)})"
        )


def _when(text: str) -> datetime:
    # The schema has checked the text (sweep.schema.trace.check_time): only read it here.
    ts = datetime.fromisoformat(text)
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=timezone.utc)


def _check_numbers(trace: Trace) -> None:
    """Refuse values no measurement gives: a negative, infinite or NaN time, rate or ratio;
    percentiles out of order; a run that finished before it started."""
    ev = trace.evaluation
    if ev is None:
        return
    if ev.performance is not None:
        _check_fields(ev.performance, _PERFORMANCE_OF, _PERFORMANCE, "evaluation.performance")
    if ev.timing is not None:
        _check_timing(ev.timing, "evaluation.timing")
    if ev.reference_timing is not None:
        _check_timing(ev.reference_timing, "evaluation.reference_timing")
    prov = trace.provenance
    if prov is not None and prov.started_at and prov.finished_at and prov.finished_at != prov.started_at:
        try:
            backwards = _when(prov.finished_at) < _when(prov.started_at)
        except ValueError:  # not ISO 8601 after all: the schema says so where it reads it
            return
        if backwards:
            raise ValidationError(
                f"provenance.finished_at: {shown(prov.finished_at)} is before started_at "
                f"{shown(prov.started_at)}; a run cannot take a negative time"
            )


def check_trace(trace: Trace) -> None:
    """Refuse a trace the store cannot hold (see the module docstring).

    Raises:
        ValidationError: The field and the value that are wrong, and what would be right.
    """
    check_workload_axes(trace.workload.axes)
    if trace.solution is not None and trace.evaluation is None:
        raise ValidationError(
            f"solution: names {shown(trace.solution)} but the trace has no evaluation; a result "
            "needs both (a workload-only record has neither: set solution to null)"
        )
    _check_numbers(trace)


def check_definition(defn: Definition) -> None:
    """Refuse a definition whose constant axes do not fit a ``BIGINT`` column.

    Raises:
        ValidationError: The axis and its value.
    """
    for name, value in defn.const_axes().items():
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise ValidationError(
                f"axes.{name}.value: must fit in 64 bits (at most {INT64_MAX}) (got {shown(value)})"
            )


def describe_invalid(
    err: pydantic.ValidationError, text: bytes | str | None = None, data: object = None
) -> str:
    """One line saying why a record was refused: ``not valid JSON (...)`` or
    ``not a valid <kind>: <field>: <message> (got <value>)``, plus how many more problems.

    Args:
        err: What pydantic raised.
        text: The JSON text validated (to find field paths), when ``data`` is not given.
        data: The object validated.
    """
    first = err.errors(include_url=False)[0]
    if first["type"] == "json_invalid":
        msg = str(first["msg"]).removeprefix("Invalid JSON: ")
        # The text is one line of a file (named by the caller): a column says where in it; the
        # newline that ends it would make an error at its end read "line 2 column 0".
        msg = re.sub(r" at line 1 column (\d+)$", r" at column \1", msg)
        return f"not valid JSON ({re.sub(r' at line [0-9]+ column [0-9]+$', '', msg)})"
    if data is None and text is not None:
        try:
            data = pydantic_core.from_json(text)
        except ValueError:
            data = None
    lines = format_validation_error(err, data)
    kind = err.title.lower() if err.title else "record"  # the model: Trace -> "trace"
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return f"not a valid {kind}: {lines[0]}{more}"

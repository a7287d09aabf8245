"""What a solution set does to a model, and the metrics people quote, read from the score views.

:func:`model_projection` answers "what does this do to my model": per solution set and
hardware, the covered speedup (Amdahl over the weighted reference time of the workloads in
the store), the end-to-end speedup and its bound when the user says how much time lies
outside these kernels, what is still at the reference's time (failed, never run), and the
definitions that take the most time with the share of the gain each gives.
:func:`scores_at` gives fast_p, win@p and the pass rate for any thresholds.
Formulas and sources: docs/scores.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sweep.errors import StoreError, shown
from sweep.store.db import DEFAULT_BASELINE, at_p_sql, sql_literal
from sweep.store.read import Session, Store, run_sql

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "SET_SUMMARY_COLUMNS",
    "DefinitionGain",
    "ModelProjection",
    "ScoreAtP",
    "SetProjection",
    "amdahl",
    "check_baseline",
    "check_ps",
    "check_uncovered",
    "model_projection",
    "projection_of",
    "scores_at",
]

#: The most thresholds one call computes.
MAX_PS = 64

#: The longest baseline name (an author) win@p accepts.
MAX_BASELINE = 200


@dataclass(frozen=True)
class DefinitionGain:
    """One definition of a set's projection (times are weighted: weight x latency, in ms)."""

    definition: str
    workloads: int
    passed: int
    failed: int
    not_run: int
    reference_ms: float
    projected_ms: float
    speedup: float | None
    #: Its share of the covered reference time: the most of the gain it could ever give.
    time_share: float | None
    #: Time it saves over the covered reference time: how much of the possible gain it takes.
    gain_of_covered: float | None
    #: Its share of the time the whole set saves (``None`` when the set saves nothing).
    share_of_gain: float | None


#: The fields of a :class:`SetProjection` that ``sweep project`` and the report's first section
#: show, in order (the report adds the covered times).
SET_SUMMARY_COLUMNS = (
    "solution_set",
    "hardware",
    "covered_speedup",
    "end_to_end_speedup",
    "bound",
    "passed",
    "failed",
    "not_run",
    "share_at_reference_time",
)


@dataclass(frozen=True)
class SetProjection:
    """One solution set on one hardware.

    Attributes:
        covered_speedup: Covered reference time over covered projected time (Amdahl's part).
        end_to_end_speedup: ``1 / (u + (1 - u) / covered_speedup)`` for the uncovered
            fraction ``u`` given, else ``None``.
        bound: ``1 / u``: the most any kernels of these definitions could give (``None``
            without ``u``, infinite for ``u = 0``).
        share_at_reference_time: Of the covered reference time, the part left at the
            reference's time because the set failed or never ran those workloads.
    """

    solution_set: str
    hardware: str
    workloads: int
    definitions: int
    passed: int
    failed: int
    not_run: int
    covered_reference_ms: float
    covered_projected_ms: float
    covered_speedup: float | None
    share_at_reference_time: float | None
    end_to_end_speedup: float | None = None
    bound: float | None = None
    top: list[DefinitionGain] = field(default_factory=list)


@dataclass
class ModelProjection:
    """:func:`model_projection`'s answer.

    Attributes:
        uncovered: The fraction of end-to-end time outside these kernels, as given.
        sets: Per solution set and hardware, the best covered speedup first.
        unmeasured: Per hardware, workloads of the stored definitions with no reference time
            there (never run, or only with a failed reference): left out of every projection.
        notes: What the numbers rest on, in words.
    """

    uncovered: float | None
    sets: list[SetProjection]
    unmeasured: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ScoreAtP:
    """fast_p, win@p and pass rate of one solution set, hardware and p."""

    solution_set: str
    hardware: str
    p: float
    tasks: int
    definitions: int
    fast_p: float
    #: None where no task of the set had a baseline to be compared with (win_tasks == 0).
    win_at_p: float | None
    win_tasks: int
    pass_rate: float


def check_uncovered(uncovered: float | None) -> None:
    """Refuse an uncovered fraction outside [0, 1)."""
    if uncovered is None:
        return
    if not math.isfinite(uncovered) or not 0.0 <= uncovered < 1.0:
        raise StoreError(
            f"--uncovered {shown(uncovered)}: the fraction of end-to-end time outside these kernels "
            "must be at least 0 and below 1 (e.g. 0.4 for 40%)"
        )


def check_ps(ps: Sequence[float]) -> tuple[float, ...]:
    """Thresholds as given, each checked finite and non-negative; at most :data:`MAX_PS`."""
    if not ps:
        raise StoreError("--p: give at least one threshold, e.g. --p 0.5,1,2")
    if len(ps) > MAX_PS:
        raise StoreError(f"--p: {len(ps)} thresholds; at most {MAX_PS}")
    for p in ps:
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not math.isfinite(p) or p < 0:
            raise StoreError(f"--p {shown(p)}: a threshold is a finite speedup of at least 0, e.g. 1.5")
    return tuple(float(p) for p in ps)


def check_baseline(baseline: str) -> None:
    """Refuse a win@p baseline that cannot name a solution set."""
    if not isinstance(baseline, str) or not baseline.strip() or len(baseline) > MAX_BASELINE:
        raise StoreError(
            f"--baseline {shown(baseline)}: name a solution set (an author, 1 to {MAX_BASELINE} characters) "
            "or 'reference', e.g. --baseline flashinfer"
        )


def amdahl(covered_speedup: float, uncovered: float) -> float:
    """End-to-end speedup when the covered part of the time (``1 - uncovered``) runs
    ``covered_speedup`` times faster and the rest as it did (Amdahl's law)."""
    return 1.0 / (uncovered + (1.0 - uncovered) / covered_speedup)


def _f(v: object) -> float | None:
    return None if v is None else float(v)  # type: ignore[arg-type]


def _records(s: Session, sql: str) -> list[dict[str, object]]:
    res = run_sql(s, sql)
    return [dict(zip(res.columns, row)) for row in res.rows]


#: How a score view's column becomes a record's field, by the field's annotation (a string:
#: this module's annotations are postponed); a field of another type is a KeyError here.
_CASTS: dict[str, Callable[[Any], object]] = {"str": str, "int": int, "float": float, "float | None": _f}

_R = TypeVar("_R", bound="DataclassInstance")


def _record(cls: type[_R], row: dict[str, object], **given: object) -> _R:
    """A ``cls`` from one row of a score view: each field not ``given`` is the column of its
    name, cast to the field's type (the records and the views name their columns alike)."""
    cast = {f.name: _CASTS[str(f.type)](row[f.name]) for f in fields(cls) if f.name not in given}
    return cls(**cast, **given)


def projection_of(
    s: Session,
    *,
    uncovered: float | None = None,
    hardware: str | None = None,
    solution_sets: Sequence[str] | None = None,
    top: int = 5,
) -> ModelProjection:
    """The projection read from an open session (see :func:`model_projection`)."""
    check_uncovered(uncovered)
    where = []
    if hardware is not None:
        where.append(f"hardware = {sql_literal(hardware)}")
    if solution_sets:
        where.append(f"solution_set IN ({', '.join(sql_literal(x) for x in solution_sets)})")
    cond = ("WHERE " + " AND ".join(where)) if where else ""
    gains: dict[tuple[str, str], list[DefinitionGain]] = {}
    for r in _records(
        s,
        f"""SELECT * FROM definition_gain {cond}
QUALIFY row_number() OVER (PARTITION BY solution_set, hardware
                           ORDER BY time_share DESC NULLS LAST, definition) <= {int(top)}
ORDER BY solution_set, hardware, time_share DESC NULLS LAST, definition""",
    ):
        gains.setdefault((str(r["solution_set"]), str(r["hardware"])), []).append(_record(DefinitionGain, r))
    sets = []
    for r in _records(
        s, f"SELECT * FROM projection {cond} ORDER BY covered_speedup DESC NULLS LAST, solution_set, hardware"
    ):
        covered = _f(r["covered_speedup"])
        e2e = bound = None
        if uncovered is not None:
            bound = math.inf if uncovered == 0 else 1.0 / uncovered
            if covered is not None and covered > 0:
                e2e = amdahl(covered, uncovered)
        key = (str(r["solution_set"]), str(r["hardware"]))
        sets.append(_record(SetProjection, r, end_to_end_speedup=e2e, bound=bound, top=gains.get(key, [])))
    hw_cond = f"AND w.hardware = {sql_literal(hardware)}" if hardware is not None else ""
    unmeasured = {
        str(r["hardware"]): int(r["n"])  # type: ignore[call-overload]
        for r in _records(
            s,
            f"""SELECT w.hardware, count(*) AS n FROM workload_times w
WHERE w.reference_ms IS NULL {hw_cond} GROUP BY w.hardware ORDER BY w.hardware""",
        )
    }
    notes = [
        (
            "covered time: weight (the workload's call count, 1 when it has none) x the reference's "
            "latency, summed over the workloads stored for the hardware"
        ),
        (
            "a workload the set failed or never ran counts at the reference's time (outcome failed / "
            "not_run), never at a guess"
        ),
    ]
    for hw, n in unmeasured.items():
        notes.append(f"{hw}: {n} workloads have no reference time (never timed): left out of the projection")
    if uncovered is None:
        notes.append(
            "end-to-end: give --uncovered (the fraction of time outside these kernels) for it and its bound"
        )
    return ModelProjection(uncovered, sets, unmeasured, notes)


def model_projection(
    store_path: str | Path,
    *,
    results_dir: Path | None = None,
    uncovered: float | None = None,
    hardware: str | None = None,
    solution_sets: Sequence[str] | None = None,
    top: int = 5,
) -> ModelProjection:
    """What each solution set does to the model the store's workloads describe.

    Args:
        store_path: The DuckDB store.
        results_dir: The results folder whose logs complete it (default: the store's folder).
        uncovered: The fraction of end-to-end time spent outside these kernels, in [0, 1).
        hardware: Only this hardware.
        solution_sets: Only these sets (authors).
        top: Definitions listed per set, by time share.

    Raises:
        StoreError: ``uncovered`` is outside [0, 1), or the store cannot be read.
    """
    check_uncovered(uncovered)
    with Store(Path(store_path)).session(results_dir) as s:
        return projection_of(s, uncovered=uncovered, hardware=hardware, solution_sets=solution_sets, top=top)


def scores_at(
    store_path: str | Path,
    ps: Sequence[float],
    *,
    results_dir: Path | None = None,
    baseline: str = DEFAULT_BASELINE,
) -> list[ScoreAtP]:
    """fast_p, win@p and pass rate per solution set, hardware and threshold in ``ps``.

    Args:
        store_path: The DuckDB store.
        ps: The thresholds.
        results_dir: The results folder whose logs complete the store.
        baseline: win@p's baseline: a solution set (author), or ``reference`` for the
            reference's latency (docs/scores.md).

    Raises:
        StoreError: A threshold is not a finite number >= 0, there are none or too many, or the
            baseline is empty or too long.
    """
    checked = check_ps(ps)
    check_baseline(baseline)
    with Store(Path(store_path)).session(results_dir) as s:
        s.require("SELECT * FROM current_traces")
        rows = _records(
            s, f"SELECT * FROM ({at_p_sql(checked, baseline)}) ORDER BY hardware, solution_set, p"
        )
    return [_record(ScoreAtP, r) for r in rows]

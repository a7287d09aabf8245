"""``sweep compare A B``: did a change make kernels faster? Task by task, with a verdict.

A side (:mod:`sweep.store.comparison._compare_spec`) selects traces from a store; tasks are matched on
(definition, solution name, workload uuid), plus hardware unless the comparison is across
hardware (a side is ``hw:``, or each side ran on one hardware and they differ). Per task and
side, the traces are grouped by run (the newest trace of each run) and reduced to one
:class:`~sweep.store.db._compare_stats.Estimate`; the statistics and the verdict rule are
:mod:`sweep.store.db._compare_stats`'s.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.errors import StoreError, shown
from sweep.store.comparison._compare_clocks import clock_gap_note, in_cycles
from sweep.store.comparison._compare_rows import TraceRow, load_rows
from sweep.store.comparison._compare_spec import SideSpec, parse_side
from sweep.store.db import (
    Basis,
    Estimate,
    Verdict,
    estimate_from_runs,
    estimate_from_samples,
    estimate_single,
    ratio_interval,
    verdict,
)
from sweep.store.ingestion import ingest_into
from sweep.store.read import Session, Store

__all__ = ["VERDICTS", "CompareSummary", "Comparison", "SideInfo", "TaskComparison", "compare"]

#: Every verdict, in the order summaries list them.
VERDICTS: tuple[Verdict, ...] = ("faster", "slower", "same", "noisy", "failed")
_STORE_FILE = "sweep.duckdb"
Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class TaskComparison:
    """One task on both sides. Latencies and the ratio are ``None`` when a side did not pass.

    Attributes:
        ratio: Latency B / latency A (under 1: B is faster).
        ci_low, ci_high: 95% interval of the ratio (``None`` when a side's noise is unknown).
        noise_a, noise_b: Relative half-width of each side's 95% interval (``0.03`` = 3%).
        basis_a, basis_b: Where each side's noise comes from (``samples``, ``runs``,
            ``rel_error``, ``cv``, ``none``).
        status_a, status_b: ``PASSED``, or the newest trace's status when no run passed.
    """

    definition: str
    solution: str
    workload_uuid: str
    hardware_a: str
    hardware_b: str
    status_a: str
    status_b: str
    latency_ms_a: float | None
    latency_ms_b: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    noise_a: float | None
    noise_b: float | None
    basis_a: Basis | None
    basis_b: Basis | None
    verdict: Verdict
    #: The SM clock (MHz) of each side's newest passing run, ``None`` when unknown.
    sm_clock_mhz_a: float | None = None
    sm_clock_mhz_b: float | None = None

    @property
    def label(self) -> str:
        """``definition/solution/workload`` (and hardware when it is the same on both sides)."""
        hw = f" on {self.hardware_a}" if self.hardware_a == self.hardware_b else ""
        return f"{self.definition}/{self.solution}/{self.workload_uuid}{hw}"


@dataclass(frozen=True)
class SideInfo:
    """What one side selected: the spec as written and how many traces it matched."""

    text: str
    kind: str
    traces: int
    hardware: list[str]


@dataclass(frozen=True)
class CompareSummary:
    """Counts per verdict, tasks on one side only, and the geometric mean of the ratios of
    the tasks that passed on both sides (``None`` when there are none)."""

    tasks: int
    counts: dict[Verdict, int]
    only_a: int
    only_b: int
    geomean_ratio: float | None


@dataclass(frozen=True)
class Comparison:
    """The answer of :func:`compare`: one row per matched task, sorted by ratio (most slowed
    down first), and the summary."""

    a: SideInfo
    b: SideInfo
    threshold: float
    across_hardware: bool
    tasks: list[TaskComparison]
    summary: CompareSummary
    notes: list[str] = field(default_factory=list)

    def regressions(self, pct: float) -> list[TaskComparison]:
        """Tasks that fail a CI gate of ``pct`` percent: verdict ``slower`` with a ratio over
        ``1 + pct/100``, or passed on A and failed on B."""
        limit = 1 + pct / 100
        return [
            t
            for t in self.tasks
            if (t.verdict == "slower" and t.ratio is not None and t.ratio > limit)
            or (t.verdict == "failed" and t.status_a == "PASSED")
        ]


@contextmanager
def _session(path: Path, results_dir: Path | None) -> Iterator[Session]:
    """A read session over what ``path`` holds: a store file, a results folder with its store,
    or anything ``sweep ingest`` reads (an export, trace files), ingested into memory."""
    if path.suffix == ".duckdb" and not path.is_dir():  # a missing store: its own message
        with Store(path).session(results_dir) as s:
            yield s
        return
    if path.is_dir() and (path / _STORE_FILE).is_file():
        with Store(path / _STORE_FILE).session(results_dir or path) as s:
            yield s
        return
    mem = Store.memory()
    try:
        ingest_into(mem, [path])
        with mem.session() as s:
            yield s
    finally:
        mem.close()


def _bare_word_hint(text: str, session: Session) -> str:
    """``did you mean 'hw:H100'?`` for a bare word that a store value matches."""
    from sweep.schema.hardware import record_name

    con = session.con
    for kind, column, value in (
        ("run", "run_id", text),
        ("sweep", "sweep", text),
        ("hw", "hardware", record_name(text)),
    ):
        row = con.execute(f"SELECT 1 FROM traces WHERE {column} = ? LIMIT 1", [value]).fetchone()
        if row is not None:
            return f" (did you mean '{kind}:{text}'?)"
    return ""


def _side_rows(spec: SideSpec, store: Path, results_dir: Path | None) -> list[TraceRow]:
    if spec.kind == "path":
        with _session(Path(spec.value), None) as s:
            return load_rows(s, spec)
    with _session(store, results_dir) as s:
        return load_rows(s, spec)


def _parse(text: str, store: Path, results_dir: Path | None) -> SideSpec:
    try:
        return parse_side(text)
    except StoreError as e:
        if ":" in text or "@" in text or not (store.exists() or (store.parent / "traces").is_dir()):
            raise
        with _session(store, results_dir) as s:
            hint = _bare_word_hint(text, s)
        if not hint:
            raise
        raise StoreError(f"{e}{hint}") from None


def _estimate(runs: list[TraceRow]) -> Estimate:
    """One side of one task from its passing runs (newest first)."""
    newest = runs[0]
    est = estimate_from_samples(newest.sample_values())
    if est is None and len(runs) >= 2:
        est = estimate_from_runs([r.latency_ms for r in runs if r.latency_ms is not None])
    if est is not None:
        return est
    assert newest.latency_ms is not None  # runs hold passing traces only
    return estimate_single(
        newest.latency_ms, rel_error=newest.rel_error, cv=newest.cv, iterations=newest.iterations
    )


@dataclass
class _SideTask:
    hardware: str
    status: str
    runs: list[TraceRow]


def _group(rows: list[TraceRow], across: bool) -> dict[Key, _SideTask]:
    """Per task: the newest trace of each run (a trace without a run id is its own run)."""
    newest: dict[tuple[Key, str], TraceRow] = {}
    for r in rows:
        key = (r.definition, r.solution, r.workload_uuid, "" if across else r.hardware)
        run_key = (key, r.run_id or "trace:" + r.trace_key)
        if run_key not in newest or r.order > newest[run_key].order:
            newest[run_key] = r
    out: dict[Key, _SideTask] = {}
    for (key, _), r in sorted(newest.items(), key=lambda kv: kv[1].order, reverse=True):
        task = out.setdefault(key, _SideTask(r.hardware, r.status, []))
        if r.status == "PASSED" and r.latency_ms is not None and r.latency_ms > 0:
            task.runs.append(r)
    return out


def _relative(noise: float | None) -> float | None:
    return None if noise is None else math.expm1(noise)


def _task(key: Key, a: _SideTask, b: _SideTask, threshold: float) -> TaskComparison:
    def base(**fields: Any) -> TaskComparison:
        return TaskComparison(
            definition=key[0], solution=key[1], workload_uuid=key[2], hardware_a=a.hardware,
            hardware_b=b.hardware, **fields,
        )  # fmt: skip

    if not a.runs or not b.runs:
        return base(
            status_a="PASSED" if a.runs else a.status, status_b="PASSED" if b.runs else b.status,
            latency_ms_a=None, latency_ms_b=None, ratio=None, ci_low=None, ci_high=None,
            noise_a=None, noise_b=None, basis_a=None, basis_b=None, verdict="failed",
        )  # fmt: skip
    ea, eb = _estimate(a.runs), _estimate(b.runs)
    ratio, lo, hi = ratio_interval(ea, eb)
    return base(
        status_a="PASSED", status_b="PASSED",
        latency_ms_a=ea.latency_ms, latency_ms_b=eb.latency_ms, ratio=ratio, ci_low=lo, ci_high=hi,
        noise_a=_relative(ea.noise), noise_b=_relative(eb.noise), basis_a=ea.basis, basis_b=eb.basis,
        verdict=verdict(ea, eb, threshold),
        sm_clock_mhz_a=a.runs[0].sm_clock_mhz, sm_clock_mhz_b=b.runs[0].sm_clock_mhz,
    )  # fmt: skip


def _info(spec: SideSpec, rows: list[TraceRow]) -> SideInfo:
    return SideInfo(spec.text, spec.kind, len(rows), sorted({r.hardware for r in rows}))


def compare(
    a: str,
    b: str,
    *,
    store: Path,
    results_dir: Path | None = None,
    threshold: float = 0.05,
    cycles: bool = False,
) -> Comparison:
    """Compare the latencies of side B against side A, task by task.

    Args:
        a: Side A, the baseline (syntax: :mod:`sweep.store.comparison._compare_spec`).
        b: Side B, the change.
        store: The store that ``run:``, ``sweep:``, ``hw:``, ``hash:`` and ``NAME@HASH``
            sides select from.
        results_dir: The results folder whose logs complete ``store`` (default: its folder).
        threshold: Relative change under which a task is ``same`` (``0.05`` = 5%).
        cycles: Compare clock-normalised time: latencies in thousands of SM cycles
            (``_compare_clocks``); traces without a clock are left out, with a note.

    Raises:
        StoreError: A side is malformed or selects no trace (the message lists what the
            store holds, with "did you mean"), the sides share no task, or the store cannot
            be read.
    """
    if not (math.isfinite(threshold) and 0 <= threshold < 10):
        raise StoreError(f"threshold must be a fraction from 0 to 10 (0.05 = 5%), got {shown(threshold)}")
    spec_a, spec_b = _parse(a, store, results_dir), _parse(b, store, results_dir)
    rows_a, rows_b = _side_rows(spec_a, store, results_dir), _side_rows(spec_b, store, results_dir)
    info_a, info_b = _info(spec_a, rows_a), _info(spec_b, rows_b)
    notes: list[str] = []
    if cycles:
        (rows_a, gone_a), (rows_b, gone_b) = in_cycles(rows_a), in_cycles(rows_b)
        notes.append("latencies are in thousands of SM cycles (latency_ms x the SM clock in MHz)")
        if gone_a or gone_b:
            notes.append(
                f"left out: {gone_a} traces of A and {gone_b} of B carry no SM clock (a CPU, or "
                "written without NVML)"
            )
    across = "hw" in (spec_a.kind, spec_b.kind)
    if not across and len(info_a.hardware) == 1 and info_a.hardware == info_b.hardware:
        pass
    elif not across and len(info_a.hardware) == 1 and len(info_b.hardware) == 1:
        across = True
        notes.append(f"matched across hardware: A ran on {info_a.hardware[0]}, B on {info_b.hardware[0]}")
    ga, gb = _group(rows_a, across), _group(rows_b, across)
    shared = sorted(ga.keys() & gb.keys())
    if not shared:
        raise StoreError(
            f"sides {shown(a)} ({info_a.traces} traces) and {shown(b)} ({info_b.traces} traces) share no "
            "task (same definition, solution name and workload"
            + ("" if across else ", on the same hardware; compare hardware with hw:NAME")
            + ")"
        )
    tasks = [_task(k, ga[k], gb[k], threshold) for k in shared]
    tasks.sort(key=lambda t: (t.ratio is not None, -(t.ratio or 0.0), t.label))
    if not cycles:
        gap = clock_gap_note(
            [(t.label, t.sm_clock_mhz_a, t.sm_clock_mhz_b) for t in tasks if t.ratio is not None]
        )
        if gap:
            notes.append(gap)
    counts = Counter(t.verdict for t in tasks)
    logs = [math.log(t.ratio) for t in tasks if t.ratio is not None]
    summary = CompareSummary(
        tasks=len(tasks),
        counts={v: counts.get(v, 0) for v in VERDICTS},
        only_a=len(ga.keys() - gb.keys()),
        only_b=len(gb.keys() - ga.keys()),
        geomean_ratio=math.exp(sum(logs) / len(logs)) if logs else None,
    )
    return Comparison(info_a, info_b, threshold, across, tasks, summary, notes)

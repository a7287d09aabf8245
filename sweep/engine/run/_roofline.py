"""What a PASSED latency makes of the call's work: achieved rates, fraction of peak, the floor,
and the flags ``impossible`` and ``suspicious``.

- Work (``_work.count_work``) is counted once per definition and workload (cached in the
  EngineCache).
- Achieved TFLOP/s and GB/s: the work over the latency.
- Fraction of peak: the larger of the two rates over the device's peaks, using the ceilings
  measured on this hardware (``sweep calibrate``; the task carries them) when there are
  some, else the datasheet (:mod:`sweep.schema.peaks`).
- Floor: the least time the work can take, from the datasheet peaks (the physical limit; a
  calibrated ceiling is what one GEMM or copy reached, which a better kernel may beat), or,
  for a GPU the table lacks, from its calibrated ceilings. None on a CPU without a datasheet
  entry: nothing flushes its caches between timed calls, so a small workload may run from
  cache far above any measured bandwidth. None for a call that moves no bytes and does no
  FLOPs (one that only views its arguments, allocates, or changes metadata: its bytes are
  counted per storage, ``_call_bytes``), so it is never ``impossible``.
- ``impossible``: the latency is under :func:`sweep.schema.peaks.floor_margin` times the
  floor; the trace keeps its status, the store never ranks it, the log gives the floor.
- ``suspicious``: the speedup is above ``settings.suspicious_speedup`` (KernelBench's 10x by
  default); shown and filterable, not excluded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sweep.engine.run._work import Work, count_work
from sweep.schema import FLAG_IMPOSSIBLE, FLAG_SUSPICIOUS, Ceilings, Performance
from sweep.schema.hardware import CPU, short_name
from sweep.schema.peaks import datasheet_ceilings, floor_margin, floor_ms

if TYPE_CHECKING:
    from sweep.engine.run._run_state import RunState

__all__ = ["IMPOSSIBLE", "SUSPICIOUS", "Assessment", "assess", "work_of"]

IMPOSSIBLE = FLAG_IMPOSSIBLE
SUSPICIOUS = FLAG_SUSPICIOUS


@dataclass(frozen=True)
class Assessment:
    """The Performance with its work fields, the flags (``None`` when none), log lines."""

    performance: Performance
    flags: list[str] | None
    notes: list[str]


def _work(run: RunState) -> Work:
    key = (run.def_key, run.wl_key)
    work = run.cache.work.get(key)
    if work is None:
        assert run.reference is not None
        work = count_work(run.defn, run.wl, run.reference.fn)
        run.cache.work[key] = work
    return work


def work_of(run: RunState) -> Work:
    """The work of one call of ``run``'s task (counted once per definition and workload, from
    the reference's own calls on meta tensors when the definition declares none)."""
    return _work(run)


def _ceilings(run: RunState) -> tuple[Ceilings | None, Ceilings | None]:
    """(ceilings for the fraction of peak, ceilings for the floor) of this device."""
    env = run.cache.environments.get(str(run.device))
    hardware = env.hardware if env is not None else CPU if run.device.type == "cpu" else str(run.device)
    raw = env.device_name if env is not None and env.device_name else hardware
    sheet = datasheet_ceilings(raw, hardware=hardware)
    given = run.task.ceilings
    measured = given if given is not None and short_name(given.hardware) == short_name(hardware) else None
    floor_from = sheet or (measured if short_name(hardware) != CPU else None)
    return measured or sheet, floor_from


def _g(x: float) -> str:
    return f"{x:.3g}"


def assess(run: RunState, perf: Performance) -> Assessment:
    """The work fields, flags and log lines of a PASSED result whose timing gave ``perf``.

    Never raises: a failure of the work or the floor leaves them out, with a note.
    """
    try:
        fields, flags, notes = _roofline(run, perf)
    except Exception as e:  # noqa: BLE001 - the measurement stands without its roofline
        fields, flags, notes = {}, [], [f"work not assessed: {type(e).__name__}: {e}"]
    bound = run.settings.suspicious_speedup
    if perf.speedup_factor > bound:
        flags.append(SUSPICIOUS)
        notes.append(
            f"SUSPICIOUS: speedup {_g(perf.speedup_factor)}x is above evaluation.suspicious_speedup "
            f"({bound:g}x); flagged 'suspicious' (shown, not excluded): check that the solution does the "
            "reference's work"
        )
    performance = perf.model_copy(update=fields) if fields else perf
    return Assessment(performance, flags or None, notes)


def _roofline(run: RunState, perf: Performance) -> tuple[dict[str, float | str], list[str], list[str]]:
    """(Performance fields, flags, notes) of the work, rates, peak fraction and floor."""
    work = _work(run)
    notes = list(work.notes)
    fields: dict[str, float | str] = {}
    latency = perf.latency_ms
    tflops = gbps = None
    if work.flops is not None:
        fields["work_flops"] = work.flops
        if latency > 0:
            tflops = fields["tflops"] = work.flops / (latency * 1e-3) / 1e12
    if work.bytes is not None:
        fields["work_bytes"] = work.bytes
        if latency > 0:
            gbps = fields["gbps"] = work.bytes / (latency * 1e-3) / 1e9
    if work.source is not None:
        fields["work_source"] = work.source
        notes.append(
            f"work ({work.source}): "
            + ", ".join(
                [
                    f"{_g(work.flops)} FLOP" if work.flops is not None else "FLOPs unknown",
                    f"{_g(work.bytes)} bytes" if work.bytes is not None else "bytes unknown",
                ]
                + ([f"{_g(tflops)} TFLOP/s"] if tflops is not None else [])
                + ([f"{_g(gbps)} GB/s"] if gbps is not None else [])
            )
        )
    flags: list[str] = []
    rate, floor_from = _ceilings(run)
    if rate is not None:
        shares = []
        peak = rate.flops_peak(work.dtypes)
        if tflops is not None and peak:
            shares.append(tflops / peak)
        if gbps is not None and rate.gbps:
            shares.append(gbps / rate.gbps)
        if shares:
            fields["peak_fraction"] = max(shares)
            notes.append(f"peak fraction {max(shares):.1%} of {rate.source}")
    if floor_from is not None:
        floor = floor_ms(work.flops, work.bytes, work.dtypes, floor_from)
        if floor is None and work.bytes == 0 and not work.flops:
            notes.append("no floor: the call moves no bytes and does no FLOPs, so no latency is impossible")
        if floor is not None:
            floor_value, limit = floor
            fields["floor_ms"] = floor_value
            margin = floor_margin(work.source)
            notes.append(
                f"floor {_g(floor_value)} ms ({limit}-bound, {floor_from.source}); "
                f"latency {_g(latency)} ms is {_g(latency / floor_value)}x the floor"
            )
            if latency < margin * floor_value:
                flags.append(IMPOSSIBLE)
                notes.append(
                    f"IMPOSSIBLE: latency {_g(latency)} ms is under {margin:g} x the floor {_g(floor_value)} ms "
                    f"({work.source} work at the peaks of {floor_from.source}): no kernel doing this work runs "
                    "this fast here, so the measurement is wrong (work skipped, results reused, or the timer "
                    "missed the work); flagged 'impossible': the status stays, the store never ranks it"
                )
    return fields, flags, notes

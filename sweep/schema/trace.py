"""Trace: the result of one evaluation (or, with no solution, a stored workload)."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from enum import Enum
from typing import Any, ClassVar

import pydantic_core
from pydantic import Field, JsonValue, StrictBool, field_validator, model_validator

from sweep.errors import shown
from sweep.schema._base import Record
from sweep.schema.distributed import DistributedResult
from sweep.schema.energy import Energy
from sweep.schema.limits import Int64, NonNegInt64
from sweep.schema.params import ParamValue
from sweep.schema.workload import Workload

__all__ = [
    "EARLIEST_TIME",
    "FLAG_IMPOSSIBLE",
    "FLAG_REFERENCE_FAILED",
    "FLAG_SUSPICIOUS",
    "FLAG_TAMPERED",
    "LATEST_TIME",
    "Clocks",
    "Correctness",
    "Environment",
    "Evaluation",
    "Performance",
    "Provenance",
    "Status",
    "TimingStats",
    "Trace",
    "TuningNote",
    "check_time",
    "workload_line",
]

#: Flags an evaluation may carry (``Evaluation.flags``). ``impossible``: latency under the physical
#: floor (kept PASSED, never ranked). ``suspicious``: speedup above the settings' bound (shown).
#: ``tampered``: the solution replaced what the harness times or checks with, or left a thread
#: running (RUNTIME_ERROR, never ranked). ``reference_failed``: the reference raised, timed out or
#: crashed, or the task's inputs could not be made, before or around the solution (RUNTIME_ERROR,
#: not the solution's failure: left out of pass rates, scores and rankings, counted apart).
FLAG_IMPOSSIBLE = "impossible"
FLAG_SUSPICIOUS = "suspicious"
FLAG_TAMPERED = "tampered"
FLAG_REFERENCE_FAILED = "reference_failed"

#: The span of times (UTC) a trace may carry. Outside it the value is a placeholder or a typo
#: (``0001-01-01T00:00:00+05:00``), and near the ends of Python's range it cannot even be read
#: back from the store as a ``datetime``.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST_TIME = datetime(2200, 1, 1, tzinfo=timezone.utc)


def check_time(value: str) -> datetime:
    """An ISO 8601 time of a trace, as an aware UTC datetime (no zone: taken as UTC).

    Raises:
        ValueError: Not ISO 8601, or outside ``EARLIEST_TIME``..``LATEST_TIME``; the message
            shows the value (clipped by ``errors.shown``) and how a valid one looks.
    """
    # Quoted only when refused: this runs for every trace read.
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"must be an ISO 8601 timestamp such as 2025-06-01T12:00:00Z, got {shown(value)}"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        ts: datetime | None = parsed.astimezone(timezone.utc)
    except OverflowError:  # the zone moves it outside Python's years 1..9999
        ts = None
    if ts is None or not EARLIEST_TIME <= ts < LATEST_TIME:
        raise ValueError(
            f"must be a time between {EARLIEST_TIME:%Y-%m-%d} and {LATEST_TIME:%Y-%m-%d} UTC "
            f"(write the real time of the run, e.g. 2025-06-01T12:00:00Z), got {shown(value)}"
        )
    return ts


class Status(str, Enum):
    """Outcome of one evaluation."""

    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"


class Correctness(Record):
    """Largest errors against the reference, over all outputs and trials."""

    max_relative_error: float = 0.0
    max_absolute_error: float = 0.0
    extra: dict[str, JsonValue] | None = None

    @field_validator("max_relative_error", "max_absolute_error")
    @classmethod
    def _non_negative(cls, v: float) -> float:
        if not math.isnan(v) and v < 0:
            raise ValueError("must be non-negative or NaN")
        return v


class Performance(Record):
    """Latencies in milliseconds; ``speedup_factor = reference_latency_ms / latency_ms``.

    Extensions (absent in upstream files): the work of one call and what the latency makes
    of it. ``work_flops``/``work_bytes`` come from the definition's ``flops``/``bytes``
    expressions (``work_source`` ``"declared"``), else from counting (``"counted"``: FLOPs of
    the reference on meta tensors, bytes of inputs plus outputs moved; ``"mixed"`` when one
    is declared and the other counted); ``tflops``/``gbps`` are achieved rates;
    ``peak_fraction`` is the larger of the two against the device's peaks (calibrated
    ceilings when measured, else the datasheet's); ``floor_ms`` is the least time the work
    can take on this device (:mod:`sweep.schema.peaks`).
    """

    latency_ms: float = Field(default=0.0, ge=0.0)
    reference_latency_ms: float = Field(default=0.0, ge=0.0)
    speedup_factor: float = Field(default=0.0, ge=0.0)
    work_flops: float | None = Field(default=None, ge=0.0)
    work_bytes: float | None = Field(default=None, ge=0.0)
    work_source: str | None = None
    tflops: float | None = Field(default=None, ge=0.0)
    gbps: float | None = Field(default=None, ge=0.0)
    peak_fraction: float | None = Field(default=None, ge=0.0)
    floor_ms: float | None = Field(default=None, ge=0.0)


class Environment(Record):
    """Where an evaluation ran.

    ``hardware`` is written normalized (``NVIDIA_H100``); files from elsewhere may carry the
    raw device name there, which is accepted. ``device_name`` (extension) keeps the raw name.
    """

    hardware: str = Field(min_length=1)
    libs: dict[str, str] = Field(default_factory=dict)
    device_name: str | None = None


class TimingStats(Record):
    """Extension: the distribution behind a latency (milliseconds).

    ``timer`` says which timer ran (``"events"``, ``"cudagraph"``, ``"cupti"``, ``"host"``);
    ``samples`` keeps every kept sample in the order taken (:meth:`encode_samples`: base64 of
    little-endian float32 milliseconds, :meth:`sample_values` reads them back), and
    ``iterations`` counts them (with ``"cudagraph"`` a sample is the mean of the calls of one
    graph replay; with ``"cupti"`` it is the device time of the work one call launched); ``rel_error`` is the relative standard error of the median when timing
    stopped, ``target_met`` whether it was at most ``target_rel_error`` then; ``discarded``
    counts samples dropped because NVML saw the SM clock under 75% of its maximum or a
    slowdown reason (thermal, hardware, power brake) around their batch. ``threads`` is
    torch's intra-op threads while timed.
    """

    clock: str  # "cuda_event", "cupti" (CUPTI's device timestamps) or "host"
    iterations: NonNegInt64
    p10_ms: float
    p50_ms: float
    p90_ms: float
    mean_ms: float
    cv: float  # coefficient of variation: stdev / mean
    timer: str | None = None
    samples: str | None = None
    rel_error: float | None = Field(default=None, ge=0.0)
    target_rel_error: float | None = Field(default=None, gt=0.0)
    target_met: StrictBool | None = None
    discarded: NonNegInt64 | None = None
    #: torch's intra-op threads while timed (``settings.cpu_threads``): on a CPU, the threads
    #: the kernel ran on.
    threads: NonNegInt64 | None = None

    @staticmethod
    def encode_samples(values_ms: Sequence[float]) -> str:
        """``values_ms`` as stored in :attr:`samples` (4 bytes each, base64)."""
        return base64.b64encode(struct.pack(f"<{len(values_ms)}f", *values_ms)).decode("ascii")

    def sample_values(self) -> list[float]:
        """The timed samples in milliseconds (float32 precision); empty when not kept."""
        if not self.samples:
            return []
        raw = base64.b64decode(self.samples)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw[: len(raw) // 4 * 4]))


class Clocks(Record):
    """Extension: SM clock (MHz) and NVML throttle reasons around a measurement."""

    sm_clock_mhz_before: NonNegInt64 | None = None
    sm_clock_mhz_after: NonNegInt64 | None = None
    sm_clock_mhz_max: NonNegInt64 | None = None
    throttle_reasons_before: list[str] = Field(default_factory=list)
    throttle_reasons_after: list[str] = Field(default_factory=list)
    # Extension of the measurement issue: the lowest SM clock NVML read while the reference
    # and the solution were timed (between batches of samples), and whether it dropped under
    # 75% of its maximum or a slowdown reason (thermal, hardware, power brake) appeared.
    # sw_power_cap alone is not a throttle: boost clocks hold the power limit that way.
    sm_clock_mhz_min: NonNegInt64 | None = None
    throttled: StrictBool | None = None
    # Extension of issue 34 (absent in older files): the clocks while the reference and the
    # solution were timed, as NVML read them between batches of samples (mean and least), and
    # the conditions at the start of timing. ``clocks_locked``: application clocks set away
    # from their defaults, or the clocks held by an application-clocks setting (nvidia-smi
    # -ac / -lgc); kernel-sweep never sets clocks or power limits, it reads them.
    sm_clock_mhz_mean: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    mem_clock_mhz_mean: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    mem_clock_mhz_min: NonNegInt64 | None = None
    clocks_locked: StrictBool | None = None
    power_limit_w: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    temperature_c_start: Int64 | None = None


class Evaluation(Record):
    """FlashInfer-Bench's ``Evaluation``, plus optional extension fields.

    Presence rule: PASSED carries correctness and performance; INCORRECT_NUMERICAL carries
    correctness only; every other status carries neither.
    """

    status: Status
    environment: Environment
    timestamp: str = Field(min_length=1)
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None
    # Extensions (absent in upstream files).
    seed: Int64 | None = None
    timing: TimingStats | None = None
    reference_timing: TimingStats | None = None
    clocks: Clocks | None = None
    #: Extension (``evaluation.energy``): joules per call of each side (:mod:`sweep.schema.energy`).
    energy: Energy | None = None
    # Flags (the FLAG_* constants): "impossible" and "suspicious" on a PASSED result,
    # "tampered" and "reference_failed" on a RUNTIME_ERROR (or TIMEOUT) that says whose it is.
    flags: list[str] | None = None
    # A call of several ranks: every rank's figures, the straggler, the failing rank, bandwidth.
    distributed: DistributedResult | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, v: str) -> str:
        check_time(v)
        return v

    @model_validator(mode="after")
    def _presence(self) -> Evaluation:
        need_c = self.status in (Status.PASSED, Status.INCORRECT_NUMERICAL)
        need_p = self.status is Status.PASSED
        if need_c != (self.correctness is not None):
            raise ValueError(
                f"status {self.status.value} must {'include' if need_c else 'not include'} correctness"
            )
        if need_p != (self.performance is not None):
            raise ValueError(
                f"status {self.status.value} must {'include' if need_p else 'not include'} performance"
            )
        return self


class TuningNote(Record):
    """Extension: the decision of a guided search (``solutions.search``) that a trace of its
    chosen point confirms: the run made after re-measurement, so the chosen point's newest
    trace says how sure the choice was."""

    #: The decision: target, definition, solution and shape bucket.
    decision: str = Field(min_length=1)
    #: How often the leader of a re-measurement round differed from the previous round's.
    winner_changes: NonNegInt64 = 0
    #: Rounds of side-by-side re-measurement, and points measured in each.
    remeasure_rounds: NonNegInt64 = 0
    remeasured_points: NonNegInt64 = 0
    #: Points within noise of the chosen one (the compare module's ``same`` or ``noisy``).
    ties: NonNegInt64 = 0


class Provenance(Record):
    """Extension: where a trace came from in a sweep (absent in upstream files).

    Two kinds of field: which task it was (:data:`IDENTITY_FIELDS`, decided by the plan) and
    where and when it ran (:data:`RUN_FIELDS`, stamped by the process that owns the GPU).
    """

    IDENTITY_FIELDS: ClassVar[tuple[str, ...]] = (
        "task_id",
        "sweep",
        "solution_hash",
        "config_hash",
        "settings_hash",
        "secret_commitment",
    )
    RUN_FIELDS: ClassVar[tuple[str, ...]] = (
        "run_id",
        "node_id",
        "gpu_id",
        "worker_pid",
        "started_at",
        "finished_at",
        "attempt",
    )

    task_id: str | None = None
    sweep: str | None = None
    run_id: str | None = None
    solution_hash: str | None = None
    config_hash: str | None = None
    settings_hash: str | None = None
    #: The solution's ``target_hardware`` when it ran on other hardware by the config's
    #: ``solutions.ignore_target_hardware`` (a kernel written for one GPU, checked on another).
    ported_from: list[str] | None = None
    #: A secret run's commitment (:func:`sweep.schema.secret.commitment`): an HMAC of the
    #: definition and workload keyed by the launch's secret; absent for a public run.
    secret_commitment: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    node_id: str | None = None
    gpu_id: str | None = None
    # 64-bit and strict like every stored integer (a pid of 2**70 would break the store).
    worker_pid: NonNegInt64 | None = None
    started_at: str | None = None
    finished_at: str | None = None
    attempt: NonNegInt64 | None = None
    #: Set on the confirmation run of a guided search's chosen point (:class:`TuningNote`).
    tuning: TuningNote | None = None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _iso(cls, v: str | None) -> str | None:
        # An unreadable time would be stored as NULL and silently lost: refuse it instead.
        if v is not None:
            check_time(v)
        return v


class Trace(Record):
    """FlashInfer-Bench's ``Trace``. With ``solution`` and ``evaluation`` null it is a
    workload-only record, the form ``workloads/*.jsonl`` files use."""

    definition: str = Field(min_length=1)
    workload: Workload
    solution: str | None = None
    evaluation: Evaluation | None = None
    provenance: Provenance | None = None
    #: Extension: the parameter point of the solution this trace ran (name -> value); unset
    #: for a solution without ``params``, and then not written.
    solution_params: dict[str, ParamValue] | None = None

    @property
    def is_workload_only(self) -> bool:
        """True for a stored workload (no solution, no evaluation)."""
        return self.solution is None and self.evaluation is None


def workload_line(definition: str, workload: Mapping[str, Any]) -> bytes:
    """A ``workloads/*.jsonl`` line (no newline) for a workload given as its JSON object.

    The same bytes as ``Trace(definition=..., workload=w, solution=None,
    evaluation=None).to_json()`` for the Workload ``w`` whose ``to_json_obj()`` is
    ``workload`` (same serializer, keys in field order), without building the records: for
    a writer of many workloads whose values are already checked (the BackendBench import).
    ``workload`` must be such an object; nothing here validates it.
    """
    line = {"definition": definition, "workload": workload, "solution": None, "evaluation": None}
    return pydantic_core.to_json(line, inf_nan_mode="strings")

"""Evaluation settings: how each evaluation is run (the ``evaluation`` section of a sweep config).

They live with the records because a :class:`~sweep.schema.task.Task` carries them to the
engine and their hash is part of every task id; ``sweep.config`` re-exports them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sweep.schema.limits import INT64_MAX, INT64_MIN

__all__ = ["EvalSettings", "StrictModel", "Timeouts", "Tolerance", "without_later_defaults"]


class StrictModel(BaseModel):
    """Base for what users write: unknown keys are errors, values are frozen, types strict
    (YAML's ``true`` is not the integer 1, ``"5"`` is not 5) and floats finite (``.inf`` is no
    duration). Integer fields also say ``le=INT64_MAX``: what is stored must fit 64 bits."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Tolerance(StrictModel):
    """Absolute and relative tolerance; ``None`` keeps the per-dtype default.

    An element is wrong only when BOTH ``|x - y| > atol`` and ``|x - y| > rtol * |y|``
    (FlashInfer-Bench's rule).
    """

    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)


class Timeouts(StrictModel):
    """Seconds allowed for each phase of one evaluation."""

    compile_s: float = Field(default=900.0, gt=0)
    run_s: float = Field(default=120.0, gt=0)


#: Settings added after results were first stored, with the default that leaves a hash as it was.
_LATER_DEFAULTS: dict[str, object] = {"cpu_threads": 1, "energy": False, "cuda_max_connections": None}
#: Of those, the ones added after a config's hash first covered them (``cpu_threads`` was part
#: of every config hash since it existed): a config's hash leaves these out at their default.
_LATER_IN_CONFIG: tuple[str, ...] = ("energy", "cuda_max_connections")


def without_later_defaults(evaluation: dict[str, object], *, config: bool = False) -> dict[str, object]:
    """``evaluation`` (a dumped :class:`EvalSettings`) without the settings added later that
    hold their default, so results stored before those settings existed keep their hash;
    ``config=True``: only those added after the config hash covered them."""
    names = _LATER_IN_CONFIG if config else tuple(_LATER_DEFAULTS)
    return {k: v for k, v in evaluation.items() if not (k in names and v == _LATER_DEFAULTS[k])}


class EvalSettings(StrictModel):
    """How each evaluation is run. Its hash decides which stored results are comparable."""

    seed: int = Field(default=0, ge=INT64_MIN, le=INT64_MAX)
    trials: int = Field(default=3, ge=1, le=INT64_MAX, description="correctness trials, fresh inputs each")
    warmup_ms: float = Field(default=25.0, ge=0)
    rep_ms: float = Field(
        default=100.0, gt=0, description="least wall time spent timing each of the reference and the solution"
    )
    min_iterations: int = Field(
        default=10, ge=1, le=INT64_MAX, description="least samples kept (and one per input set)"
    )
    max_iterations: int = Field(
        default=1000,
        ge=1,
        le=INT64_MAX,
        description="most samples taken, target met or not (>= min_iterations)",
    )
    timer: Literal["events", "cudagraph", "auto", "cupti"] = Field(
        default="auto",
        description="GPU timer: CUDA events around each call, replays of a captured CUDA graph, "
        "graphs for short calls where capture works (auto), or the device time of the kernels, "
        "copies and sets each call launched, read through CUPTI (needs cupti-python: "
        "kernel-sweep[cupti]; events time both where CUPTI cannot, and the log says why); the "
        "trace says which ran",
    )
    target_rel_error: float = Field(
        default=0.005,
        gt=0,
        lt=1,
        description="stop timing once the median's relative standard error is at most this "
        "(GPU timers; the host clock stops at rep_ms)",
    )
    max_ms: float = Field(
        default=1000.0, gt=0, description="most wall time spent timing each, target met or not (>= rep_ms)"
    )
    suspicious_speedup: float = Field(
        default=10.0, gt=1, description="a speedup above this is flagged 'suspicious' (shown, not excluded)"
    )
    input_sets: int = Field(default=4, ge=1, le=INT64_MAX, description="distinct inputs rotated while timing")
    tolerance: Tolerance = Tolerance()
    op_type_tolerance: dict[str, Tolerance] = Field(default_factory=dict)
    definition_tolerance: dict[str, Tolerance] = Field(default_factory=dict)
    timeouts: Timeouts = Timeouts()
    memory_budget_gb: float | None = Field(
        default=None, gt=0, description="per task; None = 80% of the device's free memory"
    )
    log_limit_bytes: int = Field(default=16384, ge=256, le=INT64_MAX)
    cpu_threads: int = Field(
        default=1,
        ge=1,
        le=4096,
        description="torch's intra-op threads in each evaluation (on a CPU, the threads a kernel "
        "runs on): fixed, so `sweep eval` and `sweep launch` time alike; recorded in each trace",
    )

    energy: bool = Field(
        default=False,
        description="measure the energy per call of the reference and the solution from the "
        "GPU's energy counter (NVML, needs nvidia-ml-py: kernel-sweep[energy]); adds about 4 s "
        "per task (docs/energy.md)",
    )
    cuda_max_connections: int | None = Field(
        default=None,
        ge=1,
        le=32,
        description="CUDA_DEVICE_MAX_CONNECTIONS of the process an evaluation runs in: the hardware "
        "queues its CUDA context sets up (null: CUDA's default, 8). 1 makes each task's start and end "
        "cheaper, most with several GPUs a host, but serializes work a solution puts on several "
        "streams and can move a launch-bound kernel's time (docs/launching-and-clusters.md)",
    )

    def process_env(self) -> tuple[tuple[str, str], ...]:
        """The environment variables the process that evaluates under these settings must be
        started with (set before CUDA starts: a sandbox's zygote gets them)."""
        if self.cuda_max_connections is None:
            return ()
        return (("CUDA_DEVICE_MAX_CONNECTIONS", str(self.cuda_max_connections)),)

    def settings_hash(self) -> str:
        """Stable hash of every setting that changes what a measurement means.

        A setting added later is left out while it has its default, so that results stored
        before it existed keep their hash (and their task ids)."""
        data = without_later_defaults(self.model_dump(mode="json"))
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def tolerance_for(self, definition: str, op_type: str) -> Tolerance:
        """The tolerance override for one definition: per-definition, then per-op_type,
        then global (each field falls through separately when ``None``)."""
        layers = [
            self.definition_tolerance.get(definition),
            self.op_type_tolerance.get(op_type),
            self.tolerance,
        ]
        atol = next((t.atol for t in layers if t is not None and t.atol is not None), None)
        rtol = next((t.rtol for t in layers if t is not None and t.rtol is not None), None)
        return Tolerance(atol=atol, rtol=rtol)

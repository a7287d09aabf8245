"""The Ray actor that owns one GPU (or one CPU slot) and supervises its sandbox.

Kept free of ray imports at module level: the driver wraps :class:`SweepWorker` with
``ray.remote`` and per-pool options (``num_gpus=1`` plus the accelerator-type resource).
The actor is long-lived, so Ray's worker start, the zygote's ``import torch`` and the
sandbox's CUDA initialisation are paid once per GPU, not once per evaluation.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, replace

from sweep.cluster.sandbox import Done, Envelope, Sandbox, SandboxSpec, SandboxStats
from sweep.schema import Provenance

__all__ = ["SweepWorker", "WorkerInfo", "resolve_device_kind"]


@dataclass(frozen=True)
class WorkerInfo:
    """Where a worker runs, reported once its sandbox is ready."""

    node_id: str
    gpu_id: str | None
    pid: int
    hostname: str
    device: str
    device_name: str | None
    sandbox_start_s: float


def resolve_device_kind(requested: str, gpu_ids: list[str]) -> str:
    """``"cuda"`` or ``"cpu"`` for a worker.

    ``"auto"`` means CUDA when Ray gave this worker a GPU and the machine has an NVIDIA
    driver; a logical GPU on a CPU-only machine (the test setup) runs the CPU path.
    """
    if requested != "auto":
        return requested
    if gpu_ids and (os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")):
        return "cuda"
    return "cpu"


class SweepWorker:
    """One GPU's evaluator: a supervisor around a sandbox process (see ``sandbox``).

    Args:
        spec: How to start sandboxes (``device_kind="auto"`` is resolved here).
        run_id: The sweep run, stamped on every trace.
    """

    def __init__(self, spec: SandboxSpec, run_id: str) -> None:
        import ray

        ctx = ray.get_runtime_context()
        gpu_ids = [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])]
        self._node_id = ctx.get_node_id()
        self._gpu_id = ",".join(gpu_ids) or None
        spec = replace(spec, device_kind=resolve_device_kind(spec.device_kind, gpu_ids))
        stamp = Provenance(run_id=run_id, node_id=self._node_id, gpu_id=self._gpu_id)
        self._sandbox = Sandbox(spec, stamp)

    def ready(self) -> WorkerInfo:
        """Start the sandbox; raises ``SandboxStartError`` when it cannot start."""
        info = self._sandbox.start()
        return WorkerInfo(
            node_id=self._node_id,
            gpu_id=self._gpu_id,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            device=info.device,
            device_name=info.device_name,
            sandbox_start_s=self._sandbox.stats.start_seconds[-1],
        )

    def evaluate_batch(self, envelopes: list[Envelope]) -> tuple[list[Done], float]:
        """Evaluate tasks one after the other in the sandbox; one result each (a trace as
        JSON, and its stamp; see ``Sandbox.run_batch``), and the seconds that took (the
        driver sizes its calls by it)."""
        t0 = time.monotonic()
        out = self._sandbox.run_batch(envelopes)
        return out, time.monotonic() - t0

    def stats(self) -> SandboxStats:
        """The supervisor's counters (sandboxes started, timeouts, crashes)."""
        return self._sandbox.stats

    def close(self) -> None:
        """Stop the sandbox and its zygote."""
        self._sandbox.close()

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

from sweep.cluster._compile_pool import CompilePool, PoolStats
from sweep.cluster.sandbox import Done, Envelope, Sandbox, SandboxSpec, SandboxStats
from sweep.schema import Provenance

__all__ = ["SweepWorker", "WorkerInfo", "compile_workers_for", "resolve_device_kind"]

#: Most compile processes one GPU worker starts under ``compile_workers: auto``.
MAX_AUTO_COMPILE_WORKERS = 8


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
    compile_workers: int = 0


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


def compile_workers_for(requested: int, device_kind: str, cpus: int, gpus_on_node: int) -> int:
    """How many compile processes a worker starts: ``requested`` when it is 0 or more; for
    ``auto`` (-1) on a GPU, the node's CPUs per GPU less the one the worker uses, at most
    :data:`MAX_AUTO_COMPILE_WORKERS`; none on CPU (Triton is interpreted there: nothing to
    compile)."""
    if requested >= 0:
        return requested
    if device_kind != "cuda":
        return 0
    per_gpu = cpus // max(1, gpus_on_node)
    return max(0, min(MAX_AUTO_COMPILE_WORKERS, per_gpu - 1))


def _gpus_on_node(ray: object, node_id: str) -> int:
    for node in ray.nodes():  # type: ignore[attr-defined]
        if node.get("NodeID") == node_id:
            return int(node.get("Resources", {}).get("GPU", 0))
    return 1


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
        size = compile_workers_for(
            spec.compile_workers,
            spec.device_kind,
            os.cpu_count() or 1,
            _gpus_on_node(ray, self._node_id) if spec.compile_workers < 0 else 1,
        )
        self._pool = CompilePool(spec, size, stamp) if size > 0 else None

    def ready(self) -> WorkerInfo:
        """Start the sandbox; raises ``SandboxStartError`` when it cannot start."""
        info = self._sandbox.start()
        if self._pool is not None:  # its processes started beside the sandbox: ready together
            self._pool.wait_started(self._sandbox.spec.start_timeout_s)
        return WorkerInfo(
            node_id=self._node_id,
            gpu_id=self._gpu_id,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            device=info.device,
            device_name=info.device_name,
            sandbox_start_s=self._sandbox.stats.start_seconds[-1],
            compile_workers=self._pool.size if self._pool is not None else 0,
        )

    def evaluate_batch(
        self, envelopes: list[Envelope], ahead: list[Envelope] | None = None
    ) -> tuple[list[Done], float]:
        """Evaluate tasks one after the other in the sandbox; one result each (a trace as
        JSON, and its stamp; see ``Sandbox.run_batch``), and the seconds that took (the
        driver sizes its calls by it).

        With a compile pool, ``envelopes`` and then ``ahead`` (the tasks of this worker's
        next calls) go to the pool first; a task the pool found cannot compile gets the
        pool's COMPILE_ERROR trace and is not run here."""
        t0 = time.monotonic()
        pool = self._pool
        if pool is None:
            return self._sandbox.run_batch(envelopes), time.monotonic() - t0
        pool.submit([e for e in envelopes if e.compiled] + [e for e in ahead or [] if e.compiled])
        out: list[Done] = []
        run: list[Envelope] = []  # consecutive tasks to run here, sent together (pipelined)
        for env in envelopes:
            if pool.pending(env):
                out.extend(self._sandbox.run_batch(run) if run else [])
                run = []
                failed = pool.outcome(env)
                if failed is not None:
                    out.append(failed)
                    continue
            run.append(env)
        out.extend(self._sandbox.run_batch(run) if run else [])
        return out, time.monotonic() - t0

    def pool_stats(self) -> PoolStats | None:
        """The compile pool's counters (``None`` without a pool)."""
        return self._pool.stats if self._pool is not None else None

    def stats(self) -> SandboxStats:
        """The supervisor's counters (sandboxes started, timeouts, crashes)."""
        return self._sandbox.stats

    def close(self) -> None:
        """Stop the sandbox and its zygote, and the compile pool."""
        self._sandbox.close()
        if self._pool is not None:
            self._pool.close()

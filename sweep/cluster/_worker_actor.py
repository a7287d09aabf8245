"""The Ray actor that owns one GPU (or one CPU slot) and supervises its sandbox.

Kept free of ray imports at module level: the driver makes the remote class with
:func:`actor_class` and per-pool options (``num_gpus=1`` plus the accelerator-type resource).
The actor is long-lived, so Ray's worker start, the zygote's ``import torch`` and the
sandbox's CUDA initialisation are paid once per GPU, not once per evaluation.

A *warm* worker (``warm`` given, see :mod:`sweep.cluster.warm`) is a named detached actor
that outlives its launch: a :class:`~sweep.cluster._warm_keeper.WarmKeeper` holds its lease
and what it was started from, its calls carry the lease's run id (a call of another run is
refused: :class:`~sweep.cluster._lease.LeaseLost`), and a thread of its own stops it once
it has been unleased for its idle timeout. Its control methods (claim, renew, release,
describe) run in a concurrency group of their own, so they answer at once while a call
evaluates; the calls that evaluate keep Ray's default group of one thread, in submission
order (the driver loop counts on it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from sweep.cluster._lease import Claim, Wanted, WarmState
from sweep.cluster._warm_keeper import Place, WarmKeeper
from sweep.sandbox.compile_pool import CompilePool, PoolStats, compile_workers_for, run_with_pool
from sweep.sandbox.handover import ZygoteOffer
from sweep.sandbox.packing import Done, Envelope
from sweep.sandbox.supervisor import Sandbox, SandboxSpec, SandboxStats
from sweep.schema import Provenance

__all__ = ["CONTROL_GROUP", "BatchDone", "SweepWorker", "WorkerInfo", "actor_class", "resolve_device_kind"]

#: The concurrency group of a worker's control methods (one thread beside the evaluating one).
CONTROL_GROUP = "control"


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
    #: Wall times (``time.time()``) of the worker's start, for the launch's start clock
    #: (``LaunchResult.phases``): its process started, its actor began (Ray's worker start
    #: and the actor's imports before), its zygote was ready (``import torch`` and the
    #: engine), its first sandbox was ready (a fork and the device's start), it answered
    #: ready (its compile pool, if any, then starting beside it). ``None``: unknown.
    process_started_at: float | None = None
    actor_started_at: float | None = None
    zygote_ready_at: float | None = None
    sandbox_ready_at: float | None = None
    ready_at: float | None = None
    #: Its zygote was one the driver started and handed over (``sweep.sandbox.handover``):
    #: when that one had preloaded; else why an offer was refused (``None``: none made).
    zygote_adopted: bool = False
    zygote_preloaded_at: float | None = None
    handover_refused: str | None = None


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


class BatchDone(NamedTuple):
    """What :meth:`SweepWorker.evaluate_batch` answers the driver: one result per task, in
    order, and the seconds the batch took (the driver sizes its calls by it)."""

    done: list[Done]
    seconds: float


class SweepWorker:
    """One GPU's evaluator: a supervisor around a sandbox process (see ``sandbox``).

    Args:
        spec: How to start sandboxes (``device_kind="auto"`` is resolved here).
        run_id: The sweep run, stamped on every trace.
        warm: What the launch asked, for a warm worker (``None``: a worker of one launch).
        offer: A zygote the driver of an embedded launch started for it on this node,
            adopted if it is the one this worker would start (``sweep.sandbox.handover``).
    """

    def __init__(
        self, spec: SandboxSpec, run_id: str, warm: Wanted | None = None, offer: ZygoteOffer | None = None
    ) -> None:
        self._actor_started_at = time.time()
        import ray

        ctx = ray.get_runtime_context()
        gpu_ids = [str(g) for g in ctx.get_accelerator_ids().get("GPU", [])]
        self._node_id = ctx.get_node_id()
        self._gpu_id = ",".join(gpu_ids) or None
        spec = replace(spec, device_kind=resolve_device_kind(spec.device_kind, gpu_ids))
        stamp = Provenance(run_id=run_id, node_id=self._node_id, gpu_id=self._gpu_id)
        self._sandbox = Sandbox(spec, stamp, offer)
        self._pool_size = compile_workers_for(
            spec.compile_workers,
            spec.device_kind,
            os.cpu_count() or 1,
            _gpus_on_node(ray, self._node_id) if spec.compile_workers < 0 else 1,
        )
        self._pool: CompilePool | None = None  # started once the sandbox is ready (see ready)
        self._keeper: WarmKeeper | None = None
        if warm is not None:
            place = Place(
                ctx.get_actor_name() or "", self._node_id, self._gpu_id, os.getpid(), socket.gethostname()
            )
            self._keeper = WarmKeeper(warm, spec.backend, place)
            threading.Thread(target=self._watch_idle, name="sweep-idle-watch", daemon=True).start()

    def ready(self) -> WorkerInfo:
        """Start the sandbox; raises ``SandboxStartError`` when it cannot start."""
        info = self._sandbox.start()
        sandbox_ready_at = time.time()
        if self._pool is None and self._pool_size > 0:
            # Only now: its zygotes (one per process, each importing torch) would otherwise
            # share the CPUs with this worker's own, the one its first task waits for. Not
            # waited for: tasks with nothing to compile never need it, and a task with
            # something to compile waits for its first process (``CompilePool.outcome``).
            self._pool = CompilePool(self._sandbox.spec, self._pool_size, self._sandbox.stamp)
        return WorkerInfo(
            node_id=self._node_id,
            gpu_id=self._gpu_id,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            device=info.device,
            device_name=info.device_name,
            sandbox_start_s=self._sandbox.stats.start_seconds[-1],
            compile_workers=self._pool.size if self._pool is not None else 0,
            process_started_at=process_started_at(),
            actor_started_at=self._actor_started_at,
            zygote_ready_at=max(self._sandbox.stats.zygote_ready_at, default=None),
            sandbox_ready_at=sandbox_ready_at,
            ready_at=time.time(),
            zygote_adopted=self._sandbox.stats.zygote_adopted,
            zygote_preloaded_at=self._sandbox.stats.zygote_preloaded_at,
            handover_refused=self._sandbox.stats.handover_refused,
        )

    def evaluate_batch(
        self, envelopes: list[Envelope], lease: str | None = None, ahead: list[Envelope] | None = None
    ) -> BatchDone:
        """Evaluate tasks one after the other in the sandbox; one result each (a trace as
        JSON, and its stamp; see ``Sandbox.run_batch``), and the seconds that took (the
        driver sizes its calls by it).

        ``lease``: the run id of the caller, which must hold a warm worker's lease.
        ``ahead``: the tasks of this worker's next calls; with a compile pool, they and
        ``envelopes`` are compiled there first (``_compile_pool.run_with_pool``).

        Raises:
            LeaseLost: A warm worker leased to another run (nothing is evaluated).
        """
        keeper = self._keeper
        if keeper is None:
            t0 = time.monotonic()
            out = run_with_pool(self._pool, self._sandbox, envelopes, ahead)
            return BatchDone(out, time.monotonic() - t0)
        keeper.begin(lease)  # raises unless ``lease`` holds it: one launch at a time
        assert lease is not None
        try:
            if self._sandbox.stamp.run_id != lease:  # a new launch: its run id on the traces
                self._sandbox.stamp = self._sandbox.stamp.model_copy(update={"run_id": lease})
            t0 = time.monotonic()
            out = run_with_pool(self._pool, self._sandbox, envelopes, ahead)
            return BatchDone(out, time.monotonic() - t0)
        finally:
            keeper.end(len(envelopes))

    def pool_stats(self) -> PoolStats | None:
        """The compile pool's counters (``None`` without a pool)."""
        return self._pool.stats if self._pool is not None else None

    def stats(self) -> SandboxStats:
        """The supervisor's counters (sandboxes started, timeouts, crashes)."""
        return self._sandbox.stats

    def close(self) -> None:
        """Stop the sandbox and its zygote."""
        self._sandbox.close()
        if self._pool is not None:
            self._pool.close()

    # -- a warm worker's control methods (their own concurrency group: see actor_class) ----

    def _warm(self) -> WarmKeeper:
        if self._keeper is None:
            raise RuntimeError("not a warm worker: it has no lease")
        return self._keeper

    def claim(self, wanted: Wanted) -> Claim:
        """Lease this warm worker to ``wanted.owner`` if it is free (see ``WarmKeeper.claim``)."""
        return self._warm().claim(wanted)

    def renew(self, owner: str) -> bool:
        """Extend ``owner``'s lease; ``False`` when another run holds it now."""
        return self._warm().renew(owner)

    def release(self, owner: str) -> bool:
        """End ``owner``'s lease; the worker stays warm until its idle timeout."""
        return self._warm().release(owner)

    def describe(self) -> WarmState:
        """What ``sweep workers`` lists of this worker."""
        return self._warm().describe()

    def _watch_idle(self) -> None:
        """Stop this actor once it has been unleased and idle for its idle timeout, so a
        cluster is not held forever (a detached actor outlives every driver)."""
        keeper = self._warm()
        while True:
            time.sleep(max(0.05, min(5.0, keeper.idle_timeout_s / 4)))
            if keeper.should_exit():
                break
        with contextlib.suppress(Exception):  # going away regardless
            self.close()
        import ray

        try:
            ray.kill(ray.get_runtime_context().current_actor)  # frees its name and its GPU
        finally:
            os._exit(0)  # only reached if Ray could not kill it


def process_started_at() -> float | None:
    """Wall time this process started (Linux ``/proc``), or ``None`` where it cannot tell."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            # Fields after the command's name, which ends at the last ")": starttime is field 22.
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as f:
            up = float(f.read().split()[0])  # seconds since boot, to 0.01 s
        return time.time() - (up - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _gpus_on_node(ray: Any, node_id: str) -> int:
    for node in ray.nodes():
        if node.get("NodeID") == node_id:
            return int(node.get("Resources", {}).get("GPU", 0))
    return 1


def actor_class() -> Any:
    """The Ray actor class of :class:`SweepWorker`: its control methods in a concurrency
    group of one thread (:data:`CONTROL_GROUP`), the rest in Ray's default group of one
    thread, run in submission order.

    Made here rather than at import, so this module imports no Ray; the class keeps the
    name ``SweepWorker`` (Ray's process titles, ``ray::SweepWorker.evaluate_batch``).
    """
    import ray

    control = ray.method(concurrency_group=CONTROL_GROUP)
    base = SweepWorker

    class _Remote(base):  # type: ignore[valid-type,misc]
        @control
        def claim(self, wanted: Wanted) -> Claim:
            return base.claim(self, wanted)

        @control
        def renew(self, owner: str) -> bool:
            return base.renew(self, owner)

        @control
        def release(self, owner: str) -> bool:
            return base.release(self, owner)

        @control
        def describe(self) -> WarmState:
            return base.describe(self)

    _Remote.__name__ = _Remote.__qualname__ = "SweepWorker"
    make: Any = ray.remote  # its overloads do not list concurrency_groups
    return make(concurrency_groups={CONTROL_GROUP: 1})(_Remote)

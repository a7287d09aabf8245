"""The zygotes an embedded launch's driver starts for its workers before Ray is up.

An embedded launch (Ray started by the command itself, this machine its only node) knows,
before Ray starts, how many workers it will start here and what their zygotes will be, so
the driver starts those zygotes at the very start of the command (:meth:`ZygoteOffers.start`)
and each worker adopts one (:mod:`sweep.sandbox.handover`): their imports of torch, triton
and the engine (about 3 s on a GPU host) overlap Ray's start instead of following it.

What a Ray worker's environment has that the driver's has not is Ray's to say, so it is said
here: ``OMP_NUM_THREADS`` (1 for a worker of at most one CPU, as every pool's is, when unset:
the offered zygote gets it too, since libraries read it as they load), the device visibility
variables (per sandbox: :data:`PER_CHILD`) and Ray's bookkeeping (:data:`RAY_LOOSE`). A worker
whose environment differs otherwise refuses the offer and starts its own zygote.

Left on today's path: a cluster given by address, a Ray already initialised in this process,
a ``ray.runtime_env`` (it changes the workers' environment), ``ray.zygote_handover: false``,
and launches with distributed (gang) tasks (their workers start after the gangs ran).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from sweep.cluster._worker_actor import resolve_device_kind
from sweep.cluster.connect import Pool, in_ray_job
from sweep.cluster.head_start import Lane
from sweep.config import SweepConfig
from sweep.sandbox.handover import OfferedZygote, ZygoteOffer, offer_zygote, zygote_environment
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema.hardware import CPU, short_name
from sweep.schema.task import Task

__all__ = [
    "PER_CHILD",
    "RAY_LOOSE",
    "ZygoteOffers",
    "auto_is_cpu",
    "local_gpus",
    "offer_counts",
    "visible_gpu_ids",
]

#: The variables by which Ray gives a worker its accelerators: set in each sandbox.
PER_CHILD = (
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "NEURON_RT_VISIBLE_CORES",
    "TPU_VISIBLE_CHIPS",
    "HABANA_VISIBLE_MODULES",
    "ONEAPI_DEVICE_SELECTOR",
    "ASCEND_RT_VISIBLE_DEVICES",
)
#: Ray's bookkeeping in a worker's environment (its job id, raylet, debugger hook, process
#: titles), which no evaluation reads: it may differ between a worker and its zygote.
RAY_LOOSE = ("RAY_*", "_RAY_*", "PYTHONBREAKPOINT", "SPT_NOENV")


def local_gpus(num_gpus: int | None) -> int:
    """The GPUs an embedded Ray will have: ``ray.num_gpus`` if set, else this machine's NVIDIA
    devices (as many as ``CUDA_VISIBLE_DEVICES`` leaves, when it is set)."""
    if num_gpus is not None:
        return num_gpus
    try:
        devices = [n for n in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", n)]
    except OSError:
        devices = []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return min(len(devices), len([v for v in visible.split(",") if v.strip()]))
    return len(devices)


def _embedded(address: str | None) -> bool:
    """Whether the launch starts its own Ray here (not a cluster by address, a Ray job's
    driver, or a Ray this process initialised already)."""
    if address not in (None, "local") or in_ray_job():
        return False
    ray = sys.modules.get("ray")
    return ray is None or not ray.is_initialized()


def auto_is_cpu(config: SweepConfig, address: str | None) -> bool:
    """Whether ``hardware: auto`` is sure to pick CPU before Ray starts: an embedded Ray on a
    machine without GPUs (none given by ``ray.num_gpus`` either), whose only target is CPU.
    The plan can then be made before Ray, so only the workers its tasks fill are started."""
    return (
        config.hardware_choice().mode == "auto" and _embedded(address) and not local_gpus(config.ray.num_gpus)
    )


def offer_counts(config: SweepConfig, address: str | None, todo: Sequence[Task] | None) -> tuple[int, int]:
    """``(GPU, CPU)`` workers of an embedded launch to start zygotes for before Ray; ``(0, 0)``
    where the hand-over does not apply (see the module docstring). ``todo``: the tasks to run
    (at most one zygote a task), or ``None`` when the cluster picks the target (``hardware:
    auto`` on a machine with GPUs: one a GPU; ``all``: GPUs)."""
    from sweep.sandbox.gang import world_size

    if not config.ray.zygote_handover or config.ray.runtime_env or not _embedded(address):
        return 0, 0
    gpus = local_gpus(config.ray.num_gpus)
    cpus = config.ray.num_cpus or os.cpu_count() or 1
    if todo is None:
        mode = config.hardware_choice().mode
        return (gpus, 0) if gpus or mode == "all" else (0, cpus)
    if any(world_size(t) > 1 for t in todo):
        return 0, 0
    on_cpu = sum(short_name(t.hardware) == CPU for t in todo)
    return min(len(todo) - on_cpu, gpus), min(on_cpu, cpus)


class ZygoteOffers:
    """Zygotes started for the local workers of an embedded launch, each offered to one
    worker (:meth:`take`), some lent to this process first (:meth:`lanes`); :meth:`close`
    ends those nobody adopted (use it in a ``finally``)."""

    def __init__(self) -> None:
        # Private (0700) to this user: only its processes reach the sockets.
        self._dir = tempfile.TemporaryDirectory(prefix="sweep-handover-")
        self._free: dict[bool, list[OfferedZygote]] = {True: [], False: []}  # by "on a GPU"
        self._all: list[OfferedZygote] = []
        self._lendable: list[tuple[OfferedZygote, str, bool]] = []  # with device kind, on a GPU

    @classmethod
    def start(
        cls, spec: SandboxSpec, gpus: int, cpus: int, *, lend_gpus: bool = False, lend_cpus: bool = False
    ) -> ZygoteOffers:
        """Start ``gpus`` zygotes for GPU workers and ``cpus`` for CPU ones, as ``spec`` says;
        each waits for its worker at most ``spec.start_timeout_s``. ``lend_gpus``,
        ``lend_cpus``: those serve this process first (:meth:`lanes`), then their worker."""
        self = cls()
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")  # what Ray gives a worker of at most one CPU
        zenv = zygote_environment(spec.env, env)
        for on_gpu, n in ((True, gpus), (False, cpus)):
            kind = resolve_device_kind(spec.device_kind, ["0"]) if on_gpu else "cpu"
            lend = lend_gpus if on_gpu else lend_cpus
            for _ in range(n):
                try:
                    offered = offer_zygote(
                        Path(self._dir.name),
                        f"z{len(self._all)}",
                        (spec.backend, kind, spec.preload),
                        zenv,
                        bound_s=spec.start_timeout_s,
                        per_child=PER_CHILD,
                        loose=RAY_LOOSE,
                        owners=2 if lend else 1,
                    )
                except OSError:
                    break  # no socket or process: those workers start their own zygotes
                self._all.append(offered)
                self._free[on_gpu].append(offered)
                if lend:
                    self._lendable.append((offered, kind, on_gpu))
        return self

    def __len__(self) -> int:
        return len(self._all)

    def lanes(self) -> list[Lane]:
        """Lend each zygote started to be lent to a lane of this process (:mod:`head_start`):
        the i-th GPU zygote to the i-th GPU an embedded Ray gives its workers. Call it before
        Ray starts, so that this process is each one's first owner."""
        visible = visible_gpu_ids(sum(on_gpu for _, _, on_gpu in self._lendable))
        lanes: list[Lane] = []
        for offered, kind, on_gpu in self._lendable:
            gpu = visible.pop(0) if on_gpu else None
            try:
                # A CPU lane's sandboxes see no GPU, as a CPU worker's.
                lent = offered.lend({"CUDA_VISIBLE_DEVICES": gpu if gpu is not None else ""})
            except OSError:
                continue  # its worker adopts it first; it exits after that one
            lanes.append(Lane(lent, kind, gpu))
        self._lendable.clear()
        return lanes

    def take(self, pool: Pool) -> ZygoteOffer | None:
        """An offer for a new worker of ``pool`` (each offer once), or ``None``."""
        free = self._free[pool.num_gpus > 0]
        while free:
            offered = free.pop(0)
            if offered.alive():
                return offered.offer
        return None

    def close(self, grace_s: float = 2.0) -> None:
        """End every zygote offered: adopted ones get ``grace_s`` seconds in all to exit (their
        workers are gone by now), then each is killed and reaped; the folder is removed."""
        deadline = time.monotonic() + grace_s
        for offered in self._all:
            offered.close(max(0.0, deadline - time.monotonic()))
        self._all.clear()
        self._free = {True: [], False: []}
        self._dir.cleanup()


def visible_gpu_ids(n: int) -> list[str]:
    """The ids of the first ``n`` GPUs an embedded Ray gives its workers: those
    ``CUDA_VISIBLE_DEVICES`` lists, when set, else ``0 .. n-1``."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        return ids[:n]
    return [str(i) for i in range(n)]

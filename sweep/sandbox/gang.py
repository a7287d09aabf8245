"""One distributed task: N ranks, each in its own sandbox process, one trace.

A task whose definition is ``distributed`` runs as ``world_size`` ranks on one node (the GPUs
of the Ray placement group the gang scheduler reserved, ``gang_sched``; or this machine's CPU).
Each rank is a task of its own to a :class:`~sweep.sandbox.supervisor.Sandbox`: a fresh process
forked from a zygote that imported torch and took the harness's snapshot, with the same
deadlines, crash reports and integrity checks as a single-GPU task. The ranks meet through a
process group made for this task alone (on a file in a folder of this gang's own, torch's
``FileStore``; NCCL on GPUs, gloo on the CPU) and destroyed before each rank sends its trace.
They meet on a file rather than a TCP port: a port found free here could be taken by any other
process (another gang, Ray) before rank 0 bound it, and the gang failed with ``EADDRINUSE``.

When a rank fails (a crash, an exit, an exception, a wrong result, its deadline) the others
get ``grace_s`` to report what they saw, then every process still running is killed: a rank
that waits on a dead peer never outlives the task. The ranks' traces are merged into exactly
one (``_gang_merge``), which names the failing rank and keeps every rank's log, in
``workdir/gang-<task>/rank-<r>.log`` when the spec has a work folder.

The ranks' processes are forked by one zygote (:class:`GangZygote`): torch is imported once per
gang, not once per rank, and a caller that runs many gangs of one spec (a Ray task, a test
module) may pass the same zygote to each; :func:`shared_zygote` keeps one per spec and
environment in a process that runs gang after gang (a launch's Ray worker). Every rank is still
a fresh process of its own.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from sweep.sandbox._gang_merge import merge_ranks
from sweep.sandbox._process_guard import kill_group
from sweep.sandbox._spec import SandboxStartError
from sweep.sandbox._zygote import _R, Fork, Kill, Wait, ZygoteClient, ZygoteError
from sweep.sandbox.failure_traces import failure_trace, now_iso
from sweep.sandbox.packing import Envelope
from sweep.sandbox.supervisor import Sandbox, SandboxSpec
from sweep.schema import Provenance, Status, Trace
from sweep.schema.distributed import RankSlot, world_size_of
from sweep.schema.task import Task

__all__ = [
    "MULTICAST_OFF_ENV",
    "GangZygote",
    "gang_env",
    "meeting_file",
    "rank_bytes",
    "run_gang",
    "shared_zygote",
    "world_size",
]

#: Set in every rank's zygote (and so every rank's process): NVLink multicast can take a
#: shared host's GPUs out of service. What the host sets for NCCL and torch is kept as it is.
MULTICAST_OFF_ENV: tuple[tuple[str, str], ...] = (
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
)


def world_size(task: Task) -> int:
    """The ranks ``task`` needs: 1 for an ordinary task."""
    spec = task.definition.distributed
    if spec is None:
        return 1
    return world_size_of(spec, task.workload.axes) or 1


def rank_bytes(task: Task) -> int | None:
    """The bytes one rank's inputs and outputs of ``task`` take (shapes at its world size), or
    ``None`` when they cannot be worked out (an axis missing, a dtype of unknown size)."""
    from sweep.schema.call_args import ITEMSIZE
    from sweep.schema.distributed import full_axes
    from sweep.schema.expr import ConstraintError

    definition = task.definition
    if definition.distributed is None:
        return None
    try:
        axes = full_axes(definition.distributed, task.workload.axes)
    except ConstraintError:
        return None
    total = 0
    for spec in [*definition.inputs.values(), *definition.outputs.values()]:
        size = ITEMSIZE.get(spec.dtype.value)
        try:
            shape = definition.resolve_shape(spec, axes)
        except KeyError:
            return None
        if size is None:
            return None
        count = 1
        for d in shape or ():
            count *= d
        total += count * size
    return total


@contextlib.contextmanager
def meeting_file(under: str | None = None) -> Iterator[Path]:
    """A path no file has yet, in a new folder (under ``under``, or the system's temporary
    folder) removed with what is in it on exit: where one gang's process group meets
    (``init_method="file://<path>"``). Each rank reaches it by its absolute path."""
    folder = Path(tempfile.mkdtemp(prefix="sweep-gang-", dir=under)).resolve()
    try:
        yield folder / "store"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def gang_env(spec: SandboxSpec) -> tuple[tuple[str, str], ...]:
    """The environment every rank's zygote gets: the spec's, multicast off over it."""
    off = dict(MULTICAST_OFF_ENV)
    return tuple((k, v) for k, v in spec.env if k not in off) + MULTICAST_OFF_ENV


class _LockedZygote(ZygoteClient):
    """A zygote the rank threads of a gang share: one request and its answer at a time."""

    def __init__(self, spec: SandboxSpec) -> None:
        self._lock = threading.Lock()
        super().__init__(
            spec.backend,
            spec.device_kind,
            spec.preload,
            start_timeout_s=spec.start_timeout_s,
            env_over=gang_env(spec),
        )

    def _call(self, req: Fork | Wait | Kill, kind: type[_R], fds: list[int] | None = None) -> _R:
        with self._lock:
            return super()._call(req, kind, fds)


class GangZygote(contextlib.AbstractContextManager["GangZygote"]):
    """One zygote that forks every rank of one or more gangs run with ``spec`` (torch imported
    once). Started on first use; :meth:`close` stops it (and any rank still running)."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self._client: _LockedZygote | None = None
        self._lock = threading.Lock()

    def client(self) -> ZygoteClient:
        """The running zygote, started (or restarted, if it died) now."""
        with self._lock:
            if self._client is None or not self._client.alive():
                if self._client is not None:
                    self._client.close()
                    self._client = None
                try:
                    self._client = _LockedZygote(self.spec)
                except ZygoteError as e:
                    raise SandboxStartError(str(e)) from None
            return self._client

    def close(self) -> None:
        """Stop the zygote."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Zygotes :func:`shared_zygote` keeps (the least recently used idle one goes past it): one per
#: spec and environment, and a worker sees few (a GPU gang's Ray task sees the GPUs of its group).
_SHARED_MAX = 4


@dataclass
class _SharedEntry:
    """A shared zygote and how many gangs use it now."""

    zygote: GangZygote
    users: int = 0


_SHARED_LOCK = threading.Lock()
#: This process's shared gang zygotes by key, in the order of their last use (the newest last).
_SHARED: dict[tuple[object, ...], _SharedEntry] = {}


def _shared_key(spec: SandboxSpec) -> tuple[object, ...]:
    # What a zygote is made of: the spec's backend, device kind, preloads and variables, and the
    # environment it inherits (Ray sets CUDA_VISIBLE_DEVICES for each task: new GPUs, new zygote).
    return (
        spec.backend,
        spec.device_kind,
        spec.preload,
        spec.start_timeout_s,
        gang_env(spec),
        tuple(sorted(os.environ.items())),
    )


@contextlib.contextmanager
def shared_zygote(spec: SandboxSpec) -> Iterator[GangZygote]:
    """This process's zygote for gangs of ``spec``, reused by every later gang of the same spec
    and environment (a Ray worker runs one gang after another): torch is imported once, not once
    per gang. Each rank is still a fresh process forked from it, and the zygote never runs a
    solution's code, as a GPU worker's zygote serves all its tasks. Past :data:`_SHARED_MAX`,
    the least recently used zygote no gang uses is stopped."""
    key = _shared_key(spec)
    with _SHARED_LOCK:
        entry = _SHARED.pop(key, None) or _SharedEntry(GangZygote(spec))
        _SHARED[key] = entry  # last: the most recently used
        entry.users += 1
        idle = [k for k, e in _SHARED.items() if not e.users]
        stop = [_SHARED.pop(k).zygote for k in idle[: max(0, len(_SHARED) - _SHARED_MAX)]]
    for old in stop:
        old.close()
    try:
        yield entry.zygote
    finally:
        with _SHARED_LOCK:
            entry.users -= 1


class _RankSandbox(Sandbox):
    """A sandbox whose running process another thread can kill (:meth:`abort`), forked by the
    gang's shared zygote."""

    _running_pid: int | None = None

    def __init__(self, spec: SandboxSpec, stamp: Provenance, zygote: GangZygote) -> None:
        super().__init__(spec, stamp)
        self._gang_zygote = zygote

    def _ensure_zygote(self) -> ZygoteClient:
        self._zygote = self._gang_zygote.client()
        return self._zygote

    def close(self) -> None:
        self._zygote = None  # the gang's, not this rank's: GangZygote.close stops it
        super().close()

    def _await(self, child, env):  # type: ignore[no-untyped-def]
        self._running_pid = child.pid
        try:
            return super()._await(child, env)
        finally:
            self._running_pid = None

    def abort(self) -> bool:
        """Kill the running rank's process (its waiting thread reports it killed); whether one ran."""
        pid = self._running_pid
        if pid is not None:
            kill_group(pid)
        return pid is not None


def run_gang(
    task: Task,
    spec: SandboxSpec,
    stamp: Provenance | None = None,
    *,
    grace_s: float = 3.0,
    zygote: GangZygote | None = None,
) -> Trace:
    """Run every rank of ``task`` in its own sandbox process; exactly one trace.

    Args:
        task: A task of a distributed definition.
        spec: How to start each rank's sandbox (``device_kind`` ``cuda``: rank r on the r-th
            visible GPU, NCCL; ``cpu``: gloo).
        stamp: Where it runs, copied into the trace.
        grace_s: Seconds the other ranks get to report once one failed, before they are killed.
        zygote: The zygote to fork the ranks from (made with the same ``spec``'s backend,
            device kind and environment); a new one for this gang, stopped after it, if ``None``.
    """
    if zygote is None:
        with GangZygote(spec) as own:
            return run_gang(task, spec, stamp, grace_s=grace_s, zygote=own)
    stamp = stamp or Provenance()
    with contextlib.ExitStack() as stack:
        try:
            store = stack.enter_context(meeting_file())
        except OSError as e:  # a full or read-only temporary folder: still one trace
            why = (
                f"no folder for the ranks to meet in could be made ({e}); free or fix {tempfile.gettempdir()}"
            )
            ended = stamp.model_copy(update={"finished_at": now_iso()})
            return failure_trace(task, Status.RUNTIME_ERROR, why, ended)
        return _run_ranks(task, spec, stamp, grace_s, zygote, store)


def _run_ranks(
    task: Task, spec: SandboxSpec, stamp: Provenance, grace_s: float, zygote: GangZygote, store: Path
) -> Trace:
    """:func:`run_gang`'s ranks, meeting on ``store``."""
    n = world_size(task)
    backend = "nccl" if spec.device_kind == "cuda" else "gloo"
    base = replace(spec, prefork=False, env=gang_env(spec), compile_workers=0)
    # Each rank's logs in a folder of its own: two supervisors in one folder would share names.
    specs = [
        replace(
            base,
            workdir=None
            if spec.workdir is None
            else str(Path(spec.workdir) / store.parent.name.removeprefix("sweep-") / f"rank-{r}"),
        )
        for r in range(n)
    ]
    slots = [RankSlot(rank=r, world_size=n, store_file=str(store), backend=backend) for r in range(n)]
    tasks = [task.model_copy(update={"rank": s}) for s in slots]
    boxes = [_RankSandbox(specs[r], stamp, zygote) for r in range(n)]
    results: queue.Queue[tuple[int, Trace]] = queue.Queue()

    def one(r: int) -> None:
        try:
            trace = boxes[r].run_batch([Envelope.of(tasks[r])])[0].trace(tasks[r])
        except Exception as e:  # noqa: BLE001 - no sandbox could start: still one trace per rank
            log = f"rank {r}: its sandbox could not start: {e}"
            trace = failure_trace(
                tasks[r], Status.RUNTIME_ERROR, log, stamp.model_copy(update={"finished_at": now_iso()})
            )
        results.put((r, trace))

    threads = [threading.Thread(target=one, args=(r,), daemon=True, name=f"rank-{r}") for r in range(n)]
    started = now_iso()
    for t in threads:
        t.start()
    got: dict[int, Trace] = {}
    order: list[int] = []
    aborted: set[int] = set()
    deadline: float | None = None
    try:
        while len(got) < n:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                r, trace = results.get(timeout=wait)
            except queue.Empty:
                for k in range(n):  # the grace is over: whoever still runs waits on a dead peer
                    if k not in got and boxes[k].abort():
                        aborted.add(k)
                deadline = None
                continue
            got[r] = trace
            order.append(r)
            failed = trace.evaluation is None or trace.evaluation.status is not Status.PASSED
            if failed and deadline is None and not aborted:
                deadline = time.monotonic() + grace_s
    finally:
        for t in threads:
            t.join(timeout=30)
        for b in boxes:
            with contextlib.suppress(Exception):
                b.close()
    logs = _keep_logs(spec, task, got)
    return merge_ranks(task, [got[r] for r in range(n)], order, aborted, logs, started=started)


def _keep_logs(spec: SandboxSpec, task: Task, traces: dict[int, Trace]) -> dict[int, str]:
    """Every rank's log in a file of its own (when the spec has a work folder); their paths."""
    if spec.workdir is None:
        return {}
    folder = Path(spec.workdir) / f"gang-{task.task_id}"
    paths: dict[int, str] = {}
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        for r, trace in traces.items():
            path = folder / f"rank-{r}.log"
            path.write_text(
                trace.evaluation.log if trace.evaluation else "", encoding="utf-8", errors="replace"
            )
            paths[r] = str(path)
    return paths

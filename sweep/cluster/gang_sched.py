"""Gang scheduling: each distributed task on N GPUs of one node, a Ray placement group each.

Policy (docs/multi-gpu.md, "Placement"):

- **Atomic reservations.** A task of world size N asks for a placement group of N GPUs on one
  node, ``STRICT_PACK`` (its ranks share NVLink): one bundle of N GPUs, since Ray places one
  task inside one bundle, and the task supervises all N ranks. Ray reserves a group whole or
  not at all, so no task ever holds part of what it needs while waiting for the
  rest: no two gangs can deadlock on each other.
- **No starvation of the big.** Tasks go largest world size first, then in plan order. Only
  the head of the queue may wait for a reservation; nothing behind it is reserved while it
  waits (no backfilling past it), so a task of 4 GPUs is not kept waiting forever by a stream of
  2-GPU tasks that would each take two of its GPUs as they free up.
- **No GPUs held idle long.** A group is made just before its task runs and removed as soon as
  its trace is back, unless the head of the queue asks for the same: it goes straight to the
  head then, never released and reserved again. A new group is asked for only when the cluster
  has its resources free or nothing runs (``_fits``): Ray retries a group it could not place
  after 100 ms and more, and a slot freed meanwhile stayed idle. The longest GPUs can sit idle
  waiting for the head is the rest of one running task, bounded by that task's timeout
  (``run_gang``'s deadlines, and the Ray task's own deadline here).
- **Beside single-GPU tasks.** In a launch the gang phase runs first, then the single-GPU
  workers start (``sweep.launch``): the single-GPU actors hold their GPU for the whole launch, so
  sharing GPUs with them at the same time could leave a gang unplaceable; in phases neither kind
  waits on the other for more than the other's finite queue.

What cannot be placed at all is said by :func:`unplaceable` before anything runs: more
ranks than any node of the target has GPUs, or, on a CPU target, ranks whose tensors are larger
than :data:`RANK_BYTES_LIMIT` allows (the shipped workloads of 16 MiB to 1 GiB are for GPUs: on
one host's CPU every rank's copy shares its memory and cores, and gloo moves them over
loopback, minutes per call).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep.sandbox.gang import rank_bytes, run_gang, shared_zygote, world_size
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import Provenance, Status, Trace
from sweep.schema.task import Task

__all__ = [
    "RANK_BYTES_LIMIT",
    "Unplaceable",
    "gang_order",
    "group_name",
    "node_slots",
    "placement_problem",
    "run_gang_tasks",
    "unplaceable",
]

#: The most bytes of inputs and outputs one rank of a task may hold, per target (targets not
#: named have no limit here: a GPU's memory is the engine's business). On the CPU all ranks
#: share one host, so a rank gets what a small CI machine can give each of 4 ranks at once.
RANK_BYTES_LIMIT: dict[str, int] = {"CPU": 16 * 2**20}

_TICK_S = 0.2
#: Seconds a Ray task of a gang may take beyond its ranks' own deadlines (zygotes' start).
_START_MARGIN_S = 300.0


@dataclass(frozen=True)
class Unplaceable:
    """Why a task cannot be placed: ``reason`` names its own figures (its world size, its
    bytes per rank); ``cause`` is the same for every task left out for the same cause (a
    launch prints one line per cause)."""

    reason: str
    cause: str


def unplaceable(
    task: Task, node_slots: Sequence[int] | None, limits: Mapping[str, int] | None = None
) -> Unplaceable | None:
    """Why ``task`` cannot be placed on nodes with ``node_slots`` GPUs (or CPU slots) each
    (``None``: the nodes are not known, only the size is checked), or ``None``.
    ``limits``: the most bytes per rank by target (default :data:`RANK_BYTES_LIMIT`)."""
    n = world_size(task)
    if n <= 1:
        return None
    hw = task.hardware
    limit = (RANK_BYTES_LIMIT if limits is None else limits).get(hw)
    if limit is not None:
        need = rank_bytes(task)
        if need is not None and need > limit:
            return Unplaceable(
                f"each of its {n} ranks holds {_mib(need)} of inputs and outputs; "
                f"a {hw} rank may hold at most {_mib(limit)} (a size for GPUs)",
                f"each rank holds more than the {_mib(limit)} of inputs and outputs a {hw} rank may "
                "(sizes for GPUs)",
            )
    if node_slots is None:
        return None
    most = max(node_slots, default=0)
    if n <= most:
        return None
    has = f"the largest {hw} node has {most}" if most else f"this cluster has no {hw} GPU"
    return Unplaceable(
        f"needs {n} {hw} GPUs on one node (its ranks share NVLink); {has}",
        f"needs more {hw} GPUs of one node than there are ({has})",
    )


def placement_problem(
    task: Task, node_slots: Sequence[int] | None, limits: Mapping[str, int] | None = None
) -> str | None:
    """:func:`unplaceable`'s reason for ``task``, or ``None`` when it can be placed."""
    found = unplaceable(task, node_slots, limits)
    return None if found is None else found.reason


def _mib(n: int) -> str:
    return f"{n / 2**20:.4g} MiB"


def node_slots(nodes: Sequence[tuple[float, tuple[str, ...]]], target: str) -> list[int]:
    """How many ranks of a ``target`` task each node can hold: its GPUs of that type (nodes as
    ``(gpus, accelerator types)``); on the CPU, any number (ranks are processes)."""
    from sweep.schema.distributed import MAX_WORLD_SIZE
    from sweep.schema.hardware import short_name

    if target == "CPU":
        return [MAX_WORLD_SIZE]
    return [int(gpus) for gpus, kinds in nodes if gpus and any(short_name(k) == target for k in kinds)]


def gang_order(tasks: Sequence[Task]) -> list[Task]:
    """The queue's order: largest world size first, then as planned (stable)."""
    return sorted(tasks, key=lambda t: -world_size(t))


def _bundles(task: Task) -> list[dict[str, float]]:
    """One bundle of the task's N GPUs (and its GPU type), or one CPU for a CPU target."""
    if task.hardware == "CPU":
        return [{"CPU": 1.0}]
    bundle = {"GPU": float(world_size(task))}
    if task.hardware != "auto":
        bundle[f"accelerator_type:{task.hardware}"] = 0.001
    return [bundle]


def _fits(task: Task) -> bool:
    """Whether the cluster has what ``task``'s group asks for free now (as a whole, not on one
    node: Ray tells on reserving)."""
    import ray

    free: dict[str, float] = ray.available_resources()  # type: ignore[no-untyped-call]
    return all(free.get(k, 0.0) >= v for bundle in _bundles(task) for k, v in bundle.items())


def group_name(run_id: str, number: int) -> str:
    """The name of the ``number``-th placement group a run asks for (``ray list
    placement-groups`` and Ray's dashboard show it): whose it is, at a glance."""
    return f"sweep-gang:{run_id}:{number}"


def _gpu_capacity() -> dict[str, float]:
    """The GPUs of the cluster's live nodes, by the target that asks for them: each
    accelerator type's nodes' (a task's ``hardware`` is its type's short name, the resource's
    suffix) and ``auto``'s, every node's."""
    from sweep.cluster.connect import live_nodes

    out: dict[str, float] = {}
    for node in live_nodes():
        for target in ("auto", *node.accelerator_types):
            out[target] = out.get(target, 0.0) + node.gpus
    return out


def _room(task: Task, held: Sequence[Task], capacity: Mapping[str, float]) -> bool:
    """Whether the groups the loop holds (of the tasks ``held``) leave ``task``'s GPUs free of
    ``capacity`` (:func:`_gpu_capacity`); a CPU target's groups are not counted here."""
    if task.hardware == "CPU":
        return True
    taken = sum(world_size(t) for t in held if t.hardware == task.hardware)
    return taken + world_size(task) <= capacity.get(task.hardware, 0.0)


def _gang_main(task_json: str, spec: SandboxSpec, run_id: str) -> str:
    """The Ray task of one gang: its ranks' sandboxes on this node, one trace (JSON)."""
    import os

    import ray

    task = Task.model_validate_json(task_json)
    if spec.device_kind == "auto":  # a GPU node's device files say whether its GPUs are real
        spec = _spec_for(spec, "cuda" if os.path.exists("/dev/nvidiactl") else "cpu")
    ctx = ray.get_runtime_context()
    stamp = Provenance(
        node_id=ctx.get_node_id(), gpu_id=os.environ.get("CUDA_VISIBLE_DEVICES"), run_id=run_id
    )
    # The zygote of the gangs this worker ran before, when their spec and environment were the same.
    with shared_zygote(spec) as zygote:
        return run_gang(task, spec, stamp, zygote=zygote).to_json()


def run_gang_tasks(
    tasks: Sequence[Task],
    spec: SandboxSpec,
    *,
    run_id: str,
    on_traces: Callable[[Sequence[Trace]], None],
    device_kinds: Mapping[str, str] | None = None,
    on_tick: Callable[[], None] | None = None,
    max_running: int = 64,
) -> int:
    """Run distributed ``tasks`` on the Ray cluster, one placement group each (see the module's
    policy); exactly one trace per task to ``on_traces``. Returns how many ran.

    Args:
        device_kinds: Per target, ``cuda`` or ``cpu`` (default: ``cuda`` for GPU targets).
    """
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    from sweep.sandbox.failure_traces import failure_trace, now_iso

    remote = ray.remote(max_retries=0)(_gang_main)
    queue = list(gang_order(tasks))
    waiting: tuple[Task, Any, float] | None = None  # the head, its group being reserved
    running: dict[Any, tuple[Task, Any, float]] = {}
    done = 0
    groups = 0  # asked for so far: each group's name is its run's and its number
    capacity = _gpu_capacity()

    def start(task: Task, pg: Any) -> None:
        kind = (device_kinds or {}).get(task.hardware, "cpu" if task.hardware == "CPU" else "auto")
        cpu = task.hardware == "CPU"
        ref = remote.options(
            num_cpus=1 if cpu else 0,
            num_gpus=0 if cpu else world_size(task),
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=pg, placement_group_capture_child_tasks=True
            ),
        ).remote(task.model_dump_json(), _spec_for(spec, kind), run_id)
        t = task.settings.timeouts
        running[ref] = (task, pg, time.monotonic() + t.compile_s + 2 * t.run_s + _START_MARGIN_S)

    while queue or waiting or running:
        # A new group only when it fits now (or nothing runs): Ray retries a group it cannot
        # place after a growing delay (100 ms, then more), which kept a freed slot idle.
        if (
            waiting is None
            and queue
            and len(running) < max_running
            and (
                not running
                or (_room(queue[0], [t for t, _, _ in running.values()], capacity) and _fits(queue[0]))
            )
        ):
            task = queue.pop(0)
            pg = placement_group(_bundles(task), strategy="STRICT_PACK", name=group_name(run_id, groups))
            groups += 1
            waiting = (task, pg, time.monotonic())
        if waiting is not None:
            task, pg, _ = waiting
            ready, _ = ray.wait([pg.ready()], timeout=0 if running else _TICK_S)
            if ready:
                start(task, pg)
                waiting = None
                continue
        if running:
            finished, _ = ray.wait(list(running), num_returns=1, timeout=_TICK_S)
            now = time.monotonic()
            for ref in list(running):
                task, pg, deadline = running[ref]
                if ref not in finished and now < deadline:
                    continue
                del running[ref]
                try:
                    trace = Trace.model_validate_json(ray.get(ref)) if ref in finished else None
                except Exception as e:  # noqa: BLE001 - the gang's Ray task died: still one trace
                    trace = failure_trace(
                        task,
                        Status.RUNTIME_ERROR,
                        f"the gang's Ray task failed: {e}",
                        Provenance(run_id=run_id, finished_at=now_iso()),
                    )
                if trace is None:
                    ray.cancel(ref, force=True)
                    trace = failure_trace(
                        task,
                        Status.TIMEOUT,
                        "the gang did not finish in time; all its ranks were killed",
                        Provenance(run_id=run_id, finished_at=now_iso()),
                    )
                # The group goes straight to the head of the queue when it asks for the same
                # (no release and new reservation between two gangs); a gang cancelled past its
                # deadline gives its group back, its process may still hold it for a while.
                head = waiting[0] if waiting is not None else (queue[0] if queue else None)
                if ref in finished and head is not None and _bundles(head) == _bundles(task):
                    if waiting is not None:
                        remove_placement_group(waiting[1])
                        waiting = None
                    else:
                        queue.pop(0)
                    start(head, pg)
                else:
                    remove_placement_group(pg)
                on_traces([trace])
                done += 1
        if on_tick is not None:
            on_tick()
    return done


def _spec_for(spec: SandboxSpec, kind: str) -> SandboxSpec:
    from dataclasses import replace

    return replace(spec, device_kind=kind, compile_workers=0, prefork=False)

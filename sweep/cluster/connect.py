"""Connecting to Ray, and what the cluster offers for a hardware target.

Where to connect is decided by the caller with :func:`sweep.config.resolve_address` (the
``--address`` flag, then ``RAY_ADDRESS``, then the config's ``ray.address``); with none, an
embedded local Ray over this machine's GPUs (or CPU slots). A Ray already initialised in
this process (a test, a notebook) is used as it is.

Targets arrive normalised (``"CPU"``, ``"H100"``: :func:`sweep.schema.hardware.hardware_choice`);
Ray's own accelerator names (``"H100"``, ``"A100-80G"``) are read in one helper,
``_ray_names``, for ``hardware: auto`` and ``all`` and for matching a target. A launch on
several targets (``hardware: [H100, H200]`` or ``all``) gets one pool per target and Ray
accelerator type (:func:`pools_for_targets`), each pool's workers placed only on nodes of its
type by the ``accelerator_type:`` resource.

A driver started by ``ray job submit`` already runs in the job's runtime_env (its
``working_dir`` is the current directory on every node), so nothing is added then. A driver
connecting from outside ships the ``sweep`` package to the workers (``py_modules``); tasks
carry their definition, solution and workload records whole.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.cluster._address import address_problem
from sweep.config import SweepConfig
from sweep.errors import ClusterError, shown
from sweep.schema.hardware import CPU, short_name

__all__ = [
    "ClusterInfo",
    "NodeInfo",
    "Pool",
    "RayConnection",
    "auto_target",
    "connect",
    "gpu_targets",
    "in_ray_job",
    "live_nodes",
    "pools_for",
    "pools_for_targets",
]

_ACCEL_PREFIX = "accelerator_type:"


@dataclass(frozen=True)
class NodeInfo:
    """One alive node of the cluster."""

    node_id: str
    address: str
    cpus: float
    gpus: float
    accelerator_types: tuple[str, ...]

    def describe(self) -> str:
        """``"node 1a2b3c4d (10.0.0.3): 8 x H100 GPU, 64 CPUs"``."""
        if self.gpus:
            kinds = "/".join(self.accelerator_types) or "unlabelled"
            what = f"{self.gpus:g} x {kinds} GPU, {self.cpus:g} CPUs"
        else:
            what = f"no GPU, {self.cpus:g} CPUs"
        return f"node {self.node_id[:8]} ({self.address}): {what}"


@dataclass(frozen=True)
class ClusterInfo:
    """The alive nodes of the cluster a sweep runs on."""

    address: str | None
    embedded: bool
    nodes: tuple[NodeInfo, ...]

    def describe(self) -> str:
        """Every node on its own line."""
        where = "embedded local Ray" if self.embedded else f"Ray cluster at {self.address or 'auto'}"
        return "\n".join([f"{where}, {len(self.nodes)} node(s):"] + [f"  {n.describe()}" for n in self.nodes])


@dataclass(frozen=True)
class Pool:
    """Workers to start for one hardware target: ``size`` actors with these Ray options."""

    target: str
    size: int
    num_gpus: float
    num_cpus: float
    resources: dict[str, float] = field(default_factory=dict)
    device_kind: str = "auto"

    def options(self) -> dict[str, Any]:
        """Keyword arguments for ``ActorClass.options``."""
        opts: dict[str, Any] = {
            "num_gpus": self.num_gpus,
            "num_cpus": self.num_cpus,
            "max_restarts": 0,
            "max_task_retries": 0,
        }
        if self.resources:
            opts["resources"] = dict(self.resources)
        return opts


@dataclass
class RayConnection:
    """A live Ray session for one sweep; :meth:`close` shuts down only what we started."""

    info: ClusterInfo
    started_here: bool
    portable_paths: bool

    def refresh(self) -> ClusterInfo:
        """Re-read the alive nodes."""
        self.info = ClusterInfo(self.info.address, self.info.embedded, live_nodes())
        return self.info

    def close(self) -> None:
        """Shut Ray down if this connection started or connected it."""
        if self.started_here:
            import ray

            ray.shutdown()


def in_ray_job() -> bool:
    """Whether this driver was started by ``ray job submit`` (its runtime_env is set)."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ


def _sweep_package_dir() -> str:
    return str(Path(__file__).resolve().parents[1])


def _runtime_env(config: SweepConfig) -> dict[str, Any]:
    env: dict[str, Any] = dict(config.ray.runtime_env)
    given = env.get("py_modules")
    modules = list(given) if isinstance(given, list) else []
    pkg = _sweep_package_dir()
    if pkg not in modules:
        modules.append(pkg)
    env["py_modules"] = modules
    return env


def live_nodes() -> tuple[NodeInfo, ...]:
    """The cluster's alive nodes, as ``ray.nodes()`` gives them (Ray connected)."""
    import ray

    out = []
    for n in ray.nodes():  # type: ignore[no-untyped-call]
        if not n.get("Alive", False):
            continue
        res: dict[str, float] = n.get("Resources", {})
        accels = tuple(sorted(k[len(_ACCEL_PREFIX) :] for k in res if k.startswith(_ACCEL_PREFIX)))
        out.append(
            NodeInfo(
                node_id=str(n.get("NodeID", "")),
                address=str(n.get("NodeManagerAddress", "")),
                cpus=float(res.get("CPU", 0.0)),
                gpus=float(res.get("GPU", 0.0)),
                accelerator_types=accels,
            )
        )
    return tuple(out)


def connect(config: SweepConfig, address: str | None) -> RayConnection:
    """Connect to (or start) Ray for ``config``: the cluster at ``address`` (resolved by
    :func:`sweep.config.resolve_address`), or an embedded local Ray when it is ``None``.

    Raises:
        ClusterError: The address cannot be reached, or Ray cannot start.
    """
    import ray

    if ray.is_initialized():
        return RayConnection(ClusterInfo(None, False, live_nodes()), started_here=False, portable_paths=False)
    target = address or None
    if target is not None and target != "local":
        problem = address_problem(target)
        if problem is not None:
            raise ClusterError(
                f"cannot connect to the Ray cluster at {shown(target)}: {problem}. Check the address "
                "(--address, RAY_ADDRESS or ray.address in the config) and that the cluster runs "
                "(ray status), or leave all three unset to run on an embedded local Ray."
            )
    # Ray's own INFO lines ("Started a local Ray instance") would break the progress output.
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "WARNING"}
    try:
        if target is not None:
            if not in_ray_job():
                kwargs["runtime_env"] = _runtime_env(config)
            elif config.ray.runtime_env:  # Ray merges it with the job's own
                kwargs["runtime_env"] = dict(config.ray.runtime_env)
            ray.init(address=target, **kwargs)
        else:
            if config.ray.runtime_env:
                kwargs["runtime_env"] = dict(config.ray.runtime_env)
            # "local": a new Ray of our own, even when another one runs on this machine.
            ray.init(address="local", num_cpus=config.ray.num_cpus, num_gpus=config.ray.num_gpus, **kwargs)
    except ConnectionError as e:
        raise ClusterError(
            f"cannot connect to the Ray cluster at {shown(target)}: {e}. Check the address "
            "(--address, RAY_ADDRESS or ray.address in the config), or leave all three unset "
            "to run on an embedded local Ray."
        ) from None
    except (RuntimeError, ValueError) as e:
        where = f"the Ray cluster at {shown(target)}" if target else "an embedded local Ray"
        raise ClusterError(f"cannot start {where}: {e}") from None
    info = ClusterInfo(target, target is None or target == "local", live_nodes())
    # Paths inside the working dir become relative, so they resolve on every node.
    return RayConnection(info, started_here=True, portable_paths=in_ray_job())


def _ray_names(ray_type: str) -> list[str]:
    """The targets a Ray accelerator type answers to, the model it is first.

    ``"A100-80G"`` is an ``"A100"`` (what ``hardware: auto`` picks) and also answers to
    ``"A100-80G"``; ``"H100"`` to ``"H100"``. The one place Ray's names are read.
    """
    parts = ray_type.upper().split("-")
    prefixes = ["-".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return [short_name(ray_type.split("-")[0]), short_name(ray_type), *prefixes]


def _gpu_models(info: ClusterInfo) -> list[str]:
    """The GPU models of the cluster's alive nodes (``"A100-80G"`` is an ``"A100"``), sorted."""
    kinds = {a for n in info.nodes if n.gpus for a in n.accelerator_types}
    return sorted({_ray_names(k)[0] for k in kinds})


def auto_target(info: ClusterInfo) -> str:
    """The target for ``hardware: auto``: the cluster's one GPU type, or CPU without GPUs.

    Raises:
        ClusterError: The cluster has GPUs of several types (the config must choose).
    """
    shorts = _gpu_models(info)
    if not shorts:
        return CPU
    if len(shorts) > 1:
        raise ClusterError(
            f"hardware: auto is ambiguous: the cluster has GPUs of types {', '.join(shorts)}. "
            f"Set 'hardware' in the config (or --hardware) to one of them, to several "
            f"([{', '.join(shorts)}], --hardware {','.join(shorts)}), or to 'all' for one task per "
            f"type.\n{info.describe()}"
        )
    return shorts[0]


def gpu_targets(info: ClusterInfo) -> list[str]:
    """The targets of ``hardware: all``: every GPU model of the cluster's alive nodes, sorted.

    Raises:
        ClusterError: The cluster has no GPU (with a label Ray's accelerator types give).
    """
    shorts = _gpu_models(info)
    if not shorts:
        raise ClusterError(
            "hardware: all runs one task per GPU type of the cluster, and it has no GPU with a "
            f"type (Ray resource '{_ACCEL_PREFIX}...'). Set 'hardware' in the config (or "
            f"--hardware) to cpu to run on its CPUs, or connect to a cluster with GPUs.\n{info.describe()}"
        )
    return shorts


def pools_for(target: str, info: ClusterInfo, *, max_workers: int | None = None) -> list[Pool]:
    """The worker pools that serve ``target`` on this cluster, one per Ray accelerator name.

    Args:
        target: ``"CPU"`` or a GPU model (``"H100"``), as the plan gives it; another
            spelling (``"h100"``, ``"NVIDIA_H100"``) from a direct caller is normalised.
        info: The cluster.
        max_workers: Never more workers than this (e.g. the number of tasks).

    Raises:
        ClusterError: No alive node has that hardware; the message lists what there is.
    """
    target = short_name(target)
    cap = max_workers if max_workers is not None else 1 << 30
    if target == CPU:
        cpus = int(sum(n.cpus for n in info.nodes))
        if cpus < 1:
            raise ClusterError(f"the cluster has no CPU to run a CPU sweep on.\n{info.describe()}")
        return [Pool(target=CPU, size=max(1, min(cpus, cap)), num_gpus=0, num_cpus=1, device_kind="cpu")]
    by_type = _gpus_of(target, info)
    if not by_type:
        listing = _have(info)
        raise ClusterError(
            f"no node of the cluster has {target} GPUs (Ray resource '{_ACCEL_PREFIX}{target}'); "
            f"it has: {listing}. Set 'hardware' in the config (or --hardware) to what the "
            f"cluster has, or connect to a cluster with {target} nodes.\n{info.describe()}"
        )
    pools = []
    left = cap
    for ray_type, gpus in sorted(by_type.items()):
        size = min(int(gpus), left)
        if size <= 0:
            continue
        left -= size
        pools.append(
            Pool(
                target=target,
                size=size,
                num_gpus=1,
                num_cpus=0,
                resources={f"{_ACCEL_PREFIX}{ray_type}": 0.001},
            )
        )
    return pools


def _gpus_of(target: str, info: ClusterInfo) -> dict[str, float]:
    """GPUs per Ray accelerator type that serve ``target`` (short form)."""
    by_type: dict[str, float] = {}
    for n in info.nodes:
        for a in n.accelerator_types:
            if n.gpus and target in _ray_names(a):
                by_type[a] = by_type.get(a, 0.0) + n.gpus
    return by_type


def _have(info: ClusterInfo) -> str:
    """The cluster's Ray accelerator types, for a message."""
    have = sorted({a for n in info.nodes if n.gpus for a in n.accelerator_types})
    return ", ".join(have) if have else "no GPUs at all"


def pools_for_targets(work: Mapping[str, int], info: ClusterInfo) -> list[Pool]:
    """The worker pools of a launch on several targets: :func:`pools_for` of each target
    (in the order given), at most as many workers as it has tasks to run.

    Every target is checked before any pool is made, so a launch fails before anything runs.

    Args:
        work: Target (short form, as the plans give it) -> its tasks to run (more than 0).
        info: The cluster.

    Raises:
        ClusterError: Targets that no alive node has (one message naming each, and what the
            cluster has; with one target, :func:`pools_for`'s), or two targets that name the
            same GPUs (``A100`` and ``A100-80G``).
    """
    targets = list(work)
    missing = [t for t in targets if short_name(t) != CPU and not _gpus_of(short_name(t), info)]
    if len(targets) > 1 and missing:
        res = ", ".join(f"'{_ACCEL_PREFIX}{t}'" for t in missing)
        raise ClusterError(
            f"no node of the cluster has {', '.join(missing)} GPUs (Ray resource {res}), which "
            f"'hardware' lists ({', '.join(targets)}); it has: {_have(info)}. Nothing ran. Take "
            f"them out of 'hardware' (or --hardware), set 'hardware: all' for every GPU type the "
            f"cluster has, or connect to a cluster with them.\n{info.describe()}"
        )
    pools: list[Pool] = []
    claimed: dict[str, str] = {}  # resource -> the target whose pool asks for it
    for target in targets:
        for pool in pools_for(target, info, max_workers=work[target]):
            for resource in pool.resources:
                other = claimed.setdefault(resource, pool.target)
                if other != pool.target:
                    raise ClusterError(
                        f"'hardware' lists {other} and {pool.target}, which both name the cluster's "
                        f"{resource.removeprefix(_ACCEL_PREFIX)} GPUs; list one of them.\n{info.describe()}"
                    )
            pools.append(pool)
    return pools

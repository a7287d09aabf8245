"""Address precedence, worker pools per hardware target, and the missing-hardware message.

Pure functions over a described cluster: no Ray started here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.cluster.connect import (
    ClusterInfo,
    NodeInfo,
    auto_target,
    gpu_targets,
    pools_for,
    pools_for_targets,
)
from sweep.config import SweepConfig, resolve_address
from sweep.errors import ClusterError
from sweep.launch.driver import portable_tasks

from .conftest import toy_tasks


def _cluster(*nodes: tuple[float, float, tuple[str, ...]]) -> ClusterInfo:
    return ClusterInfo(
        "10.0.0.1:6379",
        False,
        tuple(NodeInfo(f"node{i:04d}abcd", f"10.0.0.{i}", c, g, a) for i, (c, g, a) in enumerate(nodes)),
    )


def test_address_flag_beats_env_beats_config(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = SweepConfig.model_validate({"name": "x", "dataset": ["."], "ray": {"address": "cfg:1"}})
    monkeypatch.setenv("RAY_ADDRESS", "env:2")
    assert resolve_address("flag:3", cfg) == "flag:3"
    assert resolve_address(None, cfg) == "env:2"
    monkeypatch.delenv("RAY_ADDRESS")
    assert resolve_address(None, cfg) == "cfg:1"
    bare = SweepConfig.model_validate({"name": "x", "dataset": ["."]})
    assert resolve_address(None, bare) is None  # embedded local Ray


def test_gpu_pools_cover_every_matching_gpu_and_nothing_else() -> None:
    info = _cluster((16, 8, ("H100",)), (16, 4, ("H100",)), (8, 2, ("A100-80G",)), (4, 0, ()))
    (pool,) = pools_for("h100", info)
    assert (pool.target, pool.size, pool.num_gpus) == ("H100", 12, 1)
    assert pool.resources == {"accelerator_type:H100": 0.001}
    (a100,) = pools_for("NVIDIA_A100", info)
    assert a100.size == 2 and a100.resources == {"accelerator_type:A100-80G": 0.001}
    assert pools_for("H100", info, max_workers=3)[0].size == 3
    assert pool.options()["max_restarts"] == 0 and pool.options()["num_cpus"] == 0


def test_cpu_pool_has_one_slot_per_cpu() -> None:
    (pool,) = pools_for("cpu", _cluster((2, 0, ()), (3, 0, ())))
    assert (pool.target, pool.size, pool.num_gpus, pool.num_cpus, pool.device_kind) == ("CPU", 5, 0, 1, "cpu")


def test_missing_hardware_message_lists_the_cluster() -> None:
    info = _cluster((16, 8, ("H200",)), (4, 0, ()))
    with pytest.raises(ClusterError) as err:
        pools_for("H100", info)
    msg = str(err.value)
    assert msg.startswith(
        "no node of the cluster has H100 GPUs (Ray resource 'accelerator_type:H100'); it has: H200."
    )
    assert "node node0000 (10.0.0.0): 8 x H200 GPU, 16 CPUs" in msg
    assert "node node0001 (10.0.0.1): no GPU, 4 CPUs" in msg
    assert "Set 'hardware' in the config (or --hardware)" in msg
    with pytest.raises(ClusterError, match="it has: no GPUs at all"):
        pools_for("H100", _cluster((4, 0, ())))


def test_auto_target_is_the_one_gpu_type_or_cpu() -> None:
    assert auto_target(_cluster((4, 0, ()))) == "CPU"
    assert auto_target(_cluster((4, 8, ("H100",)), (4, 8, ("H100",)))) == "H100"
    with pytest.raises(ClusterError, match="ambiguous: the cluster has GPUs of types H100, H200") as err:
        auto_target(_cluster((4, 8, ("H100",)), (4, 8, ("H200",))))
    assert "([H100, H200], --hardware H100,H200), or to 'all' for one task per type" in str(err.value)


def test_all_is_every_gpu_model_of_the_cluster() -> None:
    info = _cluster(
        (4, 8, ("H200",)), (4, 8, ("H100",)), (8, 2, ("A100-80G",)), (4, 4, ("A100-40G",)), (4, 0, ())
    )
    assert gpu_targets(info) == ["A100", "H100", "H200"]
    with pytest.raises(ClusterError) as err:
        gpu_targets(_cluster((4, 0, ()), (2, 0, ())))
    msg = str(err.value)
    assert msg.startswith("hardware: all runs one task per GPU type of the cluster, and it has no GPU")
    assert "to cpu to run on its CPUs" in msg and "node node0001 (10.0.0.1): no GPU, 2 CPUs" in msg


def test_pools_of_several_targets_one_per_type_each_capped_by_its_tasks() -> None:
    info = _cluster((16, 8, ("H100",)), (16, 2, ("H200",)), (4, 0, ()))
    pools = pools_for_targets({"H200": 5, "H100": 3, "CPU": 2}, info)
    got = [(p.target, p.size, p.num_gpus, p.num_cpus, dict(p.resources)) for p in pools]
    assert got == [
        ("H200", 2, 1, 0, {"accelerator_type:H200": 0.001}),
        ("H100", 3, 1, 0, {"accelerator_type:H100": 0.001}),
        ("CPU", 2, 0, 1, {}),
    ]


def test_every_missing_target_is_named_at_once() -> None:
    info = _cluster((16, 8, ("H100",)), (4, 0, ()))
    with pytest.raises(ClusterError) as err:
        pools_for_targets({"H100": 1, "B200": 1, "H200": 1}, info)
    msg = str(err.value)
    assert msg.startswith(
        "no node of the cluster has B200, H200 GPUs (Ray resource 'accelerator_type:B200', "
        "'accelerator_type:H200'), which 'hardware' lists (H100, B200, H200); it has: H100. Nothing ran."
    ), msg
    assert "set 'hardware: all' for every GPU type the cluster has" in msg
    assert "node node0000 (10.0.0.0): 8 x H100 GPU, 16 CPUs" in msg
    # One target: the message of a launch on one type, as before.
    with pytest.raises(ClusterError, match=r"^no node of the cluster has B200 GPUs \(Ray resource"):
        pools_for_targets({"B200": 1}, info)


def test_two_targets_naming_the_same_gpus_are_refused() -> None:
    info = _cluster((8, 2, ("A100-80G",)))
    with pytest.raises(ClusterError) as err:
        pools_for_targets({"A100": 1, "A100-80G": 1}, info)
    assert str(err.value).startswith(
        "'hardware' lists A100 and A100-80G, which both name the cluster's A100-80G GPUs; list one of them."
    )


def test_dataset_roots_become_relative_inside_the_job_working_dir(tmp_path: Path) -> None:
    inside = tmp_path / "repo" / "data"
    tasks = [t.model_copy(update={"dataset_root": str(inside)}) for t in toy_tasks(["ok"])]
    tasks += [t.model_copy(update={"dataset_root": "/elsewhere/data"}) for t in toy_tasks(["ok"])]
    out = portable_tasks(tasks, (tmp_path / "repo").resolve())
    assert [t.dataset_root for t in out] == ["data", "/elsewhere/data"]
    assert [t.task_id for t in out] == [t.task_id for t in tasks]

"""One launch on a mixed cluster: ``hardware: [H100, H200]`` or ``all``, each task on its type.

The session cluster has an H100 node (4 logical GPUs) and an H200 node (2); the real engine
runs its CPU path, and ``labelled_backend`` records the type of the node each evaluation ran
on (see there), so the store sees what a real mixed cluster would give it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.config import ConfigOverrides
from sweep.errors import ClusterError
from sweep.launch.driver import HardwareCounts, LaunchOptions, launch
from sweep.plan import plan_config_targets
from sweep.store import query

from .conftest import read_traces, write_config, write_dataset

BACKEND = "tests.cluster.labelled_backend"
_OK = "def run(x):\n    return x + 1\n"
_ALSO_OK = "def run(x):\n    return x + 1.0\n"


def _dataset(tmp_path: Path, solutions: int = 2) -> Path:
    # 2 solutions x 2 workloads: 4 tasks per target (1 solution: 2 tasks, 2 workers a target).
    chosen = dict(list({"ok": _OK, "also_ok": _ALSO_OK}.items())[:solutions])
    return write_dataset(tmp_path / "data", chosen, n_workloads=2)


def _target_of_task(cfg: Path, hardware: str) -> dict[str, str]:
    """task id -> the target it was planned for, as ``sweep plan --hardware`` plans it."""
    plans = plan_config_targets(cfg, ConfigOverrides(hardware=hardware))
    return {t.task_id: t.hardware for p in plans for t in p.tasks}


def _cross_hardware(results: Path) -> set[tuple[str, str, str, str]]:
    rows = query(
        results / "sweep.duckdb",
        "SELECT solution, workload_uuid, hardware_a, hardware_b FROM cross_hardware",
        results_dir=results,
    ).rows
    return {(str(a), str(b), str(c), str(d)) for a, b, c, d in rows}


def test_one_launch_runs_each_task_on_its_type_and_fills_cross_hardware(
    two_nodes: dict[str, str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    # H200 first: its pool is made first, and Ray, left to itself, would put it on the head
    # node (the H100 one); only the accelerator-type resource keeps it on the H200 node.
    cfg = write_config(tmp_path / "mixed.yaml", [_dataset(tmp_path)], results, hardware="[H200, H100]")
    result = launch(cfg, LaunchOptions(quiet=True, backend=BACKEND))
    assert (result.planned, result.skipped, result.ran) == (8, 0, 8)
    assert result.statuses == {"PASSED": 8}
    assert result.hardware == "H200, H100"
    assert result.per_hardware == [HardwareCounts("H200", 4, 0, 4), HardwareCounts("H100", 4, 0, 4)]
    assert {(r.solution, r.hardware, r.total) for r in result.rows} == {
        (s, hw, 2) for s in ("ok", "also_ok") for hw in ("H100", "H200")
    }

    target = _target_of_task(cfg, "H200,H100")
    traces = read_traces(results)
    assert len(traces) == 8
    assert sorted(t["provenance"]["task_id"] for t in traces) == sorted(target)  # type: ignore[index]
    for t in traces:
        hw = target[t["provenance"]["task_id"]]  # type: ignore[index]
        assert t["provenance"]["node_id"] == two_nodes[hw], f"an {hw} task ran on another node"  # type: ignore[index]
        assert t["evaluation"]["environment"]["hardware"] == f"NVIDIA_{hw}"  # type: ignore[index]

    # Every solution x workload side by side on the two types, from this one launch.
    assert _cross_hardware(results) == {
        (s, f"toy-{i}", "NVIDIA_H100", "NVIDIA_H200") for s in ("ok", "also_ok") for i in (0, 1)
    }


def test_resume_is_per_hardware_and_all_takes_every_type_of_the_cluster(
    two_nodes: dict[str, str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    # One solution: 2 tasks per target, so each launch starts 2 workers (the counts of tasks
    # and GPUs are not what this test is about).
    cfg = write_config(tmp_path / "resume.yaml", [_dataset(tmp_path, 1)], results, hardware="H100")
    first = launch(cfg, LaunchOptions(quiet=True, backend=BACKEND))
    assert (first.planned, first.ran) == (2, 2)

    # 'all' finds H100 and H200 in the cluster: H100's tasks are stored, only H200's run.
    every = launch(cfg, LaunchOptions(quiet=True, backend=BACKEND, overrides=ConfigOverrides(hardware="all")))
    assert every.per_hardware == [HardwareCounts("H100", 2, 2, 0), HardwareCounts("H200", 2, 0, 2)]
    traces = read_traces(results)
    assert len(traces) == 4
    assert len({t["provenance"]["task_id"] for t in traces}) == 4  # type: ignore[index]
    h200 = _target_of_task(cfg, "H200")
    for t in traces:
        if t["provenance"]["run_id"] == every.run_id:  # type: ignore[index]
            assert t["provenance"]["task_id"] in h200  # type: ignore[index]
            assert t["provenance"]["node_id"] == two_nodes["H200"]  # type: ignore[index]
    assert _cross_hardware(results) == {("ok", f"toy-{i}", "NVIDIA_H100", "NVIDIA_H200") for i in (0, 1)}

    # The list names both: everything is stored, so nothing runs (and Ray is not needed).
    again = launch(
        cfg, LaunchOptions(quiet=True, backend=BACKEND, overrides=ConfigOverrides(hardware="H100,H200"))
    )
    assert (again.planned, again.skipped, again.ran, again.cluster) == (4, 4, 0, None)


def test_a_listed_type_the_cluster_lacks_fails_before_anything_runs(
    two_nodes: dict[str, str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    cfg = write_config(tmp_path / "b200.yaml", [_dataset(tmp_path)], results, hardware="[H100, B200, A100]")
    with pytest.raises(ClusterError) as err:
        launch(cfg, LaunchOptions(quiet=True, backend=BACKEND))
    msg = str(err.value)
    assert msg.startswith(
        "no node of the cluster has B200, A100 GPUs (Ray resource 'accelerator_type:B200', "
        "'accelerator_type:A100'), which 'hardware' lists (H100, B200, A100); it has: H100, H200. "
        "Nothing ran."
    ), msg
    assert "'hardware: all'" in msg and "4 x H100 GPU" in msg and "2 x H200 GPU" in msg
    assert not (results / "traces").exists() or not read_traces(results)

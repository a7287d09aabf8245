"""A launch with distributed tasks on the session's two-node Ray cluster (logical GPUs): 2- and
4-rank all-reduces beside a single-GPU task, an 8-rank one left out (no node has 8 GPUs); each
gang's ranks forked by its Ray worker's zygote (``shared_zygote``). Gangs of one shape hand
their placement group on to the next."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sweep.schema import Trace
from tests.data.distributed.allreduce import definition, solution, workload

from .conftest import read_traces, write_config, write_dataset

_OK = "def run(x):\n    return x + 1\n"


def _write_allreduce(root: Path, worlds: list[int]) -> None:
    d = definition(None).model_dump(mode="json", exclude_none=True)
    (root / "definitions" / "collective").mkdir(parents=True)
    (root / "definitions" / "collective" / "all_reduce_sum.json").write_text(json.dumps(d))
    (root / "workloads" / "collective").mkdir(parents=True)
    lines = [
        json.dumps(
            {"definition": "all_reduce_sum", "solution": None, "workload": workload(64, w).model_dump()}
        )
        for w in worlds
    ]
    (root / "workloads" / "collective" / "all_reduce_sum.jsonl").write_text("\n".join(lines) + "\n")
    folder = root / "solutions" / "tests" / "collective" / "all_reduce_sum"
    folder.mkdir(parents=True)
    (folder / "ar_good.json").write_text(solution("good").to_json())


def test_a_launch_runs_gangs_beside_single_gpu_tasks(two_nodes: dict[str, str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from sweep.cli import app

    # One single-GPU task: one worker of the pool starts beside the gangs' zygotes.
    data = write_dataset(tmp_path / "data", {"ok": _OK}, n_workloads=1)
    _write_allreduce(data, [2, 4, 8])
    results = tmp_path / "results"
    cfg = write_config(tmp_path / "mixed.yaml", [data], results, hardware="H100", run_s=60)
    out = CliRunner().invoke(app, ["launch", str(cfg), "--quiet", "--verbose"])
    assert out.exit_code == 0, out.output
    traces = read_traces(results)
    by_world = {
        (t["evaluation"].get("distributed") or {}).get("world_size", 1): t
        for t in traces  # type: ignore[union-attr]
    }
    assert sorted(by_world) == [1, 2, 4], [t["evaluation"]["log"] for t in traces]  # type: ignore[index]
    assert all(t["evaluation"]["status"] == "PASSED" for t in traces), [
        t["evaluation"]["log"] for t in traces
    ]  # type: ignore[index]
    assert len(traces) == 3  # 1 single-GPU, 2 gangs; the 8-rank one cannot be placed
    # The counts add up (4 = 0 + 3 + 1), the cause once, the task under it (--verbose).
    text = out.stdout
    assert (
        "4 planned, 0 already stored (skipped), 3 ran (PASSED 3), 1 cannot be placed on this cluster" in text
    )
    cause = "needs more H100 GPUs of one node than there are (the largest H100 node has 4); world size 8"
    assert f"cannot be placed: 1\n  1 task: {cause}\n    all_reduce_sum / ar_good / " in text
    assert text.count("needs 8 H100 GPUs on one node") == 1  # the task's own reason, listed once
    assert "left out all_reduce_sum" not in out.output  # no note per task
    # the distributed tasks ran before the single worker started: their time is said apart
    assert re.search(
        r"s to plan, start Ray and the first worker \([0-9.]+ s of them the distributed tasks\)", text
    )
    four = by_world[4]["provenance"]  # type: ignore[index]
    assert four["node_id"] == two_nodes["H100"]  # packed on the node that has 4 GPUs


def test_gangs_of_one_shape_hand_their_group_on(
    two_nodes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six 2-rank gangs on the H100 node (4 GPUs): two groups reserved, each handed from gang to
    gang, not six released and reserved again (Ray retries a group it could not place only
    after 100 ms or more, so a slot stayed idle between two gangs). Ray's count of free
    resources lags behind reservations under load: here it says everything is free all along,
    and the loop's own count still asks for no third group."""
    from ray.util import placement_group_table

    from sweep.cluster import gang_sched
    from sweep.cluster.gang_sched import group_name, run_gang_tasks
    from sweep.sandbox.supervisor import SandboxSpec
    from sweep.schema.task import Task

    from ..conftest import quick_settings

    tasks = [
        Task.make(definition(None), solution("good"), workload(64 + i, 2), quick_settings(), "H100")
        for i in range(6)
    ]
    monkeypatch.setattr(gang_sched, "_fits", lambda task: True)
    before = set(placement_group_table())
    got: list[Trace] = []
    assert run_gang_tasks(tasks, SandboxSpec(), run_id="r", on_traces=got.extend) == 6
    assert sorted(t.evaluation.status.value for t in got if t.evaluation) == ["PASSED"] * 6
    assert {t.workload.uuid for t in got} == {t.workload.uuid for t in tasks}  # each once
    table = placement_group_table()
    # Asked for: two, each placed on the H100 node and handed on; none asked for while both run.
    # Told apart by name: another test's groups may reach Ray's table only now (its GCS
    # registers a group after the call that asked for it returns, later under load).
    new = {k for k in set(table) - before if table[k]["name"].startswith(group_name("r", 0)[:-1])}
    assert len(new) == 2, {k: table[k] for k in set(table) - before}
    placed = [k for k in new if any(table[k]["bundles_to_node_id"].values())]
    assert placed and set(table[placed[0]]["bundles_to_node_id"].values()) == {two_nodes["H100"]}

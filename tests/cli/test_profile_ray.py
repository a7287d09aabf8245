"""``sweep profile`` through Ray: an embedded local Ray with two logical GPUs (no real GPU,
the tools are stand-ins as in test_profile_cli), each task a Ray task of its own on one GPU,
its tools run by the worker, the rows stored by the driver."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sweep.engine
from sweep.cli import app
from sweep.config import load_config
from sweep.plan import build_plan, select
from sweep.plan.dataset import load_dataset

pytestmark = pytest.mark.slow

runner = CliRunner()
GOOD = (Path(__file__).resolve().parents[1] / "data" / "dataset" / "good").resolve()
SAMPLES = (Path(__file__).resolve().parents[1] / "data" / "profile").resolve()


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-in tools (ncu leaves its parent's pid, the Ray worker's, beside its report)."""
    ncu = _script(
        tmp_path / "ncu",
        f"""for a in "$@"; do [ "$a" = --import ] && exec cat {SAMPLES / "ncu_raw.csv"}; done
while [ $# -gt 0 ]; do [ "$1" = --export ] && echo report > "$2.ncu-rep" && echo $PPID > "$2.pid"; shift; done
""",
    )
    sanitizer = _script(tmp_path / "compute-sanitizer", f"cat {SAMPLES / 'memcheck_clean.txt'}\n")
    monkeypatch.setenv("SWEEP_NCU", ncu)
    monkeypatch.setenv("SWEEP_COMPUTE_SANITIZER", sanitizer)
    # the driver's check, and the one it sends to the workers: "this host has a GPU"
    monkeypatch.setattr(sweep.engine, "gpu_problem", lambda: None)


@pytest.fixture
def local_ray(tools: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An embedded Ray with 2 logical GPUs, started after the tools' variables are set (its
    workers inherit them), with a HOME of its own; shut down after (only what we started)."""
    import ray

    if ray.is_initialized():  # an earlier test's, in this process: ours to stop
        ray.shutdown()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_each_task_is_a_ray_task_of_its_own(tmp_path: Path, local_ray: None) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(
        f"name: fixture\ndataset: [{GOOD}]\nhardware: cpu\noutput: {{results_dir: {tmp_path / 'out'}}}\n"
    )
    cfg = load_config(config)
    ids = [t.task_id for t in build_plan(select(cfg, load_dataset(cfg.dataset)), "CPU").tasks]
    assert len(ids) == 3
    args = ["profile", str(config)] + [a for tid in ids for a in ("--tasks", tid)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "queued for a GPU worker" in res.stderr
    pids = set()
    for tid in ids:
        folder = tmp_path / "out" / "profiles" / tid
        assert {"task.json", "profile.ncu-rep", "ncu-raw.csv", "sanitizer-synccheck.txt"} <= {
            p.name for p in folder.iterdir()
        }
        pids.add(int((folder / "profile.pid").read_text()))
    assert len(pids) == 3 and os.getpid() not in pids  # one worker process per task
    store = str(tmp_path / "out" / "sweep.duckdb")
    res = runner.invoke(
        app,
        ["query", "SELECT task_id, count(*) AS n FROM profiles GROUP BY 1", "--store", store, "--json"],
    )
    assert res.exit_code == 0, res.output
    assert {r["task_id"]: r["n"] for r in json.loads(res.stdout)} == dict.fromkeys(ids, 3)
    res = runner.invoke(
        app, ["query", "SELECT DISTINCT tool FROM sanitizer_findings", "--store", store, "--json"]
    )
    assert res.exit_code == 0, res.output


def test_a_cluster_without_gpus_is_refused(tmp_path: Path, tools: None) -> None:
    import ray

    if ray.is_initialized():  # an earlier test's, in this process: ours to stop
        ray.shutdown()
    ray.init(address="local", num_cpus=1, num_gpus=0, include_dashboard=False, log_to_driver=False)
    try:
        config = tmp_path / "sweep.yaml"
        config.write_text(
            f"name: fixture\ndataset: [{GOOD}]\nhardware: cpu\noutput: {{results_dir: {tmp_path / 'out'}}}\n"
        )
        cfg = load_config(config)
        tid = build_plan(select(cfg, load_dataset(cfg.dataset)), "CPU").tasks[0].task_id
        res = runner.invoke(app, ["profile", str(config), "--tasks", tid])
        assert res.exit_code == 1, res.output
        assert res.stderr.splitlines()[-1] == "error: sweep profile needs a CUDA GPU: the cluster has no GPU"
    finally:
        ray.shutdown()

"""An embedded launch hands its workers zygotes it started beside Ray's start
(``sweep.cluster.zygote_offers``); where the hand-over does not apply, no zygote is offered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sweep.cluster.zygote_offers import auto_is_cpu, offer_counts
from sweep.config import load_config

from .conftest import REPO, held_launch, toy_tasks, write_config, write_dataset

_OK = "def run(x):\n    return x + 1\n"
_LAUNCH = """
import json, sys
from sweep.cluster.zygote_offers import ZygoteOffers
from sweep.launch.driver import LaunchOptions, launch
offered = []
start = ZygoteOffers.start.__func__
ZygoteOffers.start = classmethod(
    lambda cls, spec, g, c, **kw: offered.append([g, c, kw]) or start(cls, spec, g, c, **kw)
)
r = launch(sys.argv[1], LaunchOptions(quiet=True, backend="tests.cluster.labelled_backend", preload=()))
print(json.dumps({"phases": [k for k, _ in r.phases], "statuses": dict(r.statuses), "offered": offered}))
"""


def _launch(cfg: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCH, str(cfg)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("handover", [True, False])
def test_an_embedded_launch_runs_on_handed_over_zygotes(tmp_path: Path, handover: bool) -> None:
    data = write_dataset(tmp_path / "data", {"ok": _OK}, n_workloads=1)
    # With the hand-over: hardware auto on 2 CPUs and no GPU, planned before Ray as CPU, so
    # one zygote is offered for its one task, not one a CPU.
    extra = f"ray: {{num_cpus: 2, num_gpus: 0, zygote_handover: {str(handover).lower()}}}\n"
    hardware = "auto" if handover else "cpu"
    cfg = write_config(tmp_path / "c.yaml", [data], tmp_path / "results", hardware=hardware, extra=extra)
    row = _launch(cfg)
    assert row["statuses"] == {"PASSED": 1}
    phases = row["phases"]
    assert isinstance(phases, list)
    if handover:
        # CPU zygotes are not lent to a head start unless asked (ray.head_start: auto).
        assert row["offered"] == [[0, 1, {"lend_gpus": True, "lend_cpus": False}]], row
        assert "zygotes_offered" in phases and "zygote_adopted" in phases, phases
        assert phases.index("zygotes_offered") < phases.index("ray")
        assert "zygote" not in phases
    else:
        assert "zygote" in phases and "zygote_adopted" not in phases and "zygotes_offered" not in phases


def test_where_the_handover_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    # Whether a session cluster of other tests is up in this process does not matter here.
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(is_initialized=lambda: False))
    data = write_dataset(tmp_path / "data", {"ok": _OK})

    def config(extra: str) -> object:
        return load_config(
            write_config(tmp_path / "c.yaml", [data], tmp_path / "r", hardware="cpu", extra=extra)
        )

    cpu = toy_tasks(["ok"], n_workloads=3, hardware="CPU")
    gpu = toy_tasks(["ok"], n_workloads=3, hardware="H100")
    on = config("ray: {num_cpus: 2, num_gpus: 2}\n")
    assert offer_counts(on, None, cpu) == (0, 2)  # type: ignore[arg-type]
    assert offer_counts(on, "local", gpu) == (2, 0)  # type: ignore[arg-type]
    assert offer_counts(on, None, None) == (2, 0)  # type: ignore[arg-type]
    assert not auto_is_cpu(on, None)  # named hardware
    auto = config("ray: {num_cpus: 2, num_gpus: 0}\n").model_copy(update={"hardware": "auto"})
    assert auto_is_cpu(auto, None) and auto_is_cpu(auto, "local")  # type: ignore[arg-type]
    assert not auto_is_cpu(auto, "10.0.0.1:6379")  # type: ignore[arg-type]
    gpus = config("ray: {num_cpus: 2, num_gpus: 2}\n").model_copy(update={"hardware": "auto"})
    assert not auto_is_cpu(gpus, None)  # type: ignore[arg-type]
    # An existing cluster, the switch off, a runtime_env: today's path.
    assert offer_counts(on, "10.0.0.1:6379", gpu) == (0, 0)  # type: ignore[arg-type]
    off = config("ray: {num_cpus: 2, num_gpus: 2, zygote_handover: false}\n")
    assert offer_counts(off, None, gpu) == (0, 0)  # type: ignore[arg-type]
    renv = config("ray: {num_cpus: 2, num_gpus: 2, runtime_env: {env_vars: {A: b}}}\n")
    assert offer_counts(renv, None, gpu) == (0, 0)  # type: ignore[arg-type]
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", "{}")
    assert offer_counts(on, None, gpu) == (0, 0)  # type: ignore[arg-type]
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR")
    # A Ray this process initialised already (a test, a notebook): not the command's own.
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(is_initialized=lambda: True))
    assert offer_counts(on, None, gpu) == (0, 0)  # type: ignore[arg-type]


def test_the_switch_is_a_strict_boolean(tmp_path: Path) -> None:
    from sweep.errors import ConfigError

    data = write_dataset(tmp_path / "data", {"ok": _OK})
    cfg = write_config(
        tmp_path / "c.yaml", [data], tmp_path / "r", hardware="cpu", extra="ray: {zygote_handover: maybe}\n"
    )
    with pytest.raises(ConfigError, match="zygote_handover"):
        load_config(cfg)


_LABELLED = "tests.cluster.labelled_backend"


@pytest.mark.parametrize("head_start", ["true", "false"])
def test_an_embedded_launch_evaluates_its_first_tasks_while_ray_starts(
    tmp_path: Path, head_start: str
) -> None:
    data = write_dataset(tmp_path / "data", {"ok": _OK, "ok2": _OK}, n_workloads=6)
    extra = f"ray: {{num_cpus: 2, num_gpus: 0, head_start: {head_start}}}\n"
    cfg = write_config(tmp_path / "c.yaml", [data], tmp_path / "results", hardware="cpu", extra=extra)
    row = held_launch(cfg, tmp_path / "results", 2, _LABELLED)
    # Every task once, lanes' and workers' together, all stamped with the one node. The two
    # solutions have the same code, so their tasks have the same ids: each still runs once.
    assert row["statuses"] == {"PASSED": 12} and row["ran"] == 12
    assert len(row["ids"]) == 12 and len({tuple(i) for i in row["ids"]}) == 12
    assert len(row["nodes"]) == 1 and row["nodes"][0]
    if head_start == "true":
        assert 2 <= row["head"] <= 12
        assert "head_start" in row["phases"]
        assert row["phases"].index("head_start") < row["phases"].index("scheduler")
        # The workers that ran the rest adopted the zygotes the lanes gave back.
        assert all(row["adopted"]), row
    else:
        assert row["head"] == 0 and "head_start" not in row["phases"]


# A solution that kills its zygote's parent, which is the worker when the worker started its
# zygote: under a zygote the driver started, it must not reach the driver.
_KILLS_ZYGOTE_PARENT = (
    "import os\n\n"
    "def run(x):\n"
    "    with open(f'/proc/{os.getppid()}/stat') as f:\n"
    "        parent = int(f.read().rsplit(')', 1)[1].split()[1])\n"
    "    os.kill(parent, 9)\n"
    "    return x + 1\n"
)


@pytest.mark.hostile
@pytest.mark.parametrize("head_start", ["true", "false"])
def test_a_solution_that_kills_its_zygotes_parent_never_reaches_the_driver(
    tmp_path: Path, head_start: str
) -> None:
    solutions = {"kills_zygote_parent": _KILLS_ZYGOTE_PARENT, "ok": _OK}
    data = write_dataset(tmp_path / "data", solutions, n_workloads=1)
    extra = f"ray: {{num_cpus: 1, num_gpus: 0, head_start: {head_start}}}\n"
    cfg = write_config(tmp_path / "c.yaml", [data], tmp_path / "results", hardware="cpu", extra=extra)
    # One lane (one CPU): held until it ran one task, so with the head start the first task
    # runs in the driver's lane whichever it is.
    row = held_launch(cfg, tmp_path / "results", 1 if head_start == "true" else 0, _LABELLED)
    assert row["by_solution"] == {"kills_zygote_parent": "RUNTIME_ERROR", "ok": "PASSED"}, row
    assert row["head"] >= (1 if head_start == "true" else 0)

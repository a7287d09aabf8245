"""Fixtures of the cluster tests: one two-node Ray cluster for the whole session.

Node A has 4 logical GPUs labelled H100, node B 2 labelled H200 (``ray.cluster_utils``;
no real GPU: the engine runs its CPU path). Each node also sets ``SWEEP_TEST_NODE_GPU`` to its
label, for the backend that poses as that GPU (``labelled_backend.py``). Starting it costs
~20 s on 2 cores, so every in-process cluster test shares it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sweep.config import EvalSettings, Timeouts
from sweep.schema import Definition, Solution, Workload
from sweep.schema.task import Task

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "cluster"
FAKE_BACKEND = "tests.cluster.fake_backend"


def run_fresh(
    args: list[str], timeout_s: float = 600, *, cwd: Path | None = None, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``args`` in a new process with this checkout on its path, outside the session's Ray
    cluster and Triton interpreter setting (a command as a user runs it: its own embedded Ray),
    in a session of its own; ``home``: a HOME of its own too (Ray's files, a stale token)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "TRITON_INTERPRET")}
    # This checkout first, then what the caller had (a GPU host brings its packages that way).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout_s,
        check=False,
        start_new_session=True,
    )


@pytest.fixture
def two_nodes(_two_nodes: tuple[str, dict[str, str]]) -> dict[str, str]:
    """A Ray cluster: H100 node (4 GPUs) and H200 node (2 GPUs), this process connected to
    it. Node ids by type. The cluster is the session's; the connection is made again when a
    test ran before (in any order: pytest-xdist) left this process without it, or on another
    Ray (``tests/cli/test_profile_ray.py`` starts one of its own)."""
    import ray

    address, ids = _two_nodes
    if ray.is_initialized() and ray.get_runtime_context().gcs_address != address:
        ray.shutdown()
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    return ids


@pytest.fixture(scope="session")
def _two_nodes() -> Iterator[tuple[str, dict[str, str]]]:
    import ray
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "include_dashboard": False,
            "num_cpus": 1,
            "num_gpus": 4,
            "resources": {"accelerator_type:H100": 1},
            "env_vars": {"SWEEP_TEST_NODE_GPU": "H100"},
        },
    )
    cluster.add_node(
        num_cpus=1,
        num_gpus=2,
        resources={"accelerator_type:H200": 1},
        env_vars={"SWEEP_TEST_NODE_GPU": "H200"},
    )
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    ids = {}
    for n in ray.nodes():
        for key in n["Resources"]:
            if key.startswith("accelerator_type:"):
                ids[key.split(":", 1)[1]] = n["NodeID"]
    try:
        yield cluster.address, ids
    finally:
        ray.shutdown()
        cluster.shutdown()


def toy_definition() -> Definition:
    return Definition.model_validate(
        {
            "name": "add_one",
            "op_type": "elementwise",
            "axes": {"n": {"type": "var"}},
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
            "reference": "def run(x):\n    return x + 1\n",
        }
    )


def toy_solution(name: str, body: str = "    y.copy_(x + 1)\n") -> Solution:
    return Solution.model_validate(
        {
            "name": name,
            "definition": "add_one",
            "author": "tests",
            "spec": {"language": "python", "target_hardware": ["*"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"def run(x, y):\n{body}"}],
        }
    )


def toy_tasks(
    names: list[str],
    *,
    n_workloads: int = 1,
    hardware: str = "H100",
    run_s: float = 10.0,
    compile_s: float = 10.0,
    body: str = "    y.copy_(x + 1)\n",
) -> list[Task]:
    settings = EvalSettings(timeouts=Timeouts(compile_s=compile_s, run_s=run_s))
    d = toy_definition()
    out = []
    for name in names:
        for i in range(n_workloads):
            w = Workload.model_validate(
                {"uuid": f"w{i}", "axes": {"n": 16 + i}, "inputs": {"x": {"type": "random"}}}
            )
            out.append(Task.make(d, toy_solution(name, body), w, settings, hardware, sweep="tests"))
    return out


def fault_add_task(settings: EvalSettings, hardware: str, solution: Solution | None = None) -> Task:
    """The task of ``DATA / "faults"``'s ``fault_add`` on its first workload: its passing torch
    solution, or ``solution`` (a variant of it), under ``settings`` for ``hardware``."""
    from sweep.plan.dataset import load_dataset

    ds = load_dataset([str(DATA / "faults")])
    return Task.make(
        ds.definitions["fault_add"],
        solution or ds.solutions["fault_add_ok_torch_add"],
        ds.workloads["fault_add"][0],
        settings,
        hardware,
        dataset_root=str(DATA / "faults"),
    )


def write_dataset(root: Path, solutions: dict[str, str], n_workloads: int = 2) -> Path:
    """A dataset root with definition ``toy_add`` (y = x + 1), ``n_workloads`` workloads and one
    python solution per entry of ``solutions`` (name -> source of ``main.py``, ``run(x)``
    returning the output)."""
    import json

    (root / "definitions" / "toy").mkdir(parents=True, exist_ok=True)
    d = toy_definition().model_dump(mode="json", exclude_none=True)
    d["name"] = "toy_add"
    d["op_type"] = "toy"
    (root / "definitions" / "toy" / "toy_add.json").write_text(json.dumps(d))
    (root / "workloads" / "toy").mkdir(parents=True, exist_ok=True)
    with open(root / "workloads" / "toy" / "toy_add.jsonl", "w") as f:
        for i in range(n_workloads):
            wl = {"uuid": f"toy-{i}", "axes": {"n": 64 + i}, "inputs": {"x": {"type": "random"}}}
            f.write(json.dumps({"definition": "toy_add", "solution": None, "workload": wl}) + "\n")
    folder = root / "solutions" / "tests" / "toy" / "toy_add"
    folder.mkdir(parents=True, exist_ok=True)
    for name, code in solutions.items():
        sol = {
            "name": name,
            "definition": "toy_add",
            "author": "tests",
            "spec": {
                "language": "python",
                "target_hardware": ["*"],
                "entry_point": "main.py::run",
                "destination_passing_style": False,
            },
            "sources": [{"path": "main.py", "content": code}],
        }
        (folder / f"{name}.json").write_text(json.dumps(sol))
    return root


def write_config(
    path: Path,
    datasets: list[Path],
    results: Path,
    *,
    hardware: str,
    extra: str = "",
    compile_s: float = 60,
    run_s: float = 60,
) -> Path:
    """A sweep config with the shortest evaluation settings (tests time nothing)."""
    roots = ", ".join(str(d) for d in datasets)
    path.write_text(
        f"name: {path.stem}\n"
        f"dataset: [{roots}]\n"
        f"hardware: {hardware}\n"
        "evaluation:\n"
        "  trials: 1\n  warmup_ms: 0\n  rep_ms: 1\n  min_iterations: 1\n  max_iterations: 2\n"
        "  input_sets: 1\n"
        f"  timeouts: {{compile_s: {compile_s}, run_s: {run_s}}}\n"
        f"output: {{results_dir: {results}}}\n" + extra
    )
    return path


def read_traces(results: Path) -> list[dict[str, object]]:
    """Every trace line of the JSONL logs under ``results``. A last line without its newline is
    one the launch is still writing (a test that polls while it runs can read half of it): it
    is left for the next read."""
    import json

    out = []
    for log in sorted((results / "traces").rglob("*.jsonl")):
        lines = log.read_text().split("\n")[:-1]  # what follows the last newline is unfinished
        out.extend(json.loads(line) for line in lines if line.strip())
    return out


# An embedded launch in a fresh process whose head start is held open until its lanes have
# evaluated a number of tasks (argv[3]; Ray may be up before): what they run is then known to
# be more than nothing, whatever the machine's speed. argv[4]: the backend ("" the engine).
_HELD_LAUNCH = """
import json, sys, time
from pathlib import Path
from sweep.cluster.head_start import HeadStart
from sweep.launch.driver import LaunchOptions, launch
close = HeadStart.close
def held(self, node_id=None, **kw):
    deadline = time.monotonic() + 120
    while self.evaluated < int(sys.argv[3]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return close(self, node_id, **kw)
HeadStart.close = held
opts = {"backend": sys.argv[4], "preload": ()} if sys.argv[4] else {}
r = launch(sys.argv[1], LaunchOptions(quiet=True, **opts))
lines = [json.loads(l) for f in Path(sys.argv[2]).rglob("*.jsonl") for l in f.read_text().splitlines()]
print(json.dumps({"phases": [k for k, _ in r.phases], "statuses": dict(r.statuses), "head": r.head_start,
                  "ran": r.ran, "ids": [[l["solution"], l["workload"]["uuid"]] for l in lines],
                  "by_solution": {l["solution"]: l["evaluation"]["status"] for l in lines},
                  "nodes": sorted({l["provenance"]["node_id"] for l in lines}),
                  "adopted": [w.zygote_adopted for w in r.stats.workers]}))
"""


def held_launch(cfg: Path, results: Path, hold: int, backend: str = "") -> dict[str, Any]:
    """Launch ``cfg`` (results in ``results``) with the head start held open until its lanes
    evaluated ``hold`` tasks (at most 120 s); what it did, as a dict (see ``_HELD_LAUNCH``)."""
    import json
    import os
    import subprocess
    import sys

    # The repository first, then what the host's path had (a GPU host's bundle of packages).
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    env.pop("RAY_ADDRESS", None)
    out = subprocess.run(
        [sys.executable, "-c", _HELD_LAUNCH, str(cfg), str(results), str(hold), backend],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

"""``sweep profile`` on a CPU host, in-process: its refusals (no GPU, a tool missing, counters
not readable) are ``error: ...`` with exit 1, and with stand-in tools (shell scripts printing
hand-written samples in the tools' formats, tests/data/profile) the whole path runs: artifacts
under results/profiles/<task_id>/, rows in the store that ``sweep query`` joins to traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import sweep.engine
from sweep.cli import app
from sweep.config import load_config
from sweep.plan import build_plan, select
from sweep.plan.dataset import load_dataset

runner = CliRunner()
from .conftest import GOOD

SAMPLES = (Path(__file__).resolve().parents[1] / "data" / "profile").resolve()


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend this host has a GPU (the tools are stand-ins anyway)."""
    monkeypatch.setattr(sweep.engine, "gpu_problem", lambda: None)


def _task_id(config: Path) -> str:
    cfg = load_config(config)
    return build_plan(select(cfg, load_dataset(cfg.dataset)), "CPU").tasks[0].task_id


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)
    return str(path)


def _stand_in_ncu(tmp_path: Path) -> str:
    """An ncu that writes a report on --export and prints the sample CSV on --import."""
    return _script(
        tmp_path / "ncu",
        f"""for a in "$@"; do [ "$a" = --import ] && exec cat {SAMPLES / "ncu_raw.csv"}; done
while [ $# -gt 0 ]; do [ "$1" = --export ] && echo report > "$2.ncu-rep"; shift; done
""",
    )


def _refused(args: list[str], message: str) -> None:
    res = runner.invoke(app, args)
    assert res.exit_code == 1, res.output
    assert res.stderr.splitlines()[-1].startswith(f"error: {message}"), res.stderr  # after progress lines
    assert "Traceback" not in res.output


def test_on_cpu_it_says_it_needs_a_gpu(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sweep.engine, "gpu_problem", lambda: "no CUDA GPU is visible to torch on this machine"
    )
    _refused(["profile", str(config)], "sweep profile needs a CUDA GPU: no CUDA GPU is visible")


@pytest.mark.skipif(sweep.engine.gpu_problem() is None, reason="this host has a GPU")
def test_on_this_cpu_host_for_real(config: Path) -> None:
    _refused(["profile", str(config)], "sweep profile needs a CUDA GPU")


@pytest.mark.parametrize(
    ("tool", "name"), [("ncu", "ncu"), ("sanitizer", "compute-sanitizer"), ("both", "ncu")]
)
def test_a_missing_tool_is_named(
    config: Path, gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, name: str
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("SWEEP_NCU", raising=False)
    monkeypatch.delenv("SWEEP_COMPUTE_SANITIZER", raising=False)
    _refused(
        ["profile", str(config), "--tool", tool], f"{name} is needed for --tool {tool} but it is not on PATH"
    )


def test_a_tool_env_var_that_is_no_executable(
    config: Path, gpu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWEEP_NCU", "/nonexistent/ncu")
    _refused(
        ["profile", str(config), "--tool", "ncu"],
        "ncu is needed for --tool ncu but $SWEEP_NCU ('/nonexistent/ncu')",
    )


@pytest.mark.parametrize(("flag", "value"), [("--tool", "nvprof"), ("--ncu-set", "huge")])
def test_bad_choices(config: Path, flag: str, value: str) -> None:
    _refused(["profile", str(config), flag, value], f"{flag} must be")


def test_counters_not_readable(
    config: Path, gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = _script(
        tmp_path / "ncu",
        'echo "==PROF== Connected to process 1"\n'
        'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU '
        'Performance Counters on the target device 0."\nexit 1\n',
    )
    monkeypatch.setenv("SWEEP_NCU", ncu)
    _refused(
        ["profile", str(config), "--local", "--tool", "ncu", "--tasks", _task_id(config)],
        "ncu cannot read the GPU's performance counters (ERR_NVGPUCTRPERM)",
    )


def test_no_task_when_the_store_is_empty(
    config: Path, gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWEEP_NCU", _script(tmp_path / "ncu", "exit 0\n"))
    res = runner.invoke(app, ["profile", str(config), "--tool", "ncu"])
    assert res.exit_code == 1 and res.stderr.startswith("error: "), res.output


def test_the_whole_path_with_stand_in_tools(
    config: Path, gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = _stand_in_ncu(tmp_path)
    sanitizer = _script(
        tmp_path / "compute-sanitizer",
        f'if [ "$2" = memcheck ]; then cat {SAMPLES / "memcheck_oob.txt"}; exit 1; fi\ncat {SAMPLES / "memcheck_clean.txt"}\n',
    )
    monkeypatch.setenv("SWEEP_NCU", ncu)
    monkeypatch.setenv("SWEEP_COMPUTE_SANITIZER", sanitizer)
    tid = _task_id(config)
    res = runner.invoke(app, ["profile", str(config), "--local", "--tasks", tid])
    assert res.exit_code == 0, res.output
    assert "rmsnorm_h1024_kernel" in res.stdout
    assert "compute-sanitizer memcheck: 3 error(s)" in res.stdout
    assert "compute-sanitizer racecheck: no errors" in res.stdout
    folder = tmp_path / "out" / "profiles" / tid
    assert {"task.json", "profile.ncu-rep", "ncu.log", "ncu-raw.csv", "sanitizer-memcheck.txt"} <= {
        p.name for p in folder.iterdir()
    }
    store = str(tmp_path / "out" / "sweep.duckdb")
    res = runner.invoke(
        app,
        [
            "query",
            "SELECT task_id, count(*) AS n, sum(duration_ms) AS ms FROM profiles GROUP BY 1",
            "--store",
            store,
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    assert row["task_id"] == tid and row["n"] == 3 and row["ms"] == pytest.approx(0.254208)
    res = runner.invoke(
        app,
        [
            "query",
            "SELECT tool, kind, count FROM sanitizer_findings ORDER BY count DESC",
            "--store",
            store,
            "--json",
        ],
    )
    rows = json.loads(res.stdout)
    assert rows[0] == {"tool": "memcheck", "kind": "Invalid __global__ read", "count": 2}
    # A second profile of the task replaces its rows.
    assert (
        runner.invoke(app, ["profile", str(config), "--local", "--tasks", tid, "--tool", "ncu"]).exit_code
        == 0
    )
    res = runner.invoke(app, ["query", "SELECT count(*) AS n FROM profiles", "--store", store, "--json"])
    assert json.loads(res.stdout) == [{"n": 3}]


def test_report_shows_the_profile_tables(
    config: Path, gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ncu = _stand_in_ncu(tmp_path)
    sanitizer = _script(tmp_path / "compute-sanitizer", f"cat {SAMPLES / 'memcheck_oob.txt'}\n")
    monkeypatch.setenv("SWEEP_NCU", ncu)
    monkeypatch.setenv("SWEEP_COMPUTE_SANITIZER", sanitizer)
    store = str(tmp_path / "out" / "sweep.duckdb")
    before = runner.invoke(app, ["report", "--store", store])
    assert "Profiled kernels" not in before.stdout
    assert runner.invoke(app, ["profile", str(config), "--local", "--tasks", _task_id(config)]).exit_code == 0
    res = runner.invoke(app, ["report", "--store", store])
    assert res.exit_code == 0, res.output
    assert "Profiled kernels (sweep profile, ncu)" in res.stdout
    assert "Sanitizer findings (sweep profile, compute-sanitizer)" in res.stdout
    assert "Invalid __global__ read" in res.stdout


def test_hardware_auto_finds_the_tasks_of_stored_gpu_traces(
    tmp_path: Path, gpu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``hardware: auto`` the tasks are planned for the hardware the store's traces name
    (``NVIDIA_H100`` in a record is the plan's target ``H100``), so their ids are found."""
    from sweep.schema import Environment, Evaluation, Status, Trace

    config = tmp_path / "sweep.yaml"
    config.write_text(
        f"name: fixture\ndataset: [{GOOD}]\nhardware: auto\noutput: {{results_dir: {tmp_path / 'out'}}}\n"
    )
    cfg = load_config(config)
    task = build_plan(select(cfg, load_dataset(cfg.dataset)), "H100").tasks[0]
    evaluation = Evaluation(
        status=Status.RUNTIME_ERROR,
        environment=Environment(hardware="NVIDIA_H100", libs={}),
        timestamp="2026-11-24T00:00:00+00:00",
        log="stored on an H100",
    )
    trace = Trace(
        definition=task.definition.name,
        workload=task.workload,
        solution=task.solution.name,
        evaluation=evaluation,
        provenance=task.provenance(),
    )
    log = tmp_path / "traces.jsonl"
    log.write_text(trace.model_dump_json() + "\n")
    store = tmp_path / "out" / "sweep.duckdb"
    assert runner.invoke(app, ["ingest", str(log), "--store", str(store)]).exit_code == 0
    monkeypatch.setenv("SWEEP_NCU", _stand_in_ncu(tmp_path))
    res = runner.invoke(
        app,
        ["profile", str(config), "--local", "--tool", "ncu", "--where", f"solution = '{task.solution.name}'"],
    )
    assert res.exit_code == 0, res.output
    assert "not in this config's plan" not in res.stdout
    assert f"task {task.task_id}:" in res.stdout and "rmsnorm_h1024_kernel" in res.stdout


def test_tasks_not_in_the_plan_are_an_error(
    config: Path, gpu: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWEEP_NCU", _stand_in_ncu(tmp_path))
    _refused(
        ["profile", str(config), "--local", "--tool", "ncu", "--tasks", "0123456789abcdef0123"],
        "none of the 1 chosen task(s) is in this config's plan for CPU (first: '0123456789abcdef0123')",
    )

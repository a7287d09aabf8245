"""Hostile command lines, in-process: each gives a correct result or a clean refusal
(``error: ...`` on stderr, exit 1, usage errors of the flag parser too), never a
traceback, and nothing is written when a command refuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from sweep.cli import app
from sweep.errors import MAX_LINE

pytestmark = pytest.mark.hostile

runner = CliRunner()
FIX = Path(__file__).resolve().parents[1] / "data" / "dataset"
from .conftest import GOOD

HYPOTHESIS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _files(folder: Path) -> set[Path]:
    return {p.relative_to(folder) for p in folder.rglob("*")}


def _clean(result: Result) -> None:
    """A result or a clean refusal: no exception escaped, errors are short lines."""
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        # An error boundary message, or (sweep validate) a report whose errors say "error: ".
        reported = any(line.startswith("error: ") for line in result.stdout.splitlines())
        assert result.stderr.startswith("error: ") or reported, result.output
    for line in result.output.splitlines():
        if line.startswith("error: "):
            assert len(line) <= MAX_LINE, "an error line is clipped"


# ---- the examples of the issue, end to end ----


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--hardware", "H10"],
            (
                "error: --hardware 'H10': unknown GPU type 'H10' (did you mean 'H100'? if it is a new GPU "
                "type, say so with --new-hardware)\n"
            ),
        ),
        (
            ["--hardware", ""],
            "error: bad command-line value: --hardware: String should have at least 1 character\n",
        ),
        (
            ["--seed", str(2**70)],
            "error: bad command-line value: --seed: Input should be less than or equal to 9223372036854775807\n",
        ),
        (
            ["--results-dir", "a\0b"],
            "error: bad command-line value: --results-dir: a path must not contain a NUL character, got 'a\\x00b'\n",
        ),
    ],
)
def test_bad_flags(config: Path, flags: list[str], message: str) -> None:
    result = runner.invoke(app, ["plan", str(config), *flags])
    _clean(result)
    assert result.exit_code == 1
    assert result.stderr == message


def test_plan_of_dev_zero() -> None:
    result = runner.invoke(app, ["plan", "/dev/zero"])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: config file /dev/zero is not a regular file (a device, FIFO or socket): a sweep config is a YAML file\n"
    )


def test_a_near_miss_gpu_name_declared_new_is_planned_with_a_warning(config: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", str(config), "--hardware", "H10", "--new-hardware"])
    assert result.exit_code == 0, result.output
    assert "warning: hardware 'H10' is not a GPU type" in result.stdout
    # the flag also covers the config file's own hardware
    yaml = tmp_path / "h10.yaml"
    yaml.write_text(config.read_text().replace("hardware: cpu", "hardware: H10"))
    refused = runner.invoke(app, ["plan", str(yaml)])
    assert refused.exit_code == 1 and "did you mean 'H100'" in refused.stderr
    assert runner.invoke(app, ["plan", str(yaml), "--new-hardware"]).exit_code == 0


def test_plan_warns_about_an_unknown_gpu(config: Path) -> None:
    result = runner.invoke(app, ["plan", str(config), "--hardware", "FOO9000"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1].startswith("warning: hardware 'FOO9000' is not a GPU type")


def test_validate_says_where_safetensors_paths_lead(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(GOOD, root)
    wl = root / "workloads" / "ew" / "vec_add.jsonl"
    lines = wl.read_text().splitlines()
    wl.write_text(
        lines[0].replace(
            '"x": {"type": "random"}',
            '"x": {"type": "safetensors", "path": "/etc/passwd", "tensor_key": "x"}',
        )
        + "\n"
    )
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    assert f"error: {wl}:1: workload.inputs.x.path: must be a relative path" in result.stdout
    assert result.stdout.endswith("1 error\n")


def test_validate_a_root_with_a_nul() -> None:
    # Click's own check of a path argument: a usage error (exit 1), no traceback.
    result = runner.invoke(app, ["validate", "a\0b"])
    _clean(result)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid value for 'ROOT': embedded null byte")


@pytest.mark.parametrize(
    "body",
    [
        "evaluation: {min_iterations: 9, max_iterations: 3}\n",
        "hardware: H10\n",
        "evaluation: {op_type_tolerance: {eww: {atol: 1}}}\n",
        "dataset: &a [*a]\n",
    ],
)
def test_launch_refuses_before_it_writes_or_connects(tmp_path: Path, body: str) -> None:
    p = tmp_path / "sweep.yaml"
    head = "name: x\n" + ("" if body.startswith("dataset") else f"dataset: [{GOOD}]\n")
    p.write_text(head + body + f"output: {{results_dir: {tmp_path / 'out'}}}\n")
    before = _files(tmp_path)
    result = runner.invoke(app, ["launch", str(p)])
    _clean(result)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: {p}") or result.stderr.startswith("error: the config selects")
    assert _files(tmp_path) == before


def test_kernel_import_refuses_an_author_that_is_a_path(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app, ["import-backendbench-kernels", str(tmp_path), "--out", str(out), "--author", "../../x"]
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("error: --author '../../x': must be a plain name")
    assert not out.exists()


def test_eval_with_a_huge_name(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "d" * 10**6, "s", "--root", str(GOOD)])
    _clean(result)
    assert result.exit_code == 1
    assert len(result.stderr) < 600


# ---- properties ----

_TEXT = st.one_of(
    st.sampled_from(
        ["", " ", "\0", "auto", "cpu", "H100", "H10", "h100", "NVIDIA_H100", "~nouser/x", "../..", "x" * 5000]
    ),
    st.text(max_size=20),
)
_INT = st.one_of(st.integers(), st.sampled_from([0, -1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30]))


@HYPOTHESIS
@given(
    flags=st.lists(
        st.one_of(
            st.tuples(
                st.sampled_from(["--hardware", "--name", "--results-dir", "--store", "--address"]), _TEXT
            ),
            st.tuples(st.sampled_from(["--seed", "--limit-per-definition"]), _INT.map(str)),
            st.tuples(st.sampled_from(["--seed", "--limit-per-definition", "--bogus"]), _TEXT),
        ),
        max_size=4,
    )
)
def test_plan_flags_give_a_plan_or_a_clean_error(
    tmp_path: Path, config: Path, flags: list[tuple[str, str]]
) -> None:
    argv = ["plan", str(config), *(x for pair in flags for x in pair)]
    before = _files(tmp_path)
    result = runner.invoke(app, argv)
    _clean(result)
    if result.exit_code == 0:
        assert result.stdout.startswith("sweep '")
        assert result.stdout.rstrip().split("\n")[-1].startswith("total: ")
    assert _files(tmp_path) == before  # planning never writes, refused or not


@HYPOTHESIS
@given(roots=st.lists(_TEXT, min_size=1, max_size=3))
def test_validate_any_roots(roots: list[str]) -> None:
    result = runner.invoke(app, ["validate", *roots])
    _clean(result)


@HYPOTHESIS
@given(
    text=st.lists(
        st.sampled_from(
            [
                "Operator: aten.add.Tensor\n",
                "cnt: 1, ",
                "((",
                "))",
                "T([2], f16)",
                "'\\x'",
                ", {})",
                "9" * 40,
                "\n",
                "[" * 60,
                "]" * 60,
                "Operator: os.system\n",
                "cnt: 0, ((1,), {})\n",
            ]
        ),
        max_size=12,
    )
)
def test_import_any_trace_text(tmp_path: Path, text: list[str]) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text("".join(text))
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    result = runner.invoke(app, ["import-backendbench", str(trace), "--out", str(out)])
    _clean(result)
    if result.exit_code != 0:
        assert not out.exists(), "a refused import writes nothing"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["workers", "stop"], "say which workers to stop: --all or --stale"),
        (["workers", "stop", "--all", "--stale"], "say which workers to stop: --all or --stale"),
        (["workers", "--address", "127.0.0.1:1"], "127.0.0.1:1"),
        (["workers", "stop", "--stale", "--address", "host:notaport"], "host:notaport"),
        (["workers", "--address", "x" * 5000], "xxxxxxxx"),
        (["workers", "--bogus"], "no such option: --bogus"),
        (["workers", "start"], "no such command 'start'"),
    ],
)
def test_workers_refuses_cleanly(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Usage errors and unreachable addresses (refused at once, not after Ray's minutes of
    retries); a process already connected elsewhere refuses another address as cleanly."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    result = runner.invoke(app, args)
    _clean(result)
    assert result.exit_code == 1 and message in result.stderr, result.output


# ---- an address where nothing answers fails within seconds (issue 27, 9.7) ----


def _dead_address() -> str:
    import socket

    with socket.socket() as s:  # free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _profiled_task(config: Path) -> str:
    from sweep.config import load_config
    from sweep.plan import build_plan, select
    from sweep.plan.dataset import load_dataset

    cfg = load_config(config)
    return build_plan(select(cfg, load_dataset(cfg.dataset)), "CPU").tasks[0].task_id


@pytest.mark.parametrize(
    ("command", "how"),
    # sweep profile has no --address: it takes the config's or RAY_ADDRESS
    [("launch", "flag"), ("launch", "env"), ("launch", "config"), ("profile", "env"), ("profile", "config")],
)
def test_connecting_to_an_address_where_nothing_listens_fails_in_seconds(
    config: Path, command: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import ray

    # This process may hold a Ray of another test's; a command given an address connects anew.
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    address = _dead_address()
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    flag = ["--address", address]
    if how == "env":
        monkeypatch.setenv("RAY_ADDRESS", address)
        flag = []
    if how == "config":
        config.write_text(config.read_text() + f"ray: {{address: '{address}'}}\n")
        flag = []
    args = [command, str(config), *flag]
    if command == "profile":
        args += ["--tasks", _profiled_task(config)]
    t0 = time.monotonic()
    result = runner.invoke(app, args)
    took = time.monotonic() - t0
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert [x for x in result.stderr.splitlines() if x.startswith("error: ")], result.stderr
    assert "cannot connect to the Ray cluster at" in result.stderr and address in result.stderr, result.stderr
    assert "nothing answers there" in result.stderr
    assert took < 60, f"took {took:.0f} s (Ray alone retries for about 14 minutes)"

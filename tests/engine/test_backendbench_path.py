"""The engine's BackendBench path: imported ATen calls evaluated end to end on the CPU.

The example sweep (``configs/backendbench.yaml`` over ``examples/backendbench``) has an
ATen-identity solution and a deliberately wrong one per operator; the other tests build
small calls from trace text written here.
"""

from __future__ import annotations

import filecmp
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch
from typer.testing import CliRunner

from sweep.backendbench import build_records, import_backendbench, import_kernels, parse_trace
from sweep.cli import app
from sweep.config import EvalSettings
from sweep.engine import EngineCache, evaluate
from sweep.engine.io._inputs import base_seed
from sweep.plan import expand, load_config
from sweep.plan.dataset import Dataset, load_dataset
from sweep.schema import Definition, Trace, Workload
from sweep.schema.task import Task

from .conftest import FAST

if TYPE_CHECKING:
    from ..conftest import SharedSandboxes

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "backendbench"
CONFIG = REPO / "configs" / "backendbench.yaml"

#: The ``kit`` fixture of tests/engine/conftest.py (conftest modules are not importable).
Kit = Any

# What each deliberately wrong solution of the example must get, and a piece of its log.
WRONG = {
    "relu__default": ("INCORRECT_NUMERICAL", "output (trial 0): "),
    "mul__Tensor": ("INCORRECT_SHAPE", "output (trial 0): shape "),
    "sum__default": ("INCORRECT_DTYPE", "output (trial 0): dtype torch.float32, expected torch.float16"),
    "_softmax__default": ("INCORRECT_NUMERICAL", "output (trial 0): "),
    "add___Tensor": ("INCORRECT_NUMERICAL", "args[0] (trial 0): "),
}


def _op(text: str, op: str) -> tuple[Definition, list[Workload]]:
    """The definition and workloads of one operator of a trace text."""
    items = build_records(parse_trace(text), source_file="test.trace.txt")
    item = next(i for i in items if i.op == op)
    return item.definition, item.workloads


def _kernel(kit: Kit, folder: str, body: str, name: str = "sol") -> Any:
    """A BackendBench-style solution: ``<folder>_kernel_impl`` called like the operator."""
    impl = f"{folder}_kernel_impl"
    return kit.solution(folder, body.replace("IMPL", impl), name=name, entry=f"main.py::{impl}")


# ---- the example sweep -----------------------------------------------------------------


def test_example_dataset_is_what_the_import_commands_write(tmp_path: Path) -> None:
    import_backendbench(EXAMPLE / "ops.trace.txt", tmp_path)
    import_kernels(EXAMPLE / "kernels" / "aten", tmp_path, author="aten")
    import_kernels(EXAMPLE / "kernels" / "wrong", tmp_path, author="wrong")
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    shipped = sorted(
        p.relative_to(EXAMPLE / "dataset") for p in (EXAMPLE / "dataset").rglob("*") if p.is_file()
    )
    assert fresh == shipped
    _, mismatch, errors = filecmp.cmpfiles(
        tmp_path, EXAMPLE / "dataset", [str(p) for p in fresh], shallow=False
    )
    assert (mismatch, errors) == ([], [])


@pytest.fixture(scope="module")
def example_sweep(_build_cache: Path) -> tuple[Dataset, list[tuple[Task, Trace]]]:
    """The example sweep's plan, from ``sweep.plan.expand``, evaluated once on the CPU."""
    config = load_config(CONFIG)
    fast = FAST.model_copy(update={"op_type_tolerance": config.evaluation.op_type_tolerance})
    dataset = load_dataset(config.dataset)
    plan = expand(config.model_copy(update={"evaluation": fast}), dataset)
    assert len(plan.tasks) == 36 and not plan.excluded
    cache = EngineCache()
    return dataset, [(t, evaluate(t, device="cpu", cache=cache)) for t in plan.tasks]


def test_example_sweep_passes_aten_and_fails_the_wrong_kernels(
    example_sweep: tuple[Dataset, list[tuple[Task, Trace]]],
) -> None:
    _, traces = example_sweep
    statuses: Counter[tuple[str, str]] = Counter()
    for task, trace in traces:
        ev = trace.evaluation
        assert ev is not None
        assert ev.seed == base_seed(FAST.seed, task.workload.uuid)
        statuses[(task.solution.author, ev.status.value)] += 1
        defn = task.definition.name
        if task.solution.author == "aten":
            assert ev.status.value == "PASSED", ev.log
            assert ev.correctness is not None and ev.correctness.max_absolute_error == 0.0
            assert ev.performance is not None and ev.performance.speedup_factor > 0
            assert ev.timing is not None and ev.timing.clock == "host"
            assert ev.reference_timing is not None
        else:
            status, text = WRONG[defn]
            assert ev.status.value == status, ev.log
            assert ev.log.startswith(f"{status}: {text}"), ev.log
            assert ev.performance is None
    assert statuses == {
        ("aten", "PASSED"): 18,
        ("wrong", "INCORRECT_NUMERICAL"): 10,
        ("wrong", "INCORRECT_SHAPE"): 4,
        ("wrong", "INCORRECT_DTYPE"): 4,
    }
    # The tolerance came from the config's op_type override (BackendBench's 1e-2).
    relu_wrong = next(tr for t, tr in traces if t.solution.name == "relu__default_implementation_wrong")
    assert relu_wrong.evaluation is not None and "atol=0.01, rtol=0.01" in relu_wrong.evaluation.log


def test_sweep_report_shows_backendbench_scores_of_the_example(
    example_sweep: tuple[Dataset, list[tuple[Task, Trace]]], tmp_path: Path
) -> None:
    from sweep.store import RowBatch, Store, StoreContext
    from sweep.store.render import build_report

    dataset, traces = example_sweep
    ctx = StoreContext.from_dataset(dataset)
    batch = RowBatch()
    batch.add_context(ctx)
    for _, trace in traces:
        batch.add_trace(trace, context=ctx)
    store = tmp_path / "sweep.duckdb"
    Store(store).add(batch)
    section = build_report(store).backends
    rows = [dict(zip(section.columns, r)) for r in section.rows if r[2] == "BackendBench imports"]
    # Correctness first: aten above wrong, whose failures are shown.
    assert [r["author"] for r in rows] == ["aten", "wrong"]
    aten, wrong = rows
    assert (aten["ops"], aten["bb_correctness_score"], aten["correct_ops"], aten["failed_rows"]) == (
        5,
        1.0,
        5,
        0,
    )
    assert isinstance(aten["bb_speedup_failures_as_1"], float) and aten["bb_speedup_failures_as_1"] > 0
    # Every workload failed: pass rate 0, each op's speedup counted as 1.0.
    assert (wrong["ops"], wrong["bb_correctness_score"], wrong["correct_ops"], wrong["failed_ops"]) == (
        5,
        0.0,
        0,
        5,
    )
    assert wrong["failed_rows"] == 18 and wrong["speedup_correct_ops"] is None
    assert (wrong["bb_speedup_failures_as_1"], wrong["perf_at_1"]) == (pytest.approx(1.0), 0.0)
    out = CliRunner().invoke(app, ["report", "--store", str(store)])
    assert out.exit_code == 0, out.output
    assert "== Backend scores (per author, correct first; BackendBench's formulas) ==" in out.output
    assert "BackendBench imports" in out.output


def test_sweep_eval_cli_on_the_example(shared_eval_sandbox: SharedSandboxes) -> None:
    runner = CliRunner()
    root = str(EXAMPLE / "dataset")
    ok = runner.invoke(
        app,
        [
            "eval",
            "sum__default",
            "sum__default_implementation",
            "-r",
            root,
            "--device",
            "cpu",
            "--trials",
            "1",
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert ok.output.splitlines()[0].startswith("sum__default / sum__default_implementation on ")
    assert len([line for line in ok.output.splitlines() if " PASSED " in line]) == 4
    bad = runner.invoke(
        app, ["eval", "mul__Tensor", "mul__Tensor_implementation_wrong", "-r", root, "--device", "cpu"]
    )
    assert bad.exit_code == 1, bad.output  # a trace that did not pass: exit 1 (--no-fail: 0)
    assert len([line for line in bad.output.splitlines() if " INCORRECT_SHAPE " in line]) == 4
    assert "INCORRECT_SHAPE: output (trial 0): shape [262144], expected [16, 128, 128]" in bad.output


# ---- inputs: seeded, fresh per trial and timing set, deterministic ----------------------

_RELU = "Operator: aten.relu.default\ncnt: 1, ((T([64, 33], f32),), {})\n"

_RECORDING = """
import torch

SEEN = []


def IMPL(x):
    SEEN.append((float(x.double().sum()), x.data_ptr()))
    return torch.ops.aten.relu.default(x)
"""


def _seen(kit: Kit, settings: EvalSettings, cache: EngineCache) -> tuple[Trace, list[tuple[float, int]]]:
    defn, (wl,) = _op(_RELU, "aten.relu.default")
    sol = _kernel(kit, "relu__default", _RECORDING)
    trace = kit.run(defn, sol, wl, settings, cache=cache)
    fn = next(b.fn for k, b in cache.solutions.items() if k.startswith("sol:"))  # type: ignore[union-attr]
    seen: list[tuple[float, int]] = list(fn.__globals__["SEEN"])
    fn.__globals__["SEEN"].clear()
    return trace, seen


def test_every_call_sees_new_values_on_fixed_buffers(kit: Kit) -> None:
    settings = kit.fast.model_copy(update={"trials": 2, "input_sets": 3, "min_iterations": 6})
    trace, seen = _seen(kit, settings, EngineCache())
    assert kit.status(trace) == "PASSED", kit.log(trace)
    trials, timed = seen[:2], seen[2:]
    assert len(timed) >= 6
    # No call (trial, warm-up, timed) sees the values of an earlier one: a cache keyed by
    # content never hits.
    assert len({v for v, _ in seen}) == len(seen)
    assert len({p for _, p in timed}) == 3  # the timed calls rotate over the three slots
    # Fixed buffers: the trials' addresses are reused by the timed calls.
    assert {p for _, p in trials} <= {p for _, p in timed}


def test_same_seed_same_input_sets_and_results_new_timed_values_other_seed_other_inputs(kit: Kit) -> None:
    cache = EngineCache()
    first, seen1 = _seen(kit, kit.fast, cache)
    again, seen2 = _seen(kit, kit.fast, EngineCache())
    trials = kit.fast.trials  # one input set a trial: the first calls
    # The input sets, so the trials and their results, are the seed's; the fresh values of the
    # timed calls are each evaluation's own (a cache kept in a file by an earlier task of
    # this workload never hits them).
    assert len(seen1) > trials and len(seen2) > trials
    assert [v for v, _ in seen1[:trials]] == [v for v, _ in seen2[:trials]]
    assert {v for v, _ in seen1[trials:]}.isdisjoint({v for v, _ in seen2[trials:]})
    assert first.evaluation is not None and again.evaluation is not None
    assert first.evaluation.seed == again.evaluation.seed
    assert first.evaluation.correctness == again.evaluation.correctness
    _, seen3 = _seen(kit, kit.fast.model_copy(update={"seed": 1}), EngineCache())
    assert {v for v, _ in seen3}.isdisjoint({v for v, _ in seen1})


def test_pointer_cache_cheat_fails_after_timing(kit: Kit) -> None:
    defn, (wl,) = _op(_RELU, "aten.relu.default")
    src = (
        "import torch\n\n_memo = {}\n\n"
        "def IMPL(x):\n"
        "    if x.data_ptr() not in _memo:\n"
        "        _memo[x.data_ptr()] = torch.relu(x)\n"
        "    return _memo[x.data_ptr()]\n"
    )
    settings = kit.fast.model_copy(update={"trials": 1, "input_sets": 3})
    trace = kit.run(defn, _kernel(kit, "relu__default", src), wl, settings)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "(timed call 1, on input set 1)" in kit.log(trace)
    assert "may reuse results across calls" in kit.log(trace)


# ---- the memory budget -------------------------------------------------------------------


def test_huge_synthetic_row_is_refused_before_anything_is_allocated(
    kit: Kit, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import_backendbench(
        REPO / "tests" / "data" / "backendbench" / "huge_synthetic.trace.txt",
        tmp_path,
        include_synthetic=True,
    )
    ds = load_dataset([tmp_path])
    defn = ds.definitions["std__correction"]
    huge = next(w for w in ds.workloads["std__correction"] if w.weight == 0)
    sol = _kernel(
        kit, "std__correction", "import torch\n\ndef IMPL(*a, **k):\n    return torch.std(*a, **k)\n"
    )

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("allocated")

    real_empty, real_strided = torch.empty, torch.empty_strided

    def meta_only(real: Any) -> Any:  # meta tensors have no storage: counting output bytes may use them
        def alloc(*args: object, **kwargs: object) -> Any:
            if str(kwargs.get("device")) != "meta":
                raise AssertionError("allocated")
            return real(*args, **kwargs)

        return alloc

    for name in ("rand", "randint", "randn", "empty_like", "zeros", "ones", "full"):
        monkeypatch.setattr(torch, name, refuse)
    monkeypatch.setattr(torch, "empty", meta_only(real_empty))
    monkeypatch.setattr(torch, "empty_strided", meta_only(real_strided))
    trace = kit.run(defn, sol, huge)
    monkeypatch.undo()
    assert kit.status(trace) == "RUNTIME_ERROR"
    log = kit.log(trace)
    assert log.startswith("RUNTIME_ERROR: task needs "), log
    assert "over the memory budget of" in log and "80% of available RAM" in log
    assert "(output size from the operator's meta kernel)" in log
    assert "largest tensor T([497, 3976, 23856], float16) is 87.807 GiB" in log
    assert "nothing was allocated" in log
    assert "allocated\n" not in log and "AssertionError" not in log
    assert trace.evaluation is not None and trace.evaluation.correctness is None


def test_budget_setting_refuses_a_small_row_too(kit: Kit) -> None:
    defn, (wl,) = _op(_RELU, "aten.relu.default")
    settings = kit.fast.model_copy(update={"memory_budget_gb": 1e-6})
    trace = kit.run(defn, _kernel(kit, "relu__default", _RECORDING), wl, settings)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "settings.memory_budget_gb = 1e-06" in kit.log(trace)


# ---- operators that write their arguments ----------------------------------------------

_ADD_ = (
    "Operator: aten.add_.Tensor\n"
    "cnt: 1, ((T([8, 16], f32), T([16], f32)), {})\n"
    "cnt: 1, ((T([8, 16], f32, stride=(1, 8)), T([8, 16], f32), ), {'alpha': 2})\n"
)


def test_in_place_operator_passes_only_when_it_writes_self(kit: Kit) -> None:
    defn, wls = _op(_ADD_, "aten.add_.Tensor")
    assert "mutates:self@0" in defn.tags
    # In place, as the operator: passes, timed calls get restored inputs (without the
    # restore, repeated timed calls would accumulate and the re-check after timing fail).
    honest = _kernel(
        kit, "add___Tensor", "def IMPL(self, other, alpha=1):\n    return self.add_(other, alpha=alpha)\n"
    )
    for wl in wls:
        trace = kit.run(defn, honest, wl)
        assert kit.status(trace) == "PASSED", kit.log(trace)
    # Right result, but self left as it was.
    lazy = _kernel(kit, "add___Tensor", "def IMPL(self, other, alpha=1):\n    return self + alpha * other\n")
    trace = kit.run(defn, lazy, wls[1])
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert kit.log(trace).startswith("INCORRECT_NUMERICAL: args[0] (trial 0): ")


def test_writing_an_argument_the_operator_leaves_alone_fails(kit: Kit) -> None:
    text = "Operator: aten.mul.Tensor\ncnt: 1, ((T([4, 5], f32), T([4, 5], f32)), {})\n"
    defn, (wl,) = _op(text, "aten.mul.Tensor")
    clobber = _kernel(kit, "mul__Tensor", "def IMPL(self, other):\n    return self.mul_(other)\n")
    trace = kit.run(defn, clobber, wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "the solution wrote into args[0] (trial 0), which aten.mul.Tensor leaves unchanged" in kit.log(
        trace
    )


_ADD_OUT = "Operator: aten.add.out\ncnt: 1, ((T([6, 7], f32), T([7], f32)), {'out': T([6, 7], f32)})\n"


def test_out_operator_compares_the_out_argument(kit: Kit) -> None:
    defn, (wl,) = _op(_ADD_OUT, "aten.add.out")
    assert "mutates:out" in defn.tags
    writes = _kernel(
        kit,
        "add__out",
        "import torch\n\ndef IMPL(self, other, *, alpha=1, out):\n"
        "    return torch.add(self, other, alpha=alpha, out=out)\n",
    )
    trace = kit.run(defn, writes, wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    # Returns the right tensor but never writes ``out``.
    returns = _kernel(
        kit,
        "add__out",
        "import torch\n\ndef IMPL(self, other, *, alpha=1, out):\n    return torch.add(self, other, alpha=alpha)\n",
    )
    trace = kit.run(defn, returns, wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert kit.log(trace).startswith("INCORRECT_NUMERICAL: kwargs['out'] (trial 0): ")


# ---- build-time checks -------------------------------------------------------------------


def test_a_kernel_that_cannot_take_the_call_is_a_compile_error(kit: Kit) -> None:
    defn, (wl,) = _op(_ADD_OUT, "aten.add.out")
    sol = _kernel(kit, "add__out", "def IMPL(self, other):\n    return self + other\n")
    trace = kit.run(defn, sol, wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "is called like aten.add.out with 2 positional argument(s) and keyword(s) out" in kit.log(trace)


def test_destination_passing_style_is_refused(kit: Kit) -> None:
    defn, (wl,) = _op(_RELU, "aten.relu.default")
    sol = kit.solution("relu__default", "def run(x, out):\n    out.copy_(x)\n", dps=True)
    trace = kit.run(defn, sol, wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "destination_passing_style" in kit.log(trace)


def test_task_ids_and_settings_hash_like_the_normal_path(kit: Kit) -> None:
    defn, (wl,) = _op(_RELU, "aten.relu.default")
    sol = _kernel(kit, "relu__default", _RECORDING)
    task = Task.make(defn, sol, wl, kit.fast, "CPU", sweep="tests")
    trace = evaluate(task, device="cpu", cache=EngineCache())
    assert trace.provenance is not None and trace.provenance.task_id == task.task_id
    assert trace.provenance.settings_hash == kit.fast.settings_hash()
    assert os.getpid() == trace.provenance.worker_pid


def test_build_phase_alone_then_evaluate(kit: Kit) -> None:
    from sweep.engine import build

    defn, (wl,) = _op(_RELU, "aten.relu.default")
    cache = EngineCache()
    good = Task.make(defn, _kernel(kit, "relu__default", _RECORDING), wl, kit.fast, "CPU")
    build(good, device="cpu", cache=cache)
    assert any(k.startswith("sol:") for k in cache.solutions)
    trace = evaluate(good, device="cpu", cache=cache)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    bad = Task.make(
        defn, _kernel(kit, "relu__default", "def IMPL(x, y):\n    return x\n", name="b"), wl, kit.fast, "CPU"
    )
    build(bad, device="cpu", cache=cache)  # a failed build is reported by evaluate, never raised
    assert kit.status(evaluate(bad, device="cpu", cache=cache)) == "COMPILE_ERROR"


@pytest.mark.gpu
def test_example_on_cuda_events(kit: Kit) -> None:
    ds = load_dataset([EXAMPLE / "dataset"])
    cache = EngineCache()
    for name in ("relu__default", "add___Tensor", "_softmax__default"):
        defn = ds.definitions[name]
        for sol in (s for s in ds.solutions.values() if s.definition == name):
            for wl in ds.workloads[name]:
                task = Task.make(defn, sol, wl, kit.fast, "GPU")
                trace = evaluate(task, device="cuda", cache=cache)
                ev = trace.evaluation
                assert ev is not None
                if sol.author == "aten":
                    assert ev.status.value == "PASSED", ev.log
                    assert ev.timing is not None and ev.timing.clock == "cuda_event"
                else:
                    assert ev.status.value == WRONG[name][0], ev.log

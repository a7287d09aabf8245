"""The Trace written: provenance, environment, timing extension fields; caches across tasks."""

from __future__ import annotations

from datetime import datetime

import pytest

from sweep.config import EvalSettings
from sweep.engine import EngineCache, evaluate_pair
from sweep.engine.timing._timing import stats_of
from sweep.schema import Trace
from sweep.schema.task import Task

GOOD = "def run(x, y):\n    return x + y\n"


def test_trace_fields_provenance_and_round_trip(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", GOOD)
    task = Task.make(vadd, sol, vadd_wl, kit.fast, "CPU", sweep="nightly", config_hash="cfg123")
    from sweep.engine import evaluate

    trace = evaluate(task, device="cpu", cache=EngineCache())
    ev, prov = trace.evaluation, trace.provenance
    assert trace.definition == "vadd_f32" and trace.solution == "sol" and trace.workload == vadd_wl
    assert prov.task_id == task.task_id and prov.sweep == "nightly" and prov.config_hash == "cfg123"
    assert prov.solution_hash == sol.content_hash and prov.settings_hash == kit.fast.settings_hash()
    assert prov.worker_pid is not None and prov.started_at <= prov.finished_at
    stamp = datetime.fromisoformat(ev.timestamp)
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0
    assert ev.environment.hardware == "CPU" and ev.environment.device_name
    assert {"torch", "triton", "python"} <= set(ev.environment.libs)
    assert ev.timing.clock == "host" and ev.reference_timing.clock == "host"
    assert ev.timing.p10_ms <= ev.timing.p50_ms <= ev.timing.p90_ms
    assert ev.performance.latency_ms == ev.timing.p50_ms
    assert ev.clocks is None  # no NVML on the CPU path
    again = Trace.model_validate_json(trace.to_json())
    assert again == trace
    assert '"run_id"' not in trace.to_json() and '"clocks"' not in trace.to_json()


def test_iterations_follow_the_settings(kit, vadd, vadd_wl) -> None:
    settings = EvalSettings(
        trials=1, warmup_ms=0, rep_ms=1000, min_iterations=3, max_iterations=7, input_sets=2
    )
    ev = kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, settings).evaluation
    assert ev.timing.iterations == 7  # rep_ms asks for more than max_iterations allows
    settings = settings.model_copy(update={"rep_ms": 1e-6})
    ev = kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, settings).evaluation
    assert ev.timing.iterations == 3


def test_slower_solution_gets_a_lower_speedup(kit, vadd, vadd_wl) -> None:
    slow = "import time\n\ndef run(x, y):\n    time.sleep(0.003)\n    return x + y\n"
    ev = kit.run(vadd, kit.solution("vadd_f32", slow), vadd_wl).evaluation
    assert ev.performance.latency_ms >= 3.0
    assert ev.performance.speedup_factor < 0.5


def test_stats_percentiles() -> None:
    s = stats_of([4.0, 1.0, 3.0, 2.0, 5.0], "host")
    assert (s.p10_ms, s.p50_ms, s.p90_ms, s.mean_ms) == (pytest.approx(1.4), 3.0, pytest.approx(4.6), 3.0)
    assert s.cv == pytest.approx((2.0**0.5) / 3.0)
    assert stats_of([2.0], "host").cv == 0.0


def test_cache_shares_reference_outputs_across_solutions(kit, vadd, vadd_wl) -> None:
    cache = EngineCache()
    kit.run(vadd, kit.solution("vadd_f32", GOOD, name="a"), vadd_wl, cache=cache)
    assert cache.hits["reference_output"] == 0
    t = kit.run(
        vadd,
        kit.solution("vadd_f32", "import torch\n\ndef run(x, y):\n    return torch.add(x, y)\n", name="b"),
        vadd_wl,
        cache=cache,
    )
    assert kit.status(t) == "PASSED"
    # The trials only: timed calls run on fresh values, whose results no cache holds.
    assert cache.hits["reference_output"] == kit.fast.trials
    assert cache.hits["solution"] == 1  # the reference build


def test_evaluate_pair_runs_every_workload(kit, vadd) -> None:
    wls = kit.workloads("vadd/vadd_f32.jsonl")
    seen = []
    traces = evaluate_pair(
        vadd, kit.solution("vadd_f32", GOOD), wls, kit.fast, device="cpu", on_trace=seen.append
    )
    assert [t.workload.uuid for t in traces] == [w.uuid for w in wls]
    assert seen == traces
    assert all(t.evaluation.status.value == "PASSED" for t in traces)


def test_shipped_pytorch_and_triton_solutions_pass_on_cpu(kit) -> None:
    from sweep.plan.dataset import load_dataset

    ds = load_dataset([kit.repo])
    settings = kit.fast.model_copy(
        update={"trials": 1, "input_sets": 1, "min_iterations": 1, "max_iterations": 1}
    )
    checked = 0
    for name, sol in sorted(ds.solutions.items()):
        if sol.spec.language.value not in ("python", "triton"):
            continue
        defn = ds.definitions[sol.definition]
        if defn.distributed is not None:  # several ranks, a gang each: tests/sandbox/test_gang.py
            continue
        wl = min(ds.workloads[defn.name], key=lambda w: sum(w.axes.values()))
        trace = kit.run(defn, sol, wl, settings, root=str(kit.repo))
        assert kit.status(trace) == "PASSED", f"{name}: {kit.log(trace)}"
        checked += 1
    assert checked >= 6


def test_real_flashinfer_definition_from_shared_data(kit, shared_data) -> None:
    import json

    from sweep.schema import Definition, Workload

    root = shared_data / "flashinfer-trace"
    defn = Definition.model_validate_json((root / "definitions/rmsnorm/rmsnorm_h4096.json").read_text())
    lines = (root / "workloads/rmsnorm/rmsnorm_h4096.jsonl").read_text().splitlines()
    wl = Workload.model_validate(json.loads(lines[1])["workload"])  # batch_size 1
    src = (
        "import torch\n\ndef run(hidden_states, weight):\n"
        "    x = hidden_states.float()\n"
        "    return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * weight.float()).bfloat16()\n"
    )
    trace = kit.run(defn, kit.solution("rmsnorm_h4096", src), wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    wrong = src.replace("1e-5", "1e-1")
    assert kit.status(kit.run(defn, kit.solution("rmsnorm_h4096", wrong), wl)) == "INCORRECT_NUMERICAL"

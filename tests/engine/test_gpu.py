"""On a CUDA GPU (the lent device machine): event timing, clocks, device-independent inputs,
the shipped solutions, a .cu extension, and a sticky CUDA error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

from sweep.engine.io._inputs import base_seed, make_inputs
from sweep.engine.timing._timing import flush_bytes

pytestmark = pytest.mark.gpu

GOOD = "def run(x, y):\n    return x + y\n"


def test_cuda_evaluation_uses_events_and_records_clocks(kit, vadd, vadd_wl) -> None:
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, device="cuda"))
    assert ev.timing.clock == "cuda_event" and ev.reference_timing.clock == "cuda_event"
    assert ev.environment.hardware.startswith("NVIDIA_")
    assert ev.environment.device_name == torch.cuda.get_device_name()
    assert {"cuda", "torch", "triton"} <= set(ev.environment.libs)
    assert "driver" in ev.environment.libs
    assert ev.clocks is not None and ev.clocks.sm_clock_mhz_max and ev.clocks.sm_clock_mhz_max > 500


def test_event_timing_measures_device_time(kit, vadd, vadd_wl) -> None:
    # torch.cuda._sleep spins the GPU for a number of cycles: about 0.5 ms at 2 GHz.
    src = "import torch\n\ndef run(x, y):\n    torch.cuda._sleep(1_000_000)\n    return x + y\n"
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, device="cuda"))
    assert 0.3 < ev.performance.latency_ms < 5.0
    assert ev.performance.speedup_factor < 0.2


def test_inputs_are_identical_on_cpu_and_gpu(vadd, vadd_wl) -> None:
    seed = base_seed(0, vadd_wl.uuid)
    cpu = make_inputs(vadd, vadd_wl, seed, 3, torch.device("cpu"), None).values
    gpu = make_inputs(vadd, vadd_wl, seed, 3, torch.device("cuda"), None).values
    for name in cpu:
        assert torch.equal(cpu[name], gpu[name].cpu())


def test_flush_buffer_is_at_least_twice_the_l2() -> None:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    assert flush_bytes(torch.device("cuda", 0)) >= 2 * l2


SHIPPED = textwrap.dedent(
    """
    import json, sys
    from sweep.config import EvalSettings
    from sweep.plan.dataset import load_dataset
    from sweep.engine import EngineCache, evaluate, prepare_process
    from sweep.schema.task import Task
    prepare_process("cuda")
    ds = load_dataset([sys.argv[1]])
    settings = EvalSettings(trials=2, warmup_ms=0, rep_ms=1, min_iterations=2, max_iterations=6, input_sets=2)
    cache = EngineCache()
    rows = []
    for name, sol in sorted(ds.solutions.items()):
        d = ds.definitions[sol.definition]
        if d.distributed is not None:  # several ranks, a gang each: bench/gpu_collectives.py
            continue
        w = max(ds.workloads[d.name], key=lambda w: sum(w.axes.values()))
        t = evaluate(Task.make(d, sol, w, settings, "GPU", dataset_root=sys.argv[1]), device="cuda", cache=cache)
        rows.append([name, sol.spec.language.value, t.evaluation.status.value, t.evaluation.log[:2000]])
    print(json.dumps(rows))
    """
)


def test_shipped_solutions_pass_on_the_gpu(kit) -> None:
    rows = json.loads(kit.fresh_python(SHIPPED, str(kit.repo), timeout=600)[-1])
    for name, _, status, log in rows:
        assert status == "PASSED", f"{name}: {log}"
    assert {"python", "triton", "cuda"} <= {lang for _, lang, _, _ in rows}


def test_triton_solution_after_cpu_triton_in_the_same_process_is_refused_clearly(kit, vadd, vadd_wl) -> None:
    from sweep.engine import prepare_process

    tl_mod = sys.modules.get("triton.language")
    if tl_mod is None:  # make this process an interpreting one, as a CPU worker is
        prepare_process("cpu")
        import triton.language as tl_mod
    if type(tl_mod.zeros).__name__ != "InterpretedFunction":
        return  # this process compiles Triton: nothing to refuse
    sol = kit.solution("vadd_f32", "import triton\n\ndef run(x, y):\n    return x + y\n", language="triton")
    trace = kit.run(vadd, sol, vadd_wl, device="cuda")
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "under TRITON_INTERPRET=1" in kit.log(trace)


def test_cuda_entry_point_is_built_as_a_torch_extension(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.cuda_vadd(), vadd_wl, device="cuda")
    assert kit.status(trace) == "PASSED", kit.log(trace)
    kernel = kit.cuda_vadd_sources["kernel.cu"].replace("z[i] =", "z[i] = undefined_name +")
    broken = kit.cuda_vadd("vadd_cu_broken", kernel)
    trace = kit.run(vadd, broken, vadd_wl, device="cuda")
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "undefined_name" in kit.log(trace)


STICKY = textwrap.dedent(
    """
    import json, sys
    from sweep.config import EvalSettings
    from sweep.engine import EngineCache, evaluate
    from sweep.schema import Definition, Solution, Workload
    from sweep.schema.task import Task
    d = Definition.model_validate_json(open(sys.argv[1]).read())
    bad = Solution.model_validate_json(open(sys.argv[2]).read())
    good = Solution.model_validate_json(open(sys.argv[3]).read())
    w = Workload.model_validate_json(open(sys.argv[4]).read())
    s = EvalSettings(trials=1, warmup_ms=0, rep_ms=1, min_iterations=1, max_iterations=2, input_sets=1)
    cache = EngineCache()
    t1 = evaluate(Task.make(d, bad, w, s, "GPU"), device="cuda", cache=cache)
    t2 = evaluate(Task.make(d, good, w, s, "GPU"), device="cuda", cache=cache)
    print(json.dumps([t1.evaluation.status.value, t1.evaluation.log[:300], cache.fatal_error,
                      t2.evaluation.status.value, t2.evaluation.log[:300]]), flush=True)
    import os
    os._exit(0)  # skip the teardown of a broken CUDA context
    """
)


def test_sticky_cuda_error_is_reported_and_poisons_the_cache(kit, vadd, vadd_wl, tmp_path) -> None:
    bad = kit.solution(
        "vadd_f32",
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(p):\n"
        "    tl.store(p + (1 << 40), 1.0)\n\ndef run(x, y, z):\n    _k[(1,)](z)\n",
        dps=True,
        language="triton",
        name="oob",
    )
    files = []
    for name, rec in (("d", vadd), ("b", bad), ("g", kit.solution("vadd_f32", GOOD)), ("w", vadd_wl)):
        path = tmp_path / f"{name}.json"
        path.write_text(rec.model_dump_json(exclude_unset=True))
        files.append(str(path))
    out = subprocess.run(
        [sys.executable, "-c", STICKY, *files], check=False, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    s1, log1, fatal, s2, log2 = json.loads(out.stdout.strip().splitlines()[-1])
    assert s1 == "RUNTIME_ERROR" and "illegal" in log1.lower()
    assert fatal and "illegal" in fatal.lower()
    assert s2 == "RUNTIME_ERROR" and "CUDA context is unusable" in log2

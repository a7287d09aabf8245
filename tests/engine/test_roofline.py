"""Work, achieved rates, the floor and the flags of a trace (CPU: meta tensors, fake peaks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sweep.backendbench import build_records, parse_trace
from sweep.config import EvalSettings
from sweep.engine import EngineCache, evaluate
from sweep.engine.run._work import count_work
from sweep.schema import Ceilings, Definition, Workload
from sweep.schema import peaks as peaks_module
from sweep.schema.peaks import Datasheet
from sweep.schema.task import Task

REPO = Path(__file__).resolve().parents[2]
Kit = Any


def _gemm(**extra: str) -> Definition:
    """C = A @ B.T, float32, M x K by N x K; the shipped gemm's shape, float32, no work fields."""
    return Definition.model_validate(
        {
            "name": "mm_f32",
            "op_type": "gemm",
            "axes": {
                "M": {"type": "var"},
                "N": {"type": "const", "value": 32},
                "K": {"type": "const", "value": 16},
            },
            "inputs": {
                "A": {"shape": ["M", "K"], "dtype": "float32"},
                "B": {"shape": ["N", "K"], "dtype": "float32"},
            },
            "outputs": {"C": {"shape": ["M", "N"], "dtype": "float32"}},
            "reference": "import torch\n\ndef run(A, B):\n    return A @ B.t()\n",
            **extra,
        }
    )


def _wl(m: int = 8) -> Workload:
    return Workload.model_validate(
        {"uuid": f"mm-{m}", "axes": {"M": m}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}}
    )


def _reference(defn: Definition) -> Any:
    namespace: dict[str, Any] = {}
    exec(defn.reference, namespace)  # noqa: S102 - the test's own reference
    return namespace["run"]


GOOD = "def run(A, B):\n    return A @ B.t()\n"


# ---- work: declared, counted, failing quietly ------------------------------------------


def test_counted_flops_of_a_matmul_on_meta_tensors_and_bytes_of_inputs_and_outputs() -> None:
    defn = _gemm()
    work = count_work(defn, _wl(8), _reference(defn))
    assert work.flops == 2 * 8 * 32 * 16
    assert work.bytes == 4 * (8 * 16 + 32 * 16 + 8 * 32)  # A, B and C, float32
    assert (work.source, work.dtypes, work.notes) == ("counted", ("float32",), ())


def test_declared_expressions_win_and_mixed_sources_are_named() -> None:
    defn = _gemm(flops="2 * M * N * K + 7", bytes="M")
    work = count_work(defn, _wl(4), _reference(defn))
    assert (work.flops, work.bytes, work.source) == (2 * 4 * 32 * 16 + 7, 4.0, "declared")
    half = _gemm(bytes="1000")
    work = count_work(half, _wl(4), _reference(half))
    assert (work.flops, work.bytes, work.source) == (2 * 4 * 32 * 16, 1000.0, "mixed")


def test_elementwise_ops_count_no_flops_but_their_bytes() -> None:
    defn = Definition.model_validate_json((REPO / "definitions/rmsnorm/rmsnorm_h1024.json").read_text())
    bare = defn.model_copy(update={"flops": None, "bytes": None})
    wl = Workload.model_validate(
        {
            "uuid": "r",
            "axes": {"batch_size": 3},
            "inputs": {"hidden_states": {"type": "random"}, "weight": {"type": "random"}},
        }
    )
    work = count_work(bare, wl, _reference(bare))
    assert work.flops == 0.0  # FlopCounterMode knows no elementwise operator
    assert work.bytes == 2 * (3 * 1024 * 2 + 1024)  # bfloat16 in, out and weight
    declared = count_work(defn, wl, _reference(defn))
    assert (declared.flops, declared.bytes, declared.source) == (
        4 * 3 * 1024,
        2 * (2 * 3 * 1024 + 1024),
        "declared",
    )


def test_a_reference_that_needs_values_leaves_flops_unknown_with_a_note() -> None:
    defn = _gemm(reference="def run(A, B):\n    return A * float(A.sum().item())\n")
    work = count_work(defn, _wl(2), _reference(defn))
    assert work.flops is None and work.bytes is not None and work.source == "counted"
    assert work.notes and work.notes[0].startswith(
        "work: FLOPs not counted (the reference does not run on meta"
    )


def test_backendbench_calls_are_counted_from_their_arguments() -> None:
    text = "Operator: aten.mm.default\ncnt: 1, ((T([64, 32], f32), T([32, 16], f32)), {})\n"
    item = next(i for i in build_records(parse_trace(text), source_file="t.txt") if i.op == "aten.mm.default")
    work = count_work(item.definition, item.workloads[0], _reference(item.definition))
    assert work.flops == 2 * 64 * 32 * 16
    assert work.bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert (work.source, work.dtypes) == ("counted", ("float32",))


# ---- the trace: rates, fraction of peak, floor, flags --------------------------------------


def _run(
    kit: Kit,
    defn: Definition,
    body: str = GOOD,
    *,
    settings: EvalSettings | None = None,
    ceilings: Ceilings | None = None,
) -> Any:
    task = Task.make(
        defn, kit.solution(defn.name, body), _wl(64), settings or kit.fast, "CPU", ceilings=ceilings
    )
    return evaluate(task, device="cpu", cache=EngineCache())


def _no_speedup_flag(kit: Kit) -> EvalSettings:
    """The fast settings with a speedup bound no timing noise reaches. GOOD is the reference's
    own expression, so its speedup is 1 but for the CPU's noise; on a loaded 2-core machine it
    once read above 10x ('suspicious', tested on its own below)."""
    return kit.fast.model_copy(update={"suspicious_speedup": 1e9})


def test_a_passed_trace_carries_its_work_and_rates(kit: Kit) -> None:
    ev = _run(kit, _gemm(), settings=_no_speedup_flag(kit)).evaluation
    perf = ev.performance
    assert ev.status.value == "PASSED" and ev.flags is None
    assert (perf.work_flops, perf.work_source) == (2 * 64 * 32 * 16, "counted")
    assert perf.tflops == pytest.approx(perf.work_flops / (perf.latency_ms * 1e-3) / 1e12)
    assert perf.gbps == pytest.approx(perf.work_bytes / (perf.latency_ms * 1e-3) / 1e9)
    # No datasheet for a CPU and no calibration given: no fraction of peak, no floor.
    assert perf.peak_fraction is None and perf.floor_ms is None
    assert "work (counted): 6.55e+04 FLOP, 1.43e+04 bytes, " in ev.log


def test_calibrated_ceilings_give_the_fraction_of_peak(kit: Kit) -> None:
    cpu = Ceilings(hardware="CPU", source="calibrated on testhost at now", tflops={"float32": 1e-3}, gbps=1.0)
    ev = _run(kit, _gemm(), ceilings=cpu).evaluation
    perf = ev.performance
    assert perf.peak_fraction == pytest.approx(max(perf.tflops / 1e-3, perf.gbps / 1.0))
    assert "of calibrated on testhost at now" in ev.log
    assert perf.floor_ms is None  # calibrated CPU ceilings never make a floor
    other = cpu.model_copy(update={"hardware": "NVIDIA_H100"})
    assert _run(kit, _gemm(), ceilings=other).evaluation.performance.peak_fraction is None


def test_a_latency_under_the_floor_is_flagged_impossible_and_keeps_its_status(
    kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fake datasheet for the CPU: 1 FLOP/s, so 65,536 FLOP take at least 65.5 s.
    slow = Datasheet("test CPU", (), {"float32": 1e-12}, 1e-9)
    monkeypatch.setitem(peaks_module.DATASHEETS, "CPU", (slow,))
    ev = _run(kit, _gemm(flops="2 * M * N * K", bytes="4 * (M * K + N * K + M * N)")).evaluation
    assert ev.status.value == "PASSED" and ev.flags == ["impossible"]
    assert ev.performance.floor_ms == pytest.approx(2 * 64 * 32 * 16 * 1e3)
    assert "floor 6.55e+07 ms (compute-bound, datasheet test CPU)" in ev.log
    assert (
        "IMPOSSIBLE: latency " in ev.log and "is under 0.9 x the floor 6.55e+07 ms (declared work" in ev.log
    )
    # A plausible datasheet: the same run is far above its floor, not flagged.
    fast = Datasheet("test CPU", (), {"float32": 1e3}, 1e6)
    monkeypatch.setitem(peaks_module.DATASHEETS, "CPU", (fast,))
    ev = _run(kit, _gemm(), settings=_no_speedup_flag(kit)).evaluation
    assert ev.flags is None and ev.performance.floor_ms is not None
    assert ev.performance.peak_fraction is not None and "IMPOSSIBLE" not in ev.log


def _assessed(kit: Kit, speedup: float, settings: EvalSettings | None = None) -> Any:
    """What the assessment of a PASSED result makes of a latency and a speedup given here (no
    measured time: the flags follow from the figures alone)."""
    import torch

    from sweep.engine.guard._global_state import TorchFlags
    from sweep.engine.run._roofline import assess
    from sweep.engine.run._run_state import RunState
    from sweep.schema import Performance

    defn = _gemm(flops="2 * M * N * K", bytes="4 * (M * K + N * K + M * N)")
    task = Task.make(defn, kit.solution(defn.name, GOOD), _wl(64), settings or kit.fast, "CPU")
    run = RunState(task, torch.device("cpu"), EngineCache(), TorchFlags.read())
    perf = Performance(latency_ms=0.01, reference_latency_ms=0.01 * speedup, speedup_factor=speedup)
    return assess(run, perf)


def test_a_speedup_above_the_bound_is_flagged_suspicious(kit: Kit) -> None:
    flagged = _assessed(kit, 11.0)
    assert flagged.flags == ["suspicious"]
    assert any(
        n.startswith("SUSPICIOUS: speedup 11x is above evaluation.suspicious_speedup (10x)")
        for n in flagged.notes
    )
    assert _assessed(kit, 9.0).flags is None
    relaxed = kit.fast.model_copy(update={"suspicious_speedup": 1e6})
    assert _assessed(kit, 11.0, relaxed).flags is None


def _flagged_trace(kit: Kit) -> Any:
    """A PASSED trace of the engine's, with the flag and the log line of a suspicious speedup set
    here (what the assessment writes, without depending on how fast the machine is)."""
    trace = _run(kit, _gemm())
    ev = trace.evaluation
    log = ev.log + "\nSUSPICIOUS: speedup 12x is above evaluation.suspicious_speedup (10x)"
    return trace.model_copy(
        update={"evaluation": ev.model_copy(update={"flags": ["suspicious"], "log": log})}
    )


def test_flags_and_work_round_trip_in_the_trace_json(kit: Kit) -> None:
    trace = _flagged_trace(kit)
    obj = json.loads(trace.to_json())
    assert obj["evaluation"]["flags"] == ["suspicious"]
    assert {"work_flops", "work_bytes", "work_source", "tflops", "gbps"} <= set(
        obj["evaluation"]["performance"]
    )
    assert "floor_ms" not in obj["evaluation"]["performance"]  # no floor here: not written
    assert type(trace).model_validate_json(trace.to_json()) == trace


def test_work_is_counted_once_per_definition_and_workload(kit: Kit) -> None:
    cache = EngineCache()
    defn = _gemm()
    for _ in range(2):
        task = Task.make(defn, kit.solution(defn.name, GOOD), _wl(64), kit.fast, "CPU")
        evaluate(task, device="cpu", cache=cache)
    assert len(cache.work) == 1


def test_sweep_eval_table_shows_rates_and_flags(kit: Kit) -> None:
    from sweep._cli.evaluate import render_traces

    text = render_traces([_flagged_trace(kit)])
    header, row = text.splitlines()[1:3]
    assert header.split()[-4:] == ["tflops", "gbps", "peak", "flags"]
    assert row.split()[-2:] == ["-", "suspicious"]  # no peak on a CPU; the flag
    assert "mm-64: SUSPICIOUS: speedup " in text

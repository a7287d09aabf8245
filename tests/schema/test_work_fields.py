"""The ``flops``/``bytes`` extension fields of a definition, device peaks and the floor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.schema import Ceilings, Definition
from sweep.schema.expr import ConstraintError, eval_number
from sweep.schema.hardware import short_name
from sweep.schema.peaks import (
    COUNTED_MARGIN,
    DATASHEETS,
    DECLARED_MARGIN,
    datasheet_ceilings,
    floor_margin,
    floor_ms,
)

REPO = Path(__file__).resolve().parents[2]


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        Definition.model_validate(data)
    return str(info.value)


# ---- the fields ---------------------------------------------------------------------------


def test_declared_expressions_load_and_evaluate(definition_data: dict[str, Any]) -> None:
    definition_data.update(flops="2 * n * d + max(n, d)", bytes="4 * (2 * n * d) // 1")
    d = Definition.model_validate(definition_data)
    values = {"n": 5, **d.const_axes()}
    assert eval_number(d.flops or "", values) == 2 * 5 * 8 + 8
    assert eval_number(d.bytes or "", values) == 4 * 80
    assert json.loads(d.to_json())["flops"] == "2 * n * d + max(n, d)"


def test_files_without_the_fields_write_back_unchanged(definition_data: dict[str, Any]) -> None:
    d = Definition.model_validate(definition_data)
    assert d.flops is None and d.bytes is None
    assert json.loads(d.to_json()) == definition_data


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("flops", "2 * nn * d", "flops: unknown axis 'nn' in '2 * nn * d' (did you mean 'n'?); axes: n, d"),
        ("bytes", "4 * q", "bytes: unknown axis 'q' in '4 * q'; axes: n, d"),
        ("flops", "2 * n *", "flops: not a Python expression: '2 * n *'"),
        ("bytes", "__import__('os')", "bytes: Call is not allowed in an expression"),
        ("flops", "n.bit_length()", "flops: Call is not allowed in an expression"),
    ],
)
def test_bad_expressions_are_refused_at_load(
    definition_data: dict[str, Any], field: str, text: str, message: str
) -> None:
    definition_data[field] = text
    assert message in _error(definition_data)


def test_a_truth_value_or_a_negative_number_is_no_work() -> None:
    with pytest.raises(ConstraintError, match="gives a truth value"):
        eval_number("n > 1", {"n": 2})
    with pytest.raises(ConstraintError, match="gives -2, not a number >= 0"):
        eval_number("n - 4", {"n": 2})


def test_sweep_validate_names_file_field_and_bad_axis(tmp_path: Path) -> None:
    data = json.loads((REPO / "definitions/gemm/gemm_n512_k512.json").read_text())
    data["flops"] = "2 * M * NN * K"
    path = tmp_path / "definitions" / "gemm" / "gemm_bad.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 1
    assert (
        f"error: {path}: flops: unknown axis 'NN' in '2 * M * NN * K' (did you mean 'N'?); axes: M, N, K"
        in result.output
    )


def test_shipped_definitions_declare_their_work() -> None:
    for rel in ("gemm/gemm_n512_k512", "rmsnorm/rmsnorm_h1024", "softmax/softmax_f32"):
        d = Definition.model_validate_json((REPO / "definitions" / f"{rel}.json").read_text())
        assert d.flops and d.bytes, rel


# ---- peaks and the floor --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "label", "bf16", "gbps"),
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM5", 989.5, 3350),
        ("NVIDIA_H100", "NVIDIA H100 SXM5", 989.5, 3350),  # no form factor: the fastest
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 756.5, 2000),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL", 835.5, 3900),
        ("NVIDIA H200", "NVIDIA H200 SXM", 989.5, 4800),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM", 312, 2039),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB", 312, 1555),
        ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 312, 1935),
        ("NVIDIA B200", "NVIDIA B200 (HGX)", 2250, 8000),
        ("NVIDIA L40S", "NVIDIA L40S", 362.05, 864),
        ("AMD Instinct MI300X", "AMD Instinct MI300X", 1307.4, 5300),
    ],
)
def test_datasheet_table(device: str, label: str, bf16: float, gbps: float) -> None:
    c = datasheet_ceilings(device)
    assert c is not None and c.source == f"datasheet {label}" and not c.calibrated
    assert (c.tflops["bfloat16"], c.gbps) == (bf16, gbps)


def test_every_entry_has_dense_tensor_rates_and_bandwidth() -> None:
    assert {"H100", "H200", "A100", "B200", "L40S", "MI300X"} <= set(DATASHEETS)
    for sheets in DATASHEETS.values():
        assert sheets[-1].match == ()  # the default variant comes last
        for s in sheets:
            assert s.gbps > 0 and s.tflops["float16"] == s.tflops["bfloat16"] > s.tflops["tf32"]


def test_unknown_hardware_has_no_datasheet() -> None:
    assert datasheet_ceilings("cpu") is None and datasheet_ceilings("NVIDIA GeForce GTX 1080") is None
    assert short_name("AMD Instinct MI300X") == "MI300X"


def test_peak_of_a_dtype() -> None:
    h100 = datasheet_ceilings("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    assert h100.flops_peak(["float16"]) == 989.5
    assert h100.flops_peak(["float32"]) == 494.5  # TF32 tensor cores take float32 data
    assert h100.flops_peak(["float32", "float8_e4m3fn"]) == 1979  # the fastest of the inputs'
    assert h100.flops_peak([]) == 1979  # integers only: the fastest rate the device has
    assert Ceilings(hardware="CPU").flops_peak(["float32"]) is None


def test_floor_is_the_slower_of_compute_and_memory() -> None:
    c = Ceilings(hardware="X", tflops={"float16": 1000.0}, gbps=1000.0)
    # 1e12 FLOP at 1000 TFLOP/s: 1 ms; 1e9 bytes at 1000 GB/s: 1 ms.
    assert floor_ms(2e12, 1e9, ["float16"], c) == (pytest.approx(2.0), "compute")
    assert floor_ms(1e12, 4e9, ["float16"], c) == (pytest.approx(4.0), "memory")
    assert floor_ms(0.0, 1e9, ["float16"], c) == (pytest.approx(1.0), "memory")
    assert floor_ms(None, None, [], c) is None
    assert (floor_margin("declared"), floor_margin("counted"), floor_margin("mixed")) == (
        DECLARED_MARGIN,
        COUNTED_MARGIN,
        COUNTED_MARGIN,
    )

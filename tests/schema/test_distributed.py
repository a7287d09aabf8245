"""The distributed extension of records: validation, derived axes, lossless round trips, bus factors."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from sweep.schema import Definition, check_workload
from sweep.schema.distributed import bus_factor, full_axes
from sweep.schema.peaks import link_peak_gbps
from tests.data.distributed.allreduce import definition, workload


def _ag_gemm() -> dict[str, object]:
    d = json.loads(definition(None).to_json())
    d["axes"]["M"] = {"type": "var"}
    d["distributed"]["derived_axes"] = {"n": "M // W * 4"}
    return d


def test_round_trip_keeps_the_extension_and_an_upstream_reader_sees_an_ordinary_definition() -> None:
    text = _ag_gemm()
    d = Definition.model_validate(text)
    assert json.loads(d.to_json()) == text
    upstream = {k: v for k, v in text.items() if k != "distributed"}
    assert Definition.model_validate(upstream).distributed is None


def test_derived_axes_come_from_the_world_size_and_are_not_required() -> None:
    d = Definition.model_validate(_ag_gemm())
    wl = workload(1).model_copy(update={"axes": {"M": 64, "W": 4}})
    assert check_workload(d, wl) == []
    assert full_axes(d.distributed, wl.axes)["n"] == 64  # type: ignore[arg-type]
    bad = wl.model_copy(update={"axes": {"M": 2, "W": 4}})
    assert any("not a whole number" in e or "gives" in e for e in check_workload(d, bad))


@pytest.mark.parametrize(
    "change",
    [
        {"world_size": 2},  # both a fixed size and an axis
        {"world_size_axis": "nope"},
        {"derived_axes": {"W": "n"}},
        {"message_bytes": "n * bogus"},
        {"collective": "all_to_one"},
    ],
)
def test_bad_blocks_are_refused(change: dict[str, object]) -> None:
    d = json.loads(definition(None).to_json())
    d["distributed"].update(change)
    with pytest.raises(ValidationError):
        Definition.model_validate(d)


@given(st.integers(min_value=2, max_value=64))
def test_bus_factors_follow_nccl_tests(n: int) -> None:
    assert bus_factor("all_reduce", n) == pytest.approx(2 * (n - 1) / n)
    for c in ("all_gather", "reduce_scatter", "all_to_all"):
        assert bus_factor(c, n) == pytest.approx((n - 1) / n)
    assert bus_factor("broadcast", n) == bus_factor("reduce", n) == 1.0


def test_nvlink_peaks_per_gpu_type() -> None:
    assert link_peak_gbps("NVIDIA H100 80GB HBM3") == 450.0
    assert link_peak_gbps("NVIDIA H200") == 450.0
    assert link_peak_gbps("NVIDIA H100 PCIe") is None
    assert link_peak_gbps("CPU") is None

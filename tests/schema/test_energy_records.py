"""The energy extension of a trace and the new clock fields: optional, round-tripping, refusing
values that cannot be measurements."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from sweep.schema import Energy, EnergySide, Trace

from .conftest import EVALUATION, WORKLOAD


def _trace(evaluation_extra: dict[str, object]) -> Trace:
    """The suite's valid PASSED trace, its evaluation with ``evaluation_extra``."""
    evaluation = {**EVALUATION, **evaluation_extra}
    return Trace.model_validate(
        {"definition": "d", "workload": WORKLOAD, "solution": "s", "evaluation": evaluation}
    )


def test_a_trace_with_energy_and_clocks_round_trips() -> None:
    t = _trace(
        {
            "energy": {"reference": {"joules_per_call": 0.02, "calls": 100}, "solution": {"problem": "idle"}},
            "clocks": {"sm_clock_mhz_mean": 1755.5, "clocks_locked": True, "power_limit_w": 700.0},
        }
    )
    again = Trace.model_validate_json(t.to_json())
    assert again == t and again.to_json_obj() == t.to_json_obj()
    assert t.evaluation is not None and t.evaluation.energy is not None
    assert t.evaluation.energy.source == "nvml_total_energy"


def test_a_trace_without_them_is_written_as_before() -> None:
    t = _trace({})
    assert '"energy"' not in t.to_json() and t.evaluation is not None and t.evaluation.energy is None


@pytest.mark.parametrize("bad", [-0.001, math.inf, math.nan])
def test_an_energy_figure_must_be_finite_and_not_negative(bad: float) -> None:
    with pytest.raises(ValidationError):
        EnergySide(joules_per_call=bad)
    with pytest.raises(ValidationError):
        _trace({"clocks": {"power_limit_w": bad}})


def test_unknown_fields_of_a_newer_writer_are_kept() -> None:
    e = Energy.model_validate({"reference": {"joules_per_call": 1.0, "future": 3}, "later": "x"})
    assert e.to_json_obj()["reference"]["future"] == 3 and e.to_json_obj()["later"] == "x"

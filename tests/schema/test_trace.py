"""Trace and Evaluation: the status/field presence rule, NaN and infinities, workload-only
traces, times in a sane range, integers that fit the store."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

import pydantic
import pytest

from sweep.schema import Clocks, Evaluation, Provenance, Status, TimingStats, Trace
from sweep.schema.limits import INT64_MAX
from sweep.schema.trace import check_time

BOTH = {Status.PASSED}
CORRECTNESS_ONLY = {Status.INCORRECT_NUMERICAL}


def _eval(data: dict[str, Any], status: Status, correctness: bool, performance: bool) -> dict[str, Any]:
    out = dict(data, status=status.value)
    if not correctness:
        out.pop("correctness")
    if not performance:
        out.pop("performance")
    return out


def _expected(status: Status) -> tuple[bool, bool]:
    return status in BOTH | CORRECTNESS_ONLY, status in BOTH


@pytest.mark.parametrize("status", list(Status), ids=lambda s: s.value)
@pytest.mark.parametrize(
    ("correctness", "performance"), [(True, True), (True, False), (False, False), (False, True)]
)
def test_presence_rule(
    evaluation_data: dict[str, Any], status: Status, correctness: bool, performance: bool
) -> None:
    data = _eval(evaluation_data, status, correctness, performance)
    if (correctness, performance) == _expected(status):
        ev = Evaluation.model_validate(data)
        assert (ev.correctness is not None, ev.performance is not None) == (correctness, performance)
        return
    with pytest.raises(pydantic.ValidationError) as info:
        Evaluation.model_validate(data)
    need_c, need_p = _expected(status)
    if correctness != need_c:
        word = "include" if need_c else "not include"
        assert f"status {status.value} must {word} correctness" in str(info.value)
    else:
        word = "include" if need_p else "not include"
        assert f"status {status.value} must {word} performance" in str(info.value)


def test_every_seed_status_exists() -> None:
    assert {s.value for s in Status} == {
        "PASSED",
        "INCORRECT_SHAPE",
        "INCORRECT_NUMERICAL",
        "INCORRECT_DTYPE",
        "RUNTIME_ERROR",
        "COMPILE_ERROR",
        "TIMEOUT",
    }


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize(
    ("value", "text"), [(math.nan, '"NaN"'), (math.inf, '"Infinity"'), (-math.inf, '"-Infinity"')]
)
def test_nan_and_infinities_serialize_as_strings_and_read_back(
    evaluation_data: dict[str, Any], workload_data: dict[str, Any], value: float, text: str
) -> None:
    evaluation_data["status"] = "INCORRECT_NUMERICAL"
    evaluation_data.pop("performance")
    # Errors are non-negative (NaN allowed); timing stats take any float.
    evaluation_data["correctness"]["max_absolute_error"] = abs(value)
    evaluation_data["timing"] = {
        "clock": "host",
        "iterations": 1,
        "p10_ms": value,
        "p50_ms": 1.0,
        "p90_ms": 1.0,
        "mean_ms": 1.0,
        "cv": 0.0,
    }
    t = Trace.model_validate(
        {"definition": "vec_add", "workload": workload_data, "solution": "s", "evaluation": evaluation_data}
    )
    line = t.to_json()
    assert f'"p10_ms":{text}' in line
    obj = json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    back = Trace.model_validate(obj)
    assert back.evaluation is not None and back.evaluation.timing is not None
    assert back.evaluation.correctness is not None
    assert _same(back.evaluation.timing.p10_ms, value)
    assert _same(back.evaluation.correctness.max_absolute_error, abs(value))
    assert Trace.model_validate_json(line).to_json() == line


def test_negative_error_is_refused(evaluation_data: dict[str, Any]) -> None:
    evaluation_data["correctness"]["max_absolute_error"] = -1.0
    with pytest.raises(pydantic.ValidationError, match="must be non-negative or NaN"):
        Evaluation.model_validate(evaluation_data)


def test_timestamp_must_be_iso(evaluation_data: dict[str, Any]) -> None:
    evaluation_data["timestamp"] = "yesterday"
    with pytest.raises(
        pydantic.ValidationError,
        match="must be an ISO 8601 timestamp such as 2025-06-01T12:00:00Z, got 'yesterday'",
    ):
        Evaluation.model_validate(evaluation_data)


@pytest.mark.parametrize(
    "ts",
    [
        "0001-01-01T00:00:00+05:00",  # UTC year 0: not even a Python datetime
        "9999-12-31T23:59:59-05:00",  # UTC year 10000
        "0001-01-01T00:00:00Z",
        "1969-12-31T23:59:59Z",
        "2200-01-01T00:00:00Z",
    ],
)
def test_timestamp_outside_the_sane_range_is_refused(evaluation_data: dict[str, Any], ts: str) -> None:
    evaluation_data["timestamp"] = ts
    with pytest.raises(pydantic.ValidationError) as e:
        Evaluation.model_validate(evaluation_data)
    assert (
        f"must be a time between 1970-01-01 and 2200-01-01 UTC (write the real time of the run, e.g. "
        f"2025-06-01T12:00:00Z), got {ts!r}" in str(e.value)
    )


def test_timestamp_in_range_with_a_zone_or_none_is_accepted(evaluation_data: dict[str, Any]) -> None:
    for ts in ("1970-01-01T00:00:00Z", "2199-12-31T23:59:59+00:00", "2025-06-01 12:00", "2025-06-01"):
        evaluation_data["timestamp"] = ts
        assert Evaluation.model_validate(evaluation_data).timestamp == ts
    assert check_time("2025-06-01T12:00:00+02:00") == datetime(2025, 6, 1, 10, tzinfo=timezone.utc)


def test_a_huge_timestamp_is_cut_in_the_message(evaluation_data: dict[str, Any]) -> None:
    evaluation_data["timestamp"] = "x" * 100_000
    with pytest.raises(pydantic.ValidationError) as e:
        Evaluation.model_validate(evaluation_data)
    assert "got 'xxxxx" in str(e.value) and "... (100,000 characters)" in str(e.value)
    assert len(str(e.value)) < 1000


@pytest.mark.parametrize("field", ["started_at", "finished_at"])
def test_provenance_times_are_checked_too(field: str) -> None:
    # Unreadable times used to be stored as NULL and lost without a word.
    for bad in ("yesterday", "0001-01-01T00:00:00+05:00"):
        with pytest.raises(pydantic.ValidationError, match=field):
            Provenance.model_validate({field: bad})
    assert getattr(Provenance.model_validate({field: "2025-06-01T00:00:00Z"}), field) is not None


@pytest.mark.parametrize(
    ("model", "data"),
    [
        ("Evaluation", {"seed": 2**64}),
        ("Evaluation", {"seed": -(2**63) - 1}),
        ("Provenance", {"worker_pid": 2**63}),
        ("Provenance", {"attempt": 10**30}),
        ("Clocks", {"sm_clock_mhz_max": 2**63}),
        ("TimingStats", {"iterations": 2**63}),
    ],
)
def test_integers_beyond_64_bits_are_refused(
    evaluation_data: dict[str, Any], model: str, data: dict[str, Any]
) -> None:
    timing = {
        "clock": "cuda_event",
        "iterations": 3,
        "p10_ms": 1,
        "p50_ms": 1,
        "p90_ms": 1,
        "mean_ms": 1,
        "cv": 0,
    }
    cls = {"Evaluation": Evaluation, "Provenance": Provenance, "Clocks": Clocks, "TimingStats": TimingStats}[
        model
    ]
    base = {"Evaluation": evaluation_data, "TimingStats": timing}.get(model, {})
    with pytest.raises(pydantic.ValidationError, match="Input should be (less|greater) than or equal to"):
        cls.model_validate({**base, **data})
    # The largest that fits is fine.
    key = next(iter(data))
    assert cls.model_validate({**base, key: INT64_MAX if data[key] > 0 else -INT64_MAX - 1})


def test_timestamp_with_z_suffix_is_accepted(evaluation_data: dict[str, Any]) -> None:
    evaluation_data["timestamp"] = "2026-11-22T01:02:03Z"
    assert Evaluation.model_validate(evaluation_data).timestamp.endswith("Z")


def test_workload_only_trace(workload_data: dict[str, Any]) -> None:
    data = {"definition": "vec_add", "solution": None, "workload": workload_data, "evaluation": None}
    t = Trace.model_validate(data)
    assert t.is_workload_only
    assert t.to_json_obj() == data  # explicit nulls are kept


def test_evaluated_trace_is_not_workload_only(
    workload_data: dict[str, Any], evaluation_data: dict[str, Any]
) -> None:
    t = Trace.model_validate(
        {"definition": "vec_add", "workload": workload_data, "solution": "s", "evaluation": evaluation_data}
    )
    assert not t.is_workload_only


def test_extension_fields_round_trip(workload_data: dict[str, Any], evaluation_data: dict[str, Any]) -> None:
    evaluation_data["seed"] = 7
    evaluation_data["timing"] = {
        "clock": "cuda_event",
        "iterations": 100,
        "p10_ms": 0.9,
        "p50_ms": 1.0,
        "p90_ms": 1.2,
        "mean_ms": 1.05,
        "cv": 0.01,
    }
    evaluation_data["environment"]["device_name"] = "NVIDIA H100 80GB HBM3"
    data = {
        "definition": "vec_add",
        "workload": workload_data,
        "solution": "s",
        "evaluation": evaluation_data,
        "provenance": {"task_id": "abc", "sweep": "local", "attempt": 1},
    }
    t = Trace.model_validate(data)
    assert t.provenance is not None and t.provenance.task_id == "abc"
    assert t.to_json_obj() == data


def test_a_confirmation_runs_tuning_note_round_trips_and_is_checked(
    workload_data: dict[str, Any], evaluation_data: dict[str, Any]
) -> None:
    note = {
        "decision": "d/s/H100/all",
        "winner_changes": 2,
        "remeasure_rounds": 3,
        "remeasured_points": 3,
        "ties": 1,
    }
    data = {
        "definition": "vec_add",
        "workload": workload_data,
        "solution": "s",
        "evaluation": evaluation_data,
        "provenance": {"task_id": "abc", "tuning": note},
    }
    t = Trace.model_validate(data)
    assert t.provenance is not None and t.provenance.tuning is not None
    assert t.provenance.tuning.winner_changes == 2
    assert t.to_json_obj() == data
    for bad in ({**note, "winner_changes": -1}, {**note, "decision": ""}, {**note, "ties": "many"}):
        with pytest.raises(pydantic.ValidationError):
            Trace.model_validate({**data, "provenance": {"tuning": bad}})

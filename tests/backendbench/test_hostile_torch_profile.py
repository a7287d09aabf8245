"""Hostile torch.profiler traces: too large, not JSON, not a chrome trace, ATen events with
missing or malformed fields -> a TraceParseError naming the file, the event and the fix, and
nothing written; any JSON whatever -> a clean answer or that error, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.backendbench import _torch_profile as tp
from sweep.backendbench import import_torch_profile, parse_torch_profile
from sweep.errors import SweepError, TraceParseError

pytestmark = pytest.mark.hostile


def _event(**over: object) -> dict[str, object]:
    e: dict[str, object] = {
        "ph": "X",
        "cat": "cpu_op",
        "name": "aten::relu",
        "pid": 1,
        "tid": 1,
        "ts": 10.0,
        "dur": 5.0,
        "args": {
            "Input type": ["float"],
            "Input Dims": [[4, 8]],
            "Input Strides": [[8, 1]],
            "Concrete Inputs": [""],
        },
    }
    e.update(over)
    return e


def _doc(*events: object) -> str:
    return json.dumps({"traceEvents": list(events)})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not JSON"),
        ("[" * 5000 + "]" * 5000, "is not JSON"),
        (json.dumps({"events": []}), "no traceEvents list"),
        (_doc(_event(args=None)), "event 0 (aten::relu): has no 'args' object"),
        (_doc(_event(ts="soon")), "'ts' is 'soon'"),
        (_doc(_event(dur=-1)), "'dur' is -1"),
        (_doc(_event(ts=float("inf"))) if False else _doc(_event(dur=1e400)), "not a finite time"),
        (_doc(_event(args={"Input type": ["float"]})), "shapes not recorded"),
        (_doc(_event(args={"Input type": ["float"], "Input Dims": [[-1]]})), "not a size or stride"),
        (_doc(_event(args={"Input type": ["float"], "Input Dims": [[2**70]]})), "not a size or stride"),
        (_doc(_event(args={"Input type": ["float"], "Input Dims": [[1] * 100]})), "at most 64"),
        (_doc(_event(args={"Input type": [7], "Input Dims": [[1]]})), "Input type of 7"),
        (
            _doc(_event(args={"Input type": ["float"], "Input Dims": [[2, 2]], "Input Strides": [[1]]})),
            "do not match the shape",
        ),
    ],
)
def test_malformed_traces_are_refused_with_the_fix(text: str, message: str) -> None:
    with pytest.raises(TraceParseError) as e:
        parse_torch_profile(text, filename="bad.json")
    assert message in str(e.value) and "bad.json" in str(e.value)
    assert "record_shapes=True" in str(e.value)


def test_calls_it_cannot_describe_are_skipped_and_counted() -> None:
    s = parse_torch_profile(
        _doc(
            _event(
                name="aten::cat",
                args={
                    "Input type": ["TensorList", "Scalar"],
                    "Input Dims": [[], []],
                    "Concrete Inputs": ["", "0"],
                },
            ),
            _event(
                name="aten::add",
                ts=100.0,
                args={
                    "Input type": ["float", "Scalar"],
                    "Input Dims": [[2], []],
                    "Concrete Inputs": ["", ""],
                },
            ),
            _event(name="aten::foo", ts=200.0, args={"Input type": ["Device"], "Input Dims": [[]]}),
            _event(name="not_aten", ts=300.0),
            "not an event",
        ),
        filename="x.json",
    )
    assert s.calls == []
    assert sorted(s.skipped) == [
        "aten::add: a scalar without its value (Concrete Inputs)",
        "aten::cat: a list of tensors (the profiler records no dtypes for them)",
        "aten::foo: an argument of kind 'Device'",
    ]


def test_too_large_a_file_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tp, "MAX_PROFILE_BYTES", 100)
    big = tmp_path / "big.json"
    big.write_text(_doc(*[_event(ts=float(i * 10)) for i in range(10)]))
    with pytest.raises(TraceParseError, match="larger than 100 bytes"):
        import_torch_profile(big, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_folder_or_fifo_is_refused(tmp_path: Path) -> None:
    import os

    with pytest.raises(TraceParseError, match="cannot read"):
        import_torch_profile(tmp_path, tmp_path / "out")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TraceParseError, match="cannot read"):
        import_torch_profile(fifo, tmp_path / "out")


def test_an_overload_torch_lacks_is_a_warning(tmp_path: Path) -> None:
    f = tmp_path / "t.json"
    f.write_text(_doc(_event(name="aten::no_such_op_anywhere")))
    rep = import_torch_profile(f, tmp_path / "out", pick=lambda packet, kinds: None)
    assert rep.operators == [] and "no overload of this torch takes them; 1 calls left out" in rep.warnings[0]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
_arg_kind = st.sampled_from(
    ["float", "c10::Half", "long int", "Scalar", "ScalarList", "", "TensorList", "weird"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(_arg_kind, max_size=4),
    dims=st.lists(_json, max_size=4),
    concrete=st.lists(_json, max_size=4),
    other=_json,
)
def test_any_event_gives_calls_or_a_clean_error(
    kinds: list[str], dims: list[object], concrete: list[object], other: object
) -> None:
    text = _doc(
        _event(args={"Input type": kinds, "Input Dims": dims, "Concrete Inputs": concrete}),
        _event(ts=1000.0, args=other),
        other,
    )
    try:
        s = parse_torch_profile(text, filename="h.json")
    except TraceParseError as e:
        assert "h.json" in str(e)
        return
    for c in s.calls:
        assert c.count >= 1 and len(c.kinds) == len(c.args)


@settings(max_examples=100, deadline=None)
@given(doc=_json)
def test_any_json_document_is_an_answer_or_a_clean_error(doc: object) -> None:
    try:
        parse_torch_profile(json.dumps(doc), filename="d.json")
    except SweepError as e:
        assert "d.json" in str(e)

"""The messages at the sandbox's process boundaries are typed, and survive their encodings."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweep.sandbox._child import ChildParams, Evaluate, Failed, Finished, Phase, Ready, SandboxInfo, Start
from sweep.sandbox._zygote import (
    ExitState,
    Fork,
    Forked,
    Kill,
    Refused,
    Wait,
    ZygoteReady,
    _decode,
    _encode,
)

_text = st.text(max_size=40)
_pid = st.integers(min_value=1, max_value=2**31 - 1)
_zygote_messages = st.one_of(
    st.builds(Fork, _text, st.builds(ChildParams, _text, _text, st.none() | _text)),
    st.builds(Wait, _pid, st.floats(min_value=0, max_value=1e6)),
    st.builds(Kill, _pid),
    st.builds(Forked, _pid),
    st.builds(ZygoteReady, _pid),
    st.builds(Refused, _text),
    st.builds(ExitState, st.booleans(), st.none() | st.integers(0, 255), st.none() | st.integers(1, 64)),
)


@given(_zygote_messages)
def test_zygote_messages_round_trip_through_json(msg: object) -> None:
    assert _decode(_encode(msg)) == msg  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "data",
    [b"", b"[]", b"{}", b'{"op": "fork"}', b'{"op": "nuke", "pid": 1}', b'{"op": "kill", "pid": 1, "x": 2}'],
)
def test_a_zygote_message_that_is_not_one_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError, match="not a zygote message"):
        _decode(data)


@pytest.mark.parametrize(
    "msg",
    [
        Start(),
        Ready(SandboxInfo(pid=3, device="cpu", libs={"python": "3"}, phases=True)),
        Evaluate(b"blob", b"records"),
        Phase("build"),
        Finished(b"{}", None, 1.0, 2.0),
        Failed("Traceback ..."),
    ],
)
def test_sandbox_messages_pickle_as_their_own_type(msg: object) -> None:
    back = pickle.loads(pickle.dumps(msg, pickle.HIGHEST_PROTOCOL))
    assert type(back) is type(msg) and back == msg

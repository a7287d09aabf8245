"""Offers that are not what they claim (``sweep.sandbox.handover``): the worker never trusts a
socket that does not answer as the zygote named, never kills a process it did not verify,
and falls back to a zygote of its own; the fork message's environment is parsed strictly."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.sandbox import Sandbox, SandboxSpec
from sweep.sandbox._child import ChildParams
from sweep.sandbox._zygote import Fork, _decode, _encode
from sweep.sandbox.handover import ZygoteOffer, recipe_for, this_host, zygote_environment
from sweep.schema import Status

from ..cluster.conftest import FAKE_BACKEND, toy_tasks

pytestmark = pytest.mark.hostile


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ho-") as d:
        yield Path(d)


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this user that an offer names as its zygote, which it is not."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc
    proc.kill()
    proc.wait()


def _offer(path: Path, pid: int, **change: object) -> ZygoteOffer:
    offer = ZygoteOffer(
        recipe=recipe_for(FAKE_BACKEND, "cpu", (), zygote_environment(())),
        socket_path=str(path),
        pid=pid,
        host=this_host(),
    )
    return dataclasses.replace(offer, **change)  # type: ignore[arg-type]


def _impostor(path: Path, answer: bytes) -> threading.Thread:
    """A listener at ``path`` that answers its first caller ``answer`` and then hangs up."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        conn.send(answer)
        conn.recv(1)  # until the caller is done
        conn.close()
        listener.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


def _runs_on_its_own(offer: ZygoteOffer) -> str:
    with Sandbox(SandboxSpec(backend=FAKE_BACKEND, preload=()), offer=offer) as sb:
        trace = sb.run(toy_tasks(["ok"])[0])
        assert trace.evaluation is not None and trace.evaluation.status is Status.PASSED
        assert not sb.stats.zygote_adopted and sb._zygote is not None and not sb._zygote.adopted
        assert sb.stats.handover_refused is not None
        return sb.stats.handover_refused


def test_an_offer_whose_socket_is_missing(folder: Path, bystander: subprocess.Popen[bytes]) -> None:
    why = _runs_on_its_own(_offer(folder / "nothing", bystander.pid))
    assert "could not be reached" in why
    assert bystander.poll() is None


@pytest.mark.parametrize(
    "answer",
    [b"garbage", b'{"op": "forked", "pid": 1}', b'{"op": "ready"}', b""],
    ids=["not-json", "not-ready", "no-pid", "empty"],
)
def test_an_offer_answered_by_something_else_is_not_adopted_nor_killed(
    folder: Path, bystander: subprocess.Popen[bytes], answer: bytes
) -> None:
    path = folder / "z"
    t = _impostor(path, answer)
    why = _runs_on_its_own(_offer(path, bystander.pid))
    assert "did not answer" in why
    t.join(10)
    assert bystander.poll() is None  # never verified: never signalled


def test_an_offer_whose_zygote_names_another_pid(folder: Path, bystander: subprocess.Popen[bytes]) -> None:
    path = folder / "z"
    t = _impostor(path, json.dumps({"op": "ready", "pid": 1, "ready_at": None}).encode())
    why = _runs_on_its_own(_offer(path, bystander.pid))
    assert "not " + str(bystander.pid) in why
    t.join(10)
    assert bystander.poll() is None


def test_an_offer_from_another_machine_is_not_even_reached(
    folder: Path, bystander: subprocess.Popen[bytes]
) -> None:
    path = folder / "z"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(1)
    listener.settimeout(0.5)
    try:
        why = _runs_on_its_own(_offer(path, bystander.pid, host="other-boot/other-host"))
        assert "another machine" in why
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody connected
    finally:
        listener.close()


_names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00="), min_size=1, max_size=20
)


@settings(max_examples=60, deadline=None)
@given(
    env=st.lists(
        st.tuples(_names, st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)), max_size=5
    ),
    unset=st.lists(_names, max_size=3),
)
def test_a_fork_message_carries_the_childs_environment_exactly(
    env: list[tuple[str, str]], unset: list[str]
) -> None:
    fork = Fork("log", ChildParams(FAKE_BACKEND, "cuda", "/f", tuple(env), tuple(unset)))
    assert _decode(_encode(fork)) == fork


@settings(max_examples=80, deadline=None)
@given(junk=st.one_of(st.integers(), st.text(max_size=10), st.lists(st.integers(), max_size=3), st.none()))
def test_a_fork_message_with_a_malformed_environment_is_refused(junk: object) -> None:
    for field in ("env", "unset"):
        child = {"backend": "b", "device_kind": "cpu", "folder": None, field: junk}
        if isinstance(junk, list) and (field == "unset" or not junk):
            continue  # valid: no variables, or names (made strings)
        data = json.dumps({"op": "fork", "log": "l", "child": child}).encode()
        with pytest.raises(ValueError, match="not a zygote message"):
            _decode(data)

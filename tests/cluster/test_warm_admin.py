"""The address check every command that connects asks first (``sweep workers``, launch,
profile): it refuses at once where Ray would retry for minutes."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from sweep.cluster._address import address_problem


def _free_port() -> int:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_closed_port_is_refused_at_once() -> None:
    why = address_problem(f"127.0.0.1:{_free_port()}")
    assert why is not None and why.startswith("nothing answers there")


def _serve(reply: bytes | None) -> Iterator[int]:
    """A server on 0.0.0.0 that answers every connection with ``reply`` (``None``: silence)."""
    srv = socket.socket()
    srv.bind(("0.0.0.0", 0))
    srv.listen(8)
    conns: list[socket.socket] = []

    def run() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            conns.append(c)
            if reply is not None:
                c.sendall(reply)

    threading.Thread(target=run, daemon=True).start()
    try:
        yield int(srv.getsockname()[1])
    finally:
        srv.close()
        for c in conns:
            c.close()


@pytest.fixture
def grpc_like() -> Iterator[int]:
    # What a gRPC server sends first: a SETTINGS frame (here empty), on stream 0.
    yield from _serve(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")


@pytest.fixture
def http1() -> Iterator[int]:
    yield from _serve(b"HTTP/1.1 400 Bad Request\r\n\r\n")


@pytest.fixture
def silent() -> Iterator[int]:
    yield from _serve(None)


def test_a_server_that_speaks_grpc_passes(grpc_like: int) -> None:
    assert address_problem(f"127.0.0.1:{grpc_like}") is None


def test_a_server_of_another_protocol_is_no_ray_cluster(http1: int) -> None:
    why = address_problem(f"127.0.0.1:{http1}")
    assert why is not None and "no Ray cluster" in why and "gRPC" in why


def test_a_silent_server_is_refused_within_the_probe_timeout(silent: int) -> None:
    t0 = time.monotonic()
    why = address_problem(f"127.0.0.1:{silent}", timeout_s=1.0)
    assert why is not None and "said nothing within 1 s" in why
    assert time.monotonic() - t0 < 30


def test_with_tls_only_the_connection_is_checked(silent: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_USE_TLS", "1")
    assert address_problem(f"127.0.0.1:{silent}", timeout_s=1.0) is None


@pytest.mark.parametrize(
    "address", ["garbage", "host:notaport", ":6379", "x" * 5000, "local", "1.2.3.4:99999"]
)
def test_addresses_of_other_forms_are_left_to_ray(address: str) -> None:
    assert address_problem(address) is None


def test_ray_client_addresses_are_checked() -> None:
    port = _free_port()
    why = address_problem(f"ray://127.0.0.1:{port}")
    assert why is not None and why.startswith("nothing answers there")


def test_an_ipv6_literal_is_checked() -> None:
    why = address_problem("[::1]:1")
    assert why is not None and why.startswith("nothing answers there")

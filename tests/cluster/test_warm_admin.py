"""``sweep workers``'s library side without a cluster: the address check that refuses at once
where Ray would retry for minutes."""

from __future__ import annotations

import socket

import pytest

from sweep.cluster.warm_admin import _unreachable


def test_a_closed_port_is_refused_at_once() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    why = _unreachable(f"127.0.0.1:{port}")
    assert why is not None and why.startswith("nothing answers there")


def test_a_listening_port_passes() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        assert _unreachable(f"127.0.0.1:{s.getsockname()[1]}") is None


@pytest.mark.parametrize(
    "address", ["auto", "garbage", "host:notaport", "ray://127.0.0.1:1", ":6379", "x" * 5000]
)
def test_addresses_of_other_forms_are_left_to_ray(address: str) -> None:
    assert _unreachable(address) is None


def test_an_ipv6_literal_is_checked() -> None:
    why = _unreachable("[::1]:1")
    assert why is not None and why.startswith("nothing answers there")

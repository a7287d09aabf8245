"""Whether a Ray cluster answers at an address, found in seconds.

Ray retries an address where nothing answers for many minutes (about 14 before ``ray.init``
gives up: twenty tries of half a minute each). Every command that connects to a cluster asks
:func:`address_problem` first, with the same words: a launch, ``sweep profile`` and anything
else through :func:`sweep.cluster.connect.connect`, and ``sweep workers``
(:mod:`sweep.cluster.warm_admin`).

The address is read as Ray reads it (``auto`` and ``RAY_ADDRESS``; ``localhost`` and
``127.0.0.1`` become this node's address), then probed twice, each bounded by
:data:`PROBE_TIMEOUT_S`: a TCP connection (refused, unreachable, no such host), and the first
bytes of HTTP/2, which every gRPC server (Ray's GCS, the Ray Client server) answers with its
settings at once: a port where something else listens, or that accepts and stays silent, is
refused too. With ``RAY_USE_TLS`` set, the second probe is left out (the server speaks TLS).
"""

from __future__ import annotations

import os
import socket

__all__ = ["PROBE_TIMEOUT_S", "address_problem"]

#: Seconds each probe of an address waits (a host that drops packets, a silent server).
PROBE_TIMEOUT_S = 5.0
#: The port of a ``ray://`` address that names none (Ray Client's).
_CLIENT_PORT = 10001
#: What an HTTP/2 client sends first: the preface, then an empty SETTINGS frame.
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS = 0x04


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT``, ``[IPv6]:PORT`` or ``ray://HOST[:PORT]``; ``None``
    for another form (Ray resolves or refuses it itself, at once)."""
    rest = address.strip()
    client = rest.startswith("ray://")
    rest = rest.removeprefix("ray://").rstrip("/")
    host, sep, port = rest.rpartition(":")
    if client and (not sep or "]" in port):  # ray://host: Ray Client's port
        host, port = rest, str(_CLIENT_PORT)
    elif not sep:
        return None
    host = host.strip("[]")
    if not host or "/" in rest or not port.isdigit() or len(port) > 5 or not 0 < int(port) < 65536:
        return None
    return host, int(port)


def _as_ray_reads_it(address: str) -> str:
    """The ``HOST:PORT`` Ray connects to for ``address`` (``auto`` resolved, ``localhost`` made
    this node's address); ``address`` itself when Ray would not read it so (``ray://``) or
    cannot (it then refuses it at once)."""
    if address.strip().startswith("ray://"):
        return address
    try:
        from ray._private.services import canonicalize_bootstrap_address

        found = canonicalize_bootstrap_address(address.strip())
    except Exception:  # noqa: BLE001 - a private helper of Ray: any failure means "as written"
        return address
    return str(found) if found else address


def _speaks_grpc(conn: socket.socket) -> bool:
    """Whether the server at the other end of ``conn`` answers the HTTP/2 preface with a
    SETTINGS frame, as every gRPC server does first (RFC 9113, 3.4)."""
    conn.sendall(_PREFACE)
    head = b""
    while len(head) < 9:
        chunk = conn.recv(9 - len(head))
        if not chunk:
            return False
        head += chunk
    return head[3] == _SETTINGS and head[5:9] == b"\x00\x00\x00\x00"


def address_problem(address: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why no Ray cluster answers at ``address``, found within a few times ``timeout_s``
    seconds, or ``None`` (one answers, or the address is of a form Ray refuses at once itself,
    or ``auto`` finds no cluster to name).

    The words: ``nothing answers there (<why>)``, or ``something listens there but it is no
    Ray cluster (...)``.
    """
    seen = _as_ray_reads_it(address) if address.strip() != "local" else address
    where = _host_port(seen)
    if where is None:
        return None
    host, port = where
    at = "" if seen.strip() == address.strip() else f" (Ray reads it as {seen})"
    try:
        conn = socket.create_connection((host, port), timeout=timeout_s)
    except (OSError, ValueError, OverflowError, UnicodeError) as e:
        return f"nothing answers there{at} ({e})"
    with conn:
        if os.environ.get("RAY_USE_TLS", "0").strip().lower() in ("1", "true", "yes"):
            return None
        try:
            if _speaks_grpc(conn):
                return None
            why = "it does not answer as a gRPC server, as Ray's GCS does"
        except TimeoutError:
            why = f"it said nothing within {timeout_s:g} s"
        except OSError as e:
            why = f"it closed the connection ({e.strerror or e})"
    return f"something listens there{at} but it is no Ray cluster: {why}"

"""Listing and stopping the warm workers of a running cluster (``sweep workers``).

See :mod:`sweep.cluster.warm` for what a warm worker is. Stopping claims a worker first (so
no launch takes it between the check and the kill), then kills its actor; one leased by a
running launch is left to it unless forced.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import sweep.cluster.warm
from sweep.cluster._address import address_problem
from sweep.cluster._fingerprint import code_digest
from sweep.cluster._lease import Claim, Wanted, WarmState
from sweep.cluster.warm import NAMESPACE, answer, kill_worker, survey
from sweep.errors import ClusterError, shown

__all__ = ["StopResult", "WarmWorker", "attached", "stop_warm_workers", "warm_workers"]


@dataclass(frozen=True)
class WarmWorker:
    """A warm worker as ``sweep workers`` lists it: its name, its description (``None`` when it
    did not answer in time: being placed or starting, or hung), and whether its code is this
    checkout's (``same_code``)."""

    name: str
    state: WarmState | None
    same_code: bool

    @property
    def stale(self) -> bool:
        """Whether a launch from this checkout would replace it (another code, or something
        changed under it since it started); one that does not answer is not judged."""
        return self.state is not None and (not self.same_code or bool(self.state.changed))


def warm_workers() -> list[WarmWorker]:
    """Every warm worker of the connected cluster (Ray must be initialised), by node and GPU;
    those that do not answer last."""
    codes: dict[str, str] = {}
    out = []
    for f in survey():
        if f.state is None:
            out.append(WarmWorker(f.name, None, same_code=False))
            continue
        backend = f.state.backend
        if backend not in codes:
            codes[backend] = code_digest(backend)
        out.append(WarmWorker(f.name, f.state, same_code=codes[backend] == f.state.code))
    out.sort(key=lambda w: (w.state is None, *(() if w.state is None else _place(w.state)), w.name))
    return out


def _place(s: WarmState) -> tuple[str, str, str]:
    return (s.hostname, s.node_id, s.gpu_id or "")


@dataclass
class StopResult:
    """What :func:`stop_warm_workers` did: the workers stopped, and those left running with
    why (leased by a running launch, or not answering)."""

    stopped: list[WarmWorker] = field(default_factory=list)
    left: list[tuple[WarmWorker, str]] = field(default_factory=list)


def stop_warm_workers(*, stale_only: bool, force: bool = False) -> StopResult:
    """Stop warm workers of the connected cluster: all of them, or the stale ones
    (:attr:`WarmWorker.stale`). One leased by a running launch is left to it, and one that
    does not answer (it may be a launch's worker still starting) is left too, unless
    ``force`` (a launch that loses a worker replaces it, as if its node had died)."""
    result = StopResult()
    stopper = f"sweep-workers-stop-{secrets.token_hex(3)}"
    for w in warm_workers():
        if stale_only and not w.stale:
            continue
        actor = _actor(w.name)
        if actor is None:
            continue  # gone meanwhile
        if w.state is None and not force:
            result.left.append((w, f"no answer within {sweep.cluster.warm.ANSWER_S:g} s (starting, or hung)"))
            continue
        if w.state is None:  # asking again would wait as long: stop it
            kill_worker(actor)
            result.stopped.append(w)
            continue
        # Claimed first, so no launch takes it between this check and the kill.
        claim = answer(actor.claim.remote(Wanted(stopper, "", "", "", 60.0, 60.0)))
        if isinstance(claim, Claim) and not claim.granted and not force:
            result.left.append((w, claim.refused or "busy"))
            continue
        kill_worker(actor)
        result.stopped.append(w)
    return result


def _actor(name: str) -> Any:
    import ray

    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None


@contextlib.contextmanager
def attached(address: str | None) -> Iterator[None]:
    """Connected to the Ray cluster at ``address`` for the duration (a Ray this process has
    initialised already is used as it is, when ``address`` is its own or ``None``).

    Raises:
        ClusterError: No address, or the cluster cannot be reached.
    """
    import ray

    if ray.is_initialized():  # a test, a notebook: its connection, if it is to that cluster
        current = ray.get_runtime_context().gcs_address
        if address and address != current:
            raise ClusterError(
                f"this process is connected to the Ray cluster at {current}, not {shown(address)}: "
                "ask from a process of its own (the sweep command)"
            )
        yield
        return
    if not address:
        raise ClusterError(
            "warm workers live on a Ray cluster started apart (ray start --head), and no address "
            "was given: pass --address HOST:PORT or set RAY_ADDRESS"
        )
    problem = address_problem(address)
    if problem is not None:
        raise ClusterError(
            f"cannot connect to the Ray cluster at {shown(address)}: {problem}. Check the address "
            "(--address or RAY_ADDRESS) and that the cluster runs (ray status)."
        )
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ClusterError(
            f"cannot connect to the Ray cluster at {shown(address)}: {e}. Check the address (--address or RAY_ADDRESS)."
        ) from None
    try:
        yield
    finally:
        ray.shutdown()

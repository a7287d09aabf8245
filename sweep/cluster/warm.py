"""Warm workers: GPU workers that outlive a launch on an existing Ray cluster.

A launch against a running cluster (an ``address``) leaves its workers running, each with
its zygote (torch imported), its sandbox (CUDA context, built solutions) and its idle clock;
the next launch reuses them instead of paying Ray's worker start, ``import torch`` and CUDA
initialisation again. On an embedded Ray there is nothing to keep (it dies with the command),
so launches there use :class:`~sweep.cluster.workers.FreshWorkers`.

Design:

- **Named detached actors** in the namespace :data:`NAMESPACE`, named ``sweep-worker-<hex>``.
  The node, GPU and fingerprint a name could carry are not known when Ray is asked to create
  the actor (Ray places it), so each worker *describes* itself instead
  (:class:`~sweep.cluster._lease.WarmState`), and a launch asks every one.
- **Checked, never assumed** (``_fingerprint``): a worker is reused only when its pool
  (target and Ray options) and launch key (sandbox spec, runtime environment) equal the
  launch's, its code digest equals the launching checkout's, and nothing changed under it
  since it started (its code on disk, key packages' versions, its Python). The worker
  itself runs these checks when it is claimed. Idle workers of the launch's pool that fail
  them are stopped (they hold the GPUs the launch needs) and replaced by new ones.
- **A lease** (``_lease``): a worker serves one launch at a time. A claim is refused while
  another run holds it; each call carries the run id and is refused unless that run holds
  it; the driver renews every :data:`RENEW_S` seconds and releases at its end. A driver
  that died never releases: its lease expires after :data:`LEASE_S` seconds.
- **Idle timeout** (``ray.idle_timeout_s``, default 10 minutes): an unleased worker stops
  itself after that long, so a cluster is not held forever; ``sweep workers stop`` stops
  them at once (:mod:`sweep.cluster.warm_admin`).
- **Faults as before**: a worker that dies or breaks during a launch is stopped and
  replaced by the driver loop (``WorkerSource.stop``), never released for reuse; a
  reused worker that does not become ready during its launch is stopped at the end.
- **Opt-out**: ``ray.keep_workers: false`` in the config, or ``sweep launch --no-keep-workers``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sweep.cluster._fingerprint import code_digest, launch_key
from sweep.cluster._lease import Claim, Wanted, WarmState
from sweep.cluster._worker_actor import actor_class
from sweep.cluster.connect import Pool
from sweep.cluster.workers import Started
from sweep.sandbox.supervisor import SandboxSpec

__all__ = [
    "ANSWER_S",
    "LEASE_S",
    "NAMESPACE",
    "RENEW_S",
    "Found",
    "WarmState",
    "WarmWorkers",
    "answer",
    "kill_worker",
    "pool_signature",
    "survey",
]

#: The Ray namespace of warm workers.
NAMESPACE = "kernel-sweep"
#: Seconds a lease lasts unless renewed (how long a dead driver's workers stay taken).
LEASE_S = 60.0
#: Seconds between a driver's lease renewals.
RENEW_S = 10.0
#: Seconds to wait for a worker's control answer (they answer at once; a loaded host is slow).
ANSWER_S = 10.0
_NAME_PREFIX = "sweep-worker-"


def pool_signature(pool: Pool) -> str:
    """What a worker was created for, as far as Ray placement goes: target and options."""
    return f"{pool.target} {json.dumps(pool.options(), sort_keys=True)}"


def answer(ref: Any, timeout: float | None = None) -> Any:
    """``ray.get(ref)`` of a control call, or ``None`` when the actor is gone or does not
    answer within ``timeout`` seconds (:data:`ANSWER_S`, read at the call, by default)."""
    import ray

    try:
        return ray.get(ref, timeout=ANSWER_S if timeout is None else timeout)
    except Exception:  # noqa: BLE001 - dead, hung, or not a warm worker: no answer
        return None


def kill_worker(actor: Any) -> None:
    """Kill a warm worker's actor (its name and GPU are free at once); it may be gone."""
    import ray

    with contextlib.suppress(Exception):  # it may be gone already
        ray.kill(actor, no_restart=True)


@dataclass(frozen=True)
class Found:
    """A warm worker: its name, actor handle and description (``None``: it did not answer in
    time: still being placed or starting, or hung)."""

    name: str
    actor: Any
    state: WarmState | None


def survey(timeout: float | None = None) -> list[Found]:
    """Every warm worker of the connected cluster, asked to describe itself within ``timeout``
    seconds (:data:`ANSWER_S` by default)."""
    import ray

    actors = []
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name = entry["name"]
        if entry["namespace"] != NAMESPACE or not name.startswith(_NAME_PREFIX):
            continue
        with contextlib.suppress(Exception):  # gone between the listing and now
            actors.append((name, ray.get_actor(name, namespace=NAMESPACE)))
    refs: list[Any] = [a.describe.remote() for _, a in actors]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=ANSWER_S if timeout is None else timeout)
    out = []
    for (name, actor), ref in zip(actors, refs, strict=True):
        state = answer(ref, timeout=0)
        out.append(Found(name, actor, state if isinstance(state, WarmState) else None))
    return out


class _WithLease:
    """``actor.evaluate_batch`` with the lease's run id added to every call."""

    def __init__(self, method: Any, owner: str) -> None:
        self._method = method
        self._owner = owner

    def remote(self, envelopes: Any, **kwargs: Any) -> Any:
        return self._method.remote(envelopes, self._owner, **kwargs)


class _Leased:
    """What the driver loop calls for a warm worker (see ``workers.Started``)."""

    def __init__(self, actor: Any, owner: str, reused: bool) -> None:
        self.actor = actor
        self.reused = reused
        self.ready = actor.ready
        self.evaluate_batch = _WithLease(actor.evaluate_batch, owner)


class WarmWorkers:
    """The :class:`~sweep.cluster.workers.WorkerSource` of a launch on an existing cluster:
    reuses matching warm workers, replaces stale idle ones, keeps its own after the launch.

    Args:
        run_id: The launch's run id (the lease's holder, stamped on traces).
        idle_timeout_s: Seconds an unleased worker waits before it stops itself.
        lease_s: Seconds a lease lasts unless renewed.
        renew_s: Seconds between renewals.
    """

    def __init__(
        self, run_id: str, *, idle_timeout_s: float, lease_s: float = LEASE_S, renew_s: float = RENEW_S
    ) -> None:
        import ray

        self._run_id = run_id
        self._idle_timeout_s = idle_timeout_s
        self._lease_s = lease_s
        self._renew_s = renew_s
        self._cls: Any = actor_class()
        # The driver's runtime environment as Ray resolved it: package URIs are content hashes.
        env = ray.get_runtime_context().runtime_env
        self._runtime_env = json.dumps(dict(env), sort_keys=True, default=str)
        self._codes: dict[str, str] = {}
        self._found: list[Found] | None = None
        self._pruned: set[str] = set()
        self._held: list[_Leased] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._renewer: threading.Thread | None = None
        #: Why warm workers were stopped and replaced (for the launch's output).
        self.replaced: list[str] = []

    def wanted(self, pool: Pool, spec: SandboxSpec) -> Wanted:
        """What this launch asks of a worker of ``pool``."""
        code = self._codes.get(spec.backend)
        if code is None:
            code = self._codes[spec.backend] = code_digest(spec.backend)
        sig = pool_signature(pool)
        return Wanted(
            owner=self._run_id,
            pool=sig,
            key=launch_key(spec, sig, self._runtime_env),
            code=code,
            lease_s=self._lease_s,
            idle_timeout_s=self._idle_timeout_s,
        )

    def start(self, pool: Pool, spec: SandboxSpec) -> Started:
        """A matching idle warm worker of ``pool``, else a new one (named, detached)."""
        wanted = self.wanted(pool, spec)
        if self._found is None:
            self._found = [f for f in survey() if f.state is not None]
        if wanted.pool not in self._pruned:
            self._pruned.add(wanted.pool)
            self._prune(wanted)
        for f in list(self._found):
            s = f.state
            if s is None or s.pool != wanted.pool or s.owner is not None or s.busy_s is not None:
                continue
            self._found.remove(f)
            claim = answer(f.actor.claim.remote(wanted))
            if not isinstance(claim, Claim) or not claim.granted:
                continue  # gone, or taken by another launch meanwhile
            if claim.stale:
                self._replace(f.actor, claim)
                continue
            return self._hold(f.actor, reused=True)
        name = _NAME_PREFIX + secrets.token_hex(6)
        actor = self._cls.options(
            name=name, namespace=NAMESPACE, lifetime="detached", **pool.options()
        ).remote(spec, self._run_id, wanted)
        return self._hold(actor, reused=False)

    def _prune(self, wanted: Wanted) -> None:
        """Stop the idle workers of ``wanted.pool`` that cannot serve this launch."""
        assert self._found is not None
        for f in list(self._found):
            s = f.state
            if s is None or s.pool != wanted.pool or s.owner is not None or s.busy_s is not None:
                continue
            if s.key == wanted.key and s.code == wanted.code and not s.changed:
                continue
            self._found.remove(f)
            claim = answer(f.actor.claim.remote(wanted))
            if isinstance(claim, Claim) and claim.granted:
                if claim.stale:
                    self._replace(f.actor, claim)
                else:  # its description was out of date: it can serve after all
                    answer(f.actor.release.remote(self._run_id))
                    self._found.append(
                        Found(f.name, f.actor, replace(claim.state, owner=None, lease_left_s=None))
                    )

    def _replace(self, actor: Any, claim: Claim) -> None:
        """Stop a stale worker this launch has claimed (nobody else can take it meanwhile)."""
        kill_worker(actor)
        s = claim.state
        where = f"{s.hostname} GPU {s.gpu_id}" if s.gpu_id else s.hostname
        self.replaced.append(f"{s.name} ({where}): {'; '.join(claim.stale)}")

    def _hold(self, actor: Any, *, reused: bool) -> Started:
        leased = _Leased(actor, self._run_id, reused)
        with self._lock:
            self._held.append(leased)
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, name="sweep-lease-renew", daemon=True)
                self._renewer.start()
        return Started(leased, reused=reused)

    def _renew(self) -> None:
        while not self._done.wait(self._renew_s):
            with self._lock:
                held = list(self._held)
            for leased in held:
                with contextlib.suppress(Exception):  # a dead one is the loop's business
                    leased.actor.renew.remote(self._run_id)

    def stop(self, handle: Any) -> None:
        """A worker died or broke in this launch: stop it, unless another run holds it now
        (this launch's lease expired and it was taken: it is that run's, and sound)."""
        with self._lock:
            if handle in self._held:
                self._held.remove(handle)
        state = answer(handle.actor.describe.remote(), timeout=2.0)
        if isinstance(state, WarmState) and state.owner not in (None, self._run_id):
            return
        kill_worker(handle.actor)

    def finish(self, workers: Sequence[tuple[Any, bool]]) -> None:
        """Release the live workers (they stay warm); stop a reused one that is not ready
        within :data:`ANSWER_S` (it was before: something is wrong with it). A new one
        still starting is released: it becomes ready for the next launch."""
        import ray

        self._done.set()
        unready = {id(h): h.ready.remote() for h, ready in workers if h.reused and not ready}
        if unready:  # the loop may end before it hears from a worker it did not need
            ray.wait(list(unready.values()), num_returns=len(unready), timeout=ANSWER_S)
        refs = []
        for handle, _ in workers:
            ref = unready.get(id(handle))
            if ref is not None and answer(ref, timeout=0) is None:
                kill_worker(handle.actor)
            else:
                refs.append(handle.actor.release.remote(self._run_id))
        if refs:  # wait, so the next launch finds them free rather than leased
            ray.wait(refs, num_returns=len(refs), timeout=ANSWER_S)
        with self._lock:
            self._held.clear()

"""What makes a warm worker stale: the code it runs, what it was started for, what it runs on.

Three things are compared before a launch reuses a warm worker (``sweep.cluster.warm``):

- **code**: a digest of the ``sweep`` package's sources (``.py`` and ``.json`` files, by
  relative path and content) and of the backend module's file when it lives outside
  ``sweep`` (a test backend, a user's). The worker computes its own when it starts, from
  the files it imported (the copy Ray shipped, or a shared checkout), and again at each
  claim; the launching driver computes its own. All three must be equal.
- **launch key** (:func:`launch_key`): the sandbox spec (backend, preloads, device kind,
  start timeout), the pool (hardware target and Ray options: GPUs, accelerator type) and
  the runtime environment Ray resolved for the driver (``py_modules`` and ``working_dir``
  are content-hashed package URIs; ``env_vars``, ``pip``...). Environment variables reach
  a worker only from its node's Ray and from the runtime environment, so the key covers
  ``TRITON_INTERPRET`` and the like; ``CUDA_VISIBLE_DEVICES`` is set by Ray per GPU.
- **what it runs on** (:class:`WorkerEnv`): its Python (version, executable and that
  file's identity) and the versions of the key packages (torch, triton, ...) as installed
  on disk. Its processes keep what they imported, so a package upgraded under a live
  worker makes it stale: compared between its start and each claim.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from sweep.sandbox import SandboxSpec

__all__ = ["KEY_PACKAGES", "WorkerEnv", "code_digest", "env_changes", "launch_key", "worker_env"]

#: Packages whose installed version a warm worker must still have.
KEY_PACKAGES = ("torch", "triton", "ray", "numpy", "apache-tvm-ffi", "tilelang", "cupti-python")

_SWEEP_DIR = Path(__file__).resolve().parents[1]
_SOURCE_SUFFIXES = (".py", ".json")


def _hash_tree(h: hashlib._Hash, root: Path) -> None:
    for path in sorted(root.rglob("*")):
        if path.suffix not in _SOURCE_SUFFIXES or "__pycache__" in path.parts or not path.is_file():
            continue
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")


def _backend_file(backend: str) -> Path | None:
    """The source file of ``backend`` when it lives outside ``sweep``, else ``None``."""
    if backend == "sweep" or backend.startswith("sweep."):
        return None
    try:
        spec = importlib.util.find_spec(backend)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.has_location:
        return None
    return Path(spec.origin)


def code_digest(backend: str, root: Path | None = None) -> str:
    """Digest of the ``sweep`` package at ``root`` (this one by default) and of ``backend``'s
    file when that is outside it: 16 hex digits. Reads the files every time (a worker
    compares what is on disk now with what it started from)."""
    h = hashlib.sha256()
    _hash_tree(h, root or _SWEEP_DIR)
    extra = _backend_file(backend)
    if extra is not None and extra.is_file():
        h.update(b"backend\0" + backend.encode() + b"\0" + extra.read_bytes())
    return h.hexdigest()[:16]


def launch_key(spec: SandboxSpec, pool: str, runtime_env: str) -> str:
    """Digest of what a worker was started for: ``spec`` (``workdir`` aside: a folder of
    logs), the pool signature (``warm.pool_signature``) and the runtime environment as JSON.

    ``spec.env`` (``evaluation.cuda_max_connections``) is set in the worker's zygote and so in every
    sandbox it forks: a worker started with other variables must not serve the launch. It is
    left out while empty, so the keys of workers started before it existed are unchanged."""
    what: dict[str, object] = {
        "backend": spec.backend,
        "device_kind": spec.device_kind,
        "preload": list(spec.preload),
        "start_timeout_s": spec.start_timeout_s,
        "pool": pool,
        "runtime_env": runtime_env,
    }
    if spec.env:
        what["env"] = sorted(spec.env)
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class WorkerEnv:
    """What a worker runs on: its Python and the installed versions of :data:`KEY_PACKAGES`
    (``"absent"`` for a package not installed)."""

    python: str
    executable: str
    packages: tuple[tuple[str, str], ...]


def _file_identity(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def worker_env() -> WorkerEnv:
    """This process's :class:`WorkerEnv`, package versions read from disk now."""
    versions = []
    for name in KEY_PACKAGES:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            versions.append((name, "absent"))
    return WorkerEnv(
        python=f"{sys.implementation.name} {sys.version.split()[0]} {sys.executable}",
        executable=_file_identity(sys.executable),
        packages=tuple(versions),
    )


def env_changes(then: WorkerEnv, now: WorkerEnv) -> list[str]:
    """What differs between ``then`` and ``now``, in words (empty when nothing does)."""
    out = []
    if then.python != now.python:
        out.append(f"python {then.python} -> {now.python}")
    elif then.executable != now.executable:
        out.append(f"the python executable was replaced ({then.python.rsplit(' ', 1)[-1]})")
    old, new = dict(then.packages), dict(now.packages)
    for name in sorted(set(old) | set(new)):
        if old.get(name) != new.get(name):
            out.append(f"{name} {old.get(name, 'absent')} -> {new.get(name, 'absent')}")
    return out

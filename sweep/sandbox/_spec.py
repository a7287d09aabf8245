"""How sandboxes are built and counted, and the error when none can start (``sandbox.py``)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["SandboxSpec", "SandboxStartError", "SandboxStats"]


class SandboxStartError(RuntimeError):
    """The sandbox process could not be started (the environment, not a kernel, is broken)."""


@dataclass(frozen=True)
class SandboxSpec:
    """How to build sandboxes.

    Attributes:
        backend: Module with ``evaluate`` (and optionally ``prepare_process``,
            ``EngineCache``, ``build``) that the sandbox runs.
        device_kind: ``"cuda"`` (the one GPU this worker owns, as ``cuda:0``) or ``"cpu"``.
        preload: Modules the zygote imports once before forking, after the backend's
            ``prepare_process`` (none may initialise CUDA).
        start_timeout_s: Seconds a new sandbox may take to report ready.
        workdir: Folder for sandbox logs; a fresh temporary one when ``None``.
        compile_workers: Compile processes beside each GPU worker (``_compile_pool``): 0
            none, -1 as many as the node's CPUs per GPU allow (``compile_workers_for``).
        prefork: Fork the next task's process while a task runs (its start, CUDA's
            initialisation on a GPU, off the critical path).
        env: Environment variables set for the zygote and so for every sandbox, over the
            caller's (``CUDA_VISIBLE_DEVICES`` for the GPU of ``sweep eval --device cuda:N``).
        confine: Install the seccomp filter of ``_confine`` and the Landlock ruleset of
            ``_confine_files`` in every sandbox, so that no task reaches a process that ran
            before it or writes outside its folders, the temporary ones and the compilers'
            caches. ``False`` only to test the defences behind them (the guardian, the orphan
            checks), as a platform without them runs.
    """

    backend: str = "sweep.engine"
    device_kind: str = "cpu"
    preload: tuple[str, ...] = ("torch",)
    start_timeout_s: float = 300.0
    workdir: str | None = None
    compile_workers: int = 0
    prefork: bool = True
    env: tuple[tuple[str, str], ...] = ()
    confine: bool = True


@dataclass
class SandboxStats:
    """Counters of one supervisor."""

    started: int = 0
    tasks: int = 0
    timeouts: int = 0
    crashes: int = 0
    replaced_broken: int = 0
    start_seconds: list[float] = field(default_factory=list)
    #: Wall time (``time.time()``) each zygote this supervisor started was ready to fork.
    zygote_ready_at: list[float] = field(default_factory=list)
    #: Its first zygote was handed over by the driver (``handover``): when that one's preload
    #: ended, or why the offer was refused (``None``: no offer, or adopted).
    zygote_adopted: bool = False
    zygote_preloaded_at: float | None = None
    handover_refused: str | None = None
    #: The phase clock of the last tasks, newest last: ``(phase, time.monotonic() when it
    #: ended)``, the supervisor's marks and its sandbox's on one clock; the first is the
    #: task's turn beginning (``bench/eval_phases.py`` reads them).
    timelines: deque[list[tuple[str, float]]] = field(default_factory=lambda: deque(maxlen=256))
    #: Seconds each fork of the next task's sandbox took, beside the running task (prefork).
    prefork_seconds: deque[float] = field(default_factory=lambda: deque(maxlen=256))

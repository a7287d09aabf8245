"""The sandbox: the process that runs one task's evaluation, forked from the zygote.

A sandbox runs exactly one task and exits: no process that ran one task's solution code runs
another task's solution or reference, so nothing a solution leaves behind (a replaced
function, a thread, a global, CUDA state, files in its working folder) reaches another task.
The supervisor forks the next task's sandbox while this one runs, and lets it make CUDA ready
once this one's timed calls are over, so its start is mostly off the GPU's critical path. Protocol over its socket (pickled
typed messages, each a ``NamedTuple`` below):

- supervisor -> sandbox :class:`Start`: make the device ready (CUDA's context, on a GPU), which
  it does only then, so that no other task's timing shares the GPU with it; then
  sandbox -> supervisor :class:`Ready` with its :class:`SandboxInfo`;
- supervisor -> sandbox :class:`Evaluate`: the task's fields pickled without its definition,
  solution, settings and ceilings, which are the pickle ``records``;
- sandbox -> supervisor :class:`Phase` as the evaluation reaches the solution's build
  (``"build"``) and its run (``"run"``), and when nothing of it is timed any more
  (``"timed"``), when the backend says so (its ``evaluate`` takes ``on_phase``; the real
  engine's does): before the first, the reference's side runs;
- sandbox -> supervisor :class:`Finished`, where ``broken`` is ``None`` or why this process
  could not be reused (a sticky CUDA error, a change it made to the process: said in the log)
  and the times are ``time.time()`` around the evaluation; or :class:`Failed` when the backend
  raised. Then it exits.

Its working folder and temporary folder are a folder of its own, which the supervisor removes
once the task is done. Its stdout and stderr go to a log file the supervisor reads when it dies.
"""

from __future__ import annotations

import faulthandler
import importlib
import inspect
import os
import pickle
import platform
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, NamedTuple, TypeVar

from sweep.sandbox._confine import confine
from sweep.sandbox._confine_files import restrict_writes, task_roots, writable_roots
from sweep.sandbox._process_guard import ProcessState
from sweep.sandbox.failure_traces import LOST_CONNECTION
from sweep.sandbox.packing import load_task
from sweep.schema.trace_log import sticky_cuda_error

__all__ = [
    "Backend",
    "ChildParams",
    "Evaluate",
    "Failed",
    "Finished",
    "Phase",
    "Ready",
    "SandboxInfo",
    "Start",
    "child_main",
    "load_backend",
]


@dataclass(frozen=True)
class ChildParams:
    """What a forked sandbox needs to start: its backend module, device kind and working folder;
    ``env`` and ``unset``: environment variables to set and to remove first, before anything
    touches the device (a zygote handed over by the driver does not have the worker's
    ``CUDA_VISIBLE_DEVICES``: ``sweep.sandbox.handover``); ``confine``: install the seccomp
    filter (``_confine``) and the Landlock ruleset (``_confine_files``) before the task's code
    can run."""

    backend: str
    device_kind: str = "cpu"
    folder: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    unset: tuple[str, ...] = ()
    confine: bool = True

    @classmethod
    def from_json(cls, obj: dict[str, object]) -> ChildParams:
        """The params from their JSON object (lists back to tuples); ``TypeError`` or
        ``ValueError`` when it is not one."""
        env = obj.get("env", [])
        unset = obj.get("unset", [])
        if not isinstance(env, list) or not isinstance(unset, list):
            raise TypeError("env and unset must be lists")
        if not isinstance(obj.get("confine", True), bool):
            raise TypeError("confine must be a boolean")
        pairs = tuple((str(k), str(v)) for k, v in env)
        return cls(**{**obj, "env": pairs, "unset": tuple(str(k) for k in unset)})  # type: ignore[arg-type]


@dataclass(frozen=True)
class SandboxInfo:
    """What a sandbox reports once it is ready; ``phases``: its backend says when the
    solution's build and run begin (the reference's side runs before)."""

    pid: int
    device: str
    device_name: str | None = None
    libs: dict[str, str] = field(default_factory=dict)
    phases: bool = False


class Start(NamedTuple):
    """Supervisor -> sandbox: make the device ready, then say :class:`Ready`."""


class Ready(NamedTuple):
    """Sandbox -> supervisor: started, on this device."""

    info: SandboxInfo


class Evaluate(NamedTuple):
    """Supervisor -> sandbox: the task to run (:class:`~sweep.sandbox.packing.Envelope`'s pickles)."""

    blob: bytes
    records: bytes


class Phase(NamedTuple):
    """Sandbox -> supervisor: the evaluation reached ``"build"``, ``"run"`` or ``"timed"``."""

    name: str


class Finished(NamedTuple):
    """Sandbox -> supervisor: the trace (JSON), why this process is ``broken`` (or ``None``),
    ``time.time()`` when the evaluation started and finished, and the phase clock's ``marks``
    (``(phase, time.monotonic() when it ended)``: this process's and its backend's)."""

    trace_json: bytes
    broken: str | None
    started: float
    finished: float
    marks: tuple[tuple[str, float], ...] = ()


class Failed(NamedTuple):
    """Sandbox -> supervisor: the backend raised; its traceback."""

    text: str


@dataclass(frozen=True)
class Backend:
    """The evaluation functions of one backend module (``sweep.engine`` by default).

    The module must define ``evaluate(task, *, device, cache) -> Trace``; when it also takes
    ``on_phase``, it calls it with ``"build"`` and ``"run"`` as the solution's build and run
    begin (each with its own deadline). Optional: ``prepare_process(device_kind)`` (called
    first), ``preload(device_kind)`` (called once in the zygote, after ``prepare_process``:
    import what evaluations use, no CUDA), ``start_process(device_kind)`` (called in each
    task's process before it says it is ready: make the device ready), ``process_cache()``
    (the cache ``start_process`` made ready) or ``EngineCache`` (one per process) and
    ``cuda_problem(device) -> str | None`` (why this process's CUDA context is unusable: the
    sandbox asks after every failed evaluation on a GPU, since a kernel fault can surface only
    at the next synchronisation), ``phase_marks() -> [(phase, monotonic time)]`` (where the
    last evaluation's time went, sent back beside its trace) and ``task_folders(task) ->
    [folder]`` (where a task writes besides its own folder, made ready: the sandbox then allows
    writes nowhere else, ``_confine_files.task_roots``).
    """

    evaluate: Callable[..., Any]
    prepare: Callable[[str], Any] | None
    cache_factory: Callable[[], Any] | None
    cuda_problem: Callable[[str], str | None] | None
    phases: bool = False
    start: Callable[[str], Any] | None = None
    marks: Callable[[], list[tuple[str, float]]] | None = None
    folders: Callable[[Any], list[str]] | None = None


def _narrow_writes(task: Any, backend: Backend, folder: str | None) -> None:
    """Before the task's code runs: writes allowed only where this task needs them
    (``_confine_files.task_roots``), and for one rank of a gang the folder its process group
    meets in; said in the log when that cannot be done."""
    extra = backend.folders(task) if backend.folders is not None else []
    rank = getattr(task, "rank", None)
    if rank is not None:  # the FileStore's file, made and written by the ranks
        extra.append(os.path.dirname(rank.store_file))
    # Threads that ran before (CUDA's own) keep the sandbox's first ruleset: not worth a line.
    why = restrict_writes(task_roots(folder or os.getcwd(), extra), lone=False)
    if why is not None:
        print(f"sandbox: the task's own ruleset: {why}", file=sys.stderr, flush=True)


def load_backend(module: str) -> Backend:
    """Import ``module`` and collect its evaluation functions."""
    mod = importlib.import_module(module)
    evaluate = getattr(mod, "evaluate", None)
    if evaluate is None:
        raise ImportError(f"backend module {module!r} has no 'evaluate' function")
    try:
        phases = "on_phase" in inspect.signature(evaluate).parameters
    except (TypeError, ValueError):
        phases = False
    return Backend(
        evaluate=evaluate,
        prepare=getattr(mod, "prepare_process", None),
        # A cache the process made ready in ``start_process``, else a fresh one.
        cache_factory=getattr(mod, "process_cache", None) or getattr(mod, "EngineCache", None),
        cuda_problem=getattr(mod, "cuda_problem", None),
        phases=phases,
        start=getattr(mod, "start_process", None),
        marks=getattr(mod, "phase_marks", None),
        folders=getattr(mod, "task_folders", None),
    )


_M = TypeVar("_M", Start, Evaluate)


def _describe(device: str, phases: bool) -> SandboxInfo:
    libs = {"python": platform.python_version()}
    name: str | None = None
    torch = sys.modules.get("torch")
    if torch is not None:
        libs["torch"] = str(torch.__version__)
        if device.startswith("cuda"):
            name = str(torch.cuda.get_device_name(0))
            libs["cuda"] = str(torch.version.cuda)
    triton = sys.modules.get("triton")
    if triton is not None:
        libs["triton"] = str(getattr(triton, "__version__", "?"))
    return SandboxInfo(pid=os.getpid(), device=device, device_name=name, libs=libs, phases=phases)


def _broken(device: str, trace: Any, backend: Backend) -> str | None:
    """Why this process must be replaced after ``trace``, or ``None`` when it is healthy."""
    evaluation = getattr(trace, "evaluation", None)
    status = getattr(getattr(evaluation, "status", None), "value", "PASSED")
    if status == "PASSED":
        return None
    marker = sticky_cuda_error(str(getattr(evaluation, "log", "")))
    if marker is not None:
        return f"sticky CUDA error in the trace log ({marker!r})"
    if not device.startswith("cuda") or backend.cuda_problem is None:
        return None
    return backend.cuda_problem(device)


def isolate() -> None:
    """Make this process the leader of a session of its own (so a solution that signals its
    process group reaches only this process and its children) and the first the kernel's
    OOM killer picks (so a solution that exhausts memory costs no other process)."""
    try:
        os.setsid()
    except OSError:  # already a group leader
        pass
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def set_parent_death_signal() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - exotic libc
        pass


_CRASH_LOG: Any = None


def _lost_connection(e: OSError, problems: str | None) -> int:
    """Say in the log why the supervisor gets no result (it reads the log's tail), and exit."""
    print(
        f"sandbox: cannot send the result to the supervisor ({e}); "
        f"{problems or 'its socket was closed'}; exiting",
        file=sys.stderr,
        flush=True,
    )
    return LOST_CONNECTION


def _restore(state: ProcessState) -> str | None:
    """Undo what the evaluation did to this process (its children killed first); what it
    changed that cannot be undone, if anything."""
    problems = state.restore()
    if not problems:
        return None
    return "the evaluation changed the sandbox process: " + "; ".join(problems)


def _device_for(kind: str) -> str:
    return "cuda:0" if kind == "cuda" else "cpu"


def _wait_for(conn: Connection, kind: type[_M]) -> _M | None:
    """The next message of type ``kind`` from the supervisor (others are ignored); ``None``
    when it closed the socket."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return None
        if isinstance(msg, kind):
            return msg


def _enter_folder(folder: str | None) -> None:
    """Make ``folder`` this process's working and temporary folder (the task's own)."""
    if not folder:
        return
    os.makedirs(folder, exist_ok=True)
    os.chdir(folder)
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder


def child_main(conn_fd: int, log_path: str, params: ChildParams) -> int:
    """Run one evaluation, once the supervisor sends it. Returns the exit code."""
    global _CRASH_LOG
    for name in params.unset:
        os.environ.pop(name, None)
    os.environ.update(params.env)
    isolate()
    set_parent_death_signal()
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    # Crash reports get a descriptor of their own: the engine points fds 1 and 2 at a
    # temporary file while a solution runs, which is lost when the process dies.
    _CRASH_LOG = os.fdopen(log_fd, "w", buffering=1)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    faulthandler.enable(file=_CRASH_LOG, all_threads=True)
    # The supervisor sends SIGUSR1 before killing a hung sandbox: where it hung goes to the log.
    faulthandler.register(signal.SIGUSR1, file=_CRASH_LOG, all_threads=True)
    conn = Connection(conn_fd)
    kind = params.device_kind
    device = _device_for(kind)
    start_tmp = os.environ.get("TMPDIR")  # before the task's folder replaces it
    try:
        _enter_folder(params.folder)
        backend = load_backend(params.backend)
        if backend.prepare is not None:
            backend.prepare(kind)
        # Before any task's code runs, and off the critical path (a spare waits for Start).
        if params.confine:
            said = [confine(), restrict_writes(writable_roots(params.folder, start_tmp))]
        else:
            said = ["not confined: the sandbox's spec asks for no filter"]
        for line in filter(None, said):
            print(f"sandbox: {line}", file=sys.stderr, flush=True)
        # The device is made ready only when the supervisor says so: on a GPU, a context made
        # (or a kernel run) while another task's process is timing would share the GPU with it.
        if _wait_for(conn, Start) is None:
            return 0
        if backend.start is not None:
            backend.start(kind)
        cache = backend.cache_factory() if backend.cache_factory is not None else None
        conn.send(Ready(_describe(device, backend.phases)))
    except BaseException:  # noqa: BLE001 - any start failure is reported through the log
        traceback.print_exc()
        sys.stderr.flush()
        return 3
    msg = _wait_for(conn, Evaluate)
    if msg is None:
        return 0
    marks = [("task received", time.monotonic())]
    state = ProcessState.capture((conn_fd, 1, 2, log_fd))

    def on_phase(name: str) -> None:
        conn.send(Phase(name))

    try:
        task = load_task(msg.blob, pickle.loads(msg.records))
        if params.confine:
            _narrow_writes(task, backend, params.folder)
        marks.append(("task unpickled, process state captured", time.monotonic()))
        started = time.time()
        kwargs: dict[str, Any] = {"device": device, "cache": cache}
        if backend.phases:
            kwargs["on_phase"] = on_phase
        trace = backend.evaluate(task, **kwargs)
        broken = getattr(cache, "fatal_error", None) or _broken(device, trace, backend)
        finished = time.time()
        if backend.marks is not None:
            marks += backend.marks()
        marks.append(("sandbox health check", time.monotonic()))
        payload = trace.to_json().encode()
        marks.append(("trace to JSON", time.monotonic()))
    except BaseException:  # noqa: BLE001 - even SystemExit from a solution is a result
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)
        _restore(state)
        try:
            conn.send(Failed(text))
        except OSError as e:
            return _lost_connection(e, None)
        return 0
    # What it did to the process is said in the log (the process ends anyway).
    problems = _restore(state)
    if problems:
        print(f"sandbox: {problems}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    marks.append(("process state put back", time.monotonic()))
    try:
        # send_bytes of a plain pickle reads the same as conn.send at the other end, without
        # multiprocessing's per-call pickler set-up (~9 us, on the GPU's idle time)
        conn.send_bytes(
            pickle.dumps(
                Finished(payload, broken or problems or None, started, finished, tuple(marks)),
                pickle.HIGHEST_PROTOCOL,
            )
        )
    except OSError as e:
        return _lost_connection(e, broken)
    return 0

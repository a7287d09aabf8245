"""The sandbox: the process that runs evaluations, forked from the zygote.

It lives as long as it stays healthy, so the engine's cache (built solutions, reference
outputs) and the CUDA context are paid for once. Protocol over its socket (pickled tuples):

- sandbox -> supervisor ``("ready", SandboxInfo)`` once set up.
- supervisor -> sandbox ``("eval", task_blob, build_key, records_key, records, forget)``: the
  task's fields pickled without its definition, solution, settings and ceilings, which are
  those of ``records_key``; ``records`` is their pickle when this process does not hold them yet
  (else ``None``), ``forget`` a records key it may drop (or ``None``).
- sandbox -> supervisor ``("built",)`` after the build phase (when the backend has one),
  then ``("trace", trace_json, broken, started, finished)``, where ``broken`` is ``None``
  or why this process must not be reused (a sticky CUDA error) and the times are
  ``time.time()`` around the evaluation; or ``("error", text)`` when the backend raised.

Between two evaluations this process does only what it must (unpickle a workload, serialize
a trace): that time is the GPU's idle time. Stamping the trace is left to the receiver.

Its stdout and stderr go to a log file that the supervisor reads when the sandbox dies.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import pickle
import platform
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from sweep.cluster._packing import load_task
from sweep.cluster._process_guard import ProcessState
from sweep.schema.trace_log import sticky_cuda_error

__all__ = ["LOST_CONNECTION", "Backend", "SandboxInfo", "child_main", "load_backend"]


@dataclass(frozen=True)
class SandboxInfo:
    """What a sandbox reports once it is ready."""

    pid: int
    device: str
    device_name: str | None = None
    libs: dict[str, str] = field(default_factory=dict)
    has_build: bool = False


@dataclass(frozen=True)
class Backend:
    """The evaluation functions of one backend module (``sweep.engine`` by default).

    The module must define ``evaluate(task, *, device, cache) -> Trace``. Optional:
    ``prepare_process(device_kind)`` (called first), ``EngineCache`` (one per process) and
    ``build(task, *, device, cache)`` (the compile phase, timed by its own deadline) and
    ``cuda_problem(device) -> str | None`` (why this process's CUDA context is unusable:
    the sandbox asks after every failed evaluation on a GPU, since a kernel fault can
    surface only at the next synchronisation).
    """

    evaluate: Callable[..., Any]
    prepare: Callable[[str], Any] | None
    cache_factory: Callable[[], Any] | None
    build: Callable[..., Any] | None
    cuda_problem: Callable[[str], str | None] | None


def load_backend(module: str) -> Backend:
    """Import ``module`` and collect its evaluation functions."""
    mod = importlib.import_module(module)
    evaluate = getattr(mod, "evaluate", None)
    if evaluate is None:
        raise ImportError(f"backend module {module!r} has no 'evaluate' function")
    return Backend(
        evaluate=evaluate,
        prepare=getattr(mod, "prepare_process", None),
        cache_factory=getattr(mod, "EngineCache", None),
        build=getattr(mod, "build", None),
        cuda_problem=getattr(mod, "cuda_problem", None),
    )


def _describe(device: str, has_build: bool) -> SandboxInfo:
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
    return SandboxInfo(pid=os.getpid(), device=device, device_name=name, libs=libs, has_build=has_build)


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
#: The exit code of a sandbox that cannot send a result: its socket was closed or replaced
#: (its output may be lost too: the descriptors it printed to may be gone).
LOST_CONNECTION = 75


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
    """Undo what the evaluation did to this process; why it must be replaced, if it must."""
    problems = state.restore()
    if not problems:
        return None
    return "the evaluation changed the sandbox process: " + "; ".join(problems)


def _device_for(kind: str) -> str:
    return "cuda:0" if kind == "cuda" else "cpu"


def child_main(conn_fd: int, log_path: str, params: dict[str, Any]) -> int:
    """Run evaluations until the supervisor closes the socket. Returns the exit code."""
    global _CRASH_LOG
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
    kind = str(params.get("device_kind", "cpu"))
    built: set[str] = set()
    held: dict[str, tuple[Any, ...]] = {}  # records key -> (definition, solution, settings, ceilings)
    device = _device_for(kind)
    try:
        backend = load_backend(str(params["backend"]))
        if backend.prepare is not None:
            backend.prepare(kind)
        cache = backend.cache_factory() if backend.cache_factory is not None else None
        conn.send(("ready", _describe(device, backend.build is not None)))
    except BaseException:  # noqa: BLE001 - any start failure is reported through the log
        traceback.print_exc()
        sys.stderr.flush()
        return 3
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return 0
        if msg[0] != "eval":
            continue
        _, blob, key, records_key, records, forget = msg
        state = ProcessState.capture((conn_fd, 1, 2, log_fd))
        try:
            if forget is not None:
                held.pop(forget, None)
            if records is not None:
                held[records_key] = pickle.loads(records)
            task = load_task(blob, held[records_key])
            started = time.time()
            # The build step exists for its deadline; once this process has built a key,
            # the engine's cache makes it a no-op that still costs its bookkeeping, so it is
            # skipped, silently (the supervisor keeps the same set of keys).
            if backend.build is not None and key not in built:
                backend.build(task, device=device, cache=cache)
                built.add(key)
                conn.send(("built",))
            trace = backend.evaluate(task, device=device, cache=cache)
            broken = getattr(cache, "fatal_error", None) or _broken(device, trace, backend)
            # The backend may also ask to be replaced once this trace is written.
            broken = broken or getattr(cache, "retire", None)
            finished = time.time()
            payload = trace.to_json().encode()
        except BaseException:  # noqa: BLE001 - even SystemExit from a solution is a result
            text = traceback.format_exc()
            print(text, file=sys.stderr, flush=True)
            problems = _restore(state)
            try:
                conn.send(("error", text))
            except OSError as e:
                return _lost_connection(e, problems)
            continue
        broken = broken or _restore(state)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            # send_bytes of a plain pickle reads the same as conn.send at the other end, without
            # multiprocessing's per-call pickler set-up (~9 us, on the GPU's idle time)
            conn.send_bytes(
                pickle.dumps(("trace", payload, broken, started, finished), pickle.HIGHEST_PROTOCOL)
            )
        except OSError as e:
            return _lost_connection(e, broken)

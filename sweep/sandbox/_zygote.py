"""The zygote: a small process that imports torch once and forks sandboxes on request.

A fresh ``python`` that imports torch and initialises CUDA costs 4-7 s on a GPU host; a fork
of a process that imported torch but never touched CUDA costs about 0.4 s (field notes). So
each GPU worker keeps one zygote, which never touches CUDA, and forks a new sandbox from it
whenever the previous one crashed, hung or broke its CUDA context.

Control channel: one ``SOCK_SEQPACKET`` socket pair (message boundaries kept, file
descriptors passed with ``SCM_RIGHTS``). Requests and replies are typed messages (the dataclasses
below), sent as JSON objects named by ``"op"``:

- :class:`Fork` with one fd (the sandbox's end of its socket) -> :class:`Forked`. The child runs
  :func:`sweep.sandbox._child.child_main` with the request's :class:`ChildParams`.
- :class:`Wait` -> the exit state (:class:`ExitState`).
- :class:`Kill` -> SIGKILL, reap, and the exit state.
- Once started, the zygote says :class:`ZygoteReady`; a request it cannot read gets :class:`Refused`.

The zygote exits, killing its children, when the control socket closes (its owner died).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import TypeVar

from sweep._python import python_code, python_env
from sweep.sandbox._child import ChildParams
from sweep.sandbox._process_guard import children_of, kill_descendants, kill_group

__all__ = ["ExitState", "ZygoteClient"]

_MAX_MSG = 1 << 16
_ENTRY = "import sys\nfrom sweep.sandbox._zygote import zygote_main\nsys.exit(zygote_main(sys.argv[1:]))\n"


@dataclass(frozen=True)
class ExitState:
    """How a sandbox process ended (or that it has not)."""

    running: bool
    code: int | None = None
    signal: int | None = None
    #: Its socket to the supervisor reached EOF first (it closed it, or closed every
    #: descriptor): whether it then exited on its own or had to be killed is a race.
    socket_closed: bool = False

    def describe(self) -> str:
        """Human words: ``"killed by signal 11 (SIGSEGV)"``, ``"exited with code 3"``."""
        if self.running:
            return "still running"
        if self.code is None and self.signal is None:
            return "ended (exit status unknown: not this process's child)"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = "unknown"
            return f"killed by signal {self.signal} ({name})"
        return f"exited with code {self.code}"


@dataclass(frozen=True)
class Fork:
    """Fork a sandbox (its socket passed as the message's fd) writing its output to ``log``."""

    log: str
    child: ChildParams


@dataclass(frozen=True)
class Wait:
    """Wait up to ``timeout`` seconds for sandbox ``pid`` to end."""

    pid: int
    timeout: float


@dataclass(frozen=True)
class Kill:
    """SIGKILL sandbox ``pid`` (if still running) and reap it."""

    pid: int


@dataclass(frozen=True)
class Forked:
    """The sandbox forked: its pid."""

    pid: int


@dataclass(frozen=True)
class ZygoteReady:
    """The zygote started and preloaded: its pid, and the wall time its preload ended."""

    pid: int
    ready_at: float | None = None


@dataclass(frozen=True)
class Refused:
    """A request the zygote could not read."""

    error: str


_Message = Fork | Wait | Kill | Forked | ZygoteReady | Refused | ExitState
_OPS: dict[str, type[_Message]] = {
    "fork": Fork,
    "wait": Wait,
    "kill": Kill,
    "forked": Forked,
    "ready": ZygoteReady,
    "refused": Refused,
    "exit": ExitState,
}
_OP_OF = {cls: op for op, cls in _OPS.items()}
_R = TypeVar("_R", Forked, ZygoteReady, ExitState)


def _encode(msg: _Message) -> bytes:
    return json.dumps({"op": _OP_OF[type(msg)], **asdict(msg)}).encode()


def _decode(data: bytes) -> _Message:
    """The message in ``data``; ``ValueError`` if it is not one."""
    try:
        obj = json.loads(data)
        cls = _OPS[obj.pop("op")]
        if cls is Fork:
            return Fork(log=obj["log"], child=ChildParams.from_json(obj["child"]))
        return cls(**obj)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"not a zygote message: {data[:200]!r} ({e!r})") from None


def _exit_state(status: int | None) -> ExitState:
    if status is None:
        return ExitState(running=True)
    if os.WIFSIGNALED(status):
        return ExitState(running=False, signal=os.WTERMSIG(status))
    return ExitState(running=False, code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else status)


# ---------------------------------------------------------------------------------------
# The zygote process.


def _serve(ctl: socket.socket) -> None:
    children: dict[int, int | None] = {}  # pid -> wait status once reaped

    def reap(pid: int, block: bool) -> int | None:
        if children.get(pid) is not None:
            return children[pid]
        try:
            got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return children.get(pid)
        if got == 0:
            return None
        children[pid] = status
        return status

    def cull() -> None:
        """Kill and reap the orphans a sandbox left (re-parented here, the subreaper)."""
        for pid in kill_descendants_except(set(children)):
            children.pop(pid, None)

    while True:
        cull()
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctl, _MAX_MSG, 4)
        except (ConnectionError, OSError):
            data, fds = b"", []
        if not data:
            for pid, status in children.items():
                if status is None:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            return
        try:
            req = _decode(data)
        except ValueError as e:
            req = Refused(str(e))
        reply: _Message
        if isinstance(req, Fork):
            pid = os.fork()
            if pid == 0:  # the sandbox
                code = 1
                try:
                    ctl.close()
                    from sweep.sandbox._child import child_main

                    code = child_main(fds[0], req.log, req.child)
                finally:
                    os._exit(code)
            for fd in fds:
                os.close(fd)
            children[pid] = None
            reply = Forked(pid)
        elif isinstance(req, Wait):
            pid, deadline = req.pid, time.monotonic() + req.timeout
            status = reap(pid, block=False)
            while status is None and time.monotonic() < deadline:
                time.sleep(0.005)
                status = reap(pid, block=False)
            reply = _exit_state(status)
        elif isinstance(req, Kill):
            pid = req.pid
            if children.get(pid, 0) is None:
                kill_group(pid)  # its process group too (it leads one: ``isolate``)
            reply = _exit_state(reap(pid, block=True))
            cull()
        else:
            reply = req if isinstance(req, Refused) else Refused(f"not a request: {req!r}")
        ctl.send(_encode(reply))


def _become_subreaper() -> None:
    """Orphans of this process's descendants (a solution's double-forked children) are
    re-parented here instead of to init, where :func:`kill_descendants_except` finds them."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        pr_set_child_subreaper = 36
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_child_subreaper, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - exotic libc
        pass


def kill_descendants_except(keep: set[int]) -> list[int]:
    """SIGKILL and reap this process's children not in ``keep`` (orphans a sandbox left,
    re-parented here) with everything below them; return the pids reaped. Also reaps
    orphans that have exited already."""
    reaped: list[int] = []
    for pid in children_of(os.getpid()):
        if pid in keep:
            continue
        kill_descendants(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(pid, 0)
            reaped.append(pid)
        except ChildProcessError:
            pass
    return reaped


def zygote_main(argv: list[str]) -> int:
    """Entry point of the zygote process; ``argv`` is ``[CTL_FD, BACKEND, DEVICE_KIND, "mod1,mod2"]``.

    See :func:`preload_zygote` for what it loads before it says it is ready.

    No parent-death signal here: Linux ties it to the *thread* that started us, and a Ray
    worker may start us from a thread that ends. The closed control socket is the signal.
    """
    ctl = socket.socket(fileno=int(argv[0]))
    ready_at = preload_zygote(argv[1], argv[2], argv[3])
    ctl.send(_encode(ZygoteReady(os.getpid(), ready_at)))
    _serve(ctl)
    return 0


def preload_zygote(backend: str, kind: str, preload: str) -> float:
    """Make this process a zygote: the backend's ``prepare_process(kind)`` runs first (it must
    be fork-safe: no CUDA), so e.g. ``TRITON_INTERPRET`` is set before anything imports
    triton; then the modules named (``"mod1,mod2"``) are imported and the backend's
    ``preload(kind)`` runs, so every sandbox forked afterwards starts with them loaded.
    Returns the wall time it was done."""
    _become_subreaper()
    try:
        module = importlib.import_module(backend)
        prepare = getattr(module, "prepare_process", None)
        if prepare is not None:
            prepare(kind)
        for name in filter(None, preload.split(",")):
            importlib.import_module(name)
        # What every evaluation imports, and the harness's snapshot taken before any solution
        # code runs in a process forked from here (``sweep.engine.preload``).
        ready = getattr(module, "preload", None)
        if ready is not None:
            ready(kind)
    except Exception as e:  # noqa: BLE001 - each sandbox fails on it again, with a clear log
        print(f"zygote: preloading failed: {e!r}", file=sys.stderr)
    # What is loaded now is shared with every sandbox: keep the collector off it, so the
    # sandboxes neither walk nor copy (copy-on-write) those pages at each collection.
    gc.collect()
    gc.freeze()
    return time.time()


def serve_owner(ctl: socket.socket, ready_at: float, *, pid: int | None = None) -> None:
    """Say ready to the owner on ``ctl`` and serve it until it closes (a handed-over zygote;
    ``pid``: the process it answers as, its guardian's, by default its own)."""
    ctl.send(_encode(ZygoteReady(os.getpid() if pid is None else pid, ready_at)))
    _serve(ctl)


def zygote_environment(
    env_over: tuple[tuple[str, str], ...], base: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment a zygote runs in: ``base`` (this process's by default) with ``env_over``
    on top, and the sweep package importable (it may have reached this worker through a
    runtime_env: on sys.path, not on PYTHONPATH)."""
    return python_env({**(os.environ if base is None else base), **dict(env_over)})


# ---------------------------------------------------------------------------------------
# The client side, in the worker that owns the GPU.


class ZygoteError(RuntimeError):
    """The zygote could not be started or stopped answering."""


class _Foreign:
    """A zygote this process did not start (handed over, see ``handover``): watched through a
    pidfd, so it is neither confused with a later process of the same pid nor reaped here
    (its parent reaps it); how it ended is unknown."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = os.pidfd_open(pid)
        self.ours = True  # ours to kill

    def dead(self, timeout: float = 0.0) -> bool:
        if self._fd is None:
            return True
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        return bool(poller.poll(max(0, int(timeout * 1000))))

    def kill(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._fd, signal.SIGKILL)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class ZygoteClient:
    """Starts a zygote subprocess and asks it to fork, wait for and kill sandboxes
    (:meth:`adopt`: one started by another process, handed over)."""

    def __init__(
        self,
        backend: str,
        device_kind: str,
        preload: tuple[str, ...],
        *,
        start_timeout_s: float = 300.0,
        env_over: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self._ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._lent = False
        self._proc: subprocess.Popen[bytes] | _Foreign = subprocess.Popen(
            [*python_code(_ENTRY), str(theirs.fileno()), backend, device_kind, ",".join(preload)],
            pass_fds=[theirs.fileno()],
            env=zygote_environment(env_over),
            stdin=subprocess.DEVNULL,
            # A session of its own: a solution that signals its parent's process group
            # reaches the zygote, not the worker that owns it.
            start_new_session=True,
        )
        theirs.close()
        self.ready = self._await_ready(start_timeout_s)

    @classmethod
    def adopt(
        cls, ctl: socket.socket, pid: int, start_timeout_s: float, *, lent: bool = False
    ) -> ZygoteClient:
        """The client of zygote ``pid``, already connected on ``ctl`` (its owner now), once it
        says it is ready; ``ZygoteError`` if it does not in time, or is another process.
        ``lent``: it has a next owner, so :meth:`close` gives it back instead of ending it."""
        self = cls.__new__(cls)
        self._ctl = ctl
        self._lent = lent
        try:
            foreign = _Foreign(pid)
        except OSError as e:
            ctl.close()
            raise ZygoteError(f"the handed-over zygote {pid} cannot be watched: {e}") from None
        # Until it has said it is process ``pid``, ``pid`` is not known to be it: never killed.
        self._proc = foreign
        foreign.ours = False
        self.ready = self._await_ready(start_timeout_s)
        if self.ready.pid != pid:
            self.close()
            raise ZygoteError(f"the handed-over zygote says it is process {self.ready.pid}, not {pid}")
        foreign.ours = True
        return self

    def _await_ready(self, timeout: float) -> ZygoteReady:
        self._ctl.settimeout(timeout)
        try:
            ready = self._recv(ZygoteReady)
        except (OSError, ZygoteError) as e:
            self.close()
            raise ZygoteError(f"the sandbox zygote did not start: {e}") from None
        self._ctl.settimeout(None)
        return ready

    @property
    def pid(self) -> int:
        """The zygote's process id."""
        return self._proc.pid

    @property
    def adopted(self) -> bool:
        """Whether this zygote was handed over (not started by this process)."""
        return isinstance(self._proc, _Foreign)

    def alive(self) -> bool:
        """Whether the zygote process is still running. A handed-over one is watched through
        its guardian (``handover``), which exits a moment after it: its end of the control
        socket, closed when it died, tells at once."""
        if isinstance(self._proc, _Foreign):
            return not self._proc.dead() and not self._hung_up()
        return self._proc.poll() is None

    def _hung_up(self) -> bool:
        """Whether the zygote's end of the control socket is closed (it died, or went away)."""
        if self._ctl.fileno() < 0:
            return True
        poller = select.poll()
        poller.register(self._ctl, select.POLLIN | select.POLLHUP)
        events = poller.poll(0)
        if not events:
            return False
        if events[0][1] & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
            return True
        try:
            return self._ctl.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True

    def wait_dead(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the zygote process to end (and be reaped)."""
        if isinstance(self._proc, _Foreign):
            self._proc.dead(timeout)
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=timeout)

    def exit_state(self) -> ExitState:
        """How the zygote ended (``running`` while it has not; code and signal unknown for
        a handed-over one)."""
        if isinstance(self._proc, _Foreign):
            return ExitState(running=not self._proc.dead())
        code = self._proc.poll()
        if code is None:
            return ExitState(running=True)
        if code < 0:
            return ExitState(running=False, signal=-code)
        return ExitState(running=False, code=code)

    def _recv(self, kind: type[_R]) -> _R:
        data = self._ctl.recv(_MAX_MSG)
        if not data:
            raise ZygoteError(f"the sandbox zygote exited ({self.exit_state().describe()})")
        try:
            msg = _decode(data)
        except ValueError as e:
            raise ZygoteError(f"the sandbox zygote answered {e}") from None
        if not isinstance(msg, kind):
            raise ZygoteError(f"the sandbox zygote answered {msg!r}, not a {kind.__name__}")
        return msg

    def _call(self, req: Fork | Wait | Kill, kind: type[_R], fds: list[int] | None = None) -> _R:
        try:
            socket.send_fds(self._ctl, [_encode(req)], fds or [])
            return self._recv(kind)
        except OSError as e:
            raise ZygoteError(f"the sandbox zygote stopped answering: {e}") from None

    def fork(self, conn_fd: int, log_path: str, child: ChildParams) -> int:
        """Fork a sandbox that talks over ``conn_fd`` and writes its output to ``log_path``."""
        return self._call(Fork(log_path, child), Forked, [conn_fd]).pid

    def wait(self, pid: int, timeout: float) -> ExitState:
        """Wait up to ``timeout`` seconds for sandbox ``pid`` to end."""
        return self._call(Wait(pid, timeout), ExitState)

    def kill(self, pid: int) -> ExitState:
        """SIGKILL sandbox ``pid`` (if still running) and reap it."""
        return self._call(Kill(pid), ExitState)

    def close(self) -> None:
        """Stop the zygote; it kills any sandbox still running. A lent one (:meth:`adopt`) is
        only let go: it kills and reaps this owner's sandboxes, then serves its next owner."""
        try:
            self._ctl.close()
        finally:
            proc = self._proc
            if isinstance(proc, _Foreign):
                if proc.ours and not self._lent and not proc.dead(10.0):
                    proc.kill()
                    proc.dead(10.0)
                proc.release()
            else:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

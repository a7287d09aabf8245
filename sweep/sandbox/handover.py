"""The zygote hand-over: a zygote started early by one process, adopted by the worker that needs it.

A worker's zygote imports torch, triton and the engine (about 3 s on a GPU host). An embedded
launch starts Ray and then its workers, and each worker used to start its zygote only then.
With the hand-over, the launch's driver starts the zygotes its local workers will need at the
very start of the command (:func:`offer_zygote`), so their imports overlap Ray's start, and
each worker adopts one (:func:`adopt_zygote`) instead of starting its own.

The channel: a ``SOCK_SEQPACKET`` Unix socket in a private (0700) folder of the driver's. The
offered zygote listens there, accepts exactly one owner (of its own user id), stops listening
and removes the socket, says :class:`~sweep.sandbox._zygote.ZygoteReady` and serves its owner
exactly as a zygote started by the worker does (it exits when that connection closes). Until it
has an owner it exits by itself when the driver that started it is gone or ``bound_s`` has
passed; the driver kills those never claimed (:meth:`OfferedZygote.close`).

An adopted zygote must be the one the worker would have started: the :class:`ZygoteRecipe`
(backend, device kind, preload list, Python, sweep package, working folder and the
environment, compared by a digest of each variable) must be equal, else the worker refuses
the offer (the zygote is told to go away) and starts its own. Two kinds of variables are left
out of the comparison, as the offer names them: ``per_child`` ones (the device the worker was
given, ``CUDA_VISIBLE_DEVICES``) are set in each sandbox before anything touches the device
(:class:`~sweep.sandbox._child.ChildParams`; a zygote never touches it), and ``loose`` ones
(the worker's own bookkeeping, which no evaluation reads) may differ.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from sweep._python import package_parent, python_code
from sweep.sandbox._child import set_parent_death_signal
from sweep.sandbox._spec import SandboxSpec
from sweep.sandbox._zygote import (
    ZygoteClient,
    ZygoteError,
    kill_descendants_except,
    preload_zygote,
    serve_owner,
    zygote_environment,
)

__all__ = [
    "Adopted",
    "Lent",
    "OfferedZygote",
    "ZygoteOffer",
    "ZygoteRecipe",
    "adopt_zygote",
    "handed_zygote",
    "handover_main",
    "offer_zygote",
    "recipe_for",
    "zygote_environment",
]

_ENTRY = (
    "import sys\nfrom sweep.sandbox.handover import handover_main\nsys.exit(handover_main(sys.argv[1:]))\n"
)
_WATCH_S = 0.1


@dataclass(frozen=True)
class ZygoteRecipe:
    """What makes two zygotes the same: equal recipes, equal zygotes."""

    backend: str
    device_kind: str
    preload: tuple[str, ...]
    python: str
    package: str
    cwd: str
    #: ``(name, digest of its value)`` of each variable of the zygote's environment, sorted,
    #: less the offer's ``per_child`` and ``loose`` ones (digests: no value leaves the host's
    #: processes, nor shows in a message).
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class ZygoteOffer:
    """A zygote the driver started for one worker to adopt."""

    recipe: ZygoteRecipe
    socket_path: str
    pid: int
    #: The machine it runs on (its boot id and host name): elsewhere it cannot be adopted.
    host: str
    per_child: tuple[str, ...] = ()
    #: Names (``"RAY_*"``: a prefix) that may differ between the worker and the zygote.
    loose: tuple[str, ...] = ()


@dataclass(frozen=True)
class Adopted:
    """An adopted zygote, and what each sandbox it forks must set and unset first."""

    client: ZygoteClient
    child_env: tuple[tuple[str, str], ...]
    child_unset: tuple[str, ...]


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def recipe_for(
    backend: str,
    device_kind: str,
    preload: tuple[str, ...],
    env: Mapping[str, str],
    per_child: tuple[str, ...] = (),
    loose: tuple[str, ...] = (),
) -> ZygoteRecipe:
    """The recipe of a zygote of this process's Python and sweep package, in its working
    folder, with environment ``env`` (as :func:`~sweep.sandbox._zygote.zygote_environment` makes it)."""
    digests = tuple(
        (k, hashlib.sha256(v.encode("utf-8", "surrogateescape")).hexdigest()[:24])
        for k, v in sorted(env.items())
        if not _matches(k, per_child) and not _matches(k, loose)
    )
    return ZygoteRecipe(
        backend=backend,
        device_kind=device_kind,
        preload=tuple(preload),
        python=sys.executable,
        package=package_parent(),
        cwd=os.getcwd(),
        env=digests,
    )


def this_host() -> str:
    """This machine: its boot id and host name."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "?"
    return f"{boot}/{socket.gethostname()}"


# ---------------------------------------------------------------------------------------
# The driver's side.


class OfferedZygote:
    """The driver's handle on a zygote it offered: :meth:`close` ends it if nobody adopted it
    (and reaps it either way)."""

    def __init__(self, offer: ZygoteOffer, proc: subprocess.Popen[bytes]) -> None:
        self.offer = offer
        self._proc = proc

    def alive(self) -> bool:
        """Whether the zygote process still runs."""
        return self._proc.poll() is None

    def close(self, grace_s: float = 0.0) -> None:
        """Kill it unless it ends within ``grace_s`` seconds (its owner closed it), reap it and
        remove its socket."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=grace_s)
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        with contextlib.suppress(OSError):
            os.unlink(self.offer.socket_path)

    def lend(self, child_env: Mapping[str, str]) -> Lent:
        """Connect to it now as its first owner (it was offered with ``owners`` above 1, the
        next one a worker): a :class:`Lent` for a :class:`~sweep.sandbox.Sandbox` of this
        process, each sandbox given ``child_env`` (of the offer's ``per_child`` variables: the
        device). Closing that sandbox gives the zygote back, and the next owner has it.

        Raises:
            OSError: Its socket cannot be reached.
        """
        ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            ctl.settimeout(10.0)
            ctl.connect(self.offer.socket_path)
            ctl.settimeout(None)
        except OSError:
            ctl.close()
            raise
        per_child = self.offer.per_child
        names = sorted(k for k in child_env if _matches(k, per_child))
        return Lent(
            ctl=ctl,
            pid=self.offer.pid,
            child_env=tuple((k, child_env[k]) for k in names),
            child_unset=tuple(p for p in per_child if not p.endswith("*") and p not in child_env),
        )


@dataclass(frozen=True)
class Lent:
    """An offered zygote lent to the driver before its worker adopts it (:meth:`OfferedZygote.lend`):
    the connection (its first owner's), its pid, and what each sandbox sets and unsets first."""

    ctl: socket.socket
    pid: int
    child_env: tuple[tuple[str, str], ...]
    child_unset: tuple[str, ...]


def offer_zygote(
    folder: Path,
    name: str,
    recipe: tuple[str, str, tuple[str, ...]],
    env: dict[str, str],
    *,
    bound_s: float,
    per_child: tuple[str, ...] = (),
    loose: tuple[str, ...] = (),
    owners: int = 1,
) -> OfferedZygote:
    """Start a zygote (``recipe``: backend, device kind, preload list) in environment ``env``
    (made by :func:`~sweep.sandbox._zygote.zygote_environment`) that waits for its owner on a
    socket ``name`` in ``folder`` (a private folder of this process's), at most ``bound_s``
    seconds and only while this process lives. With ``owners`` above 1 it serves that many,
    one after the other (the first: this process, :meth:`OfferedZygote.lend`); each waits
    for the one before to close."""
    backend, kind, preload = recipe
    path = str(folder / name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        listener.bind(path)
        listener.listen(owners)  # the later owners wait in the backlog, not refused
        # Its own output (a preload that failed) in the folder, not on the launch's terminal.
        with open(f"{path}.log", "ab") as log:
            proc = subprocess.Popen(
                [
                    *python_code(_ENTRY),
                    str(listener.fileno()),
                    str(os.getpid()),
                    f"{bound_s:.3f}",
                    path,
                ]
                + [backend, kind, ",".join(preload), str(owners)],
                pass_fds=[listener.fileno()],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # as a worker's own zygote: signals to a group miss it
            )
    finally:
        listener.close()
    offer = ZygoteOffer(
        recipe=recipe_for(backend, kind, preload, env, per_child, loose),
        socket_path=path,
        pid=proc.pid,
        host=this_host(),
        per_child=per_child,
        loose=loose,
    )
    return OfferedZygote(offer, proc)


# ---------------------------------------------------------------------------------------
# The offered zygote.


def _peer(conn: socket.socket) -> tuple[int, int]:
    """``(pid, uid)`` of the process at the other end of ``conn``."""
    pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return pid, uid


def handover_main(argv: list[str]) -> int:
    """Entry point of an offered zygote: ``[LISTEN_FD, DRIVER_PID, BOUND_S, SOCKET_PATH,
    BACKEND, DEVICE_KIND, "mod1,mod2", OWNERS]``. Preloads as a worker's zygote does, then
    serves ``OWNERS`` owners (1 when left out) one after the other, each until it closes; exits
    (code 3) when the next one has not come by the bound or the driver is gone.

    The process the driver started stays a guardian: the zygote proper is its child. A
    solution that signals its zygote's parent (to reach the worker that owns it, as it would
    when the worker started its zygote) then kills the guardian, never the driver. The zygote
    dies with its guardian, so its owner sees its zygote gone and flags that task, as when a
    solution kills the zygote itself. The guardian's exit code is the zygote's."""
    zygote = os.fork()
    if zygote:
        os.close(int(argv[0]))  # the listener is the zygote's
        _pid, status = os.waitpid(zygote, 0)
        code = os.waitstatus_to_exitcode(status)
        os._exit(code if code >= 0 else 128 - code)  # at once: the owner watches this process
    set_parent_death_signal()
    guardian = os.getppid()
    if _parent_of(guardian) != int(argv[1]):
        os._exit(3)  # the guardian or the driver is gone already
    listener = socket.socket(fileno=int(argv[0]))
    driver, bound_s, path = int(argv[1]), float(argv[2]), argv[3]
    owners = int(argv[7]) if len(argv) > 7 else 1
    t0 = time.monotonic()
    ready_at = preload_zygote(argv[4], argv[5], argv[6])
    for left in range(owners, 0, -1):
        conn = _next_owner(
            listener, (guardian, driver), (t0 if left == owners else time.monotonic()) + bound_s, path
        )
        if left == 1:
            listener.close()
            with contextlib.suppress(OSError):
                os.unlink(path)  # a further owner finds nothing to connect to
        with contextlib.suppress(OSError):  # an owner that went away at once (``dismiss``)
            serve_owner(conn, ready_at, pid=guardian)  # the process the offer names
        conn.close()
        # The owner's sandboxes were killed when it closed: reaped (their device memory
        # given back) before the next owner forks its first.
        kill_descendants_except(set())
    os._exit(0)


def _parent_of(pid: int) -> int | None:
    """The parent of process ``pid`` (``None`` when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _next_owner(
    listener: socket.socket, parents: tuple[int, int], deadline: float, path: str
) -> socket.socket:
    """The next owner's connection (a process of this user); exits (code 3) once ``deadline``
    passes or the driver is gone first (``parents``: the guardian's pid and the driver's)."""
    adopted = threading.Event()
    guardian, driver = parents

    def watch() -> None:
        # The guardian's parent is the driver until it dies (then a subreaper or init): a pid
        # reused by another process cannot pass for it.
        while not adopted.wait(_WATCH_S):
            if _parent_of(guardian) != driver or time.monotonic() > deadline:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                os._exit(3)

    watcher = threading.Thread(target=watch, name="sweep-handover-watch", daemon=True)
    watcher.start()
    while True:
        conn, _ = listener.accept()
        _pid, uid = _peer(conn)
        if uid == os.getuid():
            break
        conn.close()  # not ours to serve
    adopted.set()
    watcher.join()  # no thread beside the one that forks sandboxes
    return conn


# ---------------------------------------------------------------------------------------
# The worker's side.


def _refusal(offer: ZygoteOffer, mine: ZygoteRecipe) -> str | None:
    if offer.host != this_host():
        return "it runs on another machine"
    theirs = offer.recipe
    for f in fields(ZygoteRecipe):
        a, b = getattr(theirs, f.name), getattr(mine, f.name)
        if a == b:
            continue
        if f.name != "env":
            return f"its {f.name} is {a!r}, this worker's {b!r}"
        diff = sorted({k for k, _ in set(a) ^ set(b)})
        return f"its environment differs in {', '.join(diff[:8])}" + (" ..." if len(diff) > 8 else "")
    return None


def dismiss(offer: ZygoteOffer) -> None:
    """Tell an offered zygote nobody will adopt it: connect and close at once (it then exits)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(1.0)
        s.connect(offer.socket_path)


def adopt_zygote(
    offer: ZygoteOffer,
    backend: str,
    device_kind: str,
    preload: tuple[str, ...],
    *,
    env_over: tuple[tuple[str, str], ...] = (),
    start_timeout_s: float = 300.0,
) -> Adopted | str:
    """Adopt the zygote ``offer`` names if it is the one this process would start with these
    arguments (:class:`~sweep.sandbox._zygote.ZygoteClient`'s); else why not (then it was told
    to go away, and the caller starts its own)."""
    env = zygote_environment(env_over)
    why = _refusal(offer, recipe_for(backend, device_kind, preload, env, offer.per_child, offer.loose))
    if why is not None:
        if offer.host == this_host():  # elsewhere its path names nothing of its
            dismiss(offer)
        return f"the offered zygote was refused: {why}"
    ctl = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        ctl.settimeout(min(10.0, start_timeout_s))
        ctl.connect(offer.socket_path)
        _pid, uid = _peer(ctl)  # the pid is the driver's, which made the socket listen
    except OSError as e:
        ctl.close()
        return f"the offered zygote could not be reached: {e}"
    if uid != os.getuid():
        ctl.close()
        return f"the offered zygote's socket belongs to user {uid}, not this worker's {os.getuid()}"
    try:
        # It says its pid once ready: it must be the process the offer names.
        client = ZygoteClient.adopt(ctl, offer.pid, start_timeout_s)
    except ZygoteError as e:
        return f"the offered zygote did not answer: {e}"
    names = [k for k in env if _matches(k, offer.per_child)]
    return Adopted(
        client=client,
        child_env=tuple((k, env[k]) for k in sorted(names)),
        child_unset=tuple(p for p in offer.per_child if not p.endswith("*") and p not in env),
    )


def handed_zygote(spec: SandboxSpec, offer: ZygoteOffer | None, lent: Lent | None) -> Adopted | str | None:
    """The zygote a sandbox supervisor of ``spec`` was handed: ``lent`` (used as it is) or
    ``offer`` (adopted if it is the one ``spec`` would start); else why not, or ``None`` when
    it was handed neither. The caller starts its own when this is not an :class:`Adopted`."""
    if lent is not None:
        try:
            client = ZygoteClient.adopt(lent.ctl, lent.pid, spec.start_timeout_s, lent=True)
        except ZygoteError as e:
            return f"the lent zygote did not answer: {e}"
        return Adopted(client=client, child_env=lent.child_env, child_unset=lent.child_unset)
    if offer is None:
        return None
    return adopt_zygote(
        offer,
        spec.backend,
        spec.device_kind,
        spec.preload,
        env_over=spec.env,
        start_timeout_s=spec.start_timeout_s,
    )

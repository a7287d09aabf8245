"""Keep a sandbox's writes inside the folders a task may use: a Landlock ruleset.

Code in a sandbox runs as the same user as the driver, so without this it could rewrite the
harness on disk (``sweep/engine/*.py`` or torch in the virtual environment: the next launch
would import its version and trust it), another solution's sources in the dataset, the results
of the sweep, or a shell's start-up file. Each sandbox restricts itself before a task's code
runs (inherited by whatever it starts) so that creating, writing, truncating, renaming or
removing a file is allowed only beneath :func:`writable_roots`:

- the task's own folder (its working and temporary folder), and the temporary folders of the
  machine (``/tmp``, ``/var/tmp``, ``/dev/shm`` and the ``TMPDIR`` the sandbox was started with);
- ``/dev`` (a GPU is opened for writing: ``/dev/nvidia*``) and this process's ``/proc`` entry;
- the caches compilers keep: kernel-sweep's build cache (``SWEEP_CACHE_DIR``), Triton's, torch's
  extensions and Inductor's, CUDA's JIT cache, and ``~/.cache``, ``~/.triton``, ``~/.nv``.

Once its task has arrived, and before any of the task's code runs, a sandbox narrows this with
a second ruleset (Landlock rulesets stack: each can only take rights away): :func:`task_roots`
keeps the task's own folder, ``/dev``, its ``/proc`` entry, CUDA's JIT cache, and the folders
its backend names for the task (its solution's own build folder in kernel-sweep's cache, and
its own folders for Triton's, torch's extensions' and Inductor's caches, which the backend
points the compilers at); for one rank of a gang, also the folder its ranks meet in (their
process group's file, under the worker's temporary folder). So a task can no longer write
the machine's temporary folders (other sandboxes' folders, a project kept there, a shared
``PYTHONPYCACHEPREFIX``), ``~/.cache``, ``~/.triton``, or kernel-sweep's cache beyond its own
solution's folders.

Reading stays allowed everywhere, and a descriptor opened before (the sandbox's log) can still
be written. A write elsewhere fails with ``PermissionError``. Landlock (Linux 5.19 and later
for its ABI 2, which lets a file be renamed from one folder to another, as compilers' caches
do) needs no privilege; where it is missing :func:`restrict_writes` says so and the sandbox runs
as before. Results under a temporary folder (the tests' ``tmp_path``) stay writable: keep a
sweep's results elsewhere (the default ``results/`` of the project is).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["LANDLOCK_MIN_ABI", "restrict_writes", "task_roots", "unavailable", "writable_roots"]

#: Landlock's ABI needed: 2 (renames across folders; with ABI 1 they are always refused).
LANDLOCK_MIN_ABI = 2

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every ABI
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_WRITE_FILE = 1 << 1
# REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM
_MAKE_AND_REMOVE = sum(1 << b for b in range(4, 13))
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3

#: Environment variables naming folders where compilers and caches write.
CACHE_VARIABLES = (
    "SWEEP_CACHE_DIR",
    "TRITON_CACHE_DIR",
    "TRITON_HOME",
    "TRITON_DUMP_DIR",
    "TRITON_OVERRIDE_DIR",
    "TORCH_EXTENSIONS_DIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "CUDA_CACHE_PATH",
    "XDG_CACHE_HOME",
    "PYTHONPYCACHEPREFIX",
)


def writable_roots(folder: str | None, start_tmp: str | None = None) -> list[str]:
    """The folders beneath which a sandbox may write (see the module's docstring), those that
    exist, as given: ``folder`` is the task's, ``start_tmp`` the ``TMPDIR`` it started with.
    The caches are made first where missing (:func:`_caches`)."""
    return _existing(
        [
            folder,
            start_tmp,
            tempfile.gettempdir(),
            "/tmp",
            "/var/tmp",
            "/dev",
            "/dev/shm",
            f"/proc/{os.getpid()}",
            *_caches((".cache", ".triton", ".nv"), CACHE_VARIABLES),
        ]
    )


def _caches(in_home: Sequence[str], variables: Sequence[str]) -> list[str]:
    """The compilers' caches: the folders ``in_home`` of the home folder and those that the
    environment ``variables`` name. Made first where missing: a compiler makes
    its cache folder on first use, which the ruleset would refuse in a home folder (Triton's
    ``~/.triton`` on a new machine)."""
    try:
        home: Path | None = Path.home()
    except (RuntimeError, KeyError):  # no HOME and no entry in the user database
        home = None
    caches = [str(home / sub) for sub in in_home] if home is not None else []
    caches += [v for name in variables if (v := os.environ.get(name))]
    for path in caches:
        with contextlib.suppress(OSError):
            os.makedirs(path, exist_ok=True)
    return caches


def _existing(roots: Iterable[str | None]) -> list[str]:
    """The ``roots`` that are folders, each once, in order."""
    out: list[str] = []
    for root in roots:
        if root and root not in out and os.path.isdir(root):
            out.append(root)
    return out


#: Of :data:`CACHE_VARIABLES`, the one a task's second ruleset keeps: CUDA's JIT cache (the
#: driver's own). Not kernel-sweep's cache (each task gets its solution's folder in it), nor
#: folders of many caches at once, nor Python's bytecode (a shared prefix would let a task plant
#: what the next process imports), nor the compilers' caches a backend gives each solution
#: folders of its own for (the engine's ``task_folders``): shared, they would let a task plant
#: a compiled kernel, or a launcher's shared library, that another solution's task loads.
_TASK_CACHE_VARIABLES = ("CUDA_CACHE_PATH",)


def task_roots(folder: str, extra: Iterable[str] = ()) -> list[str]:
    """The folders beneath which a task may write once it has arrived (see the module's
    docstring), those that exist: ``folder`` (the task's), ``extra`` (what its backend names:
    its solution's build folder and compilers' caches), ``/dev``, this process's ``/proc``
    entry, and CUDA's JIT cache (``~/.nv``, ``CUDA_CACHE_PATH``), made first where missing.
    Not Triton's, torch's extensions' or Inductor's shared caches: of the cache variables, only
    :data:`_TASK_CACHE_VARIABLES` is read."""
    caches = _caches((".nv",), _TASK_CACHE_VARIABLES)
    return _existing([folder, *extra, "/dev", f"/proc/{os.getpid()}", *caches])


def _abi(libc: ctypes.CDLL) -> int:
    got = libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return int(got) if got > 0 else 0


def _handled(abi: int) -> int:
    return _WRITE_FILE | _MAKE_AND_REMOVE | _REFER | (_TRUNCATE if abi >= 3 else 0)


def _lacking(abi: int) -> str | None:
    """Why a kernel of Landlock ABI ``abi`` (0: none) cannot take the ruleset."""
    if abi >= LANDLOCK_MIN_ABI:
        return None
    return "Landlock " + (
        "not enabled in this kernel" if abi == 0 else f"ABI {abi}, {LANDLOCK_MIN_ABI} needed"
    )


def unavailable() -> str | None:
    """Why this kernel cannot take the ruleset (``None``: it can)."""
    if platform.system() != "Linux":
        return f"no Landlock on {platform.system()}"
    return _lacking(_abi(ctypes.CDLL(None, use_errno=True)))


def restrict_writes(roots: Sequence[str] | Iterable[str], *, lone: bool = True) -> str | None:
    """Allow this process (the calling thread and what it starts) to write only beneath
    ``roots``; ``None`` when done, else why not (it then writes where the user may).

    ``lone``: the calling thread should be the process's only one (a sandbox before its
    device is ready), and the answer says so when it is not; ``False`` where threads that ran
    before keep an earlier ruleset (the task's, once CUDA's own threads run)."""
    if platform.system() != "Linux":
        return f"writes not confined: no Landlock on {platform.system()}"
    libc = ctypes.CDLL(None, use_errno=True)
    abi = _abi(libc)  # asked once: the ABI decides both whether and what is handled
    why = _lacking(abi)
    if why is not None:
        return f"writes not confined: {why}"
    handled = _handled(abi)
    attr = struct.pack("=Q", handled)
    ruleset = libc.syscall(ctypes.c_long(_SYS_CREATE_RULESET), attr, ctypes.c_size_t(len(attr)), 0)
    if ruleset < 0:
        return f"writes not confined: landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}"
    try:
        for root in roots:
            try:
                fd = os.open(root, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = struct.pack("=Qi", handled, fd)
                if libc.syscall(ctypes.c_long(_SYS_ADD_RULE), ruleset, _RULE_PATH_BENEATH, rule, 0) != 0:
                    return f"writes not confined: landlock_add_rule({root}) failed: {os.strerror(ctypes.get_errno())}"
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return (
                f"writes not confined: prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
            )
        if libc.syscall(ctypes.c_long(_SYS_RESTRICT_SELF), ruleset, 0) != 0:
            return f"writes not confined: landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}"
    finally:
        with contextlib.suppress(OSError):
            os.close(ruleset)
    # The ruleset binds the calling thread and those it starts later, not threads already
    # running (a sandbox has none at its start: fork keeps only the forking thread).
    if not lone:
        return None
    with contextlib.suppress(OSError):
        others = len(os.listdir("/proc/self/task")) - 1
        if others > 0:
            return f"writes confined in this thread; {others} thread(s) that ran before are not"
    return None

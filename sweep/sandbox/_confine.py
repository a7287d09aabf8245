"""Keep a sandbox's hands off the processes that ran before it: a seccomp filter.

Code in a sandbox runs as the same user as the driver, its worker and Ray, so Linux lets it
signal them, ptrace them, read or write their memory, or lower their resource limits. One
``os.kill(-1, SIGKILL)`` would end the whole launch, and every other process of the user. A
filter installed in each sandbox before any task's code runs (and inherited by whatever the
sandbox starts) answers ``EPERM`` to:

- a signal (``kill``, ``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``) to ``-1`` (every
  process), to another process group, or to a *protected* process;
- ``pidfd_open``, ``process_vm_readv``/``writev``, ``prlimit64`` and ``sched_setaffinity`` on
  a protected process, and ``setpriority`` on one or on a whole user;
- ``tkill``, ``ptrace``, ``pidfd_send_signal`` and ``process_madvise`` whatever their target
  (their target cannot be told from their arguments, and a kernel task has no use for them);
- any system call of another ABI (32-bit ``int 0x80``, x32), whose numbers differ.

The protected processes are those alive when the sandbox starts, but itself and its siblings
(the sandboxes of the same zygote: a gang's other ranks, the next task's spare): the driver,
the workers, Ray's processes, the zygotes, other GPUs' sandboxes. Only those a signal can
reach are listed (the user's own; every one when running as root), at most
:data:`MAX_PROTECTED`: ancestors first, then the newest (a launch's processes are younger than
the system's daemons). The sandbox may still signal itself (``0`` and its own
group: it leads a session of its own) and the processes it starts, so the harness can still
end them. A process started after the sandbox (another supervisor's next sandbox) is not
protected; neither is anything on a platform where the filter cannot be installed (not
Linux, or an architecture other than x86-64 and AArch64): :func:`confine` then says why.

The filter is a classic BPF program (``seccomp_data``: ``nr`` at offset 0, ``arch`` at 4, the
arguments from 16, eight bytes each); a pid is compared on its low 32 bits, as the kernel
reads a ``pid_t``. :func:`decide` states the same rule in Python, and the tests run the
program through a small BPF interpreter against it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "ARCHES",
    "ERRNO_EPERM",
    "MAX_PROTECTED",
    "RET_ALLOW",
    "Arch",
    "Instruction",
    "confine",
    "decide",
    "filter_program",
    "protected_pids",
    "unavailable",
]

#: The most pids listed (two instructions each; a program holds at most 4,096).
MAX_PROTECTED = 1800

RET_ALLOW = 0x7FFF0000
ERRNO_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06
_JA = 0x05
# Offsets in ``seccomp_data``: the call's number, the architecture, the low words of args 0, 1.
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24

_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_PRIO_USER = 2
_X32_BIT = 0x40000000

#: One classic BPF instruction: (code, jump if true, jump if false, constant).
Instruction = tuple[int, int, int, int]


@dataclass(frozen=True)
class Arch:
    """The numbers of one architecture: its audit constant and the system calls filtered."""

    audit: int
    seccomp: int
    #: Calls whose first argument is a pid (a signal's target, a process acted on).
    on_pid: tuple[int, ...]
    setpriority: int
    #: Calls refused whatever their arguments.
    refused: tuple[int, ...]
    #: Whether call numbers with bit 30 set are another ABI's (x32 on x86-64).
    x32: bool


# The calls of ``on_pid``, in order: kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_open,
# process_vm_readv, process_vm_writev, prlimit64, sched_setaffinity; of ``refused``: tkill,
# ptrace, pidfd_send_signal, process_madvise (``asm/unistd_64.h``, ``asm-generic/unistd.h``).
_X86_64 = Arch(0xC000003E, 317, (62, 234, 129, 297, 434, 310, 311, 302, 203), 141, (200, 101, 424, 440), True)
_AARCH64 = Arch(
    0xC00000B7, 277, (129, 131, 138, 240, 434, 270, 271, 261, 122), 140, (130, 117, 424, 440), False
)
#: The architectures the filter knows, by ``platform.machine()``.
ARCHES = {"x86_64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}


def _u32(pid: int) -> int:
    return pid & 0xFFFFFFFF


def decide(
    arch: Arch,
    nr: int,
    args: Sequence[int],
    *,
    own: int,
    leader: bool,
    protected: Iterable[int],
    audit: int | None = None,
) -> int:
    """What the filter answers to call ``nr`` with ``args``, made through the ABI ``audit``
    (the native one by default): the rule of the module's docstring, in Python.
    :data:`RET_ALLOW` or :data:`ERRNO_EPERM`."""
    if (audit is not None and audit != arch.audit) or (arch.x32 and nr & _X32_BIT):
        return ERRNO_EPERM
    if nr in arch.refused:
        return ERRNO_EPERM
    if nr == arch.setpriority:
        if _u32(args[0]) == _PRIO_USER:
            return ERRNO_EPERM
        target = _u32(args[1])
    elif nr in arch.on_pid:
        target = _u32(args[0])
    else:
        return RET_ALLOW
    if target == _u32(own) or (target == 0 and leader) or (target == _u32(-own) and leader):
        return RET_ALLOW
    if target & 0x80000000 or target == 0:
        return ERRNO_EPERM
    return ERRNO_EPERM if target in {_u32(p) for p in protected} else RET_ALLOW


def filter_program(arch: Arch, *, own: int, leader: bool, protected: Sequence[int]) -> list[Instruction]:
    """The BPF program of :func:`decide` for this process (``own`` its pid, ``leader``
    whether it leads its process group) and ``protected``."""
    deny = (_RET_K, 0, 0, ERRNO_EPERM)
    allow = (_RET_K, 0, 0, RET_ALLOW)
    pids = sorted({_u32(p) for p in protected} - {_u32(own), 0})[:MAX_PROTECTED]
    # The check of a pid in the accumulator: allowed targets, then anything negative (a
    # group or every process) or 0 of a non-leader, then the list; allowed past its end.
    check: list[Instruction] = [(_JEQ_K, 0, 1, _u32(own)), allow]
    if leader:
        check += [(_JEQ_K, 0, 1, 0), allow, (_JEQ_K, 0, 1, _u32(-own)), allow]
    check += [(_JSET_K, 0, 1, 0x80000000), deny, (_JEQ_K, 0, 1, 0), deny]
    for pid in pids:
        check += [(_JEQ_K, 0, 1, pid), deny]
    check.append(allow)
    # Head: the architecture, another ABI, then a dispatch on the call's number.
    head: list[Instruction] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, arch.audit),
        deny,
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch.x32:
        head += [(_JSET_K, 0, 1, _X32_BIT), deny]
    for nr in arch.refused:
        head += [(_JEQ_K, 0, 1, nr), deny]
    # The dispatch: a call of ``on_pid`` jumps to "load arg 0", setpriority to its own block
    # (which refuses PRIO_USER, loads the target and jumps into the check), others are allowed.
    prio: list[Instruction] = [
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ_K, 0, 1, _PRIO_USER),
        deny,
        (_LD_W_ABS, 0, 0, _ARG1),
        (_JA, 0, 0, 1),  # over "load arg 0"
    ]
    n = len(arch.on_pid)
    dispatch = [(_JEQ_K, (n - 1 - i) + 2 + len(prio), 0, nr) for i, nr in enumerate(arch.on_pid)]
    dispatch.append((_JEQ_K, 1, 0, arch.setpriority))  # over the allow, into the prio block
    return [*head, *dispatch, allow, *prio, (_LD_W_ABS, 0, 0, _ARG0), *check]


def _siblings_and_self(own: int) -> set[int]:
    """This process and the other children of its parent (the same zygote's sandboxes)."""
    parent = os.getppid()
    out = {own}
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{parent}/task"):
            with contextlib.suppress(OSError, ValueError), open(f"/proc/{parent}/task/{tid}/children") as f:
                out.update(int(p) for p in f.read().split())
    return out


def _ancestors(own: int) -> list[int]:
    out: list[int] = []
    pid = own
    while pid > 1 and len(out) < 64:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            break
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        pid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        if pid > 1:
            out.append(pid)
    return out


def protected_pids(own: int | None = None) -> tuple[list[int], int]:
    """The processes to protect (see the module's docstring), ancestors first, and how many
    were left out past :data:`MAX_PROTECTED`."""
    own = os.getpid() if own is None else own
    skip = _siblings_and_self(own)
    uid = os.geteuid()
    ancestors = [p for p in _ancestors(own) if p not in skip]
    others: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in skip or pid == 1:
            continue
        with contextlib.suppress(OSError):
            if uid == 0 or os.stat(f"/proc/{name}").st_uid == uid:
                others.append(pid)
    seen = set(ancestors)
    ordered = ancestors + sorted((p for p in others if p not in seen), reverse=True)
    return ordered[:MAX_PROTECTED], max(0, len(ordered) - MAX_PROTECTED)


def unavailable() -> str | None:
    """Why this platform cannot take the filter (``None``: it can)."""
    if platform.system() != "Linux":
        return f"no seccomp on {platform.system()}"
    if platform.machine() not in ARCHES:
        return f"the seccomp filter knows no system call numbers for {platform.machine()}"
    return None


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def confine() -> str | None:
    """Install the filter in this process (all its threads); ``None`` when it is in place and
    protects every process it listed, else a sentence for the sandbox's log: why there is no
    filter (the sandbox then runs unconfined, as before), or what it left out."""
    why = unavailable()
    if why is not None:
        return f"not confined: {why}"
    arch = ARCHES[platform.machine()]
    own = os.getpid()
    try:
        protected, left = protected_pids(own)
    except OSError as e:
        return f"not confined: cannot list the processes to protect ({e})"
    program = filter_program(arch, own=own, leader=os.getpgrp() == own, protected=protected)
    raw = b"".join(struct.pack("=HBBI", *ins) for ins in program)
    buf = ctypes.create_string_buffer(raw, len(raw))
    prog = _Prog(len(program), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"not confined: prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    done = libc.syscall(
        ctypes.c_long(arch.seccomp),
        ctypes.c_long(_SECCOMP_SET_MODE_FILTER),
        ctypes.c_long(_SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(prog),
    )
    if done != 0:
        why = os.strerror(ctypes.get_errno()) if done < 0 else f"thread {done} could not take it"
        return f"not confined: seccomp(SET_MODE_FILTER) failed: {why}"
    if left:
        return f"confined, protecting {len(protected)} processes; {left} older ones were left out"
    return None

"""The sandbox's seccomp filter (``sweep.sandbox._confine``): the program against its rule,
through a small BPF interpreter, and the filter installed in a real process."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import textwrap
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.sandbox._confine import (
    ARCHES,
    ERRNO_EPERM,
    MAX_PROTECTED,
    RET_ALLOW,
    Arch,
    Instruction,
    decide,
    filter_program,
)

from ._probe import run_probe

ARCH_LIST = sorted({id(a): a for a in ARCHES.values()}.values(), key=lambda a: a.audit)


def run_bpf(program: Sequence[Instruction], nr: int, audit: int, args: Sequence[int]) -> int:
    """Run a classic BPF program over one ``seccomp_data`` (the few opcodes the filter uses);
    its return value. A jump out of the program or an unknown opcode fails the test."""
    words = {0: nr & 0xFFFFFFFF, 4: audit}
    for i, a in enumerate(args):
        words[16 + 8 * i] = a & 0xFFFFFFFF
        words[20 + 8 * i] = (a >> 32) & 0xFFFFFFFF
    acc, pc = 0, 0
    while True:
        assert 0 <= pc < len(program), f"jumped out of the program at {pc}"
        code, jt, jf, k = program[pc]
        if code == 0x20:
            acc = words[k]
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x45:
            pc += 1 + (jt if acc & k else jf)
        elif code == 0x05:
            pc += 1 + k
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unknown opcode {code:#x}")


def _calls(arch: Arch) -> list[int]:
    return [*arch.on_pid, arch.setpriority, *arch.refused, 0, 1, 59, 231, 999]


pid_values = st.one_of(
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.sampled_from([0, -1, 1, 2, 4_194_304, 2**31 - 1]),
)


@settings(max_examples=400, deadline=None)
@given(
    arch=st.sampled_from(ARCH_LIST),
    own=st.integers(min_value=2, max_value=4_194_304),
    leader=st.booleans(),
    protected=st.lists(st.integers(min_value=1, max_value=4_194_304), max_size=40),
    data=st.data(),
)
def test_the_program_answers_as_the_rule_says(
    arch: Arch, own: int, leader: bool, protected: list[int], data: st.DataObject
) -> None:
    program = filter_program(arch, own=own, leader=leader, protected=protected)
    assert len(program) <= 4096
    pool = [own, -own, 0, -1, *protected, *(p + 1 for p in protected)]
    for _ in range(20):
        nr = data.draw(st.one_of(st.sampled_from(_calls(arch)), st.integers(0, 2**32 - 1)))
        target = data.draw(st.one_of(st.sampled_from(pool), pid_values))
        # Upper words set at random: the kernel reads a pid_t from the low 32 bits only.
        high = data.draw(st.sampled_from([0, 0xFFFFFFFF, 0x12345678]))
        first = data.draw(st.sampled_from([0, 1, 2, target]))
        args = [(high << 32) | (first & 0xFFFFFFFF), (high << 32) | (target & 0xFFFFFFFF), 0, 0, 0, 0]
        if nr != arch.setpriority:
            args[0] = (high << 32) | (target & 0xFFFFFFFF)
        audit = data.draw(st.sampled_from([arch.audit, arch.audit, 0x40000003]))
        want = decide(arch, nr, args, own=own, leader=leader, protected=protected, audit=audit)
        assert run_bpf(program, nr, audit, args) == want, (nr, args, audit)


def test_the_rule_on_the_cases_that_matter() -> None:
    arch = ARCHES["x86_64"]
    kill, tgkill, prlimit, setprio, ptrace = 62, 234, 302, 141, 101

    def answer(nr: int, *args: int, leader: bool = True) -> int:
        return decide(arch, nr, [*args, 0, 0, 0, 0], own=500, leader=leader, protected=[1, 200, 300])

    assert answer(kill, -1) == ERRNO_EPERM  # every process
    assert answer(kill, 200) == ERRNO_EPERM  # a protected one (the driver, say)
    assert answer(kill, -300) == ERRNO_EPERM  # another process group
    assert answer(kill, 500) == RET_ALLOW  # itself
    assert answer(kill, 0) == RET_ALLOW  # its own group, which it leads
    assert answer(kill, -500) == RET_ALLOW
    assert answer(kill, 0, leader=False) == ERRNO_EPERM  # a group it does not lead
    assert answer(kill, 900) == RET_ALLOW  # a process started after it (its child)
    assert answer(tgkill, 500) == RET_ALLOW  # raise(), pthread_kill() on its own threads
    assert answer(tgkill, 200) == ERRNO_EPERM
    assert answer(prlimit, 0) == RET_ALLOW and answer(prlimit, 300) == ERRNO_EPERM
    assert answer(setprio, 0, 0) == RET_ALLOW and answer(setprio, 0, 200) == ERRNO_EPERM
    assert answer(setprio, 2, 0) == ERRNO_EPERM  # every process of the user
    assert answer(ptrace, 16, 900) == ERRNO_EPERM  # refused whatever the target
    assert answer(0x40000000 | kill, 200) == ERRNO_EPERM  # the x32 ABI
    assert answer(0, 200) == RET_ALLOW  # read(2): not a call the filter looks at


def test_the_most_protected_pids_fit_one_program() -> None:
    for arch in ARCH_LIST:
        program = filter_program(arch, own=7, leader=True, protected=range(10, 10 + 3 * MAX_PROTECTED))
        assert len(program) <= 4096
        assert run_bpf(program, arch.on_pid[0], arch.audit, [10 + MAX_PROTECTED - 1]) == ERRNO_EPERM


def test_protected_pids_list_the_ancestors_first_and_not_the_siblings() -> None:
    # Two children of this process: one lists what it would protect, the other is its sibling.
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        got = run_probe("from sweep.sandbox._confine import protected_pids\nout['pids'] = protected_pids()")
        pids, left = got["pids"]
    finally:
        sibling.kill()
        sibling.wait()
    assert pids[0] == os.getpid()  # its parent, first
    assert os.getppid() in pids  # and the parent's parent
    assert sibling.pid not in pids  # the same parent's other child (a gang's other rank, say)
    assert 1 not in pids
    assert left == 0 or len(pids) == MAX_PROTECTED


# Every attempt is harmless when the filter is missing: signal 0, limits set to their values,
# a decoy reniced, ptrace that does not stop; the one real SIGKILL is aimed at the decoy.
_PROBE = textwrap.dedent(
    """
    import ctypes, json, os, resource, signal, subprocess, sys
    from sweep.sandbox._child import isolate
    from sweep.sandbox._confine import confine
    decoy = int(sys.argv[1])
    isolate()
    why = confine()
    out["why"] = why
    parent = os.getppid()
    attempt("kill every process (signal 0)", lambda: os.kill(-1, 0))
    attempt("kill the parent (signal 0)", lambda: os.kill(parent, 0))
    attempt("kill the decoy", lambda: os.kill(decoy, signal.SIGKILL))
    attempt("kill its own group (signal 0)", lambda: os.kill(0, 0))
    attempt("kill itself (signal 0)", lambda: os.kill(os.getpid(), 0))
    attempt("signal its own thread", lambda: signal.pthread_kill(
        __import__("threading").get_ident(), 0))
    attempt("set the decoy's limits", lambda: resource.prlimit(
        decoy, resource.RLIMIT_NOFILE, resource.prlimit(decoy, resource.RLIMIT_NOFILE)))
    attempt("its own limits", lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)))
    attempt("renice the decoy", lambda: os.setpriority(os.PRIO_PROCESS, decoy, 19))
    attempt("renice itself", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
    attempt("pidfd of the parent", lambda: os.close(os.pidfd_open(parent)))
    libc = ctypes.CDLL(None, use_errno=True)
    def ptrace():
        # PTRACE_SEIZE: attaches without stopping the decoy (a regression must not stop it).
        if libc.ptrace(0x4206, decoy, 0, 0) != 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
    attempt("ptrace the decoy", ptrace)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    attempt("kill its own child", lambda: os.kill(child.pid, signal.SIGKILL))
    child.wait()
    grandchild = subprocess.run(
        [sys.executable, "-c", "import os; os.kill(%d, 0)" % decoy], capture_output=True, text=True)
    out["a child signals the decoy"] = "EPERM" if "PermissionError" in grandchild.stderr else "allowed"
    """
)


@pytest.mark.skipif(
    sys.platform != "linux" or platform.machine() not in ARCHES, reason="seccomp filter: Linux x86-64/AArch64"
)
def test_a_confined_process_reaches_only_itself_and_its_children() -> None:
    # The decoy is a child of a shell of its own: not the probe's sibling (siblings, the same
    # zygote's sandboxes, are not protected), a process of the same user that ran before it.
    shell = subprocess.Popen(
        ["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert shell.stdout is not None
        decoy = int(shell.stdout.readline())
        got = run_probe(_PROBE, str(decoy))
        os.kill(decoy, 0)  # raises ProcessLookupError when the probe killed it
        assert shell.poll() is None
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()
    assert got.pop("why") is None
    assert got == {
        "kill every process (signal 0)": "EPERM",
        "kill the parent (signal 0)": "EPERM",
        "kill the decoy": "EPERM",
        "kill its own group (signal 0)": "allowed",
        "kill itself (signal 0)": "allowed",
        "signal its own thread": "allowed",
        "set the decoy's limits": "EPERM",
        "its own limits": "allowed",
        "renice the decoy": "EPERM",
        "renice itself": "allowed",
        "pidfd of the parent": "EPERM",
        "ptrace the decoy": "EPERM",
        "kill its own child": "allowed",
        "a child signals the decoy": "EPERM",
    }

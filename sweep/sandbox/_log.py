"""The sandbox's output file, read when a sandbox dies or hangs, and the words for what happened.

A sandbox writes its stdout, stderr and crash reports (faulthandler) to one log file; the
supervisor remembers the offset at which each task started, so a failure trace carries the
tail of that task's output only.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from sweep.sandbox._child import LOST_CONNECTION
from sweep.sandbox._zygote import ExitState

__all__ = ["crash_log", "dump_stacks", "file_size", "orphan_log", "output_tail", "timeout_log", "wait_quiet"]


def crash_log(pid: int, state: ExitState, phase: str, tail: str) -> str:
    """The log of a task whose sandbox process died in ``phase`` (``reference``, ``build``,
    ``run`` or ``evaluation``)."""
    what = {
        "reference": "while running the reference (before the solution was imported)",
        "build": "while building/importing the solution",
        "run": "while running",
    }.get(phase, "during the evaluation")
    why = ""
    if state.code == LOST_CONNECTION or state.socket_closed:
        why = (
            ": it could not send its result, its socket to the supervisor was closed or replaced "
            "(a solution closing file descriptors it does not own)"
        )
    return f"sandbox process {pid} {state.describe()} {what}{why}.\n--- sandbox output (tail) ---\n{tail}"


def orphan_log(pid: int, why: str, tail: str) -> str:
    """The log of a task during which its sandbox's parent (the zygote) died: ``why`` says how."""
    return (
        f"{why}; sandbox process {pid} was killed and the zygote replaced. A solution must not "
        "signal processes other than its own (os.kill(os.getppid(), ...) and the like).\n"
        f"--- sandbox output (tail) ---\n{tail}"
    )


def timeout_log(pid: int, phase: str, budget: float, tail: str) -> str:
    """The log of a task whose sandbox process was killed after ``budget`` seconds in ``phase``."""
    if phase == "reference":
        what = f"the reference's side (before the solution was imported) exceeded timeouts.run_s={budget:g} s"
    elif phase == "build":
        what = f"the build phase (import, compile) exceeded timeouts.compile_s={budget:g} s"
    elif phase == "run":
        what = f"the run phase exceeded timeouts.run_s={budget:g} s"
    else:
        what = f"the evaluation exceeded timeouts.compile_s + run_s = {budget:g} s"
    return f"{what}; sandbox process {pid} was killed (SIGKILL).\n--- sandbox output (tail) ---\n{tail}"


def dump_stacks(pid: int, log: Path) -> None:
    """Ask a hung sandbox where it is (faulthandler on SIGUSR1) before it is killed; wait until
    its report is in ``log``."""
    start = file_size(log)
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return
    wait_quiet(log, start, 2.0)


def file_size(path: Path) -> int:
    """Bytes in ``path`` (0 when it cannot be read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def wait_quiet(path: Path, start: int, timeout: float) -> None:
    """Wait until ``path`` has grown past ``start`` and stopped growing (a stack dump being
    written), at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = start
    while time.monotonic() < deadline:
        time.sleep(0.05)
        size = file_size(path)
        if size == last and size > start:
            return
        last = size


def output_tail(path: Path, offset: int, limit: int) -> str:
    """The last ``limit`` bytes written to ``path`` after ``offset``."""
    try:
        size = path.stat().st_size
        start = max(offset, size - limit) if size >= offset else max(0, size - limit)
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""

"""Threads a solution leaves running: told apart from the idle threads of a pool.

A thread that goes on after the solution's call returned could write its outputs outside the
timed window (the call looks free, the result is there when it is checked). Every thread that
runs Python code has a frame in ``sys._current_frames()``, those started with ``_thread`` too,
which ``threading.enumerate()`` does not list. A thread whose every frame is the standard
library's waiting code (a queue's ``get``, a pool worker between tasks, a condition's
``wait``) is idle: ``torch.compile`` and ``concurrent.futures`` keep such threads, and they do
nothing until given work.
"""

from __future__ import annotations

import sys
import threading
import types

__all__ = ["busy_threads", "thread_ids"]

#: Files of the standard library where an idle thread waits for work.
_IDLE_FILES = ("threading.py", "queue.py", "concurrent/futures/thread.py", "selectors.py")


def thread_ids() -> frozenset[int]:
    """The idents of every thread running Python code now."""
    return frozenset(sys._current_frames())


def busy_threads(known: frozenset[int]) -> list[str]:
    """Threads not in ``known`` (nor the calling one) that are running code, as
    ``name (file:line)`` of where each is."""
    frames = sys._current_frames()
    if frames.keys() <= known:
        return []
    names = {t.ident: t.name for t in threading.enumerate()}
    out: list[str] = []
    for tid, frame in frames.items():
        if tid in known or tid == threading.get_ident() or _idle(frame):
            continue
        out.append(f"{names.get(tid, f'thread {tid}')} ({frame.f_code.co_filename}:{frame.f_lineno})")
    return out


def _idle(frame: types.FrameType | None) -> bool:
    """Whether every frame of a thread's stack is the standard library's waiting code."""
    depth = 0
    while frame is not None and depth < 64:
        if not frame.f_code.co_filename.replace("\\", "/").endswith(_IDLE_FILES):
            return False
        frame = frame.f_back
        depth += 1
    return True

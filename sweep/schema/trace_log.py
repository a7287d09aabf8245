"""The text of a trace's ``evaluation.log``: clipped to the task's byte limit, read for sticky CUDA errors.

Both the engine (which writes the trace of every evaluation that returns) and the cluster
(which writes the trace when the evaluating process died) clip logs the same way, and both
read a log for the errors after which a CUDA context is unusable.
"""

from __future__ import annotations

__all__ = ["STICKY_CUDA_ERRORS", "clip_log", "sticky_cuda_error"]

#: Error texts (lower case) after which a CUDA context is unusable; only a new process recovers.
STICKY_CUDA_ERRORS = (
    "illegal memory access",
    "illegal address",
    "unspecified launch failure",
    # "triggered": torch ends every CUDA error message with "Compile with TORCH_USE_CUDA_DSA to
    # enable device-side assertions", which must not read as one.
    "device-side assert triggered",
    "misaligned address",
    "illegal instruction",
    "cuda error: unknown error",
)


def sticky_cuda_error(text: str) -> str | None:
    """The sticky CUDA error named in ``text`` (any case), or ``None``."""
    lowered = text.lower()
    return next((m for m in STICKY_CUDA_ERRORS if m in lowered), None)


def clip_log(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes: its head (what happened first, up to a third),
    a marker saying how much was cut, and its tail (the last output, often the traceback)."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    marker_room = 64
    room = max(0, limit - marker_room)
    head = raw[: room // 3]
    tail = raw[len(raw) - (room - len(head)) :] if room > len(head) else b""
    cut = len(raw) - len(head) - len(tail)
    marker = f"\n[... clipped ...] [{cut} bytes cut] ...\n".encode()
    out = (head + marker + tail).decode("utf-8", "ignore")
    while len(out.encode()) > limit:  # a multi-byte character cut in two may re-encode longer
        out = out[:-1]
    return out

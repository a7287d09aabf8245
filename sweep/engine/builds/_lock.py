"""An inter-process file lock, so two workers never build the same solution at once."""

from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

from sweep.errors import EngineError

__all__ = ["FileLock"]


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if missing), held inside a ``with`` block.

    ``flock`` locks die with their process, so a worker killed mid-build never leaves a
    stale lock behind (unlike lock files that are created and deleted).

    Args:
        path: The lock file.
        timeout_s: Give up (raise :class:`EngineError`) after this many seconds.
        poll_s: How often to retry while another process holds the lock.
    """

    def __init__(self, path: str | Path, *, timeout_s: float = 3600.0, poll_s: float = 0.05) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._fd: int | None = None
        #: Seconds spent waiting for another holder, for the log.
        self.waited_s = 0.0

    def acquire(self) -> None:
        """Block until the lock is ours, or raise after ``timeout_s``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() - start > self.timeout_s:
                    os.close(fd)
                    raise EngineError(
                        f"timed out after {self.timeout_s:.0f} s waiting for the lock {self.path} "
                        "(another process is building the same solution)"
                    ) from None
                time.sleep(self.poll_s)
        self.waited_s = time.monotonic() - start
        self._fd = fd

    def release(self) -> None:
        """Let go of the lock (no-op when not held)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

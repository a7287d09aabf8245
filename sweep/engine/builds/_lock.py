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

__all__ = ["RENDEZVOUS_ENV", "FileLock", "build_lock"]

#: Test hook of the two-process build tests: a folder. A build lock taken at once is then held
#: (``holding`` written in that folder) until another process has found it taken (it leaves
#: ``contended`` there), so the two builds overlap however late the second process starts on a
#: loaded machine.
RENDEZVOUS_ENV = "SWEEP_TEST_BUILD_RENDEZVOUS"
#: The longest a holder waits for that other process (then the test fails instead of hanging).
_RENDEZVOUS_S = 300.0


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if missing), held inside a ``with`` block.

    ``flock`` locks die with their process, so a worker killed mid-build never leaves a
    stale lock behind (unlike lock files that are created and deleted).

    Args:
        path: The lock file.
        timeout_s: Give up (raise :class:`EngineError`) after this many seconds.
        poll_s: How often to retry while another process holds the lock.
        rendezvous: The test hook's folder (:data:`RENDEZVOUS_ENV`), or None.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        timeout_s: float = 3600.0,
        poll_s: float = 0.05,
        rendezvous: Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.rendezvous = rendezvous
        self._fd: int | None = None
        #: Seconds spent waiting for another holder, for the log.
        self.waited_s = 0.0

    def acquire(self) -> None:
        """Block until the lock is ours, or raise after ``timeout_s``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        contended = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if self.rendezvous is not None and not contended:
                    self.rendezvous.mkdir(parents=True, exist_ok=True)
                    (self.rendezvous / "contended").touch()
                contended = True
                if time.monotonic() - start > self.timeout_s:
                    os.close(fd)
                    raise EngineError(
                        f"timed out after {self.timeout_s:.0f} s waiting for the lock {self.path} "
                        "(another process is building the same solution)"
                    ) from None
                time.sleep(self.poll_s)
        self.waited_s = time.monotonic() - start
        self._fd = fd
        if self.rendezvous is not None and not contended:
            self._meet(self.rendezvous / "contended")

    def _meet(self, contended: Path) -> None:
        """Hold the lock until another process has found it taken (the test hook); says so
        with ``holding`` beside ``contended``."""
        contended.parent.mkdir(parents=True, exist_ok=True)
        (contended.parent / "holding").touch()
        start = time.monotonic()
        while not contended.is_file():
            if time.monotonic() - start > _RENDEZVOUS_S:
                self.release()
                raise EngineError(
                    f"{RENDEZVOUS_ENV} is set but no other process asked for the lock {self.path} "
                    f"within {_RENDEZVOUS_S:.0f} s (unset it outside the two-process build tests)"
                )
            time.sleep(self.poll_s)

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


def build_lock(folder: Path, *, timeout_s: float) -> FileLock:
    """The lock of building the solution whose sources are in ``folder``
    (with the test hook of :data:`RENDEZVOUS_ENV` when that is set)."""
    meet = os.environ.get(RENDEZVOUS_ENV)
    return FileLock(folder / ".build.lock", timeout_s=timeout_s, rendezvous=Path(meet) if meet else None)

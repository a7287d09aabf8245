"""The writer's side of the store follower (:mod:`sweep.store.write._follower`): starts the process,
tells it how far logs are synced, and hears how far they are stored."""

from __future__ import annotations

import pickle
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sweep._python import python_env, python_module
from sweep.errors import StoreError
from sweep.store.db import StoreContext
from sweep.store.write._follower import Flush, Start, Stored, Synced

__all__ = ["FollowerClient"]


class FollowerClient:
    """A running follower process.

    Args:
        store_path: The DuckDB file.
        context: Fills the columns traces alone leave empty.
        interval_s: How often the follower inserts what is synced.
        lock_timeout_s: How long a flush or the last pass waits for readers.
        on_stored: Called (on a thread of this client) with every pass's answer.
    """

    def __init__(
        self,
        store_path: Path,
        context: StoreContext,
        *,
        interval_s: float,
        lock_timeout_s: float,
        on_stored: Callable[[Stored], None],
    ) -> None:
        self.lock_timeout_s = lock_timeout_s
        self.on_stored = on_stored
        self.error: str | None = None  # the process died or cannot be told
        self._send_lock = threading.Lock()
        # Synced ends are sent at most every quarter interval (the syncer runs hundreds of
        # passes a second under load; the follower reads every interval), the rest kept here.
        self._gap_s = interval_s / 4
        self._ends: dict[str, int] = {}
        self._sent_at = 0.0
        self._cond = threading.Condition()
        self._answers: dict[int, Stored] = {}
        self._tokens = 0
        self._done = False
        self.proc = subprocess.Popen(
            # The very `sweep` this process runs, wherever it came from (not the working folder's).
            python_module("sweep.store.write._follower_main"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=python_env(),
            close_fds=True,  # never inherit the writer's folder lock
        )
        self._send(Start(str(store_path), context, interval_s, lock_timeout_s))
        self._reader = threading.Thread(target=self._read, name="sweep-store-follower", daemon=True)
        self._reader.start()

    def _send(self, msg: Start | Synced | Flush) -> None:
        with self._send_lock:
            stdin = self.proc.stdin
            if stdin is None or stdin.closed:
                return
            try:
                pickle.dump(msg, stdin, protocol=pickle.HIGHEST_PROTOCOL)
                stdin.flush()
            except (BrokenPipeError, OSError) as e:
                self.error = f"the store follower (pid {self.proc.pid}) is gone: {e}"

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            try:
                msg = pickle.load(out)  # our child's answer
            except (EOFError, OSError, pickle.UnpicklingError):
                break
            if not isinstance(msg, Stored):
                continue
            self.on_stored(msg)
            with self._cond:
                if msg.token is not None:
                    self._answers[msg.token] = msg
                self._cond.notify_all()
        with self._cond:
            self._done = True
            if self.proc.wait() != 0 and self.error is None:
                self.error = f"the store follower (pid {self.proc.pid}) exited with {self.proc.returncode}"
            self._cond.notify_all()

    def synced(self, ends: dict[str, int]) -> None:
        """Tell the follower how far logs are synced (it reads no further); sent at once, or
        with the next ends when the last were sent a moment ago (:meth:`flush` sends them all)."""
        now = time.monotonic()
        with self._send_lock:
            self._ends.update(ends)
            if now - self._sent_at < self._gap_s:
                return
            self._sent_at = now
            ends, self._ends = self._ends, {}
        self._send(Synced(ends))

    def _send_ends(self) -> None:
        with self._send_lock:
            ends, self._ends = self._ends, {}
        if ends:
            self._send(Synced(ends))

    def flush(self) -> None:
        """Have the follower insert what is synced now, and wait for it.

        Raises:
            StoreError: The pass failed (the store stayed locked), or the follower is gone.
        """
        with self._cond:
            self._tokens += 1
            token = self._tokens
        self._send_ends()
        self._send(Flush(token))
        with self._cond:
            self._cond.wait_for(
                lambda: token in self._answers or self._done, timeout=self.lock_timeout_s + 30
            )
            answer = self._answers.pop(token, None)
        if answer is None:
            raise StoreError(self.error or "the store follower did not answer")
        if answer.error is not None:
            raise StoreError(answer.error)

    def close(self) -> None:
        """End the follower: it makes one last pass over what is synced, then exits.

        Raises:
            StoreError: The last pass failed, or the follower did not end in time (killed).
        """
        self._send_ends()
        with self._send_lock:
            if self.proc.stdin is not None and not self.proc.stdin.closed:
                try:
                    self.proc.stdin.close()
                except OSError:
                    pass
        try:
            self.proc.wait(timeout=self.lock_timeout_s + 60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.error = f"the store follower (pid {self.proc.pid}) did not end in time; killed"
        self._reader.join()
        if self.error is not None:
            raise StoreError(self.error)

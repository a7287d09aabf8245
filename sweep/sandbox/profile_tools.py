"""Running a profiling tool (ncu, compute-sanitizer) over one process, supervised.

The tool runs in a session (and process group) of its own, its output in a file; past its
deadline the whole group is killed (``_process_guard.kill_group``) and what it wrote so far
is kept. Nothing here knows what the tool profiles: the caller gives the command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep.sandbox._process_guard import kill_group
from sweep.schema.files import atomic_output
from sweep.schema.limits import open_regular

__all__ = ["ToolRun", "find_tool", "run_tool"]

_OUTPUT_LIMIT = 16 << 20


@dataclass(frozen=True)
class ToolRun:
    """How one tool run ended: its exit status (``None``: killed at the deadline), its output
    (stdout and stderr together, the first 16 MiB) and how long it took."""

    argv: list[str]
    returncode: int | None
    output: str
    elapsed_s: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def find_tool(name: str, env_var: str) -> str | None:
    """The tool's executable: ``$env_var`` when set, else ``name`` on ``PATH`` (``None``: not found)."""
    given = os.environ.get(env_var)
    if given:
        return given if os.access(given, os.X_OK) and Path(given).is_file() else None
    return shutil.which(name)


def run_tool(
    argv: Sequence[str],
    *,
    timeout_s: float,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> ToolRun:
    """Run ``argv`` in its own process group, its output to ``log_path``, killed (the whole
    group) after ``timeout_s`` seconds.

    Raises:
        OSError: The tool cannot be started or the log cannot be written.
    """
    t0 = time.monotonic()
    # The log is renamed into place once the tool is done (never written through a link).
    with atomic_output(log_path) as log:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.wait()
            code = None
        except BaseException:
            kill_group(proc.pid)
            proc.wait()
            raise
    with open_regular(log_path) as f:
        text = f.read(_OUTPUT_LIMIT).decode("utf-8", errors="replace")
    return ToolRun(list(argv), code, text, time.monotonic() - t0)

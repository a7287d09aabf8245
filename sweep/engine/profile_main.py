"""``python -m sweep.engine.profile_main TASKFILE [CALLS] [DEVICE]``: the process a profiler runs.

Reads one :class:`~sweep.schema.task.Task` (JSON), runs :func:`sweep.engine.profile_run` on
it and prints what it did; exit status 0, or 1 with ``error: ...`` on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Profile the task in ``argv[0]`` (``argv[1]``: calls, default 5; ``argv[2]``: device)."""
    from sweep.engine._api import profile_run
    from sweep.engine._process import prepare_process
    from sweep.errors import SweepError
    from sweep.schema.task import Task

    if not 1 <= len(argv) <= 3:
        print("usage: python -m sweep.engine.profile_main TASKFILE [CALLS] [DEVICE]", file=sys.stderr)
        return 2
    try:
        task = Task.model_validate_json(Path(argv[0]).read_bytes())
        calls = int(argv[1]) if len(argv) > 1 else 5
        prepare_process("cuda")
        done = profile_run(task, argv[2] if len(argv) > 2 else None, calls)
    except (SweepError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(done.describe(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

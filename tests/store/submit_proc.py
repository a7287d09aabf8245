"""A sweep driver stand-in that stores as ``sweep launch`` does: ``submit`` per group, a trace
counted done only when its callback says it is durable; it resumes as a launch does.

Usage: python submit_proc.py RESULTS_DIR STORE N GROUP
Prints ``follower <pid>`` first, then ``done <task id>`` for each trace as it becomes durable
(flushed at once), skipping the tasks whose trace is already logged or stored.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from writer_proc import trace

from sweep.store import ResultsWriter, completed_task_ids


def main() -> None:
    results, store, n, size = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    done = completed_task_ids(results, store)
    todo = [i for i in range(n) if f"task-{i}" not in done]

    def durable(ids: Sequence[str]) -> Callable[[], None]:
        def then() -> None:
            sys.stdout.write("".join(f"done {i}\n" for i in ids))
            sys.stdout.flush()

        return then

    with ResultsWriter(results, store, sweep="resume", run_id="run", flush_interval_s=0.05) as w:
        print(f"follower {w._follower.proc.pid}", flush=True)
        for k in range(0, len(todo), size):
            group = todo[k : k + size]
            w.submit([trace(i) for i in group], durable([f"task-{i}" for i in group]))
        w.drain()


if __name__ == "__main__":
    main()

"""A sweep driver stand-in that stores as ``sweep launch`` does: ``submit`` per group, a trace
counted done only when its callback says it is durable; it resumes as a launch does.

Usage: python submit_proc.py RESULTS_DIR STORE N GROUP
Prints ``follower <pid>`` first, then ``done <task id>`` for each trace as it becomes durable
(flushed at once), skipping the tasks whose trace is already logged or stored.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from writer_proc import trace

from sweep.schema import Trace
from sweep.store import ResultsWriter, completed_task_ids


def main() -> None:
    results, store, n, size = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    done = completed_task_ids(results, store)
    todo = [i for i in range(n) if f"task-{i}" not in done]

    def durable(traces: Sequence[Trace]) -> None:
        sys.stdout.write("".join(f"done {t.provenance.task_id if t.provenance else ''}\n" for t in traces))
        sys.stdout.flush()

    with ResultsWriter(results, store, sweep="resume", run_id="run", flush_interval_s=0.05) as w:
        print(f"follower {w._follower.proc.pid}", flush=True)
        for k in range(0, len(todo), size):
            w.submit([trace(i) for i in todo[k : k + size]], durable)
        w.drain()


if __name__ == "__main__":
    main()

"""A `sweep query` user for the concurrency tests: counts traces until told to stop.

Usage: python reader_proc.py RESULTS_DIR STORE DONE_FLAG [SEEN]
SEEN: a file the last count seen is written to after each query (the writer waits on it).
Prints one JSON object: the counts seen, in order, the sources they came from, and any errors.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sweep.errors import SweepError
from sweep.store import query


def main() -> None:
    results, store, done = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    seen = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    counts: list[int] = []
    sources: list[str] = []
    errors: list[str] = []
    finished = False
    while True:
        finished = done.exists()
        try:
            res = query(store, "SELECT count(*) FROM traces", results_dir=results)
            counts.append(int(str(res.rows[0][0])))
            sources.append(res.source)
            if seen is not None:
                tmp = seen.with_suffix(".tmp")
                tmp.write_text(str(counts[-1]))
                tmp.replace(seen)
        except SweepError as e:
            errors.append(str(e))
        except Exception as e:  # noqa: BLE001 - report anything, the test asserts there is nothing
            errors.append(f"{type(e).__name__}: {e}")
        if finished:
            break
        time.sleep(0.01)
    print(json.dumps({"counts": counts, "sources": sources, "errors": errors}))


if __name__ == "__main__":
    main()

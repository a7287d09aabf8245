"""A launch in a thread, for the scripts that run a Ray cluster of their own
(``many_nodes_proc.py``, ``node_loss_proc.py``; they import it from their own folder)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any


class LaunchThread(threading.Thread):
    """Runs ``launch(config, options)``; :meth:`outcome` is what the test reads of it."""

    def __init__(self, config: str | Path, options: Any) -> None:
        super().__init__()
        self._config, self._options = config, options
        self._box: list[Any] = []

    def run(self) -> None:
        from sweep.launch.driver import launch

        try:
            self._box.append(launch(self._config, self._options))
        except BaseException as e:  # noqa: BLE001 - reported to the test
            self._box.append(e)

    def outcome(self) -> dict[str, Any]:
        """After :meth:`join`: ``{"error": ...}``, or the launch's statuses and counters."""
        result = self._box[0] if self._box else RuntimeError("launch did not return")
        if isinstance(result, BaseException):
            return {"error": repr(result)}
        return {
            "statuses": dict(result.statuses),
            "ran": result.ran,
            "retried": result.stats.retried,
            "requeued": result.stats.requeued,
            "workers_died": result.stats.workers_died,
            "workers_started": result.stats.workers_started,
        }

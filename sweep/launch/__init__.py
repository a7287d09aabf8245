"""The launch stage: a whole command, from a config file to stored traces.

- :mod:`sweep.launch.driver`: ``sweep launch`` (plan, connect to Ray, skip what is stored,
  run the rest through :mod:`sweep.cluster`, store every trace as it arrives).
- :mod:`sweep.launch.progress`: the progress line and the end-of-launch summary.
- :mod:`sweep.launch.local`: ``sweep eval``, one pair evaluated in this process (no Ray).

Nothing here imports ray or torch at module level.
"""

from sweep.launch._run import STORE_FLUSH_S
from sweep.launch._storing import Storing
from sweep.launch.driver import LaunchOptions, LaunchResult, launch, new_run_id
from sweep.launch.local import evaluate_from_dataset

__all__ = [
    "STORE_FLUSH_S",
    "LaunchOptions",
    "LaunchResult",
    "Storing",
    "evaluate_from_dataset",
    "launch",
    "new_run_id",
]

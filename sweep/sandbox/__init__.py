"""The sandbox stage: one process per task, supervised, out of reach of the tasks before and after it.

No Ray here (the cluster stage schedules; this stage runs one task safely on a node) and no torch
(the evaluating code is a backend module named by the caller, ``sweep.engine``):

- :mod:`sweep.sandbox.supervisor`: :class:`Sandbox`, the supervisor of the process that evaluates:
  deadlines per phase, crash reports, a failure trace when the process dies.
- :mod:`sweep.sandbox.packing`: the typed messages between a worker and its sandbox.
- :mod:`sweep.sandbox.failure_traces`: the one trace a task gets when it cannot produce its own.
- :mod:`sweep.sandbox.compile_pool`: sandboxes that compile the next tasks ahead.
- :mod:`sweep.sandbox.handover`: a zygote started by one process, adopted by the worker it was for.
- :mod:`sweep.sandbox.profile_tools`: a profiling tool (ncu, compute-sanitizer) over one process.
"""

from sweep.sandbox.packing import Done, Envelope, TaskPacker
from sweep.sandbox.supervisor import Sandbox, SandboxSpec, SandboxStartError, SandboxStats

__all__ = ["Done", "Envelope", "Sandbox", "SandboxSpec", "SandboxStartError", "SandboxStats", "TaskPacker"]

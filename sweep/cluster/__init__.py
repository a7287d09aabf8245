"""The schedule stage, and the only Ray code: GPU workers, their sandboxes and zygotes, the driver loop.

- :mod:`sweep.cluster.connect`: reaching Ray (an address, or an embedded local Ray) and what
  the cluster has (GPU types, counts) -> worker pools.
- :mod:`sweep.cluster.scheduler`: the driver loop: tasks to workers in completion order,
  a lost worker replaced, every task ending with exactly one trace.
- :mod:`sweep.cluster.sandbox`: the supervisor of the process that evaluates (forked from a
  zygote that imported torch once), with deadlines, crash reports and failure traces.
- :mod:`sweep.cluster.workers`: where the loop gets workers (new actors per launch), and
  :mod:`sweep.cluster.warm`: warm workers of an existing cluster, reused by the next launch
  when their code and setup match (lease, fingerprint, idle timeout); listed and stopped
  by :mod:`sweep.cluster.warm_admin` (``sweep workers``).
- :mod:`sweep.cluster.profile_tools`: a profiling tool (ncu, compute-sanitizer) over one
  process, in its own process group, killed at its deadline.

The evaluating code is a backend module named by the caller (``sweep.engine``); nothing here
imports it, ray or torch at module level.
"""

from sweep.cluster._packing import Done, Envelope, TaskPacker
from sweep.cluster.sandbox import Sandbox, SandboxSpec, SandboxStartError, SandboxStats

__all__ = ["Done", "Envelope", "Sandbox", "SandboxSpec", "SandboxStartError", "SandboxStats", "TaskPacker"]

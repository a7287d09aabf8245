"""The schedule stage, and the only Ray code: GPU workers, the driver loop.

- :mod:`sweep.cluster.connect`: reaching Ray (an address, or an embedded local Ray) and what
  the cluster has (GPU types, counts) -> worker pools.
- :mod:`sweep.cluster.scheduler`: the driver loop: tasks to workers in completion order,
  a lost worker replaced, every task ending with exactly one trace.
- :mod:`sweep.cluster.workers`: where the loop gets workers (new actors per launch), and
  :mod:`sweep.cluster.warm`: warm workers of an existing cluster, reused by the next launch
  when their code and setup match (lease, fingerprint, idle timeout); listed and stopped
  by :mod:`sweep.cluster.warm_admin` (``sweep workers``); :mod:`sweep.cluster.zygote_offers`:
  the zygotes an embedded launch starts for its workers before Ray is up.

Each task runs in a sandbox (:mod:`sweep.sandbox`), the evaluating code a backend module named
by the caller (``sweep.engine``); nothing here imports ray or torch at module level.
"""

from sweep.cluster._worker_actor import WorkerInfo

__all__ = ["WorkerInfo"]

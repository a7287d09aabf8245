"""Run by ``test_many_nodes.py`` in a process of its own (its own Ray cluster and connection).

Starts a three-node cluster (one logical H100 GPU each), launches a sweep of gated tasks
(``fake_backend``'s ``gate``: each says on which node it runs, then waits for the gate to
open) in a thread, and drives the cluster from what runs where, never from time:

1. once node B runs a task, B is removed (``Cluster.remove_node``: its raylet and every
   process on it die, mid-task) and node D is added;
2. once node D runs a task (the worker that replaced B's), the gate opens and the sweep ends.

Prints, as JSON, the launch result, the node ids, and which steps happened.

Usage: ``python many_nodes_proc.py CONFIG GATE_DIR``
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from launch_thread import LaunchThread  # of this script's folder (sys.path[0])


def _raylet_pid(node: Any) -> int:
    from ray._private import ray_constants

    return int(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)


def _wait_for(path: Path, thread: threading.Thread, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while thread.is_alive() and time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


def main() -> None:
    import ray
    from ray.cluster_utils import Cluster

    from sweep.launch.driver import LaunchOptions

    config, gate = sys.argv[1], Path(sys.argv[2])
    node = {"num_cpus": 1, "num_gpus": 1, "resources": {"accelerator_type:H100": 1}}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    b = cluster.add_node(**node)
    c = cluster.add_node(**node)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    out: dict[str, Any] = {"a": cluster.head_node.node_id, "b": b.node_id, "c": c.node_id}
    opts = LaunchOptions(quiet=True, backend="tests.cluster.fake_backend", preload=())
    thread = LaunchThread(config, opts)
    thread.start()
    out["b_ran"] = _wait_for(gate / str(_raylet_pid(b)), thread, 240)
    if out["b_ran"]:
        cluster.remove_node(b)  # mid-task: B's sandbox is waiting at the gate
        d = cluster.add_node(**node)
        out["d"] = d.node_id
        out["d_ran"] = _wait_for(gate / str(_raylet_pid(d)), thread, 300)
    (gate / "open").touch()
    thread.join(300)
    out.update(thread.outcome())
    print(json.dumps(out))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()

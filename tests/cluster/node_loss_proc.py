"""Run by ``test_node_loss.py`` in a process of its own (its own Ray cluster and connection).

Starts a two-node cluster (one logical H100 GPU each), launches a sweep of slow tasks in a
thread, removes the second node (``Cluster.remove_node``: its raylet and every process on
it die) once that node has finished one evaluation, and prints, as JSON, the launch result
and the node ids.

Usage: ``python node_loss_proc.py CONFIG``
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from launch_thread import LaunchThread  # of this script's folder (sys.path[0])


def main() -> None:
    import ray
    from ray.cluster_utils import Cluster

    from sweep.launch.driver import LaunchOptions
    from sweep.plan import load_config

    config = load_config(sys.argv[1])
    results = Path(config.output.results_dir)
    node = {"num_cpus": 1, "num_gpus": 1, "resources": {"accelerator_type:H100": 1}}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    doomed = cluster.add_node(**node)
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    out: dict[str, object] = {"head": cluster.head_node.node_id, "doomed": doomed.node_id}
    thread = LaunchThread(sys.argv[1], LaunchOptions(quiet=True))
    thread.start()
    t0 = time.monotonic()
    deadline = t0 + 120
    removed = False
    while thread.is_alive() and not removed and time.monotonic() < deadline:
        for log in results.glob("traces/**/*.jsonl"):
            for line in log.read_text().splitlines():
                prov = json.loads(line).get("provenance") or {}
                if prov.get("node_id") == doomed.node_id:
                    cluster.remove_node(doomed)  # mid-sweep: its next evaluation is running
                    removed = True
                    out["removed_after_s"] = round(time.monotonic() - t0, 2)
                    break
            if removed:
                break
        time.sleep(0.05)
    thread.join(300)
    out.update(thread.outcome())
    out["removed"] = removed
    print(json.dumps(out))
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()

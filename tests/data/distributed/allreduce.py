"""Test records of a distributed all-reduce, and solutions that fail on one rank."""

from __future__ import annotations

from sweep.schema import Definition, Solution, Workload

REFERENCE = (
    "import torch.distributed as dist\n\n"
    "def run(x):\n"
    "    out = x.clone()\n"
    "    dist.all_reduce(out)\n"
    "    return out\n"
)


def definition(world_size: int | None = 2) -> Definition:
    dist: dict[str, object] = {"collective": "all_reduce", "message_bytes": "n * 4"}
    axes: dict[str, object] = {"n": {"type": "var"}}
    if world_size is None:
        axes["W"] = {"type": "var"}
        dist["world_size_axis"] = "W"
    else:
        dist["world_size"] = world_size
    return Definition.model_validate(
        {
            "name": "all_reduce_sum",
            "op_type": "collective",
            "axes": axes,
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
            "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
            "reference": REFERENCE,
            "distributed": dist,
        }
    )


#: Bodies of ``run(x, y)`` (destination passing): the rank is ``dist.get_rank()``.
BODIES = {
    "good": "    y.copy_(x)\n    dist.all_reduce(y)\n",
    "wrong_on_1": "    y.copy_(x)\n    dist.all_reduce(y)\n    if dist.get_rank() == 1:\n        y.add_(1.0)\n",
    "crash_on_1": "    if dist.get_rank() == 1:\n        os._exit(3)\n    y.copy_(x)\n    dist.all_reduce(y)\n",
    "hang_on_1": "    if dist.get_rank() == 1:\n        time.sleep(3600)\n    y.copy_(x)\n    dist.all_reduce(y)\n",
    "raise_on_1": "    if dist.get_rank() == 1:\n        raise ValueError('rank one is broken')\n    y.copy_(x)\n    dist.all_reduce(y)\n",
    # Writes beside the gang's folders (the machine's temporary folder): refused to a rank too.
    "write_tmp_on_1": "    if dist.get_rank() == 1:\n"
    "        open('/tmp/sweep-rank-plant-%d' % os.getpid(), 'w').close()\n"
    "    y.copy_(x)\n    dist.all_reduce(y)\n",
}


def solution(kind: str) -> Solution:
    src = "import os\nimport time\n\nimport torch.distributed as dist\n\n\ndef run(x, y):\n" + BODIES[kind]
    return Solution.model_validate(
        {
            "name": f"ar_{kind}",
            "definition": "all_reduce_sum",
            "author": "test",
            "spec": {"language": "python", "target_hardware": ["*"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": src}],
        }
    )


def workload(n: int = 256, world: int | None = None) -> Workload:
    axes = {"n": n} if world is None else {"n": n, "W": world}
    return Workload.model_validate(
        {"uuid": f"ar-{n}-{world}", "axes": axes, "inputs": {"x": {"type": "random"}}}
    )

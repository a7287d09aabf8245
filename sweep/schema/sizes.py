"""How many bytes a workload's inputs take, read from the records alone (no torch, nothing
allocated): what a first sweep, with no earlier durations, orders its tasks by.

A definition's tensor inputs count their shape at the workload's axes times their element size;
a BackendBench workload counts every tensor of its call (strided ones: their extent). Scalars
and the outputs count nothing. A record this cannot read (an axis missing, a malformed call)
counts 0: the engine reports such a task, and an order must not fail on it first.
"""

from __future__ import annotations

import math

from sweep.schema.call_args import ITEMSIZE, iter_tensors
from sweep.schema.call_json import decode_call
from sweep.schema.definition import Definition
from sweep.schema.workload import BackendBenchArgsInput, Workload

__all__ = ["input_bytes"]

# Sub-byte types the call-argument table has no entry for.
_FRACTIONAL = {"float4_e2m1": 0.5}


def input_bytes(definition: Definition, workload: Workload) -> int:
    """Bytes of one input set of ``workload`` (0 where the records cannot say)."""
    for spec in workload.inputs.values():
        if isinstance(spec, BackendBenchArgsInput):
            try:
                args, kwargs = decode_call(spec.args, spec.kwargs)
            except ValueError:
                return 0
            return sum(t.nbytes for v in (*args, *kwargs.values()) for t in iter_tensors(v))
    total = 0.0
    axes = dict(workload.axes)
    for tensor in definition.inputs.values():
        try:
            shape = definition.resolve_shape(tensor, axes)
        except KeyError:
            return 0
        if shape is not None:
            size = ITEMSIZE.get(tensor.dtype.value) or _FRACTIONAL.get(tensor.dtype.value, 1)
            total += math.prod(max(d, 0) for d in shape) * size
    return math.ceil(total)

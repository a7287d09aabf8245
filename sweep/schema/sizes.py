"""How many bytes a workload's tensors take, read from the records alone (no torch, nothing
allocated): the engine's memory plan and work count (:func:`specs_bytes`), and what a first
sweep, with no earlier durations, orders its tasks by (:func:`input_bytes`).

A definition's tensor inputs count their shape at the workload's axes times their element size;
a BackendBench workload counts every tensor of its call (strided ones: their extent). Scalars
and the outputs count nothing. A record this cannot read (an axis missing, a malformed call)
counts 0: the engine reports such a task, and an order must not fail on it first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from sweep.schema.call_args import ITEMSIZE, iter_tensors
from sweep.schema.call_json import decode_call
from sweep.schema.definition import Definition, TensorSpec
from sweep.schema.workload import BackendBenchArgsInput, Workload

__all__ = ["MAX_BYTES", "element_size", "input_bytes", "specs_bytes", "whole_bytes"]

#: A size past any memory: what a count of bytes too large for a float (axes near 2**63 in a
#: shape of many dimensions) saturates to, so a hostile record is refused as too large, not
#: raised on.
MAX_BYTES = 2**63 - 1

# Sub-byte types the call-argument table has no entry for.
_FRACTIONAL = {"float4_e2m1": 0.5}


def element_size(dtype: str) -> float:
    """Bytes per element of a definition dtype (0.5 for float4).

    Raises:
        KeyError: not a dtype a definition can name.
    """
    return _FRACTIONAL[dtype] if dtype in _FRACTIONAL else float(ITEMSIZE[dtype])


def specs_bytes(definition: Definition, specs: Mapping[str, TensorSpec], axes: Mapping[str, int]) -> float:
    """Bytes of ``specs`` (the definition's inputs or outputs) at a workload's ``axes``: each
    tensor's shape times its element size; scalars count nothing.

    A count past what a float holds is ``math.inf``.

    Raises:
        KeyError: a shape names an axis that ``axes`` and the definition's constants lack.
    """
    total = 0.0
    given = dict(axes)
    for spec in specs.values():
        shape = definition.resolve_shape(spec, given)
        if shape is not None:
            try:
                total += math.prod(shape) * element_size(spec.dtype.value)
            except OverflowError:  # an int product past a float's range
                return math.inf
    return total


def whole_bytes(count: float) -> int:
    """A byte count rounded up, at most :data:`MAX_BYTES` (``math.inf`` included)."""
    return MAX_BYTES if not count < MAX_BYTES else math.ceil(count)


def input_bytes(definition: Definition, workload: Workload) -> int:
    """Bytes of one input set of ``workload`` (0 where the records cannot say)."""
    for spec in workload.inputs.values():
        if isinstance(spec, BackendBenchArgsInput):
            try:
                args, kwargs = decode_call(spec.args, spec.kwargs)
            except ValueError:
                return 0
            return sum(t.nbytes for v in (*args, *kwargs.values()) for t in iter_tensors(v))
    try:
        return whole_bytes(specs_bytes(definition, definition.inputs, workload.axes))
    except KeyError:
        return 0

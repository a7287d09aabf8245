"""A Definition skeleton to edit: valid JSON that already loads, whose values say what to put.

FlashInfer-Bench definitions are JSON, which has no comments, so the skeleton explains itself
through its ``description`` fields and a small working example (an elementwise add over a
var and a const axis) that a user replaces. It validates as written, so ``sweep validate``
can be run at every step of the edit.
"""

from __future__ import annotations

from typing import Any

from sweep.schema import Definition

__all__ = ["GUIDE", "definition_skeleton"]

_REFERENCE = '''"""The reference: what the operation computes, in plain PyTorch (readable, not fast).

A top-level `run` takes the inputs in the order of "inputs" and returns the outputs, in the
order of "outputs" (a tuple when there are several). Solutions are checked against it.
"""

import torch


def run(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x + w
'''

#: What to fill in, printed after the skeleton is written.
GUIDE = """\
fill in, replacing the example (an elementwise add y = x + w):
  description  what the operation computes, dtypes and layout included
  axes         every dimension: {"type": "var"} when each workload sets it,
               {"type": "const", "value": N} when the definition fixes it
  inputs       name -> {"shape": [axis names] (null for a scalar), "dtype": "float32" | "bfloat16" | ...},
               in the order the reference and solutions take them
  outputs      the same, in the order they are returned (or written, in destination-passing style)
  reference    Python source with a top-level run(inputs...) returning the outputs
  optional     constraints (e.g. "hidden_size % 8 == 0"), flops and bytes (work of one call over the axes), tags
then: sweep validate ROOT; workloads go in workloads/<op_type>/<name>.jsonl;
a solution from a source file: sweep new solution NAME kernel.py"""


def definition_skeleton(name: str, op_type: str) -> dict[str, Any]:
    """A Definition named ``name`` of ``op_type``, as a JSON object that loads as it is."""
    record: dict[str, Any] = {
        "name": name,
        "op_type": op_type,
        "description": (
            "TODO: what this operation computes (this skeleton is an elementwise add y = x + w of "
            "two [batch_size, hidden_size] float32 tensors: replace axes, inputs, outputs and reference)."
        ),
        "tags": [f"op:{op_type}"],
        "axes": {
            "batch_size": {"type": "var", "description": "var: every workload gives its value"},
            "hidden_size": {"type": "const", "value": 1024, "description": "const: fixed by this definition"},
        },
        "inputs": {
            "x": {
                "shape": ["batch_size", "hidden_size"],
                "dtype": "float32",
                "description": "first argument of run; shape lists axis names, null for a scalar",
            },
            "w": {
                "shape": ["batch_size", "hidden_size"],
                "dtype": "float32",
                "description": "second argument",
            },
        },
        "outputs": {
            "y": {
                "shape": ["batch_size", "hidden_size"],
                "dtype": "float32",
                "description": "what run returns (or, in destination-passing style, the argument it writes)",
            }
        },
        "reference": _REFERENCE,
        "constraints": [],
        "flops": "batch_size * hidden_size",
        "bytes": "3 * 4 * batch_size * hidden_size",
    }
    Definition.model_validate(record)  # the skeleton must load: a test keeps it so
    return record

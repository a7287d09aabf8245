"""ATen calls (BackendBench rows): the operators torch has, the call's argument tree, its inputs (index
rules, random and view ops), its comparison and the bytes it moves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.engine.aten._call_bytes import call_inputs as call_inputs
    from sweep.engine.aten._call_bytes import moved_bytes as moved_bytes
    from sweep.engine.aten._call_compare import compare_call as compare_call
    from sweep.engine.aten._call_inputs import (
        CallSpec as CallSpec,
    )
    from sweep.engine.aten._call_inputs import (
        bind_problem as bind_problem,
    )
    from sweep.engine.aten._call_inputs import (
        clone_call as clone_call,
    )
    from sweep.engine.aten._call_inputs import (
        describe_call as describe_call,
    )
    from sweep.engine.aten._call_inputs import (
        is_backendbench as is_backendbench,
    )
    from sweep.engine.aten._call_inputs import (
        materialize as materialize,
    )
    from sweep.engine.aten._call_inputs import (
        materialize_meta as materialize_meta,
    )
    from sweep.engine.aten._call_inputs import (
        mutated_values as mutated_values,
    )
    from sweep.engine.aten._call_inputs import (
        output_bytes as output_bytes,
    )
    from sweep.engine.aten._call_random import tensor_check as tensor_check
    from sweep.engine.aten._call_tree import (
        Args as Args,
    )
    from sweep.engine.aten._call_tree import (
        copy_into as copy_into,
    )
    from sweep.engine.aten._call_tree import (
        freshly_drawn as freshly_drawn,
    )
    from sweep.engine.aten._call_tree import (
        storage_view as storage_view,
    )
    from sweep.engine.aten._call_tree import (
        tensor_leaves as tensor_leaves,
    )
    from sweep.engine.aten._call_tree import (
        tree_tensors as tree_tensors,
    )
    from sweep.engine.aten._call_tree import (
        under as under,
    )
    from sweep.engine.aten._call_tree import (
        written_paths as written_paths,
    )
    from sweep.engine.aten._op_kinds import OpKind as OpKind
    from sweep.engine.aten._op_kinds import op_kind as op_kind
    from sweep.engine.aten._op_kinds import seeded as seeded

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "Args": "_call_tree",
    "bind_problem": "_call_inputs",
    "call_inputs": "_call_bytes",
    "CallSpec": "_call_inputs",
    "clone_call": "_call_inputs",
    "compare_call": "_call_compare",
    "copy_into": "_call_tree",
    "describe_call": "_call_inputs",
    "freshly_drawn": "_call_tree",
    "is_backendbench": "_call_inputs",
    "materialize": "_call_inputs",
    "materialize_meta": "_call_inputs",
    "moved_bytes": "_call_bytes",
    "mutated_values": "_call_inputs",
    "op_kind": "_op_kinds",
    "OpKind": "_op_kinds",
    "output_bytes": "_call_inputs",
    "seeded": "_op_kinds",
    "storage_view": "_call_tree",
    "tensor_check": "_call_random",
    "tensor_leaves": "_call_tree",
    "tree_tensors": "_call_tree",
    "under": "_call_tree",
    "written_paths": "_call_tree",
}
__all__ = [
    "Args",
    "CallSpec",
    "OpKind",
    "bind_problem",
    "call_inputs",
    "clone_call",
    "compare_call",
    "copy_into",
    "describe_call",
    "freshly_drawn",
    "is_backendbench",
    "materialize",
    "materialize_meta",
    "moved_bytes",
    "mutated_values",
    "op_kind",
    "output_bytes",
    "seeded",
    "storage_view",
    "tensor_check",
    "tensor_leaves",
    "tree_tensors",
    "under",
    "written_paths",
]
__getattr__ = face(__name__, _WHERE)

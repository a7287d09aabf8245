"""Inputs made and outputs judged: seeded inputs of named definitions and their constraints, the
comparison with the reference, and what an evaluation ends with (Result, Stop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.engine.io._compare import (
        ErrorStats as ErrorStats,
    )
    from sweep.engine.io._compare import (
        Mismatch as Mismatch,
    )
    from sweep.engine.io._compare import (
        check_reference as check_reference,
    )
    from sweep.engine.io._compare import (
        compare_outputs as compare_outputs,
    )
    from sweep.engine.io._compare import (
        is_sequence as is_sequence,
    )
    from sweep.engine.io._compare import (
        normalize_outputs as normalize_outputs,
    )
    from sweep.engine.io._compare import (
        tolerance as tolerance,
    )
    from sweep.engine.io._constraints import (
        ConstraintError as ConstraintError,
    )
    from sweep.engine.io._constraints import (
        constraint_inputs as constraint_inputs,
    )
    from sweep.engine.io._constraints import (
        evaluate_constraint as evaluate_constraint,
    )
    from sweep.engine.io._inputs import (
        INT_RANGE_BITS as INT_RANGE_BITS,
    )
    from sweep.engine.io._inputs import (
        InputError as InputError,
    )
    from sweep.engine.io._inputs import (
        InputSet as InputSet,
    )
    from sweep.engine.io._inputs import (
        MemoryPlan as MemoryPlan,
    )
    from sweep.engine.io._inputs import (
        base_seed as base_seed,
    )
    from sweep.engine.io._inputs import (
        element_bytes as element_bytes,
    )
    from sweep.engine.io._inputs import (
        hash_int as hash_int,
    )
    from sweep.engine.io._inputs import (
        make_inputs as make_inputs,
    )
    from sweep.engine.io._inputs import (
        memory_plan as memory_plan,
    )
    from sweep.engine.io._inputs import (
        set_seed as set_seed,
    )
    from sweep.engine.io._inputs import (
        torch_dtype as torch_dtype,
    )
    from sweep.engine.io._outcome import (
        Result as Result,
    )
    from sweep.engine.io._outcome import (
        Stop as Stop,
    )
    from sweep.engine.io._outcome import (
        bits as bits,
    )
    from sweep.engine.io._outcome import (
        compile_failure as compile_failure,
    )
    from sweep.engine.io._outcome import (
        nbytes as nbytes,
    )
    from sweep.engine.io._outcome import (
        reference_stop as reference_stop,
    )
    from sweep.engine.io._outcome import (
        source_line as source_line,
    )
    from sweep.engine.io._outcome import (
        traceback_text as traceback_text,
    )
    from sweep.engine.io._outcome import (
        triton_mode_problem as triton_mode_problem,
    )

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "base_seed": "_inputs",
    "bits": "_outcome",
    "check_reference": "_compare",
    "compare_outputs": "_compare",
    "compile_failure": "_outcome",
    "constraint_inputs": "_constraints",
    "ConstraintError": "_constraints",
    "element_bytes": "_inputs",
    "ErrorStats": "_compare",
    "evaluate_constraint": "_constraints",
    "hash_int": "_inputs",
    "InputError": "_inputs",
    "InputSet": "_inputs",
    "INT_RANGE_BITS": "_inputs",
    "is_sequence": "_compare",
    "make_inputs": "_inputs",
    "memory_plan": "_inputs",
    "MemoryPlan": "_inputs",
    "Mismatch": "_compare",
    "nbytes": "_outcome",
    "normalize_outputs": "_compare",
    "reference_stop": "_outcome",
    "source_line": "_outcome",
    "Result": "_outcome",
    "set_seed": "_inputs",
    "Stop": "_outcome",
    "tolerance": "_compare",
    "torch_dtype": "_inputs",
    "traceback_text": "_outcome",
    "triton_mode_problem": "_outcome",
}
__all__ = [
    "INT_RANGE_BITS",
    "ConstraintError",
    "ErrorStats",
    "InputError",
    "InputSet",
    "MemoryPlan",
    "Mismatch",
    "Result",
    "Stop",
    "base_seed",
    "bits",
    "check_reference",
    "compare_outputs",
    "compile_failure",
    "constraint_inputs",
    "element_bytes",
    "evaluate_constraint",
    "hash_int",
    "is_sequence",
    "make_inputs",
    "memory_plan",
    "nbytes",
    "normalize_outputs",
    "reference_stop",
    "set_seed",
    "source_line",
    "tolerance",
    "torch_dtype",
    "traceback_text",
    "triton_mode_problem",
]
__getattr__ = face(__name__, _WHERE)

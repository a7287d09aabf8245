"""Solutions made callable: Python imported as a package of its own, C++/CUDA compiled once per content
(a file lock across processes), TVM-FFI libraries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.engine.builds._build import (
        BuildError as BuildError,
    )
    from sweep.engine.builds._build import (
        Built as Built,
    )
    from sweep.engine.builds._build import (
        build_solution as build_solution,
    )
    from sweep.engine.builds._build import (
        check_signature as check_signature,
    )
    from sweep.engine.builds._build import (
        interpreter_mode as interpreter_mode,
    )
    from sweep.engine.builds._build import (
        reference_solution as reference_solution,
    )
    from sweep.engine.builds._built import params_problem as params_problem
    from sweep.engine.builds._built import with_params as with_params
    from sweep.engine.builds._triton_interp import interpreter_hint as interpreter_hint

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "build_solution": "_build",
    "BuildError": "_build",
    "Built": "_build",
    "check_signature": "_build",
    "interpreter_hint": "_triton_interp",
    "interpreter_mode": "_build",
    "params_problem": "_built",
    "reference_solution": "_build",
    "with_params": "_built",
}
__all__ = [
    "BuildError",
    "Built",
    "build_solution",
    "check_signature",
    "interpreter_hint",
    "interpreter_mode",
    "params_problem",
    "reference_solution",
    "with_params",
]
__getattr__ = face(__name__, _WHERE)

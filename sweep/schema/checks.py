"""Rules that tie a workload to its definition, and the check of axis constraints.

Constraints are Python expressions in the definition. Those that mention only axis names
are checked here, on the workload's axis values, by the safe evaluator of
:mod:`sweep.schema.expr` (a whitelist walk of the AST: no ``eval``, no attribute access, no
calls beyond ``min``/``max``/``abs``). Constraints that mention tensor values
(``kv_indptr[-1].item()``) are left to the engine.
"""

from __future__ import annotations

from collections.abc import Mapping

from sweep.errors import clip, did_you_mean, listing, shown
from sweep.schema.definition import Definition
from sweep.schema.distributed import MAX_WORLD_SIZE, Distributed, full_axes, world_size_of
from sweep.schema.expr import ConstraintError, constraint_names, eval_expression, refuse_strings
from sweep.schema.workload import BackendBenchArgsInput, ScalarInput, Workload

__all__ = ["check_workload", "eval_axis_constraint"]


def eval_axis_constraint(text: str, values: Mapping[str, int]) -> bool:
    """Evaluate an axis-only constraint on axis values, safely (see :mod:`sweep.schema.expr`).

    Args:
        text: The constraint, e.g. ``"num_heads % num_kv_heads == 0"``.
        values: Axis name to size.

    Returns:
        Whether the constraint holds.

    Raises:
        ConstraintError: The expression uses anything outside the arithmetic and
            comparison whitelist, or a name with no value.
    """
    refuse_strings(text)
    return bool(eval_expression(text, values))


def distributed_problems(spec: Distributed, axes: dict[str, int]) -> list[str]:
    """Why a distributed definition's workload with ``axes`` cannot run: a world size out of
    range, a derived axis that is not a whole number >= 1 or disagrees with the one given."""
    n = world_size_of(spec, axes)
    if n is not None and not 1 <= n <= MAX_WORLD_SIZE:
        return [f"axes.{clip(str(spec.world_size_axis))}: a world size is 1 to {MAX_WORLD_SIZE}, got {n}"]
    try:
        full_axes(spec, axes)
    except ConstraintError as e:
        return [f"distributed: {e}"]
    return []


def check_workload(definition: Definition, workload: Workload) -> list[str]:
    """Every way ``workload`` fails to match ``definition`` (empty when it matches).

    Each message starts with the field path (``axes.M``, ``inputs.x``).
    """
    errors: list[str] = []
    const = definition.const_axes()
    var = definition.given_axes()
    for name in var:
        if name not in workload.axes:
            errors.append(f"axes.{clip(name)}: var axis {shown(name)} is not given")
    for name, value in workload.axes.items():
        if name not in definition.axes:
            errors.append(
                f"axes.{clip(name)}: unknown axis{did_you_mean(name, definition.axes)} "
                f"(definition {shown(definition.name)} has: {listing(definition.axes)})"
            )
        elif name in const and value != const[name]:
            errors.append(f"axes.{clip(name)}: const axis is {const[name]}, workload gives {value}")
        elif value < 1:
            errors.append(f"axes.{clip(name)}: must be >= 1, got {value}")
    if definition.distributed is not None and not errors:
        errors.extend(distributed_problems(definition.distributed, workload.axes))
    whole_call = [n for n, s in workload.inputs.items() if isinstance(s, BackendBenchArgsInput)]
    if whole_call:
        # A backendbench_args input carries every argument of an ATen call; such a
        # definition declares no inputs (its signature is the operator's own schema).
        if definition.inputs:
            errors.append(
                f"inputs.{clip(whole_call[0])}: a 'backendbench_args' input stands for all arguments, "
                f"but definition {shown(definition.name)} declares inputs ({listing(definition.inputs)})"
            )
        if len(workload.inputs) > 1:
            errors.append(
                f"inputs: a 'backendbench_args' input must be the only input, got {listing(workload.inputs)}"
            )
        return errors
    for name, spec in workload.inputs.items():
        tspec = definition.inputs.get(name)
        if tspec is None:
            errors.append(
                f"inputs.{clip(name)}: unknown input{did_you_mean(name, definition.inputs)} "
                f"(definition has: {listing(definition.inputs)})"
            )
            continue
        if tspec.is_scalar and spec.type not in ("scalar",):
            errors.append(f"inputs.{clip(name)}: is a scalar in the definition, workload gives {spec.type!r}")
        if not tspec.is_scalar and isinstance(spec, ScalarInput):
            errors.append(f"inputs.{clip(name)}: is a tensor in the definition, workload gives a scalar")
    for name in definition.inputs:
        if name not in workload.inputs:
            errors.append(f"inputs.{clip(name)}: input is not given")
    if errors:
        return errors
    values = {**workload.axes, **const}
    for text in definition.constraints or []:
        # The definition's own validation refused names that are neither axes nor inputs.
        names = constraint_names(text)
        if not names or not names <= set(definition.axes):
            continue  # mentions tensor values: the engine checks it on real inputs
        try:
            ok = eval_axis_constraint(text, values)
        except (ConstraintError, ZeroDivisionError, OverflowError) as e:
            errors.append(f"constraints: cannot evaluate {shown(text)}: {e}")
            continue
        if not ok:
            given = ", ".join(f"{k}={values[k]}" for k in sorted(names))
            errors.append(f"constraints: {shown(text)} does not hold ({given})")
    return errors

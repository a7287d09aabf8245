"""Definition: one operation, its axes, tensors and reference implementation."""

from __future__ import annotations

import ast
from enum import Enum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from sweep.errors import clip, did_you_mean, listing, shown
from sweep.schema._base import Record
from sweep.schema.distributed import Distributed
from sweep.schema.expr import (
    CONSTRAINT_FUNCTIONS,
    ConstraintError,
    called_names,
    constraint_names,
    expression_problem,
)
from sweep.schema.limits import PosInt64

__all__ = [
    "SEED_DTYPES",
    "WORK_FIELDS",
    "Axis",
    "AxisConst",
    "AxisVar",
    "DType",
    "Definition",
    "TensorSpec",
]


class DType(str, Enum):
    """Element types. The first 11 are FlashInfer-Bench's; the rest are documented extensions
    (BackendBench traces carry float64, uint8 and complex tensors)."""

    float32 = "float32"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float8_e4m3fn = "float8_e4m3fn"
    float8_e5m2 = "float8_e5m2"
    float4_e2m1 = "float4_e2m1"
    int64 = "int64"
    int32 = "int32"
    int16 = "int16"
    int8 = "int8"
    bool = "bool"
    # Extensions beyond the seed schema.
    float64 = "float64"
    uint8 = "uint8"
    complex32 = "complex32"
    complex64 = "complex64"
    complex128 = "complex128"


SEED_DTYPES: frozenset[str] = frozenset(d.value for d in list(DType)[:11])

#: The extension fields of a definition that state the work of one call.
WORK_FIELDS: tuple[str, ...] = ("flops", "bytes")
#: The longest reference accepted: Python's parser needs memory in proportion.
MAX_REFERENCE_CHARS = 1_000_000


class AxisConst(Record):
    """An axis whose size the definition fixes."""

    type: Literal["const"]
    value: PosInt64
    description: str | None = None


class AxisVar(Record):
    """An axis whose size each workload gives."""

    type: Literal["var"]
    parent: str | None = None
    description: str | None = None


Axis = Annotated[AxisConst | AxisVar, Field(discriminator="type")]


class TensorSpec(Record):
    """An input or output: a list of axis names, or ``None`` for a scalar."""

    shape: list[str] | None
    dtype: DType
    description: str | None = None

    @property
    def is_scalar(self) -> bool:
        """True when this spec describes a scalar, not a tensor."""
        return self.shape is None


class Definition(Record):
    """An operation to implement: FlashInfer-Bench's ``Definition`` record."""

    name: str = Field(min_length=1)
    op_type: str = Field(min_length=1)
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    description: str | None = None
    constraints: list[str] | None = None
    # Extensions (absent in upstream files): the work of one call, as arithmetic over the
    # axes (the safe evaluator of sweep.schema.expr), e.g. "2 * M * N * K".
    flops: str | None = Field(
        default=None,
        description="floating-point operations of one call, as an expression over the axes",
    )
    bytes: str | None = Field(
        default=None,
        description="least bytes one call must move to and from memory, as an expression over the axes",
    )
    # Extension: a call made by several ranks at once (sweep.schema.distributed, docs/multi-gpu.md).
    distributed: Distributed | None = None

    @model_validator(mode="after")
    def _check(self) -> Definition:
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for tname, spec in specs.items():
                for i, axis in enumerate(spec.shape or []):
                    if axis not in self.axes:
                        raise ValueError(
                            f"{kind}.{clip(tname)}.shape[{i}]: axis {shown(axis)} is not declared "
                            f"in 'axes'{did_you_mean(axis, self.axes)} (declared: {listing(sorted(self.axes))})"
                        )
        both = sorted(set(self.inputs) & set(self.outputs))
        if both:
            raise ValueError(f"names used as both input and output: {listing(both)}")
        self._check_reference()
        for i, text in enumerate(self.constraints or []):
            problem = self._constraint_problem(text)
            if problem:
                raise ValueError(f"constraints[{i}]: {problem}")
        names = list(self.axes)
        if self.distributed is not None:
            problem = self.distributed.check_against(self.axes, self.var_axes())
            if problem:
                raise ValueError(f"distributed.{problem}")
            names.append("world_size")
        for field in WORK_FIELDS:
            text = getattr(self, field)
            problem = expression_problem(text, names) if text is not None else None
            if problem:
                raise ValueError(f"{field}: {problem}")
        return self

    def _check_reference(self) -> None:
        if len(self.reference) > MAX_REFERENCE_CHARS:
            raise ValueError(f"reference: longer than {MAX_REFERENCE_CHARS:,} characters")
        try:
            mod = ast.parse(self.reference, mode="exec")
        except SyntaxError as e:
            raise ValueError(f"reference: not valid Python: {e.msg} (line {e.lineno})") from None
        except (RecursionError, MemoryError, ValueError):
            # Python's parser gives up on very deep code this way (MemoryError is its own
            # fixed-size stack); ValueError is a NUL byte on some versions.
            raise ValueError("reference: not valid Python: nested too deeply for Python's parser") from None
        if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in mod.body):
            raise ValueError("reference: must define a top-level function 'run'")

    def _constraint_problem(self, text: str) -> str | None:
        """Why a constraint cannot be checked, or ``None``: it must parse, and name only
        axes and inputs (the engine binds nothing else) and call only
        :data:`~sweep.schema.expr.CONSTRAINT_FUNCTIONS`."""
        try:
            names = constraint_names(text)
            called = called_names(text)
        except SyntaxError as e:
            return f"not a Python expression: {shown(text)} ({e.msg})"
        except ConstraintError as e:
            return f"{e}: {shown(text)}"
        known = [*self.axes, *self.inputs]
        for name in sorted(names - set(known)):
            return (
                f"unknown name {shown(name)} in {shown(text)}{did_you_mean(name, known)}; "
                f"a constraint may read axes ({listing(self.axes)}) and inputs ({listing(self.inputs)})"
            )
        for name in sorted(called - CONSTRAINT_FUNCTIONS):
            allowed = ", ".join(sorted(CONSTRAINT_FUNCTIONS))
            return (
                f"unknown function {shown(name)} in {shown(text)}"
                f"{did_you_mean(name, CONSTRAINT_FUNCTIONS)}; allowed: {allowed}"
            )
        return None

    def const_axes(self) -> dict[str, int]:
        """The const axes and their values."""
        return {n: a.value for n, a in self.axes.items() if isinstance(a, AxisConst)}

    def var_axes(self) -> list[str]:
        """The names of the var axes, in declaration order."""
        return [n for n, a in self.axes.items() if isinstance(a, AxisVar)]

    def given_axes(self) -> list[str]:
        """The var axes a workload must give: all but those a distributed call derives."""
        derived = self.distributed.derived_axes if self.distributed is not None else {}
        return [n for n in self.var_axes() if n not in derived]

    def resolve_shape(self, spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...] | None:
        """Concrete shape of ``spec`` for a workload's axis values (``None`` for a scalar)."""
        if spec.shape is None:
            return None
        values = {**axes, **self.const_axes()}
        return tuple(values[a] for a in spec.shape)

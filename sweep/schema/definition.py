"""Definition: one operation, its axes, tensors and reference implementation."""

from __future__ import annotations

import ast
from enum import Enum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from sweep.schema._base import Record
from sweep.schema.expr import expression_problem

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


class AxisConst(Record):
    """An axis whose size the definition fixes."""

    type: Literal["const"]
    value: int = Field(ge=1)
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

    @model_validator(mode="after")
    def _check(self) -> Definition:
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for tname, spec in specs.items():
                for i, axis in enumerate(spec.shape or []):
                    if axis not in self.axes:
                        raise ValueError(
                            f"{kind}.{tname}.shape[{i}]: axis {axis!r} is not declared in 'axes' "
                            f"(declared: {', '.join(sorted(self.axes)) or 'none'})"
                        )
        both = sorted(set(self.inputs) & set(self.outputs))
        if both:
            raise ValueError(f"names used as both input and output: {', '.join(both)}")
        try:
            mod = ast.parse(self.reference, mode="exec")
        except SyntaxError as e:
            raise ValueError(f"reference: not valid Python: {e.msg} (line {e.lineno})") from None
        if not any(isinstance(n, ast.FunctionDef) and n.name == "run" for n in mod.body):
            raise ValueError("reference: must define a top-level function 'run'")
        for i, text in enumerate(self.constraints or []):
            try:
                ast.parse(text, mode="eval")
            except SyntaxError as e:
                raise ValueError(f"constraints[{i}]: not a Python expression: {text!r} ({e.msg})") from None
        for field in WORK_FIELDS:
            text = getattr(self, field)
            problem = expression_problem(text, list(self.axes)) if text is not None else None
            if problem:
                raise ValueError(f"{field}: {problem}")
        return self

    def const_axes(self) -> dict[str, int]:
        """The const axes and their values."""
        return {n: a.value for n, a in self.axes.items() if isinstance(a, AxisConst)}

    def var_axes(self) -> list[str]:
        """The names of the var axes, in declaration order."""
        return [n for n, a in self.axes.items() if isinstance(a, AxisVar)]

    def resolve_shape(self, spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...] | None:
        """Concrete shape of ``spec`` for a workload's axis values (``None`` for a scalar)."""
        if spec.shape is None:
            return None
        values = {**axes, **self.const_axes()}
        return tuple(values[a] for a in spec.shape)

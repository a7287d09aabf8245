"""Workload: concrete axis values and how each input is made."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, JsonValue, StrictBool, field_validator, model_validator

from sweep.errors import shown
from sweep.schema._base import Record
from sweep.schema.call_json import decode_call
from sweep.schema.limits import INT64_MAX, INT64_MIN, Int64, PosInt64, relative_path

__all__ = [
    "BackendBenchArgsInput",
    "BackendBenchSource",
    "InputSpec",
    "RandomInput",
    "SafetensorsInput",
    "ScalarInput",
    "Workload",
]


class RandomInput(Record):
    """A tensor filled with seeded random values (see the engine's input policy)."""

    type: Literal["random"]


class ScalarInput(Record):
    """A scalar argument with a fixed value."""

    type: Literal["scalar"]
    value: StrictBool | Int64 | float

    @field_validator("value", mode="before")
    @classmethod
    def _int64(cls, v: object) -> object:
        # Without this an integer past 64 bits would pass as a float and lose its digits.
        if isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX:
            raise ValueError(f"an integer scalar must fit 64 bits, got {shown(v)}")
        return v


class SafetensorsInput(Record):
    """A tensor read from a safetensors file, relative to the dataset root."""

    type: Literal["safetensors"]
    path: str = Field(min_length=1)
    tensor_key: str = Field(min_length=1)

    @field_validator("path")
    @classmethod
    def _inside_root(cls, v: str) -> str:
        # The engine refuses a path that leaves the dataset root; validation says so first.
        return relative_path(v, ": it names a file inside the dataset root")


class BackendBenchSource(Record):
    """Where an imported BackendBench trace row was read (extension)."""

    file: str = Field(min_length=1)
    line: PosInt64


# The ignore: a field named ``kwargs`` clashes with the pydantic mypy plugin's ``__init__``.
class BackendBenchArgsInput(Record):  # type: ignore[no-redef]
    """The whole argument list of one ATen operator call, from a BackendBench trace row.

    Extension beyond FlashInfer-Bench. It stands for all the arguments at once: a definition
    whose workloads use it declares no inputs of its own. ``args``/``kwargs`` hold the argument
    tree in the tagged JSON form of ``sweep.schema.call_json`` (docs/backendbench.md, "BackendBench
    import"): tensors are lazy descriptions (shape, dtype, stride, device) that the engine
    materializes when it evaluates the call.

    Attributes:
        args: Positional arguments.
        kwargs: Keyword arguments.
        args_trailing_comma: How the trace wrote the args tuple, where it differs from Python's
            ``repr`` (kept only so that export gives back the same text).
        synthetic: True for ``cnt: 0`` rows (synthetic, scaled-up inputs).
        source: The trace file and line the row came from.
    """

    type: Literal["backendbench_args"]
    args: list[JsonValue]
    kwargs: dict[str, JsonValue] = Field(default_factory=dict)
    args_trailing_comma: StrictBool | None = None
    synthetic: StrictBool | None = None
    source: BackendBenchSource | None = None

    @model_validator(mode="after")
    def _check_tree(self) -> BackendBenchArgsInput:
        decode_call(self.args, self.kwargs)
        return self


InputSpec = Annotated[
    RandomInput | ScalarInput | SafetensorsInput | BackendBenchArgsInput, Field(discriminator="type")
]


class Workload(Record):
    """One input configuration of a definition."""

    uuid: str = Field(min_length=1)
    # Strict 64-bit: ``true`` is not a size, and sizes are stored in BIGINT columns
    # (check_workload says when one is under 1).
    axes: dict[str, Int64]
    inputs: dict[str, InputSpec]
    # Extension: how much this workload counts when results are aggregated (BackendBench's
    # ``cnt``: how often the call was seen in real models; 0 for synthetic rows). Finite.
    weight: int | float | None = None

    @field_validator("weight", mode="before")
    @classmethod
    def _finite_weight(cls, v: object) -> object:
        # One check with one message: a union of strict types would report each member.
        if v is None:
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"must be a number >= 0, got {shown(v)}")  # noqa: TRY004 - pydantic reports ValueError
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"must be a finite number >= 0, got {v}")
        if v < 0 or v > INT64_MAX:
            raise ValueError(f"must be from 0 to 2**63-1, got {shown(v)}")
        return v

"""Workload: concrete axis values and how each input is made."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, model_validator

from sweep.schema._base import Record
from sweep.schema.call_json import decode_call

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
    value: bool | int | float


class SafetensorsInput(Record):
    """A tensor read from a safetensors file, relative to the dataset root."""

    type: Literal["safetensors"]
    path: str = Field(min_length=1)
    tensor_key: str = Field(min_length=1)


class BackendBenchSource(Record):
    """Where an imported BackendBench trace row was read (extension)."""

    file: str = Field(min_length=1)
    line: int = Field(ge=1)


# The ignore: a field named ``kwargs`` clashes with the pydantic mypy plugin's ``__init__``.
class BackendBenchArgsInput(Record):  # type: ignore[no-redef]
    """The whole argument list of one ATen operator call, from a BackendBench trace row.

    Extension beyond FlashInfer-Bench. It stands for all the arguments at once: a definition
    whose workloads use it declares no inputs of its own. ``args``/``kwargs`` hold the argument
    tree in the tagged JSON form of ``sweep.schema.call_json`` (README, "BackendBench
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
    args_trailing_comma: bool | None = None
    synthetic: bool | None = None
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
    axes: dict[str, int]
    inputs: dict[str, InputSpec]
    # Extension: how much this workload counts when results are aggregated (BackendBench's
    # ``cnt``: how often the call was seen in real models; 0 for synthetic rows).
    weight: int | float | None = Field(default=None, ge=0)

"""The lazy argument tree of one traced ATen call, and the name tables it is built from.

Nothing here imports torch: a tensor is its description (shape, dtype, stride, device) until
the materializer in :mod:`sweep.engine.aten._call_inputs` allocates it. Each node also keeps the few
spelling details the trace text had (``torch.float16`` versus ``f16``, a positional stride) so
that exporting gives back the text that was imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypeAlias

from sweep.errors import shown

__all__ = [
    "ABBREV_TO_DTYPE",
    "DTYPE_TO_ABBREV",
    "ITEMSIZE",
    "LAYOUTS",
    "MEMORY_FORMATS",
    "OP_PATTERN",
    "TORCH_DTYPE_NAMES",
    "ArgValue",
    "DTypeArg",
    "DeviceArg",
    "LayoutArg",
    "MemoryFormatArg",
    "OpName",
    "TensorArg",
    "TensorStyle",
    "TupleArg",
    "iter_tensors",
    "parse_op_name",
]

# BackendBench's abbreviations (PyTorch's operator_inp_utils uses the same ones).
ABBREV_TO_DTYPE: dict[str, str] = {
    "bf16": "bfloat16",
    "f64": "float64",
    "f32": "float32",
    "f16": "float16",
    "c32": "complex32",
    "c64": "complex64",
    "c128": "complex128",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "b8": "bool",
    "u8": "uint8",
}
DTYPE_TO_ABBREV: dict[str, str] = {v: k for k, v in ABBREV_TO_DTYPE.items()}

# ``torch.<name>`` spellings accepted for dtypes, with the canonical dtype each means.
TORCH_DTYPE_NAMES: dict[str, str] = {
    **{name: name for name in ABBREV_TO_DTYPE.values()},
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "chalf": "complex32",
    "cfloat": "complex64",
    "cdouble": "complex128",
    "short": "int16",
    "int": "int32",
    "long": "int64",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
}
LAYOUTS: frozenset[str] = frozenset(
    {"strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"}
)
MEMORY_FORMATS: frozenset[str] = frozenset(
    {"contiguous_format", "channels_last", "channels_last_3d", "preserve_format"}
)
# Bytes per element of each canonical dtype.
ITEMSIZE: dict[str, int] = {
    "bfloat16": 2,
    "float16": 2,
    "float32": 4,
    "float64": 8,
    "complex32": 4,
    "complex64": 8,
    "complex128": 16,
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
    "uint8": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


@dataclass(frozen=True, slots=True)
class DTypeArg:
    """A dtype value (``f16``, ``torch.float16``, ``'f16'``). Spellings compare equal.

    Attributes:
        name: Canonical dtype name, e.g. ``"float16"``.
        spelling: The exact source text when it was not the bare abbreviation.
    """

    name: str
    spelling: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class LayoutArg:
    """A ``torch.<layout>`` value; ``name`` is e.g. ``"sparse_coo"``."""

    name: str


@dataclass(frozen=True, slots=True)
class MemoryFormatArg:
    """A ``torch.<memory_format>`` value; ``name`` is e.g. ``"channels_last"``."""

    name: str


@dataclass(frozen=True, slots=True)
class DeviceArg:
    """A device, written as a string: ``'cuda'`` or ``"torch.device('cpu')"``.

    Attributes:
        name: The device, e.g. ``"cuda"``, ``"cpu"``, ``"cuda:1"``.
        call_form: True when the trace wrote the string ``"torch.device('<name>')"``.
    """

    name: str
    call_form: bool = field(default=False, compare=False)

    @property
    def is_cpu(self) -> bool:
        """True for the host device; every other device means "the evaluation device"."""
        return self.name == "cpu"


@dataclass(frozen=True, slots=True)
class TensorStyle:
    """How a ``T(...)`` was spelled, where it differs from PyTorch's own writer.

    Attributes:
        dtype_spelling: Source text of the dtype when not the bare abbreviation.
        stride_keyword: The stride was written ``stride=...`` (PyTorch) rather than
            positionally (BackendBench's writer).
        stride_list: The stride was a list ``[...]`` rather than a tuple.
        none_stride: A positional ``None`` stride was written.
        device_keyword: The device was written ``device=...``.
    """

    dtype_spelling: str | None = None
    stride_keyword: bool = True
    stride_list: bool = False
    none_stride: bool = False
    device_keyword: bool = False


DEFAULT_STYLE = TensorStyle()


@dataclass(frozen=True, slots=True)
class TensorArg:
    """A lazy tensor: everything needed to allocate it, nothing allocated.

    Attributes:
        shape: Sizes (``()`` for a 0-d tensor).
        dtype: Canonical dtype name (a :class:`sweep.schema.DType` value).
        stride: Element strides, or ``None`` for contiguous.
        device: Device named in the trace, or ``None`` (the evaluation device).
        style: Spelling details for an exact export.
    """

    shape: tuple[int, ...]
    dtype: str
    stride: tuple[int, ...] | None = None
    device: DeviceArg | None = None
    style: TensorStyle = field(default=DEFAULT_STYLE, compare=False)

    @property
    def numel(self) -> int:
        """Number of elements the tensor shows."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def storage_numel(self) -> int:
        """Elements of storage the tensor needs: with strides, the extent it reaches."""
        if self.stride is None:
            return self.numel
        if any(s == 0 for s in self.shape):
            return 0
        return 1 + sum((s - 1) * st for s, st in zip(self.shape, self.stride))

    @property
    def nbytes(self) -> int:
        """Bytes of storage it needs (see :attr:`storage_numel`)."""
        return self.storage_numel * ITEMSIZE[self.dtype]


@dataclass(frozen=True, slots=True)
class TupleArg:
    """A tuple value. ``trailing_comma`` is kept only for an exact export."""

    items: tuple[ArgValue, ...]
    trailing_comma: bool = field(default=False, compare=False)


ArgValue: TypeAlias = (
    None
    | bool
    | int
    | float
    | str
    | TensorArg
    | DTypeArg
    | LayoutArg
    | MemoryFormatArg
    | DeviceArg
    | TupleArg
    | list["ArgValue"]
    | dict[str, "ArgValue"]
)


OP_PATTERN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")


@dataclass(frozen=True, slots=True)
class OpName:
    """A fully qualified operator overload, e.g. ``aten.add.Tensor``."""

    namespace: str
    packet: str
    overload: str

    @property
    def qualified(self) -> str:
        """``aten.add.Tensor``."""
        return f"{self.namespace}.{self.packet}.{self.overload}"

    @property
    def short(self) -> str:
        """``add.Tensor`` (namespace left out)."""
        return f"{self.packet}.{self.overload}"

    @property
    def folder(self) -> str:
        """BackendBench's directory name, used as the definition name: ``add__Tensor``.

        Operators outside ``aten`` get their namespace in front (``prims__sum__default``).
        """
        base = f"{self.packet}__{self.overload}"
        return base if self.namespace == "aten" else f"{self.namespace}__{base}"


def parse_op_name(text: str) -> OpName:
    """Check an operator name by pattern (never by evaluation) and split it.

    Raises:
        ValueError: ``text`` is not ``<namespace>.<op>.<overload>`` of identifiers.
    """
    m = OP_PATTERN.match(text)
    if m is None:
        raise ValueError(f"not an operator overload name like 'aten.add.Tensor': {shown(text)}")
    return OpName(m.group(1), m.group(2), m.group(3))


def iter_tensors(value: ArgValue) -> list[TensorArg]:
    """Every tensor in ``value``, depth first, in argument order."""
    out: list[TensorArg] = []
    _collect(value, out)
    return out


def _collect(value: ArgValue, out: list[TensorArg]) -> None:
    if isinstance(value, TensorArg):
        out.append(value)
    elif isinstance(value, list):
        for v in value:
            _collect(v, out)
    elif isinstance(value, TupleArg):
        for v in value.items:
            _collect(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, out)

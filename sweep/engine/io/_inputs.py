"""Inputs of one evaluation: seeded random tensors, scalars, safetensors files, and their size.

Random values come from numpy's PCG64 bit generator, whose raw stream is fixed by
numpy's stability policy, turned into values by exact arithmetic (top bits scaled by a
power of two) on the host, then moved to the device. So the same sweep seed and workload
give bit-identical inputs on any machine, CPU or GPU. Value policy (documented):

- floating types: uniform in [-1, 1) (24 random bits, so exact in float32), then cast
  (round to nearest) to the target type; complex: real and imaginary parts so drawn;
- integer types: uniform in [0, 16) (non-negative, so usable as small sizes or indices);
- bool: fair coin.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from sweep.schema import Definition, RandomInput, SafetensorsInput, ScalarInput, TensorSpec, Workload
from sweep.schema.sizes import element_size, specs_bytes, whole_bytes

__all__ = [
    "INT_RANGE_BITS",
    "TORCH_DTYPES",
    "InputError",
    "InputSet",
    "MemoryPlan",
    "base_seed",
    "element_bytes",
    "make_inputs",
    "memory_plan",
    "set_seed",
    "torch_dtype",
]

Value = torch.Tensor | bool | int | float

TORCH_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "bool": torch.bool,
    "float64": torch.float64,
    "uint8": torch.uint8,
    "complex32": torch.complex32,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
}
_UNSUPPORTED = {"float4_e2m1": "torch has no unpacked float4 tensor type"}
#: Random integer inputs are uniform in ``[0, 2**INT_RANGE_BITS)``.
INT_RANGE_BITS = 4
_MASK63 = (1 << 63) - 1


class InputError(Exception):
    """Inputs cannot be made for a workload (bad file, unsupported dtype, ...)."""


@dataclass
class InputSet:
    """One set of inputs, in the definition's input order."""

    index: int
    values: dict[str, Value]

    def args(self, names: list[str]) -> list[Value]:
        """The values as positional arguments."""
        return [self.values[n] for n in names]


def hash_int(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") & _MASK63


def base_seed(sweep_seed: int, workload_uuid: str, secret_salt: str | None = None) -> int:
    """The seed of a workload's inputs: depends only on the sweep seed and the uuid, and for a
    secret run (``Task.secret_salt``) on the salt the launch's secret made too."""
    if secret_salt is None:
        return hash_int("kernel-sweep-inputs", sweep_seed, workload_uuid)
    return hash_int("kernel-sweep-inputs", sweep_seed, workload_uuid, "secret", secret_salt)


def set_seed(base: int, set_index: int, input_name: str) -> int:
    """The seed of one input tensor in one input set (trial or timing set)."""
    return hash_int(base, set_index, input_name)


def torch_dtype(name: str) -> torch.dtype:
    """The torch dtype of a definition dtype name.

    Raises:
        InputError: torch has no such type (float4_e2m1).
    """
    if name in _UNSUPPORTED:
        raise InputError(f"dtype {name} is not supported by the engine: {_UNSUPPORTED[name]}")
    return TORCH_DTYPES[name]


def element_bytes(dtype_name: str) -> float:
    """Bytes per element (0.5 for float4)."""
    return element_size(dtype_name)


def _uniform(n: int, seed: int) -> np.ndarray:
    raw = np.random.PCG64(seed).random_raw(n)
    return ((raw >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-23)) - np.float32(1.0)


def random_tensor(shape: tuple[int, ...], dtype_name: str, seed: int) -> torch.Tensor:
    """A seeded random host tensor (see the module docstring for the value policy)."""
    dtype = torch_dtype(dtype_name)
    n = math.prod(shape)
    if dtype.is_complex:
        real = torch.from_numpy(_uniform(n, seed))
        imag = torch.from_numpy(_uniform(n, hash_int(seed, "imag")))
        return torch.complex(real, imag).to(dtype).reshape(shape)
    if dtype.is_floating_point:
        return torch.from_numpy(_uniform(n, seed)).to(dtype).reshape(shape)
    raw = np.random.PCG64(seed).random_raw(n)
    if dtype == torch.bool:
        return torch.from_numpy((raw >> np.uint64(63)).astype(np.bool_)).reshape(shape)
    small = (raw >> np.uint64(64 - INT_RANGE_BITS)).astype(np.int64)
    return torch.from_numpy(small).to(dtype).reshape(shape)


def _load_safetensors(
    spec: SafetensorsInput, tspec: TensorSpec, shape: tuple[int, ...], name: str, root: str | None
) -> torch.Tensor:
    from safetensors import safe_open

    if root is None:
        raise InputError(
            f"input {name!r} is read from {spec.path!r}, but the task has no dataset root to resolve it"
        )
    base = Path(root).resolve()
    path = (base / spec.path).resolve()
    if not path.is_relative_to(base):
        raise InputError(
            f"input {name!r}: safetensors path {spec.path!r} escapes the dataset root {base}; "
            "paths must stay inside the root"
        )
    if not path.is_file():
        raise InputError(f"input {name!r}: safetensors file {path} does not exist")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            keys = list(f.keys())
            if spec.tensor_key not in keys:
                raise InputError(
                    f"input {name!r}: {path} has no tensor {spec.tensor_key!r} "
                    f"(it has: {', '.join(keys[:20]) or 'none'})"
                )
            tensor: torch.Tensor = f.get_tensor(spec.tensor_key)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a corrupt file is reported, never raised
        raise InputError(f"input {name!r}: cannot read {path}: {e}") from None
    want = torch_dtype(tspec.dtype.value)
    if tuple(tensor.shape) != shape:
        raise InputError(
            f"input {name!r}: {path}[{spec.tensor_key!r}] has shape {list(tensor.shape)}, "
            f"the definition and workload axes give {list(shape)}"
        )
    if tensor.dtype != want:
        raise InputError(
            f"input {name!r}: {path}[{spec.tensor_key!r}] has dtype {str(tensor.dtype).removeprefix('torch.')}, "
            f"the definition says {tspec.dtype.value}"
        )
    return tensor


def make_inputs(
    definition: Definition,
    workload: Workload,
    seed: int,
    set_index: int,
    device: torch.device,
    dataset_root: str | None,
) -> InputSet:
    """Make input set ``set_index`` of a workload on ``device``.

    Raises:
        InputError: A safetensors input is missing or does not match, or a dtype is unsupported.
    """
    values: dict[str, Value] = {}
    for name, tspec in definition.inputs.items():
        spec = workload.inputs[name]
        if isinstance(spec, ScalarInput):
            values[name] = spec.value
            continue
        shape = definition.resolve_shape(tspec, workload.axes) or ()
        if isinstance(spec, SafetensorsInput):
            host = _load_safetensors(spec, tspec, shape, name, dataset_root)
        else:
            assert isinstance(spec, RandomInput)
            host = random_tensor(shape, tspec.dtype.value, set_seed(seed, set_index, name))
        values[name] = host.to(device)
    return InputSet(index=set_index, values=values)


@dataclass(frozen=True)
class MemoryPlan:
    """Bytes one evaluation needs on its device, counted before anything is allocated."""

    input_bytes: int  # one input set
    output_bytes: int  # one set of outputs
    input_sets: int
    flush_bytes: int
    #: Extra copies of one input set kept per timing slot (to restore written arguments).
    kept_copies: int = 0

    @property
    def total(self) -> int:
        """Timing slots (inputs, solution outputs, reference outputs per set, kept copies),
        plus one set being made (inputs, the reference's clone, its outputs), plus the copies
        of a checked timed call (its inputs before and after, its outputs), plus the L2 flush
        buffer."""
        per_slot = (1 + self.kept_copies) * self.input_bytes + 2 * self.output_bytes
        transient = 2 * self.input_bytes + self.output_bytes
        checked = 2 * self.input_bytes + self.output_bytes
        return self.input_sets * per_slot + transient + checked + self.flush_bytes

    def describe(self) -> str:
        """A one-line breakdown for logs."""
        gib = 1 << 30
        kept = (
            f" + {self.kept_copies} kept cop{'y' if self.kept_copies == 1 else 'ies'} of them"
            if self.kept_copies
            else ""
        )
        return (
            f"{self.total / gib:.3f} GiB = {self.input_sets} input sets x "
            f"({self.input_bytes / gib:.3f} GiB inputs{kept} + 2 x {self.output_bytes / gib:.3f} GiB outputs "
            f"and reference outputs) + one set in the making + copies of a checked call + "
            f"{self.flush_bytes / gib:.3f} GiB L2 flush buffer"
        )


def memory_plan(definition: Definition, workload: Workload, input_sets: int, flush_bytes: int) -> MemoryPlan:
    """Count the bytes an evaluation of ``workload`` will allocate."""

    def size(specs: dict[str, TensorSpec]) -> int:
        return whole_bytes(specs_bytes(definition, specs, workload.axes))

    return MemoryPlan(
        input_bytes=size(definition.inputs),
        output_bytes=size(definition.outputs),
        input_sets=input_sets,
        flush_bytes=flush_bytes,
    )

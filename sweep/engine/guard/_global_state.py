"""Process-global state an evaluation may disturb, put back afterwards.

A long-lived worker runs task after task in one process: a solution that changes the
working directory, ``sys.path``, the environment, torch's default dtype, grad mode or its
precision switches (TF32, reduced-precision reductions) must not change how the next
task, or the reference of this one, is computed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["TorchFlags", "pinned_flags", "preserved_state"]


def _get(getter: Callable[[], object]) -> object:
    # torch >= 2.9 raises when the legacy TF32 getters are read after a mix of the legacy and
    # the new (fp32_precision) APIs; a switch that cannot be read is left alone.
    try:
        return getter()
    except RuntimeError:
        return None


def _set_grad(enabled: bool) -> None:
    torch.set_grad_enabled(enabled)  # a call, not a context: switches the mode right away


def _matmul() -> Any:
    return torch.backends.cuda.matmul


_SWITCHES: dict[str, tuple[Callable[[], object], Callable[[Any], None]]] = {
    "default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "grad_enabled": (torch.is_grad_enabled, lambda v: _set_grad(v)),
    # Precision first: setting it also moves allow_tf32, which is then re-read before it is set.
    "float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    "matmul_tf32": (lambda: bool(_matmul().allow_tf32), lambda v: setattr(_matmul(), "allow_tf32", v)),
    "cudnn_tf32": (
        lambda: bool(torch.backends.cudnn.allow_tf32),
        lambda v: setattr(torch.backends.cudnn, "allow_tf32", v),
    ),
    "fp16_reduced": (
        lambda: bool(_matmul().allow_fp16_reduced_precision_reduction),
        lambda v: setattr(_matmul(), "allow_fp16_reduced_precision_reduction", v),
    ),
    "bf16_reduced": (
        lambda: bool(_matmul().allow_bf16_reduced_precision_reduction),
        lambda v: setattr(_matmul(), "allow_bf16_reduced_precision_reduction", v),
    ),
    "deterministic": (torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
}


@dataclass(frozen=True)
class TorchFlags:
    """torch's numerics switches that a solution can flip (``None``: could not be read)."""

    values: tuple[tuple[str, object], ...]

    @classmethod
    def read(cls) -> TorchFlags:
        """The current switches."""
        return cls(values=tuple((name, _get(get)) for name, (get, _) in _SWITCHES.items()))

    def get(self, name: str) -> object:
        """One switch's value."""
        return dict(self.values)[name]

    def apply(self) -> None:
        """Set every readable switch back to this value, touching only those that differ."""
        for name, want in self.values:
            if want is None:
                continue
            get, set_ = _SWITCHES[name]
            if _get(get) == want:
                continue
            try:
                set_(want)
            except RuntimeError:
                pass


@contextmanager
def pinned_flags(flags: TorchFlags) -> Iterator[None]:
    """Run a block with ``flags`` in force (the reference runs so), then put back what was set."""
    before = TorchFlags.read()
    flags.apply()
    try:
        yield
    finally:
        before.apply()


@contextmanager
def preserved_state() -> Iterator[TorchFlags]:
    """Snapshot cwd, ``sys.path``, ``sys.meta_path``, ``os.environ`` and torch's switches;
    restore them on exit. Yields the torch switches as they were on entry."""
    cwd = os.getcwd()
    path = list(sys.path)
    meta_path = list(sys.meta_path)
    env = dict(os.environ)
    flags = TorchFlags.read()
    try:
        yield flags
    finally:
        try:
            os.chdir(cwd)
        except OSError:
            pass
        sys.path[:] = path
        sys.meta_path[:] = meta_path
        for key in set(os.environ) - set(env):
            del os.environ[key]
        for key, value in env.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
        flags.apply()

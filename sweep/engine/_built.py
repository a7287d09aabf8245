"""What a build gives (:class:`Built`) or why it failed (:class:`BuildError`), and where
builds live (``$SWEEP_CACHE_DIR/solutions/<content hash>/``).

Shared by ``_build`` (Python, Triton, TileLang and torch-extension builds) and
``_build_tvm_ffi`` (TVM-FFI builds), which must not import each other both ways.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CPP_SUFFIXES", "BuildError", "Built", "cache_root", "solution_folder"]

#: Source files a C++/CUDA build compiles (headers are only included).
CPP_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")


class BuildError(Exception):
    """A solution cannot be built or loaded; ``log`` holds the compiler's or importer's message."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass
class Built:
    """A loaded entry point."""

    fn: Callable[..., object]
    kind: str  # "python", "torch_extension" or "tvm_ffi"
    folder: Path
    build_s: float = 0.0
    note: str = ""


def cache_root() -> Path:
    """``$SWEEP_CACHE_DIR``, else ``~/.cache/kernel-sweep``."""
    env = os.environ.get("SWEEP_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "kernel-sweep"


def solution_folder(content_hash: str) -> Path:
    """The folder holding a solution's sources and build."""
    return cache_root() / "solutions" / content_hash

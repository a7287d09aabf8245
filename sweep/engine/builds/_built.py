"""What a build gives (:class:`Built`) or why it failed (:class:`BuildError`), and where
compiled builds live (``$SWEEP_CACHE_DIR/solutions/<content hash>/``; Python sources are
imported from a folder of the process's own instead, ``_build.private_sources``), and the
compilers' caches of each solution (``$SWEEP_CACHE_DIR/compilers/<content hash>/``).

Shared by ``_build`` (Python, Triton, TileLang and torch-extension builds) and
``_build_tvm_ffi`` (TVM-FFI builds), which must not import each other both ways.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = [
    "COMPILER_CACHE_VARIABLES",
    "CPP_SUFFIXES",
    "BuildError",
    "Built",
    "cache_root",
    "compiler_caches",
    "params_problem",
    "solution_folder",
    "with_params",
]

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


#: The compilers' cache variables each solution gets folders of its own for: Triton's compiled
#: kernels and launchers, torch's extensions built by the solution itself (``load_inline``),
#: Inductor's (``torch.compile``). Each is read when the compiler looks, not at import.
COMPILER_CACHE_VARIABLES = {
    "TRITON_CACHE_DIR": "triton",
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
}


def compiler_caches(content_hash: str) -> dict[str, Path]:
    """The folder of each of :data:`COMPILER_CACHE_VARIABLES` for the solution of
    ``content_hash``: ``$SWEEP_CACHE_DIR/compilers/<content hash>/<name>``."""
    root = cache_root() / "compilers" / content_hash
    return {var: root / name for var, name in COMPILER_CACHE_VARIABLES.items()}


def params_problem(fn: Callable[..., object], params: Mapping[str, object]) -> str | None:
    """Why ``fn`` cannot take the parameters ``params`` as keyword arguments, or ``None``
    (also ``None`` when its signature cannot be read: the call then says)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = {p.name: p.kind for p in sig.parameters.values()}
    if any(k is inspect.Parameter.VAR_KEYWORD for k in kinds.values()):
        return None
    by_keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    missing = [n for n in params if kinds.get(n) not in by_keyword]
    if missing:
        return f"takes no keyword argument {missing[0]!r} (a parameter of the solution's params)"
    return None


def with_params(built: Built, params: Mapping[str, object]) -> Built:
    """``built`` calling its entry point with ``params`` as keyword arguments (the same build:
    a point is a call of the one built function)."""
    return replace(built, fn=functools.partial(built.fn, **params))

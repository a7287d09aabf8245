"""Building C++/CUDA solutions bound with TVM-FFI: ``binding: tvm-ffi``, or no binding at all
(FlashInfer-Bench's default for C++ and CUDA).

As FlashInfer-Bench builds them, so does this:

- every ``.cpp``/``.cc``/``.cxx``/``.c`` and ``.cu`` source is compiled and linked into one
  shared library by ``tvm_ffi.cpp.build`` (ninja, the host C++ compiler, nvcc for ``.cu``
  files; tvm-ffi's default flags), with the solution's folder on the include path; other
  files (headers) are only included;
- the sources export the entry point themselves, with
  ``TVM_FFI_DLL_EXPORT_TYPED_FUNC(<symbol>, <function>)``; the library is loaded with
  ``tvm_ffi.load_module`` and the entry point is its exported function ``<symbol>``;
- it is called with torch tensors, which tvm-ffi hands to C++ by DLPack (no copy, as
  ``tvm::ffi::TensorView``), on torch's current stream (``TVMFFIEnvGetStream``), so CUDA
  graphs capture its kernels. Destination-passing style: inputs, then outputs. Value-returning
  style: tensors it allocates (``TVMFFIEnvTensorAlloc``) come back as torch tensors, several
  as a tvm-ffi ``Array`` (a sequence).

The library is built once per content hash, in ``<solution folder>/tvm-ffi[-sm<arch>]/``,
under the folder's build lock; a marker written after a successful build lets every later
process load it without running ninja. CUDA builds are keyed by the target architecture (the
evaluating device's, or ``TVM_FFI_CUDA_ARCH_LIST``), so a cache folder shared by nodes of
different GPUs never loads a library built for another one.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import ModuleType
from typing import cast

from sweep.engine.builds._built import CPP_SUFFIXES, BuildError, Built
from sweep.engine.builds._lock import build_lock
from sweep.schema import Solution
from sweep.schema.files import write_atomic
from sweep.schema.limits import read_text

__all__ = ["INSTALL_HINT", "build_tvm_ffi", "import_tvm_ffi"]

INSTALL_HINT = "pip install 'kernel-sweep[tvm-ffi]'"
_ARCH_ENV = "TVM_FFI_CUDA_ARCH_LIST"
_MARKER = ".built"
#: The largest marker read (it holds one file name).
_MARKER_BYTES = 4096
_ERROR_LINE = re.compile(r"\berror\b", re.IGNORECASE)


def import_tvm_ffi() -> ModuleType:
    """``tvm_ffi`` with its C++ build utilities, or a :class:`BuildError` naming the extra."""
    try:
        import tvm_ffi
        import tvm_ffi.cpp
    except ImportError as e:
        raise BuildError(
            "binding 'tvm-ffi' (the default for C++/CUDA solutions) needs the apache-tvm-ffi "
            f"package, which is not installed here ({e}): {INSTALL_HINT}"
        ) from None
    return tvm_ffi


def _cuda_arch() -> str:
    """The architecture list a CUDA build targets: ``TVM_FFI_CUDA_ARCH_LIST`` when set (as
    tvm-ffi reads it), else the current CUDA device's compute capability."""
    env = os.environ.get(_ARCH_ENV, "").strip()
    if env:
        return env
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"{major}.{minor}"


@contextmanager
def _environ(name: str, value: str) -> Iterator[None]:
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _torch_hint(solution: Solution) -> str:
    """A hint for sources written as a torch extension (forgotten ``binding: torch``)."""
    text = "\n".join(s.content for s in solution.sources)
    if any(mark in text for mark in ("PYBIND11_MODULE", "TORCH_LIBRARY", "torch/extension.h")):
        return " (the sources are a torch extension: set spec.binding to 'torch')"
    return ""


def _compile_failure(e: BaseException, solution: Solution, folder: Path) -> BuildError:
    """The compiler's output as the log, its first error line in the message; paths inside the
    solution's folder are shown relative to it."""
    text = str(e).replace(str(folder.resolve()) + os.sep, "").replace(str(folder) + os.sep, "")
    first = next(
        (
            line.strip()
            for line in text.splitlines()
            if _ERROR_LINE.search(line) and not line.startswith(("FAILED:", "[")) and " -c " not in line
        ),
        text.strip().splitlines()[0] if text.strip() else type(e).__name__,
    )
    if len(first) > 300:
        first = first[:297] + "..."
    return BuildError(
        f"compiling with tvm-ffi failed: {first}{_torch_hint(solution)}", f"{type(e).__name__}: {text}"
    )


def _compile(tvm_ffi: ModuleType, solution: Solution, folder: Path, build_dir: Path, arch: str | None) -> str:
    """Build the library into ``build_dir``; its file name."""
    paths = [folder / s.path for s in solution.sources if s.path.endswith(CPP_SUFFIXES)]
    build_dir.mkdir(parents=True, exist_ok=True)
    try:
        with _environ(_ARCH_ENV, arch) if arch is not None else nullcontext():
            out = tvm_ffi.cpp.build(
                name=f"sweep_ffi_{solution.content_hash}",
                cpp_files=[str(p) for p in paths if p.suffix != ".cu"],
                cuda_files=[str(p) for p in paths if p.suffix == ".cu"],
                extra_include_paths=[str(folder)],
                build_directory=str(build_dir),
            )
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        raise _compile_failure(e, solution, folder) from None
    return Path(str(out)).name


def _entry(tvm_ffi: ModuleType, solution: Solution, lib: Path) -> Callable[..., object]:
    try:
        module = tvm_ffi.load_module(str(lib))
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        raise BuildError(f"loading the built library failed: {type(e).__name__}: {e}") from None
    symbol = solution.spec.entry_symbol
    try:
        return cast("Callable[..., object]", module.get_function(symbol))
    except AttributeError:
        pass
    raise BuildError(
        f"entry point {solution.spec.entry_point!r}: the library built with tvm-ffi exports no "
        f"function {symbol!r}; export it with TVM_FFI_DLL_EXPORT_TYPED_FUNC({symbol}, <function>)"
        + _torch_hint(solution)
    )


def build_tvm_ffi(solution: Solution, folder: Path, cuda_ok: bool, lock_timeout_s: float) -> Built:
    """Compile (once per content hash and target) and load a TVM-FFI solution whose sources are
    in ``folder``.

    Raises:
        BuildError: apache-tvm-ffi missing, CUDA sources without a CUDA device, a compiler
            error (the log holds the compiler's output), or no exported entry point.
    """
    tvm_ffi = import_tvm_ffi()
    sources = [s.path for s in solution.sources if s.path.endswith(CPP_SUFFIXES)]
    has_cuda = any(p.endswith(".cu") for p in sources)
    if has_cuda and not cuda_ok:
        raise BuildError(
            "this solution has CUDA sources (.cu) but no CUDA device or toolkit is available here"
        )
    arch = _cuda_arch() if has_cuda else None
    tag = "tvm-ffi" if arch is None else "tvm-ffi-sm" + re.sub(r"[^0-9A-Za-z]+", "_", arch.replace(".", ""))
    build_dir = folder / tag
    marker = build_dir / _MARKER
    lock = build_lock(folder, timeout_s=lock_timeout_s)
    start = time.monotonic()
    name = read_text(marker, _MARKER_BYTES).strip() if marker.is_file() else None
    if name is None:
        with lock:
            if marker.is_file():
                name = read_text(marker, _MARKER_BYTES).strip()
            else:
                name = _compile(tvm_ffi, solution, folder, build_dir, arch)
                write_atomic(marker, name)
    fn = _entry(tvm_ffi, solution, build_dir / name)
    built = Built(fn=fn, kind="tvm_ffi", folder=folder, build_s=time.monotonic() - start)
    if lock.waited_s > 0.5:
        built.note = f"waited {lock.waited_s:.1f} s for another process building the same solution"
    return built

"""Building solutions and references into callables.

- ``python``, ``triton`` and ``tilelang`` solutions, any solution whose entry point is a
  ``.py`` file, and the definition's reference: sources written to a folder of this process's
  own (:func:`private_sources`), never read back from the shared cache, and imported as a
  package of their own, compiled from source (see ``_pyimport``). Every sandbox may write the
  shared cache, so a solution could otherwise rewrite the reference, or another solution,
  that a later task imports from there. TileLang is Python: its kernels compile when the
  solution's code asks (``tilelang.jit``); the build only requires the ``tilelang`` package.
- ``cuda``/``cpp`` solutions whose entry point is a C++/CUDA file, by ``spec.binding``:
  ``tvm-ffi``, or none (FlashInfer-Bench's default), compiled with apache-tvm-ffi
  (``_build_tvm_ffi``); ``torch``, compiled with ``torch.utils.cpp_extension.load``. Both
  build in the solution's folder under a file lock, so two processes never build one
  solution at once, and reuse the build by content hash.
- The definition's ``reference`` is built like a one-file python solution.

Every failure here is a :class:`BuildError`, which the engine reports as COMPILE_ERROR
(or, for the reference, as RUNTIME_ERROR: the solution is not to blame).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import shutil
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

from sweep.engine.builds._build_tvm_ffi import build_tvm_ffi
from sweep.engine.builds._built import CPP_SUFFIXES, BuildError, Built, cache_root, solution_folder
from sweep.engine.builds._lock import FileLock, build_lock
from sweep.engine.builds._pyimport import forget_package, import_entry, package_name
from sweep.engine.builds._triton_interp import patch as patch_triton_interpreter
from sweep.schema import BuildSpec, Definition, Language, Solution, SourceFile
from sweep.schema.entry_signature import Params, signature_problem

__all__ = [
    "SUPPORTED",
    "TILELANG_HINT",
    "BuildError",
    "Built",
    "build_solution",
    "cache_root",
    "check_signature",
    "interpreter_mode",
    "private_sources",
    "reference_solution",
    "runtime_params",
    "solution_folder",
    "write_sources",
]

SUPPORTED = (
    "python; triton; tilelang (needs the tilelang package); each with its entry point in a .py "
    "file; cuda and cpp with the entry point in a .cu/.cpp file, bound with 'tvm-ffi' (the "
    "default; needs apache-tvm-ffi) or 'torch' (torch.utils.cpp_extension), or in a .py file"
)
TILELANG_HINT = "pip install 'kernel-sweep[tilelang]'"


def write_sources(content_hash: str, sources: list[SourceFile]) -> Path:
    """Write sources to their hash folder once (atomically: a temp folder then a rename).

    Safe when several processes write the same solution: the content is the same, and
    only the first rename wins.
    """
    folder = solution_folder(content_hash)
    if (folder / ".complete").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{content_hash}.", dir=folder.parent))
    try:
        for src in sources:
            path = tmp / src.path.replace("\\", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(src.content, encoding="utf-8")
        (tmp / ".complete").write_text(content_hash, encoding="utf-8")
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / ".complete").is_file():
                # A half-written folder from a crashed process: replace it under the lock.
                with FileLock(folder.parent / f"{content_hash}.lock"):
                    if not (folder / ".complete").is_file():
                        shutil.rmtree(folder, ignore_errors=True)
                        os.rename(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder


#: This process's own folder for the Python sources it imports (made on first use).
_PRIVATE: tempfile.TemporaryDirectory[str] | None = None


def private_sources(content_hash: str, sources: list[SourceFile]) -> Path:
    """Write sources to a folder of this process's own, under its temporary folder (a
    sandbox's task folder), once per process, and return it.

    Not the shared cache: whatever a file there says, the bytes imported are the ones the
    record holds. Each process compiles them again (no bytecode is kept either: ``_pyimport``).
    """
    global _PRIVATE
    if _PRIVATE is None:
        _PRIVATE = tempfile.TemporaryDirectory(prefix="sweep-sources-")
    folder = Path(_PRIVATE.name) / content_hash
    if folder.is_dir():
        return folder
    tmp = Path(tempfile.mkdtemp(prefix=f".{content_hash}.", dir=_PRIVATE.name))
    for src in sources:
        path = tmp / src.path.replace("\\", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src.content, encoding="utf-8")
    os.rename(tmp, folder)
    return folder


def reference_solution(definition: Definition) -> Solution:
    """The definition's reference as a one-file, value-returning python solution."""
    return Solution(
        name=f"{definition.name}.reference",
        definition=definition.name,
        author="definition",
        spec=BuildSpec(
            language=Language.python,
            target_hardware=["*"],
            entry_point="reference.py::run",
            destination_passing_style=False,
        ),
        sources=[SourceFile(path="reference.py", content=definition.reference)],
    )


def interpreter_mode() -> str:
    """``"interp"`` when Triton kernels are interpreted (TRITON_INTERPRET=1), else ``"native"``.

    A module imported in one mode keeps its kernels in that mode, so builds are keyed by it.
    """
    return "interp" if os.environ.get("TRITON_INTERPRET") == "1" else "native"


def _load_python(solution: Solution, folder: Path) -> Built:
    pkg = package_name(solution.content_hash) + ("_interp" if interpreter_mode() == "interp" else "")
    entry = solution.spec.entry_file
    try:
        module = import_entry(pkg, folder, entry)
    except BaseException as e:
        forget_package(pkg)
        if isinstance(e, KeyboardInterrupt):
            raise
        log = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        raise BuildError(f"importing {entry} failed: {_import_problem(e, folder)}", log) from None
    if interpreter_mode() == "interp":
        patch_triton_interpreter()  # Triton 3.6's interpreter under NumPy >= 2.4 (see the module)
    return _entry_symbol(module, solution, folder, "python")


def _import_problem(e: BaseException, folder: Path) -> str:
    """What went wrong importing a solution; a syntax error names the source file (by its path
    in the solution, which Python's own message shortens to the file's name) and the line."""
    if isinstance(e, SyntaxError) and e.filename:
        try:
            where = Path(e.filename).resolve().relative_to(folder.resolve()).as_posix()
        except (ValueError, OSError):
            where = e.filename
        line = f" line {e.lineno}" if e.lineno else ""
        return f"{type(e).__name__} in {where}{line}: {e.msg}"
    return f"{type(e).__name__}: {e}"


def _entry_symbol(module: object, solution: Solution, folder: Path, kind: str) -> Built:
    symbol = solution.spec.entry_symbol
    fn = getattr(module, symbol, None)
    if fn is None:
        public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
        raise BuildError(
            f"entry point {solution.spec.entry_point!r}: {solution.spec.entry_file} defines no {symbol!r}"
            f" (callables there: {', '.join(public[:15]) or 'none'})"
        )
    if not callable(fn):
        raise BuildError(f"entry point {solution.spec.entry_point!r}: {symbol!r} is not callable")
    return Built(fn=fn, kind=kind, folder=folder)


def _build_extension(solution: Solution, folder: Path, cuda_ok: bool, lock_timeout_s: float) -> Built:
    from torch.utils.cpp_extension import load

    sources = [str(folder / s.path) for s in solution.sources if s.path.endswith(CPP_SUFFIXES)]
    has_cuda = any(s.endswith(".cu") for s in sources)
    if has_cuda and not cuda_ok:
        raise BuildError(
            "this solution has CUDA sources (.cu) but no CUDA device or toolkit is available here"
        )
    text = "\n".join(s.content for s in solution.sources)
    if "PYBIND11_MODULE" not in text and "TORCH_LIBRARY" not in text:
        raise BuildError(
            "binding 'torch' needs a PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) block in the sources "
            f"that defines {solution.spec.entry_symbol!r}; none was found"
        )
    name = f"sweep_ext_{solution.content_hash}"
    build_dir = folder / "build"
    build_dir.mkdir(exist_ok=True)
    lock = build_lock(folder, timeout_s=lock_timeout_s)
    with lock:
        try:
            module = load(
                name=name,
                sources=sources,
                build_directory=str(build_dir),
                extra_include_paths=[str(folder)],
                extra_cflags=["-O3"],
                extra_cuda_cflags=["-O3"] if has_cuda else None,
                verbose=False,
            )
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                raise
            raise BuildError(
                f"building the torch extension failed: {type(e).__name__}",
                "".join(traceback.format_exception_only(type(e), e)),
            ) from None
    built = _entry_symbol(module, solution, folder, "torch_extension")
    if lock.waited_s > 0.5:
        built.note = f"waited {lock.waited_s:.1f} s for another process building the same solution"
    return built


def _require_tilelang() -> None:
    try:
        found = importlib.util.find_spec("tilelang") is not None
    except (ImportError, ValueError):
        found = True  # present but odd (a module without a spec): let its import speak
    if not found:
        raise BuildError(
            f"language 'tilelang' needs the tilelang package, which is not installed here: {TILELANG_HINT}"
        )


def build_solution(solution: Solution, *, cuda_ok: bool, lock_timeout_s: float = 3600.0) -> Built:
    """Write a solution's sources and load its entry point.

    Args:
        solution: What to build.
        cuda_ok: Whether CUDA sources can be compiled here.
        lock_timeout_s: How long to wait for another process building the same solution.

    Raises:
        BuildError: Unsupported language or entry file, a missing optional package (tvm-ffi,
            tilelang), a compile, syntax or import error, or a missing entry point.
    """
    spec = solution.spec
    lang = spec.language.value
    entry_is_py = spec.entry_file.endswith(".py")
    if lang not in ("python", "triton", "tilelang", "cuda", "cpp"):
        raise BuildError(f"language {lang!r} is not supported (supported: {SUPPORTED})")
    if lang in ("cuda", "cpp"):
        if not entry_is_py and not spec.entry_file.endswith(CPP_SUFFIXES):
            raise BuildError(f"entry point file {spec.entry_file!r} is neither Python nor C++/CUDA")
    elif not entry_is_py:
        raise BuildError(f"the entry point of a {lang} solution must be a .py file, got {spec.entry_file!r}")
    if lang == "tilelang":
        _require_tilelang()
    if entry_is_py:
        return _load_python(solution, private_sources(solution.content_hash, solution.sources))
    folder = write_sources(solution.content_hash, solution.sources)
    if spec.binding is not None and spec.binding.value == "torch":
        return _build_extension(solution, folder, cuda_ok, lock_timeout_s)
    return build_tvm_ffi(solution, folder, cuda_ok, lock_timeout_s)


_PYBIND_SIG = re.compile(r"^\s*(?:\d+\.\s*)?(\w+)\((.*)\)\s*->")


def _pybind_params(fn: Callable[..., object]) -> Params | None:
    """The parameters a pybind11 function's docstring shows (``run(arg0: Tensor, ...) -> ...``)."""
    doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
    match = _PYBIND_SIG.match(doc[0]) if doc else None
    if match is None:
        return None
    args = match.group(2).strip()
    depth, n = 0, (1 if args else 0)
    for ch in args:
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        n += ch == "," and depth == 0
    return Params(names=tuple(f"arg{i}" for i in range(n)), required=n, text=f"({args})")


def runtime_params(fn: Callable[..., object]) -> Params | None:
    """What a built function accepts positionally, read with ``inspect`` (or, for a pybind11
    function, from its docstring); ``None`` when its signature cannot be read."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return _pybind_params(fn)
    names: list[str] = []
    required = 0
    var_positional = False
    kw_required: list[str] = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            var_positional = True
        elif p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
            required += p.default is p.empty
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            kw_required.append(p.name)
    return Params(tuple(names), required, var_positional, tuple(kw_required), str(sig))


def check_signature(fn: Callable[..., object], definition: Definition, dps: bool) -> str | None:
    """Why ``fn`` cannot be called the way the engine will call it, or ``None`` if it can.

    Destination-passing style: inputs then outputs, positionally; otherwise inputs only. The
    rule is :func:`sweep.schema.entry_signature.signature_problem`, which ``sweep validate``
    applies to the source before anything is built. A signature that cannot be read (some
    C++ bindings) is accepted.
    """
    params = runtime_params(fn)
    if params is None:
        return None
    return signature_problem(params, list(definition.inputs), list(definition.outputs), dps)

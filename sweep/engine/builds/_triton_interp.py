"""The Triton interpreter (``TRITON_INTERPRET=1``, Triton kernels on the CPU) made to work with
NumPy >= 2.4, and the message for an interpreter failure of that pair that remains.

Triton 3.6's interpreter holds every scalar as a NumPy array of shape ``(1,)`` and turns one
into a Python ``int`` with ``int(array)`` when a kernel uses it as an index or a loop bound
(``for k in range(0, n, BLOCK)`` with a runtime ``n``). NumPy 2.4 made that conversion of a
1-dimensional array an error ("only 0-dimensional arrays can be converted to Python
scalars"), so every kernel looping over a runtime bound failed on the CPU. :func:`patch`
replaces that one conversion, in the interpreter only, with ``array.item()``, which both
NumPy 1.x and 2.x accept; it changes nothing of compiled (GPU) kernels.
"""

from __future__ import annotations

import sys

from sweep.errors import exception_chain

__all__ = ["NUMPY_SCALAR_ERRORS", "interpreter_hint", "patch"]

#: What NumPy says when an array of more than one dimension is turned into a Python scalar:
#: NumPy >= 2.4 (an error) and NumPy < 2 (length-1 arrays only).
NUMPY_SCALAR_ERRORS = (
    "only 0-dimensional arrays can be converted to Python scalars",
    "only length-1 arrays can be converted to Python scalars",
    "only integer scalar arrays can be converted to a scalar index",
)

_PATCHED = "_sweep_index_patched"


def _scalar_index(self: object) -> int:
    """``__index__`` of an interpreted scalar: its one element as an ``int``."""
    data = self.handle.data  # type: ignore[attr-defined]
    return int(data.item() if getattr(data, "size", 0) == 1 else data)


def patch() -> bool:
    """Make the loaded Triton interpreter turn its scalars into Python ints with ``.item()``.

    Does nothing (and returns ``False``) when the interpreter is not imported or has no such
    hook (another Triton version); idempotent. The interpreter patches ``triton.language``
    at each kernel call through the module-level ``_patch_lang_tensor``, so wrapping it here
    takes effect at the next call.
    """
    interp = sys.modules.get("triton.runtime.interpreter")
    original = getattr(interp, "_patch_lang_tensor", None)
    if interp is None or original is None:
        return False
    if getattr(original, _PATCHED, False):
        return True

    def patched(tensor: object, scope: object) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _scalar_index)  # type: ignore[attr-defined]

    setattr(patched, _PATCHED, True)
    patched.__wrapped__ = original  # type: ignore[attr-defined]
    interp._patch_lang_tensor = patched  # type: ignore[attr-defined]
    return True


def interpreter_hint(e: BaseException) -> str | None:
    """The cause and the fix when ``e`` (or an exception it came from) is the Triton
    interpreter failing on a NumPy scalar conversion, else ``None``."""
    chain = exception_chain(e)
    text = " ".join(str(x) for x in chain)
    interpreted = any(type(x).__name__ == "InterpreterError" for x in chain)
    if not interpreted or not any(m in text for m in NUMPY_SCALAR_ERRORS):
        return None
    return (
        f"the Triton interpreter (triton {_version('triton')}) cannot turn a NumPy {_version('numpy')} "
        "array into a Python scalar, a known incompatibility of Triton's interpreter with NumPy >= 2.4 "
        "(a loop or an index over a runtime value); fix: pip install 'numpy<2.4' where the CPU "
        "workers run, or make that value a tl.constexpr"
    )


def _version(name: str) -> str:
    module = sys.modules.get(name)
    version: object = getattr(module, "__version__", "?")
    return str(version)

"""The persisting part of the GPU's L2 cache, set back before timed calls.

Since Ampere a context may set aside part of the L2 for "persisting" accesses
(``cudaLimitPersistingL2CacheSize``) and mark a window of memory as persisting on a stream or a
graph node (an access-policy window). A kernel that does so keeps its data in L2 across the
harness's flush between timed calls and reads it from there, faster than any honest kernel can
on a cold cache (pygpubench issue 49; nvbench's ``--disable-persisting-l2-cache``). With the
set-aside at zero, a persisting window has nothing to persist into: every access is normal.

So before each side is timed the limit is set to zero, the persisting lines are reset and the
current stream's access-policy window is cleared (:func:`reset`), and after the solution's
timed calls the limit is read again
(:func:`limit`): one set while they ran is tampering. Through the driver API (``libcuda``), on
the context torch made current; off a GPU, or where the driver lacks the calls, both do nothing.
"""

from __future__ import annotations

import ctypes
import functools

import torch

__all__ = ["persisting_l2_limit", "reset_persisting_l2"]

#: ``CU_LIMIT_PERSISTING_L2_CACHE_SIZE`` of the driver API's ``CUlimit``.
_PERSISTING_L2 = 0x06
#: ``CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW`` of ``CUstreamAttrID``.
_ACCESS_POLICY_WINDOW = 1


class _Window(ctypes.Structure):
    """``CUaccessPolicyWindow``, padded to the size of the attribute value union (64 bytes)."""

    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hit_ratio", ctypes.c_float),
        ("hit_prop", ctypes.c_int),
        ("miss_prop", ctypes.c_int),
        ("pad", ctypes.c_char * 36),
    ]


@functools.cache
def _driver() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    for name in ("cuCtxGetLimit", "cuCtxSetLimit", "cuCtxResetPersistingL2Cache", "cuStreamSetAttribute"):
        if not hasattr(lib, name):
            return None
    return lib


def persisting_l2_limit(device: torch.device) -> int | None:
    """Bytes of L2 set aside for persisting accesses in this process's context on ``device``
    (``None`` off a GPU, or when the driver cannot say)."""
    lib = _driver() if device.type == "cuda" else None
    if lib is None:
        return None
    torch.cuda.set_device(device)  # the primary context current on this thread
    value = ctypes.c_size_t(0)
    if lib.cuCtxGetLimit(ctypes.byref(value), ctypes.c_int(_PERSISTING_L2)) != 0:
        return None
    return int(value.value)


def reset_persisting_l2(device: torch.device) -> int | None:
    """Set the persisting set-aside to zero, evict persisting lines and clear the access-policy
    window of the current stream; return the limit found before (``None`` off a GPU, or when
    the driver cannot)."""
    before = persisting_l2_limit(device)
    lib = _driver()
    if before is None or lib is None:
        return None
    torch.cuda.synchronize(device)
    if before:
        lib.cuCtxSetLimit(ctypes.c_int(_PERSISTING_L2), ctypes.c_size_t(0))
    lib.cuCtxResetPersistingL2Cache()
    stream = torch.cuda.current_stream(device).cuda_stream
    if stream:  # the legacy default stream (0) takes no attributes
        none = _Window(None, 0, 0.0, 0, 0)  # nothing persisting: normal hits, streaming misses
        lib.cuStreamSetAttribute(
            ctypes.c_void_p(stream), ctypes.c_int(_ACCESS_POLICY_WINDOW), ctypes.byref(none)
        )
    return before

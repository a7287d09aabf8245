"""The text of a trace's log: clipping to the byte limit, finding sticky CUDA errors."""

from __future__ import annotations

from sweep.schema.trace_log import clip_log, sticky_cuda_error


def test_clip_log_keeps_head_and_tail_within_the_limit() -> None:
    assert clip_log("short", 256) == "short"
    out = clip_log("H" * 300 + "x" * 1000 + "T" * 300, 400)
    assert len(out.encode()) <= 400 and out.startswith("HHH") and out.endswith("TTT")
    out = clip_log("é" * 1000, 300)  # multi-byte characters are not split into garbage
    assert len(out.encode()) <= 300 and "\ufffd" not in out


def test_sticky_cuda_errors_are_found_in_any_case() -> None:
    assert sticky_cuda_error("RuntimeError: CUDA error: an illegal memory access was encountered") == (
        "illegal memory access"
    )
    assert sticky_cuda_error("CUDA ERROR: UNKNOWN ERROR") == "cuda error: unknown error"
    assert sticky_cuda_error("the solution raised KeyError") is None


def test_torch_boilerplate_about_device_side_assertions_is_not_sticky() -> None:
    """torch ends every CUDA error with a hint about device-side assertions; an error such as a
    forbidden call during graph capture must not read as a broken CUDA context."""
    text = (
        "CUDA error: operation not permitted when stream is capturing\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."
    )
    assert sticky_cuda_error(text) is None
    assert sticky_cuda_error("CUDA error: device-side assert triggered") == "device-side assert triggered"

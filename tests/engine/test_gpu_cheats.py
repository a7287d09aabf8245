"""On a CUDA GPU: caches keyed by content or by call count, on the device, under each timer
(fresh values before every timed call, inside CUDA graphs too; random checks of timed calls)."""

from __future__ import annotations

import pytest

from sweep.config import EvalSettings
from sweep.engine import EngineCache
from tests.engine.test_cheats import TRITON_DEVICE_CACHE, device_cache_hits

pytestmark = pytest.mark.gpu

TIMERS = ["events", "cudagraph"]

# A device-side call counter: honest on every 8th execution of the kernel (and on the
# first ones, the trials), a copy of the remembered output otherwise. Nothing on the host
# changes between calls, so a CUDA graph replays the same decision logic on the device.
TRITON_COUNTER = """
import torch
import triton
import triton.language as tl

_state = {}


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, memo_ptr, count_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    count = tl.load(count_ptr)
    if (count < 3) | (count % 8 == 0):
        r = tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)
        tl.store(out_ptr + offs, r, mask=m)
        tl.store(memo_ptr + offs, r, mask=m)
    else:
        tl.store(out_ptr + offs, tl.load(memo_ptr + offs, mask=m), mask=m)


@triton.jit
def _tick(count_ptr):
    tl.store(count_ptr, tl.load(count_ptr) + 1)


def run(x, y):
    n = x.numel()
    if "memo" not in _state:
        _state["memo"] = torch.empty_like(x)
        _state["count"] = torch.zeros(1, dtype=torch.int32, device=x.device)
    out = torch.empty_like(x)
    _add[(triton.cdiv(n, 256),)](x, y, out, _state["memo"], _state["count"], n, BLOCK=256)
    _tick[(1,)](_state["count"])
    return out
"""


def _settings(timer: str) -> EvalSettings:
    return EvalSettings(
        trials=2, warmup_ms=5, rep_ms=20, max_ms=300, min_iterations=50, input_sets=1, timer=timer
    )


@pytest.mark.parametrize("timer", TIMERS)
def test_device_content_cache_never_hits_under_either_timer(kit, vadd, vadd_wl, timer: str) -> None:
    cache = EngineCache()
    # A source of its own per timer: a module of its own, so no state carries over.
    sol = kit.solution("vadd_f32", f"{TRITON_DEVICE_CACHE}\n# {timer}\n", language="triton")
    trace = kit.run(vadd, sol, vadd_wl, _settings(timer), cache=cache, device="cuda")
    ev = trace.evaluation
    assert ev is not None and ev.status.value == "PASSED", ev.log if ev else trace
    assert ev.timing is not None and ev.timing.timer == timer
    assert device_cache_hits(cache) == 0


@pytest.mark.parametrize("timer", TIMERS)
def test_device_call_counter_fails_under_either_timer(kit, vadd, vadd_wl, timer: str) -> None:
    sol = kit.solution("vadd_f32", f"{TRITON_COUNTER}\n# {timer}\n", language="triton")
    trace = kit.run(vadd, sol, vadd_wl, _settings(timer), device="cuda")
    ev = trace.evaluation
    assert ev is not None and ev.status.value == "INCORRECT_NUMERICAL", ev.log if ev else trace
    assert "timed call" in ev.log and "by call count" in ev.log

"""The clocks and CUDA event calls timing goes through, bound once, before any solution runs.

They are taken when the engine is imported: in a sandbox, that is in the zygote every task's
process is forked from, before any solution code has run. A solution that later replaces
``time.perf_counter_ns`` or ``torch.cuda.Event.elapsed_time`` changes nothing the timers call,
and ``_integrity`` reports that it tried.
"""

from __future__ import annotations

import time

import torch

__all__ = ["elapsed", "now", "now_ns", "record", "wait"]

now_ns = time.perf_counter_ns
now = time.perf_counter
elapsed = torch.cuda.Event.elapsed_time
record = torch.cuda.Event.record
wait = torch.cuda.Event.synchronize

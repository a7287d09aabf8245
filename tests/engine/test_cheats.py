"""Solutions that serve stale results must fail: rotation over input sets, fresh data in fixed
buffers, and a check of the outputs of timed calls."""

from __future__ import annotations

import json

import pytest

from sweep.engine import EngineCache
from sweep.schema import Definition, EvalSettings, Solution, Tolerance, Workload
from tests.engine.conftest import Kit


def _repo_rmsnorm(kit) -> tuple[Definition, Workload]:
    defn = Definition.model_validate_json((kit.repo / "definitions/rmsnorm/rmsnorm_h1024.json").read_text())
    line = (kit.repo / "workloads/rmsnorm/rmsnorm_h1024.jsonl").read_text().splitlines()[1]
    return defn, Workload.model_validate(json.loads(line)["workload"])


def test_shipped_pointer_cache_cheat_fails_after_timing(kit) -> None:
    defn, wl = _repo_rmsnorm(kit)
    path = kit.data / "solutions/engine-tests/rmsnorm/rmsnorm_h1024_cached.json"
    cheat = Solution.model_validate_json(path.read_text())
    trace = kit.run(defn, cheat, wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    text = kit.log(trace)
    assert "(timed call 1, on input set" in text
    assert "may reuse results across calls" in text
    # The same kernel without the cache passes: the failure is the cheat's alone.
    honest = cheat.sources[0].content.replace("    if key in _seen:\n        return\n", "")
    fixed = kit.solution("rmsnorm_h1024", honest, dps=True)
    assert kit.status(kit.run(defn, fixed, wl)) == "PASSED"


def test_pointer_cache_fails_with_a_single_trial_too(kit, vadd, vadd_wl) -> None:
    src = kit.pointer_cache
    settings = kit.fast.model_copy(update={"trials": 1, "input_sets": 3})
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, settings)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "(timed call 1, on input set 1)" in kit.log(trace)


def test_compute_once_cheat_fails_in_the_second_trial(kit, vadd, vadd_wl) -> None:
    src = "_out = []\n\ndef run(x, y):\n    if not _out:\n        _out.append(x + y)\n    return _out[0]\n"
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL"
    assert "(trial 1)" in kit.log(trace)


def test_every_timed_call_sees_values_no_earlier_call_saw(kit, vadd, vadd_wl, tmp_path) -> None:
    # The solution records a digest of x on each call: no call may repeat an earlier call's
    # values (a cache keyed by content never hits), on buffers reused across calls.
    record = tmp_path / "seen.txt"
    src = (
        f"PATH = {str(record)!r}\n\n"
        "import hashlib\n\n"
        "def run(x, y):\n"
        "    digest = hashlib.sha256(x.numpy().tobytes() + y.numpy().tobytes()).hexdigest()\n"
        "    with open(PATH, 'a') as f:\n"
        "        f.write(digest + ' ' + str(x.data_ptr()) + '\\n')\n"
        "    return x + y\n"
    )
    settings = kit.fast.model_copy(update={"trials": 2, "input_sets": 3, "min_iterations": 6})
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, settings)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    rows = [line.split() for line in record.read_text().splitlines()]
    timed = rows[2:]
    assert len(timed) >= 6
    assert len({r[0] for r in rows}) == len(rows)
    # Fixed buffers: the trials' addresses are reused by the timed calls (what beats a
    # cache keyed by address), rotating over the three slots.
    assert {r[1] for r in rows[:2]} <= {r[1] for r in timed}
    assert len({r[1] for r in timed}) == 3


# ---- caches keyed by content: fresh values before every timed call, random re-checks --------

_COUNTING = """
import torch

STATS = {"hits": 0, "calls": 0}
_memo = {}


def run(x, y):
    STATS["calls"] += 1
    key = FINGERPRINT
    if key in _memo:
        STATS["hits"] += 1
        return _memo[key]
    out = x + y
    _memo[key] = out.clone()
    return out
"""


def _globals(cache: EngineCache) -> dict[str, object]:
    fn = next(b.fn for k, b in cache.solutions.items() if k.startswith("sol:"))  # type: ignore[union-attr]
    return fn.__globals__  # type: ignore[no-any-return]


def _many(kit: Kit, sets: int = 1) -> EvalSettings:
    return kit.fast.model_copy(
        update={"trials": 2, "input_sets": sets, "min_iterations": 64, "max_iterations": 64, "rep_ms": 0.0}
    )


def test_host_content_cache_never_hits_so_it_is_timed_at_its_real_cost(kit, vadd, vadd_wl) -> None:
    # Keyed by a few elements read on the host: with one input set, every timed call would
    # hit (and be timed as a lookup) if the values repeated.
    src = _COUNTING.replace("FINGERPRINT", "tuple(x[:4].tolist() + y[:4].tolist())")
    cache = EngineCache()
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, _many(kit), cache=cache)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    stats = _globals(cache)["STATS"]
    assert stats["calls"] > 64 and stats["hits"] == 0  # type: ignore[index]


def test_coarse_content_cache_that_hits_on_other_values_fails(kit, vadd, vadd_wl) -> None:
    # A fingerprint coarse enough to collide across fresh values serves stale outputs: the
    # random checks of timed calls catch it.
    src = _COUNTING.replace("FINGERPRINT", "round(float(x[0]), 1)")
    cache = EngineCache()
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, _many(kit), cache=cache)
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)
    assert "timed call" in kit.log(trace) and "by input content" in kit.log(trace)


_FILE_CACHE = """
import hashlib, os
import torch

FOLDER = {folder!r}
STATS = {{"hits": 0, "calls": 0}}


def run(x, y):
    STATS["calls"] += 1
    key = hashlib.sha256(x.numpy().tobytes() + y.numpy().tobytes()).hexdigest()
    path = os.path.join(FOLDER, key + ".pt")
    if os.path.exists(path):
        STATS["hits"] += 1
        return torch.load(path)
    out = x + y
    torch.save(out, path)
    return out
"""


def test_a_content_cache_kept_in_a_file_never_hits_a_later_tasks_timed_calls(
    kit, vadd, vadd_wl, tmp_path
) -> None:
    # Outputs kept on disk by the inputs' content, as a solution could keep them in a folder
    # it may write from task to task (its compilers' cache): a later evaluation of the same
    # workload sees the same input sets (its trials may hit) but timed values of its own.
    src = _FILE_CACHE.format(folder=str(tmp_path))
    settings = _many(kit)
    first, later = EngineCache(), EngineCache()
    assert (
        kit.status(kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, settings, cache=first)) == "PASSED"
    )
    assert _globals(first)["STATS"]["hits"] == 0  # type: ignore[index]
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, settings, cache=later)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    stats = _globals(later)["STATS"]
    assert stats["calls"] > 64  # type: ignore[index]
    assert stats["hits"] <= settings.trials * settings.input_sets, stats  # the trials' own inputs at most


@pytest.mark.parametrize("honest_every", [2, 7, 1000])
def test_call_count_cache_fails(kit, vadd, vadd_wl, honest_every: int) -> None:
    # Honest on the trials and on every n-th call after, stale in between.
    src = (
        "_n = [0]\n_last = []\n\n"
        "def run(x, y):\n"
        "    _n[0] += 1\n"
        f"    if _n[0] <= 2 or _n[0] % {honest_every} == 0 or not _last:\n"
        "        _last[:] = [x + y]\n"
        "    return _last[0]\n"
    )
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, _many(kit, sets=3))
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)


def test_checks_of_timed_calls_leave_the_error_figures_reproducible(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return (x + y) * 1.0001\n")
    settings = _many(kit).model_copy(update={"tolerance": Tolerance(atol=1.0), "max_iterations": 200})
    a = kit.run(vadd, sol, vadd_wl, settings)
    b = kit.run(vadd, sol, vadd_wl, settings.model_copy(update={"min_iterations": 200}))
    assert a.evaluation is not None and b.evaluation is not None
    assert a.evaluation.correctness == b.evaluation.correctness
    assert "timed call(s) on fresh inputs" in kit.log(a)


TRITON_DEVICE_CACHE = """
import torch
import triton
import triton.language as tl

_state = {}


@triton.jit
def _fingerprint(x_ptr, fp_ptr, flag_ptr):
    # The first four elements against those of the previous call, compared where the data
    # is: no host synchronization.
    offs = tl.arange(0, 4)
    v = tl.load(x_ptr + offs)
    same = tl.sum((v == tl.load(fp_ptr + offs)).to(tl.int32), axis=0) == 4
    tl.store(flag_ptr, same.to(tl.int32))
    tl.store(fp_ptr + offs, v)


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, memo_ptr, flag_ptr, hits_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if tl.load(flag_ptr) == 1:
        tl.store(out_ptr + offs, tl.load(memo_ptr + offs, mask=m), mask=m)
        if pid == 0:
            tl.atomic_add(hits_ptr, 1)
    else:
        r = tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)
        tl.store(out_ptr + offs, r, mask=m)
        tl.store(memo_ptr + offs, r, mask=m)


def run(x, y):
    n = x.numel()
    if "memo" not in _state:
        _state["memo"] = torch.empty_like(x)
        _state["fp"] = torch.full((4,), float("nan"), device=x.device)
        _state["flag"] = torch.zeros(1, dtype=torch.int32, device=x.device)
        _state["hits"] = torch.zeros(1, dtype=torch.int32, device=x.device)
    out = torch.empty_like(x)
    _fingerprint[(1,)](x, _state["fp"], _state["flag"])
    _add[(triton.cdiv(n, 256),)](x, y, out, _state["memo"], _state["flag"], _state["hits"], n, BLOCK=256)
    return out
"""


def test_device_content_cache_never_hits(kit, vadd, vadd_wl) -> None:
    # A Triton kernel that compares a fingerprint on the device and copies its remembered
    # output on a match: with one input set every timed call would match without fresh values.
    cache = EngineCache()
    sol = kit.solution("vadd_f32", TRITON_DEVICE_CACHE, language="triton")
    settings = _many(kit).model_copy(update={"min_iterations": 8, "max_iterations": 8})
    trace = kit.run(vadd, sol, vadd_wl, settings, cache=cache)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    assert device_cache_hits(cache) == 0


def device_cache_hits(cache: EngineCache) -> int:
    """How many calls the device-side content cache of ``TRITON_DEVICE_CACHE`` served."""
    return int(_globals(cache)["_state"]["hits"].item())  # type: ignore[index]

"""Builds shared by processes: the file lock, and a C++ torch extension built by two processes at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

#: Holds the lock named by argv[1] until a line arrives on stdin; says when it holds it (and how
#: long it waited for it) and when it lets it go. No sleeps: the tests wait for what it says.
HOLDER = textwrap.dedent(
    """
    import sys, time
    from sweep.engine.builds._lock import FileLock
    print("waiting", flush=True)
    with FileLock(sys.argv[1]) as lock:
        print(f"held {time.time()} {lock.waited_s}", flush=True)
        sys.stdin.readline()
        print(f"released {time.time()}", flush=True)
    """
)


def _holder(lock: object, code: str = HOLDER) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _said(proc: subprocess.Popen[str], word: str) -> list[str]:
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line and line[0] == word, line
    return line


def test_file_lock_excludes_a_second_process(tmp_path) -> None:
    lock = tmp_path / "x.lock"
    first = _holder(lock)
    second = None
    try:
        _said(first, "waiting")
        _said(first, "held")
        second = _holder(lock)
        _said(second, "waiting")  # about to ask for the lock the first one holds
        assert first.stdin is not None
        first.stdin.write("go\n")
        first.stdin.flush()
        released = float(_said(first, "released")[1])
        _, entered, waited = _said(second, "held")
        assert float(entered) >= released - 0.01, "the second holder entered before the first left"
        assert float(waited) > 0
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.communicate("go\n", timeout=60)


def test_file_lock_times_out_with_a_message(tmp_path) -> None:
    from sweep.engine.builds._lock import FileLock
    from sweep.errors import EngineError

    holder = _holder(tmp_path / "y.lock")
    try:
        _said(holder, "waiting")
        _said(holder, "held")
        with pytest.raises(EngineError, match="another process is building the same solution"):
            FileLock(tmp_path / "y.lock", timeout_s=0.3).acquire()
    finally:
        holder.communicate("go\n", timeout=60)


def test_lock_dies_with_its_process(tmp_path) -> None:
    from sweep.engine.builds._lock import FileLock

    code = HOLDER.replace("time.sleep(0.6)", "import os; os._exit(0)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "z.lock")], check=False, timeout=60)
    with FileLock(tmp_path / "z.lock", timeout_s=1.0) as lock:
        assert lock.waited_s < 0.5


def test_build_lock_test_hook_holds_until_another_process_asks(tmp_path, monkeypatch) -> None:
    # The hook of the two-process build tests: the first holder keeps the lock, before its
    # build, until a second process has found it taken, however late that one comes.
    import select
    import threading

    from sweep.engine.builds._lock import RENDEZVOUS_ENV, build_lock

    meet = tmp_path / "meet"
    monkeypatch.setenv(RENDEZVOUS_ENV, str(meet))
    code = HOLDER.replace("import FileLock", "import build_lock").replace(
        "FileLock(sys.argv[1])", "build_lock(__import__('pathlib').Path(sys.argv[1]), timeout_s=60)"
    )
    first = _holder(tmp_path, code)
    try:
        _said(first, "waiting")
        while not (meet / "holding").exists():  # it holds the lock, waiting to be asked
            assert first.poll() is None, "the holder exited"
            time.sleep(0.02)
        assert first.stdout is not None
        assert select.select([first.stdout], [], [], 0.5)[0] == []  # it holds, and has not gone on
        assert not (meet / "contended").exists()
        second = build_lock(tmp_path, timeout_s=60)
        asking = threading.Thread(target=second.acquire)
        asking.start()  # finds the lock taken, says so: the first goes on
        held = float(_said(first, "held")[1])
        assert held >= (meet / "contended").stat().st_mtime  # it went on only once asked
        assert first.stdin is not None
        first.stdin.write("go\n")
        first.stdin.flush()
        _said(first, "released")
        asking.join(60)
        assert second.waited_s > 0
        second.release()
    finally:
        first.communicate("go\n", timeout=60)


CPP = r"""
// The tensor and its pybind11 caster only: torch/extension.h (all of torch's C++ API) takes four
// times as long to compile, and what is tested is the build being shared, not what it includes.
#include <ATen/core/Tensor.h>
#include <torch/csrc/utils/pybind.h>

// Destination-passing: z = x + y, plain C++ loop over float32 data.
void run(at::Tensor x, at::Tensor y, at::Tensor z) {
    TORCH_CHECK(x.is_contiguous() && y.is_contiguous() && z.is_contiguous(), "contiguous tensors only");
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    float* c = z.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) c[i] = a[i] + b[i];
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "z = x + y"); }
"""


@pytest.mark.slow
def test_cpp_extension_built_once_by_two_processes_at_the_same_time(kit, vadd, vadd_wl, tmp_path) -> None:
    sol = kit.solution(
        "vadd_f32",
        {"main.cpp": CPP},
        language="cpp",
        binding="torch",
        entry="main.cpp::run",
        dps=True,
        name="vadd_cpp",
    )
    traces = kit.evaluate_in_two_processes(
        vadd, sol, vadd_wl, tmp_path, {"TORCH_EXTENSIONS_DIR": str(tmp_path / "ext")}
    )
    statuses = [t.evaluation.status.value for t in traces]
    assert statuses == ["PASSED", "PASSED"], [t.evaluation.log for t in traces]
    logs = [t.evaluation.log for t in traces]
    assert any("for another process building the same solution" in text for text in logs), logs
    built = list((tmp_path / "cache" / "solutions" / sol.content_hash / "build").glob("*.so"))
    assert len(built) == 1

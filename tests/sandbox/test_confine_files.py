"""The sandbox's Landlock ruleset (``sweep.sandbox._confine_files``): where a sandbox may write,
and the ruleset installed in a real process."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from sweep.sandbox._confine_files import LANDLOCK_MIN_ABI, restrict_writes, task_roots, writable_roots

from ._probe import run_probe

REPO = Path(__file__).resolve().parents[2]


def _landlock_abi() -> int:
    import ctypes

    if sys.platform != "linux":
        return 0
    got = ctypes.CDLL(None, use_errno=True).syscall(444, None, ctypes.c_size_t(0), 1)
    return int(got) if got > 0 else 0


def _beneath(path: Path, roots: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(
        real == os.path.realpath(r) or real.startswith(os.path.realpath(r).rstrip("/") + "/") for r in roots
    )


def test_the_roots_hold_the_task_folder_and_caches_and_not_the_interpreter(tmp_path: Path) -> None:
    task = tmp_path / "task"
    task.mkdir()
    roots = writable_roots(str(task), None)
    assert roots[0] == str(task)
    assert "/dev" in roots and f"/proc/{os.getpid()}" in roots
    assert _beneath(Path.home() / ".cache", roots) or not (Path.home() / ".cache").is_dir()
    # The standard library every later process imports, and a project kept outside the
    # temporary folders (its code and its results) are not writable.
    assert not _beneath(Path(os.__file__).parent, roots), roots
    assert not _beneath(Path("/usr/lib"), roots) and not _beneath(Path.home() / ".bashrc", roots)
    assert _beneath(REPO, roots) == _beneath(
        REPO, ["/tmp", "/var/tmp", "/dev/shm", str(Path.home() / ".cache")]
    )


def test_the_caches_are_made_before_they_are_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A new machine: Triton makes ~/.triton on its first compile, which the ruleset would refuse.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "elsewhere" / "triton"))
    (tmp_path / "home").mkdir()
    roots = writable_roots(None, None)
    for made in (
        tmp_path / "home/.triton",
        tmp_path / "home/.cache",
        tmp_path / "home/.nv",
        tmp_path / "elsewhere/triton",
    ):
        assert made.is_dir() and str(made) in roots


def test_a_user_without_a_home_still_gets_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    roots = writable_roots(str(tmp_path), None)
    assert roots[0] == str(tmp_path) and "/dev" in roots


def test_roots_that_do_not_exist_are_left_out(tmp_path: Path) -> None:
    roots = writable_roots(str(tmp_path / "missing"), str(tmp_path / "gone"))
    assert str(tmp_path / "missing") not in roots and str(tmp_path / "gone") not in roots


def test_a_kernel_without_landlock_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    import sweep.sandbox._confine_files as cf

    monkeypatch.setattr(cf, "_abi", lambda libc: 0)
    assert restrict_writes(["/tmp"]) == "writes not confined: Landlock not enabled in this kernel"
    monkeypatch.setattr(cf, "_abi", lambda libc: 1)
    assert restrict_writes(["/tmp"]) == f"writes not confined: Landlock ABI 1, {LANDLOCK_MIN_ABI} needed"


# Every attempt is harmless when the ruleset is missing: it works in a folder of the test's own.
_PROBE = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from sweep.sandbox._confine_files import restrict_writes
    allowed, denied = sys.argv[1], sys.argv[2]
    early = open(os.path.join(denied, "opened_before.txt"), "w")
    out["why"] = restrict_writes([allowed])
    def write(path, mode="w"):
        with open(path, mode) as f:
            f.write("x")
    attempt("create in the allowed folder", lambda: write(os.path.join(allowed, "a.txt")))
    attempt("make a folder in the allowed one", lambda: os.mkdir(os.path.join(allowed, "sub")))
    attempt("rename within the allowed folder", lambda: os.replace(
        os.path.join(allowed, "a.txt"), os.path.join(allowed, "sub", "b.txt")))
    attempt("create in the other folder", lambda: write(os.path.join(denied, "new.txt")))
    attempt("append to a file there", lambda: write(os.path.join(denied, "existing.txt"), "a"))
    attempt("truncate a file there", lambda: os.truncate(os.path.join(denied, "existing.txt"), 0))
    attempt("move a file out to there", lambda: os.replace(
        os.path.join(allowed, "sub", "b.txt"), os.path.join(denied, "moved.txt")))
    attempt("remove a file there", lambda: os.remove(os.path.join(denied, "existing.txt")))
    attempt("symlink there", lambda: os.symlink("/etc/passwd", os.path.join(denied, "link")))
    attempt("hard-link a file there into the allowed folder", lambda: os.link(
        os.path.join(denied, "existing.txt"), os.path.join(allowed, "hard")))
    attempt("move a file from there", lambda: os.replace(
        os.path.join(denied, "existing.txt"), os.path.join(allowed, "taken.txt")))
    attempt("read a file there", lambda: open(os.path.join(denied, "existing.txt")).read())
    attempt("write a descriptor opened before", lambda: (early.write("x"), early.flush()))
    attempt("open the parent's memory for writing", lambda: open("/proc/%d/mem" % os.getppid(), "r+b").close())
    child = subprocess.run([sys.executable, "-c",
        "open(%r, 'w')" % os.path.join(denied, "by_child.txt")], capture_output=True, text=True)
    out["a child creates there"] = "EACCES" if "PermissionError" in child.stderr else "allowed"
    """
)


@pytest.mark.skipif(_landlock_abi() < LANDLOCK_MIN_ABI, reason="needs Landlock ABI 2 (Linux 5.19+)")
def test_a_restricted_process_writes_only_beneath_its_roots(tmp_path: Path) -> None:
    allowed, denied = tmp_path / "allowed", tmp_path / "denied"
    allowed.mkdir()
    denied.mkdir()
    (denied / "existing.txt").write_text("kept\n")
    got = run_probe(_PROBE, str(allowed), str(denied))
    assert got.pop("why") is None
    assert got == {
        "create in the allowed folder": "allowed",
        "make a folder in the allowed one": "allowed",
        "rename within the allowed folder": "allowed",
        "create in the other folder": "EACCES",
        "append to a file there": "EACCES",
        "truncate a file there": "EACCES" if _landlock_abi() >= 3 else "allowed",
        "remove a file there": "EACCES",
        "move a file out to there": "EACCES",
        "symlink there": "EACCES",
        "hard-link a file there into the allowed folder": "EXDEV",
        "move a file from there": "EACCES",
        "read a file there": "allowed",
        "write a descriptor opened before": "allowed",
        "open the parent's memory for writing": "EACCES",
        "a child creates there": "EACCES",
    }
    assert (denied / "existing.txt").read_text() == "kept\n"
    assert sorted(p.name for p in denied.iterdir()) == ["existing.txt", "opened_before.txt"]


def test_a_task_may_write_its_folder_and_its_build_but_not_the_temporary_folders_or_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "sweep-cache"
    build = cache / "solutions" / "abc"
    build.mkdir(parents=True)
    task = tmp_path / "task"
    task.mkdir()
    monkeypatch.setenv("SWEEP_CACHE_DIR", str(cache))
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pycache"))
    shared = {v: tmp_path / "shared" / v.lower() for v in ("TRITON_CACHE_DIR", "TRITON_HOME")}
    shared["TORCH_EXTENSIONS_DIR"] = tmp_path / "shared" / "ext"
    shared["TORCHINDUCTOR_CACHE_DIR"] = tmp_path / "shared" / "inductor"
    for var, folder in shared.items():
        monkeypatch.setenv(var, str(folder))
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "nv"))
    roots = task_roots(str(task), [str(build)])
    assert roots[:2] == [str(task), str(build)]
    assert "/dev" in roots and f"/proc/{os.getpid()}" in roots
    assert _beneath(tmp_path / "nv", roots)  # CUDA's JIT cache: the driver's, not a solution's
    for shut in (
        "/tmp",
        "/var/tmp",
        str(cache),
        str(cache / "solutions" / "other"),
        str(tmp_path / "pycache"),
        str(Path.home() / ".triton"),  # compiled kernels every solution would load
        str(Path.home() / ".cache" / "torch_extensions"),
        *map(str, shared.values()),
    ):
        assert not _beneath(Path(shut), roots), (shut, roots)
    assert not _beneath(Path.home() / ".cache" / "kernel-sweep", roots)


_TASK_PROBE = textwrap.dedent(
    """
    import os, sys
    from sweep.sandbox._confine_files import restrict_writes, task_roots, writable_roots
    task, build, beside = sys.argv[1], sys.argv[2], sys.argv[3]
    out["first"] = restrict_writes(writable_roots(task, None))
    attempt("beside, before the task", lambda: open(os.path.join(beside, "early.txt"), "w").close())
    out["second"] = restrict_writes(task_roots(task, [build]))
    attempt("in its folder", lambda: open(os.path.join(task, "a.txt"), "w").close())
    attempt("in its build", lambda: open(os.path.join(build, "b.o"), "w").close())
    attempt("beside", lambda: open(os.path.join(beside, "late.txt"), "w").close())
    attempt("in /tmp", lambda: open("/tmp/sweep-task-probe-%d" % os.getpid(), "w").close())
    """
)


@pytest.mark.skipif(_landlock_abi() < LANDLOCK_MIN_ABI, reason="needs Landlock ABI 2 (Linux 5.19+)")
def test_the_task_ruleset_narrows_the_sandbox_one(tmp_path: Path) -> None:
    task, build, beside = tmp_path / "task", tmp_path / "cache" / "abc", tmp_path / "other-task"
    for d in (task, build, beside):
        d.mkdir(parents=True)
    got = run_probe(_TASK_PROBE, str(task), str(build), str(beside))
    assert got.pop("first") is None and got.pop("second") is None
    assert got == {
        "beside, before the task": "allowed",  # the temporary folders, until its task arrives
        "in its folder": "allowed",
        "in its build": "allowed",
        "beside": "EACCES",
        "in /tmp": "EACCES",
    }


_THREADS_PROBE = textwrap.dedent(
    """
    import os, sys, threading
    from sweep.sandbox._confine_files import restrict_writes
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()  # a thread that ran before, as CUDA's
    out["lone"] = restrict_writes([sys.argv[1]])
    out["not lone"] = restrict_writes([sys.argv[1]], lone=False)
    stop.set()
    """
)


@pytest.mark.skipif(_landlock_abi() < LANDLOCK_MIN_ABI, reason="needs Landlock ABI 2 (Linux 5.19+)")
def test_threads_that_ran_before_are_said_only_where_the_caller_expects_none(tmp_path: Path) -> None:
    got = run_probe(_THREADS_PROBE, str(tmp_path))
    assert got == {
        "lone": "writes confined in this thread; 1 thread(s) that ran before are not",
        "not lone": None,
    }

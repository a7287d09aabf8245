"""One tool over one task's profile process: the command lines, the run, the parsed rows."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from sweep._python import python_env
from sweep.errors import ProfileError, clip
from sweep.sandbox.profile_tools import ToolRun, run_tool
from sweep.store import (
    NCU_METRICS,
    KernelProfile,
    ProfileParseError,
    SanitizerReport,
    parse_ncu_csv,
    parse_sanitizer,
)

__all__ = ["ncu_problem", "run_ncu", "run_sanitizer", "tool_failure"]


def ncu_problem(output: str) -> str | None:
    """Why ncu could not profile, from its output (counters not readable, no GPU), or ``None``."""
    if "ERR_NVGPUCTRPERM" in output:
        return (
            "ncu cannot read the GPU's performance counters (ERR_NVGPUCTRPERM): this user lacks "
            "permission; run as root or set the driver option NVreg_RestrictProfilingToAdminUsers=0"
        )
    for line in output.splitlines():
        if line.startswith("==ERROR==") and "profiling is not supported" in line.lower():
            return f"ncu: {clip(line.removeprefix('==ERROR==').strip(), 200)}"
    return None


def tool_failure(run: ToolRun, what: str, timeout_s: float) -> str | None:
    """What went wrong with a tool run, for the task's problems (``None``: it exited 0)."""
    if run.timed_out:
        return f"{what} was killed after its deadline of {timeout_s:g} s (profile.timeout_s)"
    if run.returncode:
        tail = [ln for ln in run.output.splitlines() if ln.strip()][-3:]
        return f"{what} exited with status {run.returncode}: " + clip(" | ".join(tail), 300)
    return None


def run_ncu(
    ncu: str,
    target: list[str],
    folder: Path,
    ncu_set: str,
    timeout_s: float,
    problems: list[str],
    env_over: Mapping[str, str] | None = None,
) -> list[KernelProfile] | None:
    """Profile ``target`` (only its profiler range) into ``folder/profile.ncu-rep`` and read
    the kernels back (``None`` when there is no report); ``env_over``: variables set for it
    over this process's (the task's ``EvalSettings.process_env``).

    Raises:
        ProfileError: ncu cannot read the counters (``ERR_NVGPUCTRPERM``) or profile this GPU.
    """
    report = folder / "profile.ncu-rep"
    report.unlink(missing_ok=True)
    argv = [
        ncu,
        "--profile-from-start",
        "off",
        "--clock-control",
        "none",
        "--set",
        ncu_set,
        "--metrics",
        ",".join(NCU_METRICS),
        "--export",
        str(folder / "profile"),
        "--force-overwrite",
        *target,
    ]
    env = python_env({**os.environ, **(env_over or {})})  # the `sweep` this process runs
    run = run_tool(argv, timeout_s=timeout_s, log_path=folder / "ncu.log", env=env)
    problem = ncu_problem(run.output)
    if problem is not None:
        raise ProfileError(problem)
    failure = tool_failure(run, "ncu", timeout_s)
    if failure:
        problems.append(failure)
    if not report.is_file():
        problems.append(f"ncu wrote no report (see {folder / 'ncu.log'})")
        return None
    page = run_tool(
        [ncu, "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"],
        timeout_s=timeout_s,
        log_path=folder / "ncu-raw.csv",
    )
    try:
        return parse_ncu_csv(page.output)
    except ProfileParseError as e:
        problems.append(f"{e} (see {folder / 'ncu-raw.csv'})")
        return None


def run_sanitizer(
    sanitizer: str,
    tool: str,
    target: list[str],
    folder: Path,
    timeout_s: float,
    problems: list[str],
    env_over: Mapping[str, str] | None = None,
) -> SanitizerReport | None:
    """Run ``target`` under ``compute-sanitizer --tool TOOL`` (the whole process is checked,
    torch's caching allocator off) into ``folder/sanitizer-TOOL.txt`` and parse it
    (``None``: no summary, see problems); ``env_over`` as for :func:`run_ncu`."""
    log = folder / f"sanitizer-{tool}.txt"
    # memcheck: a red zone after every allocation, so a read just past a tensor's end is past
    # an allocation's end even where the driver packs small allocations back to back
    padding = ["--padding", "4096"] if tool == "memcheck" else []
    argv = [sanitizer, "--tool", tool, *padding, "--print-limit", "100", *target]
    # Without torch's caching allocator every tensor is an allocation of its own, so a read
    # past a tensor's end is past an allocation's end, which is what memcheck sees.
    env = python_env({**os.environ, **(env_over or {}), "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    run = run_tool(argv, timeout_s=timeout_s, log_path=log, env=env)
    try:
        report = parse_sanitizer(run.output, tool)
    except ProfileParseError as e:
        problems.append(f"{e} (see {log})")
        return None
    if report.errors == 0:
        failure = tool_failure(run, f"compute-sanitizer --tool {tool}", timeout_s)
        if failure:
            problems.append(failure)
    return report

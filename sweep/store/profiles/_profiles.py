"""Storing what ``sweep profile`` measured: the ``profiles`` and ``sanitizer_findings`` rows
of one task (a new profile of a task replaces the rows of its tools)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from sweep.store.profiles._profile_parse import KernelProfile, SanitizerReport
from sweep.store.rows import WritableStore

__all__ = ["save_profile_results"]


def save_profile_results(
    store_path: Path,
    task_id: str,
    *,
    kernels: list[KernelProfile] | None,
    ncu_report: str = "",
    sanitizer: list[tuple[SanitizerReport, str]] | None = None,
    lock_timeout_s: float = 30.0,
) -> None:
    """Replace ``task_id``'s rows: its kernels (when ncu ran: ``kernels`` not ``None``) and
    the findings of each sanitizer tool that ran (``(report, file)`` pairs).

    Raises:
        StoreError: The store cannot be written.
    """
    now = datetime.now(timezone.utc)
    store = WritableStore(Path(store_path), lock_timeout_s=lock_timeout_s)
    try:
        with store.writing() as con:
            if kernels is not None:
                con.execute("DELETE FROM profiles WHERE task_id = ?", [task_id])
                if kernels:
                    con.executemany(
                        "INSERT INTO profiles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            (
                                task_id,
                                now,
                                k.launch,
                                k.kernel,
                                k.duration_ms,
                                k.sm_throughput_pct,
                                k.dram_throughput_pct,
                                k.memory_throughput_pct,
                                k.achieved_occupancy_pct,
                                k.registers_per_thread,
                                k.shared_mem_per_block,
                                k.grid_size,
                                k.block_size,
                                k.limiter,
                                ncu_report,
                            )
                            for k in kernels
                        ],
                    )
            for report, path in sanitizer or []:
                con.execute(
                    "DELETE FROM sanitizer_findings WHERE task_id = ? AND tool = ?", [task_id, report.tool]
                )
                if report.findings:
                    con.executemany(
                        "INSERT INTO sanitizer_findings VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            (task_id, now, f.tool, f.kind, f.kernel, f.count, f.first_message, path)
                            for f in report.findings
                        ],
                    )
    finally:
        store.close()

"""The report's section of calls made by several ranks (``evaluation.distributed``, store
schema 9): bus bandwidth against message size, one row per definition, solution, hardware,
world size and size, so each world size reads as a curve over the sizes. Shown only when some
trace spans ranks."""

from __future__ import annotations

__all__ = ["COLLECTIVE_SECTION"]

#: (title, SQL, note).
COLLECTIVE_SECTION: tuple[str, str, str] = (
    "Bandwidth vs message size, per world size (calls made by several ranks)",
    """
SELECT definition, solution, hardware, world_size, collective,
       message_bytes, count(*) AS traces,
       count(*) FILTER (WHERE status = 'PASSED') AS passed,
       median(latency_ms) FILTER (WHERE status = 'PASSED') AS median_latency_ms,
       median(algbw_gbps) AS algbw_gbps, median(busbw_gbps) AS busbw_gbps,
       median(link_fraction) AS link_fraction
FROM latest
WHERE world_size > 1
GROUP BY definition, solution, hardware, world_size, collective, message_bytes
ORDER BY definition, hardware, world_size, solution, message_bytes""",
    (
        "Per world size, the bus bandwidth (nccl-tests' formulas: algbw = size / time, busbw = algbw x "
        "the collective's factor; docs/multi-gpu.md) at each message size; latency is the slowest "
        'rank\'s. Per rank: sweep query "SELECT rank_status, rank_latency_ms FROM latest WHERE world_size > 1".'
    ),
)

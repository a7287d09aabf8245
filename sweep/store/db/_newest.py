"""Which of two traces is newer: the one order every view and query of the store ranks by.

A trace says when it ran (``timestamp``), but a trace from another cluster can say anything:
dated in the future, it would stay the ``latest`` of its task for good, over every genuine run
after it. What the store knows for itself is when it stored the trace (``ingested_at``); a
trace cannot have run after that. So a trace ranks by the time it claims, never later than
the time it was stored (:data:`RANK_TIME`), then by its key.
"""

from __future__ import annotations

__all__ = ["NEWEST_FIRST", "RANK_TIME", "rank_time"]


def rank_time(claimed: str = "timestamp", stored: str = "ingested_at") -> str:
    """SQL of the time a trace ranks by: ``claimed``, never later than ``stored`` (either
    missing: the other)."""
    return f"least({claimed}, {stored})"


#: The time a trace ranks by (:func:`rank_time` of ``timestamp`` and ``ingested_at``).
RANK_TIME = rank_time()
#: An ``ORDER BY`` putting the newest trace first (its key breaks ties).
NEWEST_FIRST = f"ORDER BY {RANK_TIME} DESC, trace_key DESC"

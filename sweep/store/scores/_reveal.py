"""``sweep reveal``: check, once a launch's secret is made public, that the stored secret runs
used it (each trace's commitment is the HMAC of its task under that secret)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sweep.schema.secret import verify
from sweep.store.read import Store, run_sql

__all__ = ["RevealReport", "reveal"]


@dataclass
class RevealReport:
    """What :func:`reveal` found.

    Attributes:
        secret_traces: Stored traces of secret runs (with a commitment).
        verified: Those whose commitment the secret makes.
        mismatched: ``(definition, workload_uuid, trace_key)`` of the others: runs of another
            secret (or a commitment altered after the run).
    """

    secret_traces: int = 0
    verified: int = 0
    mismatched: list[tuple[str, str, str]] = field(default_factory=list)


def reveal(store_path: str | Path, secret: bytes, *, results_dir: Path | None = None) -> RevealReport:
    """Check every secret run's commitment in a store against ``secret``."""
    report = RevealReport()
    with Store(Path(store_path)).session(results_dir) as s:
        res = run_sql(
            s,
            """SELECT definition, workload_uuid, trace_key,
       json_extract_string(record, '$.provenance.secret_commitment') AS commitment
FROM traces WHERE json_extract_string(record, '$.provenance.secret_commitment') IS NOT NULL
ORDER BY definition, workload_uuid, trace_key""",
        )
    for definition, uuid, key, stored in res.rows:
        report.secret_traces += 1
        if verify(secret, str(definition), str(uuid), str(stored)):
            report.verified += 1
        else:
            report.mismatched.append((str(definition), str(uuid), str(key)))
    return report

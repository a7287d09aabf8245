"""``sweep launch --secret-file``: the secret is written nowhere (every file the launch wrote,
and what it printed, searched for it), each trace keeps a commitment that ``sweep reveal``
checks, and the public and secret runs of the same tasks are told apart in the store."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from sweep.cli import app
from sweep.store import Store

from .conftest import read_traces, write_config, write_dataset

runner = CliRunner()
SECRET = "kernel-sweep-test-secret-7f3a9c2e41d8"


def test_secret_launch_writes_no_secret_and_keeps_runs_apart(
    two_nodes: dict[str, str], tmp_path: Path
) -> None:
    # One task: each launch starts one worker (and its zygote), not one per workload.
    data = write_dataset(tmp_path / "data", {"ok": "def run(x):\n    return x + 1\n"}, n_workloads=1)
    results = tmp_path / "results"
    cfg = write_config(tmp_path / "secret.yaml", [data], results, hardware="H100")
    secret_file = tmp_path / "secret" / "secret.txt"
    secret_file.parent.mkdir()
    secret_file.write_text(SECRET + "\n")

    public = runner.invoke(app, ["launch", str(cfg), "--quiet"])
    assert public.exit_code == 0, public.output
    hidden = runner.invoke(app, ["launch", str(cfg), "--quiet", "--secret-file", str(secret_file)])
    assert hidden.exit_code == 0, hidden.output
    assert "0 ran" not in hidden.stdout  # secret runs are tasks of their own, not skipped

    traces = read_traces(results)
    commits = [t["provenance"].get("secret_commitment") for t in traces]  # type: ignore[union-attr]
    assert sum(c is None for c in commits) == sum(c is not None for c in commits) > 0

    # Nothing written anywhere (results, logs, store, config) nor printed holds the secret.
    needle = SECRET.encode()
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != secret_file:
            assert needle not in path.read_bytes(), f"the secret is in {path}"
    assert SECRET not in public.output + hidden.output

    store = results / "sweep.duckdb"
    ok = runner.invoke(app, ["reveal", "--secret-file", str(secret_file), "--store", str(store)])
    assert ok.exit_code == 0, ok.output
    n = len([c for c in commits if c])
    assert f"verified {n} of {n} secret traces" in ok.stdout
    wrong = tmp_path / "secret" / "wrong.txt"
    wrong.write_text("another-secret-of-enough-bytes-0000")
    bad = runner.invoke(app, ["reveal", "--secret-file", str(wrong), "--store", str(store)])
    assert bad.exit_code == 1 and f"error: {n} secret traces were not run with this secret" in bad.output

    # The store: both runs of each task in latest, the public views see the public ones only.
    with Store(store).session() as s:
        s.require("SELECT * FROM latest, leaderboard, secret_leaderboard")
        secret_rows = s.con.execute(
            "SELECT count(*) FROM latest WHERE json_extract_string(record, '$.provenance.secret_commitment') IS NOT NULL"
        ).fetchone()
        public_rows = s.con.execute("SELECT sum(traces) FROM leaderboard").fetchone()
        ranked = s.con.execute("SELECT solution, rank, secret_all_passed FROM secret_leaderboard").fetchall()
    assert secret_rows is not None and public_rows is not None
    assert secret_rows[0] == n and public_rows[0] == n
    assert ranked == [("ok", 1, True)]

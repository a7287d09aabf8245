"""A launch's start: a launch that fails before running anything leaves the results folder
free (the store was opening beside Ray), and the launch says where its start went
(``startup_s``, ``phases``). The opening itself: ``tests/launch/test_run.py``."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sweep.config import SweepConfig, load_config
from sweep.errors import ClusterError
from sweep.launch import driver as driver_module
from sweep.launch.driver import LaunchOptions, launch
from sweep.store import ResultsWriter

from .conftest import write_config, write_dataset

BACKEND = "tests.cluster.labelled_backend"
_OK = "def run(x):\n    return x + 1\n"


def _config(tmp_path: Path) -> tuple[Path, SweepConfig]:
    # One task: the launch starts one worker, whose start it reports.
    data = write_dataset(tmp_path / "data", {"ok": _OK}, n_workloads=1)
    cfg = write_config(tmp_path / "c.yaml", [data], tmp_path / "results", hardware="H100")
    return cfg, load_config(cfg)


def _writer(config: SweepConfig) -> ResultsWriter:
    out = config.output
    return ResultsWriter(Path(out.results_dir), Path(out.store_path()), sweep="other", run_id="r")


def test_a_launch_that_cannot_reach_ray_leaves_the_results_folder_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, config = _config(tmp_path)

    def unreachable(*_: object) -> object:
        raise ClusterError("cannot connect to the Ray cluster at 'nowhere:1'")

    monkeypatch.setattr(driver_module, "connect", unreachable)
    with pytest.raises(ClusterError, match="nowhere"):
        launch(cfg, LaunchOptions(quiet=True))
    # The store was being opened beside the connection: by the time the launch has failed,
    # that is over and the writer it opened is closed (its thread gone, the folder free).
    alive = {t.name for t in threading.enumerate()}
    assert not alive & {"sweep-store-open", "sweep-store-writer"}, alive
    _writer(config).close()


def test_a_launch_reports_where_its_start_went(two_nodes: dict[str, str], tmp_path: Path) -> None:
    cfg, _ = _config(tmp_path)
    result = launch(cfg, LaunchOptions(quiet=True, backend=BACKEND))
    assert result.statuses == {"PASSED": 1}
    steps = [name for name, _ in result.phases]
    # The driver's steps, then the first worker's, in time order. Its process may be one Ray
    # started before the launch (left out then); the rest happen after the scheduler starts.
    # The store is taken once the workers are asked for, before the first task is sent: a
    # new worker's steps may come before or after it.
    assert steps[:3] == ["plan", "ray", "scheduler"]
    assert [s for s in steps if s in ("plan", "ray", "scheduler", "store")] == [
        "plan",
        "ray",
        "scheduler",
        "store",
    ]
    assert [s for s in steps[3:] if s not in ("worker_process", "store")] == [
        "worker_actor",
        "zygote",
        "sandbox",
        "worker_ready",
    ]
    seconds = [s for _, s in result.phases]
    assert seconds == sorted(seconds) and seconds[0] >= 0
    assert result.startup_s is not None
    phases = dict(result.phases)
    # The worker says it is ready before the driver hears it (one machine, one clock).
    assert phases["worker_ready"] <= result.startup_s + 0.05 and result.startup_s <= result.wall_s
    assert result.startup_s == pytest.approx(phases["scheduler"] + (result.stats.first_ready_s or 0.0))

    # Nothing left to run: no start at all.
    again = launch(cfg, LaunchOptions(quiet=True, backend=BACKEND))
    assert (again.ran, again.startup_s, again.phases) == (0, None, ())

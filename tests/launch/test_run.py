"""The results store opened in a thread while Ray starts (``StoreOpening``): what ``take``
hands over or raises, and ``discard`` freeing the results folder."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sweep.config import SweepConfig, load_config
from sweep.errors import ConfigError, StoreError
from sweep.launch._run import StoreOpening, lend_kinds
from sweep.plan import load_dataset
from sweep.store import ResultsWriter
from tests.cluster.conftest import write_config, write_dataset

_OK = "def run(x):\n    return x + 1\n"


def _config(tmp_path: Path) -> SweepConfig:
    data = write_dataset(tmp_path / "data", {"ok": _OK}, n_workloads=2)
    return load_config(write_config(tmp_path / "c.yaml", [data], tmp_path / "results", hardware="H100"))


def _writer(config: SweepConfig) -> ResultsWriter:
    out = config.output
    return ResultsWriter(Path(out.results_dir), Path(out.store_path()), sweep="other", run_id="r")


def test_the_store_opens_in_a_thread_and_discard_frees_the_folder(tmp_path: Path) -> None:
    config = _config(tmp_path)
    dataset = load_dataset(config.dataset)
    opening = StoreOpening(config, dataset, "run-1")
    with opening.take() as w:
        assert w.run_id == "run-1"
        with pytest.raises(StoreError, match="another sweep is writing"):
            _writer(config)
    opening.discard()  # taken: nothing to close

    # Opened, never taken: discard closes it, and the folder is free again.
    unused = StoreOpening(config, dataset, "run-2")
    unused.discard()
    _writer(config).close()


def test_an_error_while_opening_is_raised_by_take(tmp_path: Path) -> None:
    config = _config(tmp_path)
    with _writer(config):
        opening = StoreOpening(config, load_dataset(config.dataset), "run-1")
        with pytest.raises(StoreError, match="another sweep is writing"):
            opening.take()
        opening.discard()


def test_durations_are_read_for_the_tasks_given(tmp_path: Path) -> None:
    config = _config(tmp_path)
    opening = StoreOpening(config, load_dataset(config.dataset), "run-1", todo=[])
    opening.take().close()
    assert opening.estimated == {}
    without = StoreOpening(config, load_dataset(config.dataset), "run-2")
    without.take().close()
    assert without.estimated is None


def test_estimates_can_be_read_before_the_store_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The head start asks while the durations are being read: {} then, what was read after.
    config = _config(tmp_path)
    release = threading.Event()

    def slow(todo: object, *args: object) -> dict[str, float]:
        release.wait(30)
        return {"t-1": 2.5}

    monkeypatch.setattr("sweep.launch._run.estimated_for", slow)
    opening = StoreOpening(config, load_dataset(config.dataset), "run-1", todo=[])
    assert opening.estimates_now() == {}
    release.set()
    opening.take().close()
    assert opening.estimates_now() == {"t-1": 2.5}


def test_the_head_start_switch_takes_auto_or_a_boolean(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data", {"ok": "def run(x):\n    return x + 1\n"})

    def config(value: str) -> SweepConfig:
        extra = f"ray: {{head_start: {value}}}\n" if value else ""
        return load_config(
            write_config(tmp_path / "c.yaml", [data], tmp_path / "r", hardware="cpu", extra=extra)
        )

    assert lend_kinds(config("")) == (True, False)  # auto: GPUs only
    assert lend_kinds(config("auto")) == (True, False)
    assert lend_kinds(config("true")) == (True, True)
    assert lend_kinds(config("false")) == (False, False)
    # Where the first tasks run changes no result: not in the config's hash.
    assert config("true").config_hash() == config("false").config_hash() == config("").config_hash()
    with pytest.raises(ConfigError, match="head_start"):
        config("sometimes")

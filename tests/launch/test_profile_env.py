"""A profiled task's process gets the variables its evaluation settings ask for
(``EvalSettings.process_env``), under ncu and under every compute-sanitizer tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.launch.profile import profile_task
from sweep.schema.task import Task
from tests.cluster.conftest import fault_add_task
from tests.conftest import quick_settings

VAR = "CUDA_DEVICE_MAX_CONNECTIONS"


def _stand_in(path: Path) -> str:
    """A tool that only prints the variable it was started with."""
    path.write_text(f'#!/bin/bash\necho "{VAR}=${{{VAR}:-unset}}"\n')
    path.chmod(0o755)
    return str(path)


def _task(queues: int | None) -> Task:
    return fault_add_task(quick_settings().model_copy(update={"cuda_max_connections": queues}), "H100")


@pytest.mark.parametrize(("queues", "seen"), [(None, "unset"), (1, "1"), (4, "4")])
def test_the_tools_start_the_task_with_its_variables(
    queues: int | None, seen: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(VAR, raising=False)
    tools = {"ncu": _stand_in(tmp_path / "ncu"), "sanitizer": _stand_in(tmp_path / "compute-sanitizer")}
    folder = tmp_path / "out"
    folder.mkdir()
    profile_task(_task(queues), tools, folder, timeout_s=30)
    logs = [folder / "ncu.log", *sorted(folder.glob("sanitizer-*.txt"))]
    assert len(logs) > 1
    for log in logs:
        assert f"{VAR}={seen}" in log.read_text(), log

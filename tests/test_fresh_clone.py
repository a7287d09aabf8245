"""A clone from anywhere can pass its own tests: no test, bench script or package module reads a
path outside the checkout (the real data lives in tests/data/real), and ``.ci/fresh-clone``
runs the tests from a clone in a temporary folder with nothing beside it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Paths that lead outside a checkout: a sibling folder, a machine's own layout.
_OUTSIDE = re.compile(r"\.\./shared|shared/data|/work/|/home/[a-z]|parents\[[3-9]\]")


def test_no_code_reads_a_path_outside_the_checkout() -> None:
    offenders = []
    # Python code and the CI scripts; prose may say where a file was copied from.
    for folder in ("tests", "bench", "sweep", ".ci"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in {".py", ""} or not path.is_file() or "data" in path.parts:
                continue
            if path == Path(__file__).resolve():
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if _OUTSIDE.search(line.split("#", 1)[0]):
                    offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:120]}")
    assert not offenders, "\n".join(offenders)


def test_real_data_is_in_the_repository_with_its_sources() -> None:
    real = REPO / "tests" / "data" / "real"
    assert (real / "backendbench" / "sample.trace.txt").is_file()
    assert "copied from" in (real / "README.md").read_text()  # it says where the files came from


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_fresh_clone_runs_a_smoke_part_with_nothing_beside_it(tmp_path: Path) -> None:
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], check=False, capture_output=True, text=True
    )
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    out = subprocess.run(
        [
            str(REPO / ".ci" / "fresh-clone"),
            "--python",
            sys.executable,
            "tests/schema/test_roundtrip_shared.py",
            "-q",
            "-x",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "cloned into " + str(tmp_path) in out.stderr
    assert re.search(r"\d+ passed", out.stdout)
    assert not any(tmp_path.iterdir())  # removed afterwards

"""`sweep new`: files that are no source, names that are no name, refused with `error:` and
exit 1, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app

REPO = Path(__file__).resolve().parent.parent.parent
runner = CliRunner()
pytestmark = pytest.mark.hostile


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "definitions", tmp_path / "root" / "definitions")
    return tmp_path / "root"


def _source(tmp_path: Path, kind: str) -> str:
    if kind == "device":
        return "/dev/zero"
    p = tmp_path / "src"
    p.mkdir(exist_ok=True)
    if kind == "folder":
        (p / "pkg").mkdir()
        return str(p / "pkg")
    if kind == "not utf-8":
        (p / "k.py").write_bytes(b"\xff\xfe def run(x): pass")
        return str(p / "k.py")
    if kind == "huge":
        (p / "k.py").write_bytes(b"#" * (17 << 20))
        return str(p / "k.py")
    if kind == "missing":
        return str(p / "nothing.py")
    if kind == "syntax":
        (p / "k.py").write_text("def run(x:\n")
        return str(p / "k.py")
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["device", "folder", "not utf-8", "huge", "missing", "syntax"])
def test_a_source_that_is_no_source_is_refused(tmp_path: Path, root: Path, kind: str) -> None:
    before = sorted(root.rglob("*"))
    res = runner.invoke(
        app, ["new", "solution", "softmax_f32", _source(tmp_path, kind), "--author", "me", "-r", str(root)]
    )
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("error:") and "Traceback" not in res.output
    assert sorted(root.rglob("*")) == before  # nothing written


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["solution", "softmx_f32"], "did you mean 'softmax_f32'"),
        (["solution", "softmax_f32", "--entry", "k.py::nope"], "no top-level function 'nope'"),
        (["solution", "softmax_f32", "--name", "../escape"], "error:"),
        (["solution", "softmax_f32", "--author", "a/b"], "error:"),
        (["definition", "../../etc/x"], "error:"),
        (["definition", "x" * 5000], "error:"),
    ],
)
def test_names_that_are_no_names_are_refused(
    tmp_path: Path, root: Path, args: list[str], needle: str
) -> None:
    src = tmp_path / "k.py"
    src.write_text("import torch\n\n\ndef run(x):\n    return torch.softmax(x, -1)\n")
    full = ["new", *args]
    if args[0] == "solution":
        full = ["new", "solution", args[1], str(src), *args[2:]]
        if "--author" not in args:
            full += ["--author", "me"]
    before = sorted(root.rglob("*"))
    res = runner.invoke(app, [*full, "-r", str(root)])
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("error:") and needle in res.stderr, res.stderr
    assert sorted(root.rglob("*")) == before

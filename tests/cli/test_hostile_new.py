"""`sweep new`: files that are no source, names that are no name, refused with `error:` and
exit 1, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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


# ---- paths made of names stay inside the root (issue 27, 9.1) ----

_KERNEL = "import torch\n\n\ndef run(x):\n    return torch.softmax(x, -1)\n"


def _hostile_definition(root: Path, **changes: str) -> None:
    """A copy of softmax_f32 with other values, in its own file under the root."""
    import json

    data = json.loads((root / "definitions" / "softmax" / "softmax_f32.json").read_text())
    data.update(changes)
    (root / "definitions" / "softmax" / "hostile.json").write_text(json.dumps(data))


def _tree(top: Path) -> list[Path]:
    return sorted(top.rglob("*"))


@pytest.mark.parametrize(
    "changes",
    [
        {"name": "../../../escaped"},
        {"name": "../escaped"},
        {"name": "/tmp/escaped_abs"},
        {"name": "a/b"},
        {"name": "nul\x00name"},
        {"name": "."},
        {"op_type": "../../escaped"},
        {"op_type": "/abs"},
    ],
)
def test_a_definition_name_that_is_a_path_writes_nothing(
    tmp_path: Path, root: Path, changes: dict[str, str]
) -> None:
    _hostile_definition(root, **changes)
    src = tmp_path / "src" / "k.py"
    src.parent.mkdir()
    src.write_text(_KERNEL)
    before = _tree(tmp_path)
    name = changes.get("name", "softmax_f32_copy")
    if "op_type" in changes:
        _hostile_definition(root, name=name, **changes)
        before = _tree(tmp_path)
    res = runner.invoke(app, ["new", "solution", name, str(src), "--author", "me", "-r", str(root)])
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("error:") and "Traceback" not in res.output
    assert "cannot name a file" in res.stderr and "rename it in the definition's file" in res.stderr
    assert _tree(tmp_path) == before  # nothing written, inside the root or out of it
    assert not Path("/tmp/escaped_abs").exists()


def test_a_link_on_the_way_out_of_the_root_is_refused(tmp_path: Path, root: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "solutions").mkdir()
    (root / "solutions" / "me").symlink_to(outside)
    src = tmp_path / "k.py"
    src.write_text(_KERNEL)
    res = runner.invoke(app, ["new", "solution", "softmax_f32", str(src), "--author", "me", "-r", str(root)])
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("error:") and "leads out of" in res.stderr, res.stderr
    assert list(outside.iterdir()) == []
    out = tmp_path / "defs_out"
    out.mkdir()
    (root / "definitions" / "evil").symlink_to(out)
    res = runner.invoke(app, ["new", "definition", "x_y", "--op-type", "evil", "-r", str(root)])
    assert res.exit_code == 1 and "leads out of" in res.stderr, res.output
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("force", [False, True])
def test_a_link_planted_beside_the_target_is_never_written_through(
    tmp_path: Path, root: Path, force: bool
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    folder = root / "solutions" / "me" / "softmax" / "softmax_f32"
    folder.mkdir(parents=True)
    for name in (".k.json.tmp", "k.json.tmp", ".k.json.1.tmp"):
        (folder / name).symlink_to(victim)
    if force:
        (folder / "k.json").symlink_to(victim)
    src = tmp_path / "k.py"
    src.write_text(_KERNEL)
    args = ["new", "solution", "softmax_f32", str(src), "--author", "me", "-r", str(root)]
    res = runner.invoke(app, [*args, *(["--force"] if force else [])])
    assert victim.read_text() == "keep me"
    if force:  # the target itself a link out of the root: refused, not followed
        assert res.exit_code == 1, res.output
        assert "leads out of" in res.stderr and (folder / "k.json").is_symlink()
    else:
        assert res.exit_code == 0, res.output
        assert (folder / "k.json").read_text().startswith("{")
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


def test_an_existing_record_is_kept_without_force(tmp_path: Path, root: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(_KERNEL)
    args = ["new", "solution", "softmax_f32", str(src), "--author", "me", "-r", str(root)]
    assert runner.invoke(app, args).exit_code == 0
    path = root / "solutions" / "me" / "softmax" / "softmax_f32" / "k.json"
    path.write_text("mine")
    res = runner.invoke(app, args)
    assert res.exit_code == 1 and "exists: pass --force" in res.stderr
    assert path.read_text() == "mine"


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.text(
        alphabet=st.sampled_from(["a", "_", ".", "/", "\\", "\x00", "\n", "é", ":", " ", "\x1b"]),
        min_size=1,
        max_size=12,
    )
)
def test_any_definition_name_is_written_inside_the_root_or_refused(
    tmp_path: Path, root: Path, name: str
) -> None:
    import shutil

    work = tmp_path / "prop"
    shutil.rmtree(work, ignore_errors=True)
    ds = work / "ds"
    shutil.copytree(root, ds)
    _hostile_definition(ds, name=name)
    src = work / "k.py"
    src.write_text(_KERNEL)
    res = runner.invoke(app, ["new", "solution", name, str(src), "--author", "me", "-r", str(ds)])
    assert "Traceback" not in res.output
    written = [p for p in work.rglob("k.json")]
    if res.exit_code == 0:
        assert len(written) == 1 and ds.resolve() in written[0].resolve().parents
    else:
        assert res.exit_code == 1 and res.stderr.startswith("error:") and not written
    assert sorted(p.name for p in work.iterdir()) == ["ds", "k.py"]


# ---- target hardware that can match no target (issue 27, 9.3) ----


@pytest.mark.parametrize("target", ["", " ", "\t", "auto", "_", "nvidia_", "a\x1bb", "x" * 100])
def test_a_target_hardware_that_never_runs_is_refused_at_creation(
    tmp_path: Path, root: Path, target: str
) -> None:
    src = tmp_path / "k.py"
    src.write_text(_KERNEL)
    before = _tree(root)
    res = runner.invoke(
        app, ["new", "solution", "softmax_f32", str(src), "--author", "me", "-t", target, "-r", str(root)]
    )
    assert res.exit_code == 1, res.output
    assert res.stderr.startswith("error:") and "--target-hardware" in res.stderr, res.stderr
    assert _tree(root) == before


def test_an_unknown_gpu_type_is_written_with_a_warning(tmp_path: Path, root: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(_KERNEL)
    res = runner.invoke(
        app, ["new", "solution", "softmax_f32", str(src), "--author", "me", "-t", "H1000", "-r", str(root)]
    )
    assert res.exit_code == 0, res.output
    assert "warning: target 'H1000' is no GPU type kernel-sweep knows" in res.output


@pytest.mark.parametrize("targets", [[""], [" "], ["gpu", ""], ["auto"], ["\n"]])
def test_validate_refuses_a_solution_file_whose_target_never_runs(root: Path, targets: list[str]) -> None:
    import json

    src = tmp_path_file = root / "solutions" / "me" / "softmax" / "softmax_f32" / "s.json"
    tmp_path_file.parent.mkdir(parents=True)
    src.write_text(
        json.dumps(
            {
                "name": "s",
                "definition": "softmax_f32",
                "author": "me",
                "spec": {"language": "python", "target_hardware": targets, "entry_point": "k.py::run"},
                "sources": [{"path": "k.py", "content": _KERNEL}],
            }
        )
    )
    res = runner.invoke(app, ["validate", str(root)])
    assert res.exit_code == 1, res.output
    assert "spec.target_hardware" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("kind", ["fifo", "folder", "store"])
def test_a_record_path_that_is_no_file_is_never_written_even_with_force(
    tmp_path: Path, root: Path, kind: str
) -> None:
    import os

    path = root / "definitions" / "x" / "x_y.json"
    path.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        import duckdb

        duckdb.connect(str(path)).close()
    before = path.read_bytes() if kind == "store" else None
    res = runner.invoke(app, ["new", "definition", "x_y", "--op-type", "x", "-r", str(root), "--force"])
    assert res.exit_code == 1 and res.stderr.startswith("error: cannot write"), res.output
    if kind == "store":
        assert path.read_bytes() == before and "DuckDB store" in res.stderr

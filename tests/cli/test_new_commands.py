"""``sweep new solution`` and ``sweep new definition``, in-process: exit codes, messages,
files written where the dataset layout puts them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.schema import Definition, Solution

REPO = Path(__file__).resolve().parent.parent.parent
runner = CliRunner()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "definitions", tmp_path / "definitions")
    return tmp_path


def _src(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_packs_a_value_returning_solution(root: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    src = _src(
        tmp_path_factory.mktemp("src"),
        "my_softmax.py",
        "import torch\n\ndef run(x):\n    return torch.softmax(x, -1)\n",
    )
    result = runner.invoke(
        app, ["new", "solution", "softmax_f32", str(src), "-r", str(root), "--author", "me"]
    )
    assert result.exit_code == 0, result.output
    path = root / "solutions/me/softmax/softmax_f32/my_softmax.json"
    assert result.stdout.startswith(f"wrote {path}\n")
    assert "destination_passing_style: false (my_softmax.py::run takes (x)" in result.stdout
    sol = Solution.model_validate_json(path.read_text())
    assert sol.spec.language.value == "python" and sol.spec.entry_point == "my_softmax.py::run"
    assert sol.spec.destination_passing_style is False and sol.sources[0].content == src.read_text()
    again = runner.invoke(
        app, ["new", "solution", "softmax_f32", str(src), "-r", str(root), "--author", "me"]
    )
    assert again.exit_code == 1 and again.stderr == f"error: {path} exists: pass --force to overwrite it\n"
    forced = runner.invoke(
        app, ["new", "solution", "softmax_f32", str(src), "-r", str(root), "--author", "me", "--force"]
    )
    assert forced.exit_code == 0
    assert runner.invoke(app, ["validate", str(root)]).exit_code == 0


def test_triton_dps_entry_name_and_print(root: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("src")
    _src(folder, "helpers.py", "BLOCK = 128\n")
    main = _src(
        folder,
        "kern.py",
        "import triton\n\n@triton.jit\ndef _k(p):\n    pass\n\ndef launch(x, y):\n    pass\n",
    )
    args = ["new", "solution", "softmax_f32", str(main), str(folder / "helpers.py"), "-r", str(root)]
    result = runner.invoke(
        app, [*args, "--entry", "kern.py::launch", "--name", "fast", "--author", "a", "--print"]
    )
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)
    assert obj["name"] == "fast" and obj["spec"]["language"] == "triton"
    assert obj["spec"]["destination_passing_style"] is True
    assert [s["path"] for s in obj["sources"]] == ["kern.py", "helpers.py"]
    assert not (root / "solutions").exists()


@pytest.mark.parametrize(
    ("text", "flags", "message"),
    [
        (
            "def run(x, w, y, z):\n    pass\n",
            [],
            (
                "error: bad.py::run takes (x, w, y, z), which fits neither calling style of the definition "
                "'softmax_f32' (inputs (x), outputs (y)): make it take (x, y) and write the outputs (--dps), "
                "or take (x) and return them (--no-dps)\n"
            ),
        ),
        (
            "def run(x):\n    return x\n",
            ["--dps"],
            (
                "error: bad.py::run: the entry point takes (x) but is called in destination-passing style "
                "(inputs, then outputs) with 2 argument(s): (x, y), as destination_passing_style is true; "
                "it fits value-returning style (inputs): use --no-dps\n"
            ),
        ),
        ("def run(x, out=None):\n    return x\n", [], "which fits both calling styles"),
        ("def a(x):\n    pass\ndef b(x):\n    pass\n", [], "pass --entry bad.py::FUNCTION"),
        (
            "def run(x):\n    pass\n",
            ["--entry", "bad.py::rn"],
            "no top-level function 'rn' (did you mean 'run'?)",
        ),
        (
            "def run(x):\n    pass\n",
            ["--entry", "nope.py::run"],
            "--entry: file 'nope.py' is not among the sources",
        ),
    ],
)
def test_refusals_say_what_to_do(
    root: Path, tmp_path_factory: pytest.TempPathFactory, text: str, flags: list[str], message: str
) -> None:
    src = _src(tmp_path_factory.mktemp("src"), "bad.py", text)
    result = runner.invoke(
        app, ["new", "solution", "softmax_f32", str(src), "-r", str(root), "--author", "a", *flags]
    )
    assert result.exit_code == 1
    assert message in result.stderr and result.stderr.startswith("error: ")
    assert not (root / "solutions").exists()


def test_unknown_definition_and_cuda_entry(root: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("src")
    cu = _src(folder, "k.cu", "void run() {}\n")
    result = runner.invoke(app, ["new", "solution", "softmax_f3", str(cu), "-r", str(root), "--author", "a"])
    assert result.exit_code == 1 and "(did you mean 'softmax_f32'?)" in result.stderr
    result = runner.invoke(app, ["new", "solution", "softmax_f32", str(cu), "-r", str(root), "--author", "a"])
    assert result.exit_code == 1 and "no .py file among the sources (k.cu): pass --entry" in result.stderr
    ok = runner.invoke(
        app,
        [
            "new",
            "solution",
            "softmax_f32",
            str(cu),
            "-r",
            str(root),
            "--author",
            "a",
            "--entry",
            "k.cu::run",
            "--print",
        ],
    )
    assert ok.exit_code == 0, ok.output
    spec = json.loads(ok.stdout)["spec"]
    assert (
        spec["language"] == "cuda"
        and spec["target_hardware"] == ["gpu"]
        and spec["destination_passing_style"] is True
    )


def test_new_definition_writes_a_skeleton_that_loads(tmp_path: Path) -> None:
    result = runner.invoke(app, ["new", "definition", "layernorm_h4096", "-r", str(tmp_path)])
    assert result.exit_code == 0, result.output
    path = tmp_path / "definitions/layernorm/layernorm_h4096.json"
    assert result.stdout.startswith(f"wrote {path}\nfill in")
    d = Definition.model_validate_json(path.read_text())
    assert d.name == "layernorm_h4096" and d.op_type == "layernorm"
    assert runner.invoke(app, ["validate", str(tmp_path)]).exit_code == 0
    again = runner.invoke(app, ["new", "definition", "layernorm_h4096", "-r", str(tmp_path)])
    assert again.exit_code == 1 and "exists: pass --force" in again.stderr
    other = runner.invoke(app, ["new", "definition", "x", "--op-type", "a/b", "--print"])
    assert other.exit_code == 1 and other.stderr.startswith("error: op_type 'a/b' cannot name a file")


def test_validate_names_the_setting_for_the_issue_case(root: Path) -> None:
    sol = {
        "name": "mul",
        "definition": "softmax_f32",
        "author": "a",
        "spec": {"language": "python", "target_hardware": ["cpu"], "entrypoint": "m.py::run"},
        "sources": [{"path": "m.py", "content": "def run(x):\n    return x\n"}],
    }
    (root / "solutions").mkdir()
    (root / "solutions" / "s.json").write_text(json.dumps(sol))
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    assert (
        "spec: missing 'entry_point'; found the unknown key 'entrypoint' (did you mean 'entry_point'?)"
        in result.stdout
    )
    sol["spec"] = {"language": "python", "target_hardware": ["cpu"], "entry_point": "m.py::run"}
    (root / "solutions" / "s.json").write_text(json.dumps(sol))
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    assert 'it fits value-returning style (inputs): use "destination_passing_style": false' in result.stdout


def test_new_workload_adds_a_shape_once(root: Path) -> None:
    args = [
        "new",
        "workload",
        "softmax_f32",
        "-r",
        str(root),
        "--axis",
        "batch_size=16",
        "--axis",
        "dim=2048",
    ]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    path = root / "workloads/softmax/softmax_f32.jsonl"
    line = json.loads(path.read_text().splitlines()[-1])
    assert line["definition"] == "softmax_f32"
    assert line["workload"]["axes"] == {"batch_size": 16, "dim": 2048}
    assert line["workload"]["inputs"] == {"x": {"type": "random"}}
    assert f"-w {line['workload']['uuid'][:8]} -r {root}" in r.output
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "has that shape already" in again.output
    validated = runner.invoke(app, ["validate", str(root)])
    assert validated.exit_code == 0, validated.output


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--axis", "batch_size=4"], "missing dim"),
        (["--axis", "batch_size=4", "--axis", "dims=3"], "did you mean 'dim'"),
        (["--axis", "batch_size=x", "--axis", "dim=3"], "is not an integer"),
        (["--axis", "batch_size", "--axis", "dim=3"], "expected NAME=VALUE"),
        (["--axis", "batch_size=4", "--axis", "dim=3", "--scalar", "eps=1"], "no scalar input"),
    ],
)
def test_new_workload_refusals(root: Path, flags: list[str], words: str) -> None:
    r = runner.invoke(app, ["new", "workload", "softmax_f32", "-r", str(root), *flags])
    assert r.exit_code == 1 and words in r.output, r.output
    assert "Traceback" not in r.output


def test_backendbench_definitions_get_the_returning_style_and_hints_keep_the_root(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    bb = tmp_path / "bb"
    shutil.copytree(REPO / "examples/backendbench/dataset/definitions", bb / "definitions")
    src = _src(
        tmp_path_factory.mktemp("src"),
        "my_relu.py",
        "import torch\n\ndef run(x):\n    return torch.relu(x)\n",
    )
    r = runner.invoke(app, ["new", "solution", "relu__default", str(src), "-r", str(bb), "--author", "me"])
    assert r.exit_code == 0, r.output
    sol = Solution.model_validate_json(next((bb / "solutions").rglob("my_relu.json")).read_text())
    assert sol.spec.destination_passing_style is False
    hint = r.output.split("next: ", 1)[1].strip()
    validate, evaluate = (part.strip().split() for part in hint.split(";"))
    assert evaluate == ["sweep", "eval", "relu__default", "my_relu", "-r", str(bb)]
    ok = runner.invoke(app, validate[1:])  # the hint runs as printed
    assert ok.exit_code == 0, ok.output
    dps = runner.invoke(
        app,
        ["new", "solution", "relu__default", str(src), "-r", str(bb), "--author", "me", "--dps", "--force"],
    )
    assert dps.exit_code == 1 and "drop --dps" in dps.output
    # A hand-written record that says true is refused by validate, with the fix.
    path = next((bb / "solutions").rglob("my_relu.json"))
    data = json.loads(path.read_text())
    data["spec"]["destination_passing_style"] = True
    path.write_text(json.dumps(data))
    bad = runner.invoke(app, ["validate", str(bb)])
    assert bad.exit_code == 1 and "set it to false" in bad.output

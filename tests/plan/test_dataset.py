"""Loading dataset roots: records, origins, multi-root, and every error with its place."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sweep.errors import DatasetError, clip, shown
from sweep.plan.dataset import Origin, load_dataset, validate_roots
from sweep.schema import ScalarInput


def test_good_root_loads(fixtures: Path) -> None:
    root = fixtures / "good"
    ds = load_dataset([root])
    assert ds.roots == [root.resolve()]
    assert list(ds.definitions) == ["vec_add"]
    assert sorted(ds.solutions) == ["vec_add_gpu_only", "vec_add_py"]
    assert [w.uuid for w in ds.workloads["vec_add"]] == ["wl-0002", "wl-0004", "wl-0016"]
    assert ds.traces == []
    assert ds.errors == [] and ds.warnings == []
    assert ds.num_workloads() == 3
    assert ds.workload("wl-0004").axes == {"n": 4}


def test_origins_and_roots(fixtures: Path) -> None:
    root = (fixtures / "good").resolve()
    ds = load_dataset([root])
    assert ds.origin("definition", "vec_add") == Origin(str(root / "definitions/ew/vec_add.json"))
    assert ds.origin("solution", "vec_add_py").path.endswith("solutions/tester/ew/vec_add/vec_add_py.json")
    wl = ds.origin("workload", "wl-0004")
    assert wl == Origin(str(root / "workloads/ew/vec_add.jsonl"), 2)
    assert str(wl) == f"{root}/workloads/ew/vec_add.jsonl:2"
    assert ds.root_of("workload", "wl-0004") == root
    assert ds.root_of("solution", "vec_add_py") == root
    with pytest.raises(KeyError):
        ds.origin("definition", "nope")


def test_several_roots_load_into_one_dataset(fixtures: Path) -> None:
    ds = load_dataset([fixtures / "good", fixtures / "other_root"])
    assert sorted(ds.definitions) == ["vec_add", "vec_mul"]
    assert ds.root_of("definition", "vec_mul") == (fixtures / "other_root").resolve()
    assert ds.root_of("definition", "vec_add") == (fixtures / "good").resolve()
    # A solution for a definition nobody defines loads (the plan reports it), with a warning.
    assert "orphan_py" in ds.solutions
    assert ds.warnings == [
        (
            f"{ds.origin('solution', 'orphan_py')}: definition: solution 'orphan_py' is for 'vec_sub', "
            "which no root defines (did you mean 'vec_mul'?)"
        )
    ]


def test_workloads_may_come_from_another_root_than_their_definition(tmp_path: Path, fixtures: Path) -> None:
    extra = tmp_path / "extra"
    (extra / "workloads").mkdir(parents=True)
    line = (fixtures / "good/workloads/ew/vec_add.jsonl").read_text().splitlines()[0]
    (extra / "workloads" / "more.jsonl").write_text(line.replace("wl-0002", "wl-extra") + "\n")
    ds = load_dataset([fixtures / "good", extra])
    assert [w.uuid for w in ds.workloads["vec_add"]][-1] == "wl-extra"
    assert ds.root_of("workload", "wl-extra") == extra.resolve()


def test_repository_root_is_a_valid_dataset(repo_root: Path) -> None:
    ds = load_dataset([repo_root])
    assert {"rmsnorm_h1024", "gemm_n512_k512", "softmax_f32"} <= set(ds.definitions)
    for name in ("rmsnorm_h1024", "gemm_n512_k512", "softmax_f32"):
        langs = {s.spec.language.value for s in ds.solutions.values() if s.definition == name}
        assert {"python", "triton"} <= langs, name
        assert ds.workloads[name], name
    cuda = [s for s in ds.solutions.values() if s.spec.language.value == "cuda"]
    assert len(cuda) == 1 and cuda[0].spec.binding is not None and cuda[0].spec.binding.value == "torch"
    assert "cpu" not in cuda[0].spec.target_hardware
    assert ds.warnings == []


def test_triton_sources_are_jit_kernels(repo_root: Path) -> None:
    ds = load_dataset([repo_root])
    for s in ds.solutions.values():
        if s.spec.language.value == "triton":
            text = "\n".join(src.content for src in s.sources)
            assert "@triton.jit" in text, s.name
            assert {"cpu"} <= set(s.spec.target_hardware), s.name


def test_shared_flashinfer_trace_loads(shared_data: Path) -> None:
    ds = load_dataset([shared_data / "flashinfer-trace"])
    assert set(ds.definitions) == {"rmsnorm_h4096", "gemm_n4096_k4096"}
    assert len(ds.traces) == 14
    assert all(t.evaluation is not None for t in ds.traces)
    assert sum(len(v) for v in ds.workloads.values()) > 0


def test_shared_data_and_repository_load_side_by_side(shared_data: Path, repo_root: Path) -> None:
    ds = load_dataset([repo_root, shared_data / "flashinfer-trace"])
    assert {"rmsnorm_h1024", "rmsnorm_h4096"} <= set(ds.definitions)


def _errors(root: Path) -> list[str]:
    _, errors = validate_roots([root])
    return errors


def test_bad_json(fixtures: Path) -> None:
    root = (fixtures / "bad_json").resolve()
    assert _errors(root) == [
        f"{root}/definitions/ew/vec_add.json:4: not valid JSON: Expecting ',' delimiter (column 3)",
        # The broken file gave no name: the message says a definition file failed.
        (
            f"{root}/workloads/ew/vec_add.jsonl:1: definition: unknown definition 'vec_add' "
            "(1 definition file failed to load)"
        ),
        f"{root}/workloads/ew/vec_add.jsonl:2: not valid JSON: Expecting value (column 39)",
    ]


def test_workloads_of_a_definition_that_failed(fixtures: Path, tmp_path: Path) -> None:
    shutil.copytree(fixtures / "unknown_dtype" / "definitions", tmp_path / "definitions")
    shutil.copytree(fixtures / "good" / "workloads", tmp_path / "workloads")
    errors = _errors(tmp_path)
    assert len(errors) == 4
    assert errors[1:] == [
        f"{tmp_path.resolve()}/workloads/ew/vec_add.jsonl:{i}: definition: definition 'vec_add' did not load "
        "(its file has errors)"
        for i in (1, 2, 3)
    ]


def test_unknown_dtype(fixtures: Path) -> None:
    root = (fixtures / "unknown_dtype").resolve()
    (error,) = _errors(root)
    assert error.startswith(f"{root}/definitions/ew/vec_add.json: inputs.x.dtype: Input should be 'float32'")
    assert error.endswith("or 'complex128' (got 'float33')")


def test_undeclared_axis(fixtures: Path) -> None:
    root = (fixtures / "undeclared_axis").resolve()
    assert _errors(root) == [
        (
            f"{root}/definitions/ew/vec_add.json: inputs.y.shape[1]: axis 'q' is not declared in 'axes' "
            "(declared: d, n)"
        )
    ]


def test_duplicate_names_name_both_files(fixtures: Path) -> None:
    root = (fixtures / "duplicate_name").resolve()
    assert _errors(root) == [
        (
            f"{root}/definitions/ew/b.json: duplicate definition 'vec_add': also defined in "
            f"{root}/definitions/ew/a.json"
        ),
        (
            f"{root}/solutions/tester/two.json: duplicate solution 'vec_add_py': also defined in "
            f"{root}/solutions/tester/one.json"
        ),
        (
            f"{root}/workloads/ew/vec_add.jsonl:2: duplicate workload uuid 'dup': also defined in "
            f"{root}/workloads/ew/vec_add.jsonl:1"
        ),
    ]


def test_duplicate_definition_across_roots(fixtures: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(fixtures / "good" / "definitions", copy / "definitions")
    _, errors = validate_roots([fixtures / "good", copy])
    assert errors == [
        (
            f"{copy.resolve()}/definitions/ew/vec_add.json: duplicate definition 'vec_add': also defined in "
            f"{(fixtures / 'good').resolve()}/definitions/ew/vec_add.json"
        )
    ]


def test_path_traversal(fixtures: Path) -> None:
    root = (fixtures / "path_traversal").resolve()
    assert _errors(root) == [
        f"{root}/solutions/tester/abs_path.json: sources[0].path: must be a relative path, got '/tmp/main.py'",
        f"{root}/solutions/tester/vec_add_py.json: sources[1].path: must not contain '..', got '../evil.py'",
    ]


def test_workload_missing_an_axis(fixtures: Path) -> None:
    root = (fixtures / "missing_axis").resolve()
    assert _errors(root) == [
        f"{root}/workloads/ew/vec_add.jsonl:2: workload.axes.n: var axis 'n' is not given"
    ]


def test_constraint_broken(fixtures: Path) -> None:
    root = (fixtures / "constraint_broken").resolve()
    assert _errors(root) == [
        f"{root}/workloads/ew/vec_add.jsonl:2: workload.constraints: 'n % 2 == 0' does not hold (n=3)"
    ]


def test_workload_mismatches(fixtures: Path) -> None:
    root = (fixtures / "workload_mismatch").resolve()
    f = f"{root}/workloads/ew/vec_add.jsonl"
    assert _errors(root) == [
        f"{f}:1: workload.axes.d: const axis is 8, workload gives 16",
        f"{f}:2: workload.inputs.w: unknown input (definition has: x, y, alpha)",
        f"{f}:3: workload.inputs.alpha: is a scalar in the definition, workload gives 'random'",
        f"{f}:4: definition: unknown definition 'vec_ad' (did you mean 'vec_add'?)",
        f"{f}:5: workload.axes.n: must be >= 1, got 0",
    ]


def test_bad_records_are_left_out_but_good_ones_load(fixtures: Path) -> None:
    ds, errors = validate_roots([fixtures / "constraint_broken"])
    assert len(errors) == 1
    assert [w.uuid for w in ds.workloads["vec_add"]] == ["wl-ok"]


def test_strict_load_raises_with_every_error(fixtures: Path) -> None:
    root = (fixtures / "workload_mismatch").resolve()
    with pytest.raises(DatasetError) as info:
        load_dataset([root])
    text = str(info.value)
    assert text.startswith("dataset has 5 errors:\n  ")
    for i in range(1, 6):
        assert f"vec_add.jsonl:{i}: " in text


def test_non_strict_load_keeps_errors(fixtures: Path) -> None:
    ds = load_dataset([fixtures / "missing_axis"], strict=False)
    assert len(ds.errors) == 1
    assert len(ds.workloads["vec_add"]) == 1


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_record_that_is_not_an_object(tmp_path: Path) -> None:
    _write(tmp_path / "definitions" / "x.json", "[1, 2]\n")
    assert _errors(tmp_path) == [f"{tmp_path.resolve()}/definitions/x.json: expected a JSON object, got list"]


def test_missing_field_is_named(tmp_path: Path, fixtures: Path) -> None:
    data = json.loads((fixtures / "good/definitions/ew/vec_add.json").read_text())
    del data["reference"]
    _write(tmp_path / "definitions" / "x.json", json.dumps(data))
    assert _errors(tmp_path) == [
        f"{tmp_path.resolve()}/definitions/x.json: reference: required field is missing"
    ]


def test_nested_union_paths_leave_out_tags(tmp_path: Path, fixtures: Path) -> None:
    data = json.loads((fixtures / "good/definitions/ew/vec_add.json").read_text())
    data["axes"]["d"]["value"] = 0
    _write(tmp_path / "definitions" / "x.json", json.dumps(data))
    assert _errors(tmp_path) == [
        f"{tmp_path.resolve()}/definitions/x.json: axes.d.value: Input should be greater than or equal to 1 (got 0)"
    ]


def test_evaluated_trace_in_workloads_folder(tmp_path: Path, fixtures: Path) -> None:
    shutil.copytree(fixtures / "good" / "definitions", tmp_path / "definitions")
    rec = json.loads((fixtures / "good/workloads/ew/vec_add.jsonl").read_text().splitlines()[0])
    rec["solution"] = "x"
    _write(tmp_path / "workloads" / "w.jsonl", json.dumps(rec) + "\n")
    assert _errors(tmp_path) == [
        (
            f"{tmp_path.resolve()}/workloads/w.jsonl:1: a workloads/ file holds workload-only records "
            "(solution and evaluation null); put evaluated traces under traces/"
        )
    ]


def test_workload_only_record_in_traces_folder(tmp_path: Path, fixtures: Path) -> None:
    shutil.copytree(fixtures / "good" / "definitions", tmp_path / "definitions")
    line = (fixtures / "good/workloads/ew/vec_add.jsonl").read_text().splitlines()[0]
    _write(tmp_path / "traces" / "t.jsonl", "\n" + line + "\n")
    assert _errors(tmp_path) == [
        (
            f"{tmp_path.resolve()}/traces/t.jsonl:2: evaluation: a traces/ file holds evaluated traces; "
            "put workload-only records under workloads/"
        )
    ]


def test_trace_of_unknown_definition(tmp_path: Path, shared_data: Path) -> None:
    src = shared_data / "flashinfer-trace" / "traces" / "rmsnorm" / "rmsnorm_h4096.jsonl"
    _write(tmp_path / "traces" / "t.jsonl", src.read_text().splitlines()[0] + "\n")
    assert _errors(tmp_path) == [
        f"{tmp_path.resolve()}/traces/t.jsonl:1: definition: unknown definition 'rmsnorm_h4096'"
    ]


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p / "missing", "dataset root {arg} is not a folder ({resolved})"),
        (
            lambda p: p,
            (
                "dataset root {arg} has none of definitions/, solutions/, workloads/, traces/ "
                "(expected the FlashInfer-Bench layout)"
            ),
        ),
    ],
    ids=["missing", "not-a-dataset"],
)
def test_bad_roots_raise(tmp_path: Path, make: object, expected: str) -> None:
    root = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(DatasetError) as info:
        validate_roots([str(root)])
    # Paths are quoted as every message quotes them (cut past 80 characters: tmp_path's length
    # depends on the runner, e.g. pytest-xdist's worker folders).
    assert str(info.value) == expected.format(arg=shown(str(root)), resolved=clip(str(root.resolve())))


def test_no_roots_and_repeated_roots(fixtures: Path) -> None:
    with pytest.raises(DatasetError, match="no dataset root given"):
        load_dataset([])
    with pytest.raises(DatasetError, match="is given twice"):
        load_dataset([fixtures / "good", fixtures / "good" / "."])


def test_loading_imports_no_torch(fixtures: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from sweep.plan.dataset import load_dataset; "
        f"load_dataset([{str(fixtures / 'good')!r}]); "
        "print(sorted(m for m in ('torch', 'triton', 'ray', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_loaded_records_write_back_unchanged(shared_data: Path) -> None:
    """The loader's fast JSON path keeps every field as the file had it."""
    root = shared_data / "flashinfer-trace"
    ds = load_dataset([root])
    for name, d in ds.definitions.items():
        assert d.to_json_obj() == json.loads(Path(ds.origin("definition", name).path).read_text())
    for wls in ds.workloads.values():
        for w in wls:
            o = ds.origin("workload", w.uuid)
            assert o.line is not None
            original = json.loads(Path(o.path).read_text().splitlines()[o.line - 1])
            assert w.to_json_obj() == original["workload"]
    trace_lines = [
        json.loads(x) for x in (root / "traces/rmsnorm/rmsnorm_h4096.jsonl").read_text().splitlines()
    ]
    assert [t.to_json_obj() for t in ds.traces] == trace_lines


def test_bare_nan_token_is_accepted(tmp_path: Path, fixtures: Path) -> None:
    """Python's json writes bare NaN; the strict fast path refuses it, the fallback reads it."""
    shutil.copytree(fixtures / "good" / "definitions", tmp_path / "definitions")
    line = (fixtures / "good/workloads/ew/vec_add.jsonl").read_text().splitlines()[0]
    _write(tmp_path / "workloads" / "w.jsonl", line.replace('"value": 0.5', '"value": NaN') + "\n")
    ds = load_dataset([tmp_path])
    value = ds.workloads["vec_add"][0].inputs["alpha"]
    assert isinstance(value, ScalarInput)
    assert value.value != value.value  # NaN

"""Building solutions: multi-file imports without cross-talk, compile errors, signatures, bindings."""

from __future__ import annotations

import os
import sys

import pytest

from sweep.engine import EngineCache, build
from sweep.engine.builds._build import BuildError, build_solution, solution_folder
from sweep.schema.task import Task

HELPERS_A = "SCALE = 1.0\n\ndef combine(x, y):\n    return x * SCALE + y\n"
MAIN_A = (
    "import helpers\n"
    "from .helpers import combine\n"
    "from pkg.inner import twice\n\n"
    "def run(x, y):\n"
    "    assert helpers.combine is combine\n"
    "    return twice(combine(x, y)) / 2\n"
)
INNER_A = "from ..helpers import SCALE\n\ndef twice(v):\n    return v * 2 * SCALE\n"
# Same file names, different contents: if A's modules leaked into B, B would break.
HELPERS_B = "def add_pair(x, y):\n    return x + y\n"
MAIN_B = "import helpers\n\ndef run(x, y):\n    assert not hasattr(helpers, 'combine')\n    return helpers.add_pair(x, y)\n"


def test_two_multi_file_solutions_with_the_same_file_names_do_not_collide(kit, vadd, vadd_wl) -> None:
    a = kit.solution(
        "vadd_f32",
        {"main.py": MAIN_A, "helpers.py": HELPERS_A, "pkg/__init__.py": "", "pkg/inner.py": INNER_A},
    )
    b = kit.solution("vadd_f32", {"main.py": MAIN_B, "helpers.py": HELPERS_B}, name="b")
    cache = EngineCache()
    for sol in (a, b, a):
        trace = kit.run(vadd, sol, vadd_wl, cache=cache)
        assert kit.status(trace) == "PASSED", kit.log(trace)
    assert "helpers" not in sys.modules and "pkg" not in sys.modules and "main" not in sys.modules
    assert cache.hits["solution"] >= 2


def test_entry_point_in_a_subfolder_imports_its_siblings(kit, vadd, vadd_wl) -> None:
    sol = kit.solution(
        "vadd_f32",
        {
            "kernels/impl.py": "import ops\n\ndef run(x, y):\n    return ops.add(x, y)\n",
            "kernels/ops.py": "def add(x, y):\n    return x + y\n",
        },
        entry="kernels/impl.py::run",
    )
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_python_sources_are_imported_from_a_folder_of_the_process_own(kit, vadd) -> None:
    sol = kit.solution("vadd_f32", {"main.py": MAIN_B, "helpers.py": HELPERS_B}, name="hashed")
    built = build_solution(sol, cuda_ok=False)
    assert built.folder.name == sol.content_hash
    assert built.folder.parent.name.startswith("sweep-sources-")
    assert (built.folder / "helpers.py").read_text() == HELPERS_B
    assert not solution_folder(sol.content_hash).exists()  # nothing read from or left in the shared cache
    assert not (built.folder / "__pycache__").exists()  # compiled from source, no bytecode written


def test_a_rewritten_shared_cache_is_never_imported(kit, vadd) -> None:
    # What another sandbox could leave for the next task: the solution's (or the reference's)
    # folder in the shared cache, complete, with other code in it.
    sol = kit.solution("vadd_f32", {"main.py": "def run(x, y):\n    return x + y\n"}, name="planted")
    planted = solution_folder(sol.content_hash)
    planted.mkdir(parents=True)
    (planted / "main.py").write_text("def run(x, y):\n    return x - y\n")
    (planted / ".complete").write_text(sol.content_hash)
    built = build_solution(sol, cuda_ok=False)
    assert built.fn(5, 3) == 8


def test_bytecode_left_beside_a_solution_is_never_run(tmp_path) -> None:
    import importlib.util
    import os
    import py_compile

    folder = tmp_path / "sol"
    folder.mkdir()
    (folder / "mod.py").write_text("X = 1\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "mod.py").write_text("X = 2\n")  # the same size
    st = (folder / "mod.py").stat()
    os.utime(other / "mod.py", ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same time
    pyc = importlib.util.cache_from_source(str(folder / "mod.py"))
    py_compile.compile(str(other / "mod.py"), cfile=pyc, doraise=True)
    # Python's own loader runs the planted bytecode: the plant works...
    spec = importlib.util.spec_from_file_location("planted_probe", folder / "mod.py")
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    assert probe.X == 2
    # ...and a solution's import does not run it.
    from sweep.engine.builds._pyimport import forget_package, import_entry

    try:
        assert import_entry("_sweep_sol_bytecode_probe", folder, "mod.py").X == 1
    finally:
        forget_package("_sweep_sol_bytecode_probe")


@pytest.mark.parametrize(
    ("sources", "expected"),
    [
        ("def run(x, y)\n    return x + y\n", "SyntaxError"),
        (
            "import no_such_module_anywhere\n\ndef run(x, y):\n    return x + y\n",
            "No module named 'no_such_module_anywhere'",
        ),
        ("raise RuntimeError('broken at import')\n", "broken at import"),
        ("def main(x, y):\n    return x + y\n", "defines no 'run' (callables there: main)"),
        ("run = 3\n", "'run' is not callable"),
        (
            "def run(x):\n    return x\n",
            "called in value-returning style (inputs) with 2 argument(s): (x, y)",
        ),
        ("def run(x, y, z, w):\n    return x\n", "takes (x, y, z, w)"),
        ("def run(x, y, *, mode):\n    return x\n", "required keyword-only parameter"),
    ],
)
def test_broken_solutions_are_compile_errors_with_the_message(kit, vadd, vadd_wl, sources, expected) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", sources), vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert expected in kit.log(trace)
    assert trace.evaluation.correctness is None and trace.evaluation.performance is None


def test_syntax_error_log_names_the_line(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", "x = 1\ndef run(x, y)\n    return x\n"), vadd_wl)
    assert 'main.py", line 2' in kit.log(trace)


def test_signature_with_defaults_and_varargs_is_accepted(kit, vadd, vadd_wl) -> None:
    for src in (
        "def run(x, y, alpha=1.0):\n    return x + y\n",
        "def run(*args):\n    return args[0] + args[1]\n",
    ):
        assert kit.status(kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl)) == "PASSED"


def test_destination_passing_signature_counts_outputs(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", "def run(x, y):\n    return x + y\n", dps=True), vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "destination-passing style (inputs, then outputs) with 3 argument(s): (x, y, z)" in kit.log(trace)


@pytest.mark.parametrize(
    ("language", "binding", "entry", "expected"),
    [
        ("tilelang", None, "main.cpp::run", "the entry point of a tilelang solution must be a .py file"),
        ("cpp", None, "main.txt::run", "'main.txt' is neither Python nor C++/CUDA"),
        ("cpp", "tvm-ffi", "main.h::run", "'main.h' is neither Python nor C++/CUDA"),
        ("triton", None, "main.cpp::run", "must be a .py file"),
        ("cuda", "torch", "main.py::run", "needs a CUDA device"),
    ],
)
def test_unsupported_builds_say_what_is_supported(
    kit, vadd, vadd_wl, language, binding, entry, expected
) -> None:
    file = entry.partition("::")[0]
    sol = kit.solution("vadd_f32", {file: "int x;\n"}, language=language, binding=binding, entry=entry)
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert expected in kit.log(trace)


def test_cpp_solution_without_binding_block_is_refused_before_compiling(kit) -> None:
    sol = kit.solution(
        "vadd_f32",
        {"main.cpp": "int run() { return 0; }\n"},
        language="cpp",
        binding="torch",
        entry="main.cpp::run",
    )
    with pytest.raises(BuildError, match="PYBIND11_MODULE"):
        build_solution(sol, cuda_ok=False)


def test_build_phase_then_evaluate_reuses_the_build(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return x + y\n", name="prebuilt")
    task = Task.make(vadd, sol, vadd_wl, kit.fast, "CPU")
    cache = EngineCache()
    build(task, device="cpu", cache=cache)
    assert f"sol:{sol.content_hash}:interp" in cache.solutions
    trace = kit.run(vadd, sol, vadd_wl, cache=cache)
    assert kit.status(trace) == "PASSED"
    assert cache.hits["solution"] >= 2  # solution and reference both came from the build phase


def test_build_phase_never_raises_for_a_broken_solution(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", "def run(x, y)\n", name="broken")
    build(Task.make(vadd, sol, vadd_wl, kit.fast, "CPU"), device="cpu", cache=EngineCache())


def test_triton_solution_runs_under_the_interpreter_on_cpu(kit, vadd) -> None:
    src = (
        "import torch\nimport triton\nimport triton.language as tl\n\n"
        "@triton.jit\n"
        "def _add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)\n\n"
        "def run(x, y, z):\n"
        "    n = x.numel()\n"
        "    _add[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)\n"
    )
    wl = kit.workloads("vadd/vadd_f32.jsonl")[1]  # N = 4097: a masked tail block
    trace = kit.run(vadd, kit.solution("vadd_f32", src, dps=True, language="triton"), wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


MODE = """
import sys, triton.language  # imported before TRITON_INTERPRET=1: compiled-only Triton
from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, Solution, Workload
from sweep.config import EvalSettings
from sweep.schema.task import Task
d = Definition.model_validate_json(open(sys.argv[1]).read())
s = Solution.model_validate_json(open(sys.argv[2]).read())
w = Workload.model_validate_json(open(sys.argv[3]).read())
t = evaluate(Task.make(d, s, w, EvalSettings(trials=1), "CPU"), device="cpu", cache=EngineCache())
print(t.evaluation.status.value)
print(t.evaluation.log.splitlines()[0])
"""


def test_triton_imported_in_the_wrong_mode_is_reported_clearly(kit, vadd, vadd_wl, tmp_path) -> None:
    sol = kit.solution("vadd_f32", "import triton\n\ndef run(x, y):\n    return x + y\n", language="triton")
    status, first = kit.fresh_python(MODE, *kit.record_files(tmp_path, vadd, sol, vadd_wl))[-2:]
    assert status == "RUNTIME_ERROR"
    assert "before TRITON_INTERPRET=1 was set" in first and "prepare_process('cpu')" in first


def test_a_task_writes_only_its_own_solutions_folders_besides_its_own(
    kit, vadd, vadd_wl, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the sandbox allows a task to write once it has arrived (``task_folders``): the
    # compilers' caches of its solution alone, which the process's environment then names, and
    # the build folder of a C++/CUDA solution, its sources written there first from the record.
    # A Python entry point's sources go to the task's own folder.
    from sweep.engine import task_folders
    from sweep.engine.builds._built import COMPILER_CACHE_VARIABLES, compiler_caches

    for var in COMPILER_CACHE_VARIABLES:  # task_folders sets them: put back after the test
        monkeypatch.setenv(var, "/shared/cache/of/every/solution")
    cuda = Task.make(vadd, kit.cuda_vadd(), vadd_wl, kit.fast, "CPU", sweep="tests")
    *caches, folder = task_folders(cuda)
    assert folder == str(solution_folder(cuda.solution.content_hash))
    assert (solution_folder(cuda.solution.content_hash) / "kernel.cu").read_text() == kit.cuda_vadd_sources[
        "kernel.cu"
    ]
    own = compiler_caches(cuda.solution.content_hash)
    assert caches == [str(own[var]) for var in COMPILER_CACHE_VARIABLES]
    assert all(os.environ[var] == str(path) and path.is_dir() for var, path in own.items())
    python = Task.make(
        vadd,
        kit.solution("vadd_f32", "def run(x, y):\n    return y + x  # its own content hash\n", name="plain"),
        vadd_wl,
        kit.fast,
        "CPU",
    )
    theirs = task_folders(python)
    assert theirs == [str(p) for p in compiler_caches(python.solution.content_hash).values()]
    assert not set(theirs) & set(caches)  # another solution, other folders
    assert os.environ["TRITON_CACHE_DIR"] == theirs[0]
    assert not solution_folder(python.solution.content_hash).exists()

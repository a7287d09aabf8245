"""The shape ARCHITECTURE.md describes, checked: which stage may import which, no cycles,
torch and ray each in one place, no private imports across packages, modules of one concern.

Imports are read with ``ast`` from every ``sweep`` module, those inside functions and under
``TYPE_CHECKING`` included (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "sweep"

#: What each stage may import besides itself (ARCHITECTURE.md, "Which way imports go").
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "schema": {"errors"},
    "config": {"schema", "errors"},
    "plan": {"config", "schema", "errors"},
    "engine": {"schema", "errors"},
    "backendbench": {"plan", "engine", "schema", "errors"},
    "cluster": {"config", "schema", "errors"},
    "store": {"schema", "errors"},
    "launch": {"config", "plan", "engine", "cluster", "store", "schema", "errors"},
    "_cli": {
        "",
        "config",
        "plan",
        "engine",
        "backendbench",
        "cluster",
        "store",
        "launch",
        "schema",
        "errors",
    },
    "cli": {"_cli"},
    "tuning": set(),  # sweep/tuning.py: copied beside a kernel's sources, so plain Python only
    "": set(),  # sweep/__init__.py
}
#: Third-party packages that only one stage may import.
OWNED = {"torch": "engine", "triton": "engine", "tvm_ffi": "engine", "tilelang": "engine", "ray": "cluster"}
#: Modules allowed past the size limit, and why.
LONG_MODULES = {"sweep/backendbench/_parser.py": "one grammar, kept whole"}
MAX_LINES = 400


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, absolute module)`` of every import in ``path`` (relative ones resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:  # ``from sweep.store import _writer`` names a module
                yield node.lineno, f"{module}.{alias.name}"


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in _sources()}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for _, imported in _imports(path):
            target = imported
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if (
                target
                and target != name
                and not (path.name == "__init__.py" and target.startswith(name + "."))
            ):
                graph[name].add(target)
    return graph


def test_each_stage_imports_only_what_it_may() -> None:
    wrong = []
    for path in _sources():
        mine = _stage(_module_name(path))
        for line, imported in _imports(path):
            if imported.split(".")[0] != "sweep":
                continue
            theirs = _stage(imported)
            if theirs != mine and theirs not in ALLOWED[mine]:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {mine or 'sweep'} imports {imported}")
    assert not wrong, "imports against the stage order (ARCHITECTURE.md):\n" + "\n".join(sorted(set(wrong)))


def test_no_import_cycle_anywhere() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize(("library", "owner"), sorted(OWNED.items()))
def test_heavy_library_is_imported_by_one_stage_only(library: str, owner: str) -> None:
    wrong = [
        f"{path.relative_to(REPO)}:{line}"
        for path in _sources()
        for line, imported in _imports(path)
        if imported.split(".")[0] == library and _stage(_module_name(path)) != owner
    ]
    assert not wrong, f"{library} is {owner}'s alone; imported at: {', '.join(wrong)}"


def test_no_private_module_is_imported_from_another_package() -> None:
    """``sweep/<pkg>/_x.py`` is for ``<pkg>`` (and its tests) alone; others use ``__all__``."""
    wrong = []
    sources = [(p, _stage(_module_name(p))) for p in _sources()]
    sources += [(p, p.relative_to(REPO / "tests").parts[0]) for p in sorted((REPO / "tests").rglob("*.py"))]
    for path, owner in sources:
        for line, imported in _imports(path):
            parts = imported.split(".")
            if parts[0] != "sweep" or len(parts) < 3:
                continue
            private = any(p.startswith("_") and not p.startswith("__") for p in parts[2:3])
            if private and parts[1] != owner:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {imported}")
    assert not wrong, "private modules imported across packages:\n" + "\n".join(sorted(set(wrong)))


def test_modules_stay_small() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and str(p.relative_to(REPO)) not in LONG_MODULES
    }
    assert not long, f"modules over {MAX_LINES} lines (split by concern): {long}"


def test_every_stage_folder_is_in_the_architecture_map() -> None:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    stages = sorted({_stage(_module_name(p)) for p in _sources()} - {""})
    missing = [s for s in stages if f"sweep/{s}" not in text]
    assert not missing, f"ARCHITECTURE.md does not describe: {missing}"


def test_tuning_imports_the_standard_library_alone() -> None:
    """``sweep/tuning.py`` runs without kernel-sweep installed: nothing of sweep, nothing third-party."""
    import sys

    path = PACKAGE / "tuning.py"
    bad = [
        f"line {line}: {m}"
        for line, m in _imports(path)
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "__future__"
    ]
    assert not bad, bad

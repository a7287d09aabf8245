"""The shape ARCHITECTURE.md describes, checked: which stage may import which, no cycles,
torch and ray each in one place, no private imports across packages, modules of one concern;
one level down, the wings of a stage (its sub-packages): a wing's private modules are for that
wing (and the stage's own top level, which composes its wings), wings reach each other through
their faces, never import their stage's top level, and form no cycle; ``bench/`` uses public
names only.

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
    "sandbox": {"schema", "errors"},
    "cluster": {"config", "sandbox", "schema", "errors"},
    "store": {"schema", "errors"},
    "launch": {"config", "plan", "engine", "cluster", "sandbox", "store", "schema", "errors"},
    "_cli": {
        "",
        "config",
        "plan",
        "engine",
        "backendbench",
        "cluster",
        "sandbox",
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
#: A tripwire, not a wall: a module past it is looked at for a second concern.
MAX_LINES = 600
BENCH = REPO / "bench"


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
            if theirs in ("_lazy", "_python"):  # the lazy faces of wings; a fresh interpreter of
                continue  # this sweep (sweep/_python.py): for every stage, importing nothing of it
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


def _wings() -> set[str]:
    """``sweep.<stage>.<wing>`` of every sub-package of a stage."""
    return {_module_name(p.parent / "__init__.py") for p in PACKAGE.glob("*/*/__init__.py")}


def _owner(imported: str) -> str | None:
    """The package a private module belongs to (``sweep.engine.timing`` for
    ``sweep.engine.timing._l2``), or ``None`` when no part of the path is private."""
    parts = imported.split(".")
    for i, part in enumerate(parts[2:], start=2):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _may_use_private(importer: str, owner: str, wings: set[str]) -> bool:
    """``importer`` (a module, or ``tests.<stage>...``) may import a private module of ``owner``:
    from inside it; from the top level of the stage a wing belongs to; from the stage's tests."""
    if importer == owner or importer.startswith(owner + "."):
        return True
    stage = ".".join(owner.split(".")[:2])
    if (
        owner in wings
        and (importer == stage or importer.startswith(stage + "."))
        and _wing(importer, wings) is None
    ):
        return True
    return importer.startswith("tests.") and importer.split(".")[1] == stage.split(".")[1]


def _wing(module: str, wings: set[str]) -> str | None:
    head = ".".join(module.split(".")[:3])
    return head if head in wings else None


def test_no_private_module_is_imported_from_another_package() -> None:
    """``sweep/<pkg>/_x.py`` is for ``<pkg>`` (and its tests) alone; a wing's ``_x`` is for that
    wing and the stage's top level; others use a face's ``__all__``. ``bench/`` is a user of the
    package and uses public names only."""
    wings = _wings()
    wrong = []
    sources = [(p, _module_name(p)) for p in _sources()]
    sources += [(p, _module_name(p)) for p in sorted((REPO / "tests").rglob("*.py"))]
    sources += [(p, "bench") for p in sorted(BENCH.rglob("*.py"))]
    for path, importer in sources:
        for line, imported in _imports(path):
            if imported.split(".")[0] != "sweep":
                continue
            owner = _owner(imported)
            name = imported.rpartition(".")[2]
            if owner is None and not (importer == "bench" and name.startswith("_") and name != "__future__"):
                continue
            if importer == "bench" or not _may_use_private(importer, owner or "", wings):
                wrong.append(f"{path.relative_to(REPO)}:{line}: {imported}")
    assert not wrong, "private modules imported across packages:\n" + "\n".join(sorted(set(wrong)))


def test_no_module_imports_its_own_face_or_runs_back_up() -> None:
    """A module never imports the face (``__init__``) of a package it is in, and a wing never
    imports its stage's top level: the top composes the wings, not the other way round."""
    wings = _wings()
    wrong = []
    for path in _sources():
        me = _module_name(path)
        if path.name == "__init__.py":
            continue
        mine = me.split(".")
        packages = {".".join(mine[:i]) for i in range(2, len(mine))}
        my_wing = _wing(me, wings)
        stage = ".".join(mine[:2])
        for line, imported in _imports(path):
            target = imported
            if target in packages:
                wrong.append(f"{path.relative_to(REPO)}:{line}: imports its own package's face {target}")
            elif my_wing and target.startswith(stage + ".") and _wing(target, wings) is None:
                top = target if target.count(".") == 2 else ".".join(target.split(".")[:3])
                if (PACKAGE / Path(*top.split(".")[1:])).with_suffix(".py").exists():
                    wrong.append(f"{path.relative_to(REPO)}:{line}: wing {my_wing} imports its stage's {top}")
    assert not wrong, "imports that run back up:\n" + "\n".join(sorted(set(wrong)))


def test_no_cycle_between_wings() -> None:
    wings = _wings()
    edges: dict[str, set[str]] = {w: set() for w in wings}
    for name, targets in _graph().items():
        a = _wing(name, wings)
        for t in targets:
            b = _wing(t, wings)
            if a and b and a != b:
                edges[a].add(b)

    def reaches(a: str, b: str) -> bool:
        seen, todo = set(), [a]
        while todo:
            for n in edges[todo.pop()]:
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    cycles = sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if reaches(b, a)})
    assert not cycles, f"wings that import each other: {cycles}"


def test_modules_stay_small() -> None:
    long = {
        str(p.relative_to(REPO)): n
        for p in _sources()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and str(p.relative_to(REPO)) not in LONG_MODULES
    }
    assert not long, f"modules over {MAX_LINES} lines (is there a second concern?): {long}"


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


def test_the_map_names_only_what_exists() -> None:
    """Every file ARCHITECTURE.md cites exists: paths as written, bare module names somewhere in
    ``sweep/``, ``bench/`` or ``tests/``; the ``CallPath`` protocol has the methods it counts."""
    import re

    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    cited = set(re.findall(r"`([\w./]+\.py)`", text)) | set(
        re.findall(r"`((?:sweep|bench|tests)/[\w./]*)`", text)
    )
    names = {p.name for root in ("sweep", "bench", "tests") for p in (REPO / root).rglob("*.py")}
    missing = sorted(c for c in cited if not ((REPO / c).exists() if "/" in c else c in names))
    assert not missing, f"ARCHITECTURE.md cites what does not exist: {missing}"
    count = re.search(r"a protocol of (\d+) methods", text)
    assert count, "ARCHITECTURE.md no longer counts CallPath's methods"
    tree = ast.parse((PACKAGE / "engine" / "run" / "_callpath.py").read_text(encoding="utf-8"))
    protocol = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CallPath")
    methods = [n for n in protocol.body if isinstance(n, ast.FunctionDef)]
    assert len(methods) == int(count.group(1)), [m.name for m in methods]


def test_no_wing_shadows_a_name_of_its_stage_face() -> None:
    """Importing ``sweep.<stage>.<wing>`` sets the attribute ``<wing>`` on the stage's package,
    over any function of that name its face exports."""
    wrong = []
    for wing in sorted(_wings()):
        stage_init = PACKAGE / wing.split(".")[1] / "__init__.py"
        tree = ast.parse(stage_init.read_text(encoding="utf-8"))
        names = {
            alias.asname or alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        } | {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        if wing.rsplit(".", 1)[1] in names:
            wrong.append(wing)
    assert not wrong, f"wings named like a name of their stage's face: {wrong}"

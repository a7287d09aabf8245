"""Importing a solution's Python files without touching any other solution.

Each solution's folder becomes a package with a unique name (``_sweep_sol_<hash>``), and
its files are imported as submodules of it, so two solutions that both ship ``main.py``
and ``helpers.py`` never meet in ``sys.modules``. Relative imports (``from .helpers
import f``) work as in any package. Plain imports of sibling files (``import helpers``),
which work when a script's folder is on ``sys.path``, are served while the solution is
imported by a temporary meta-path finder that maps ``helpers`` to the solution's own
``_sweep_sol_<hash>.helpers``; the plain names are removed from ``sys.modules`` again
afterwards, so the next solution's ``import helpers`` finds its own file. (A plain import
executed later, inside a function at call time, is not served: use a relative import.)

A solution's files are compiled from their text each time they are imported
(:class:`SourceOnlyLoader`): no bytecode is read or written beside them, so nothing another
process left in a ``__pycache__`` (or under ``PYTHONPYCACHEPREFIX``) is ever run instead.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["SourceOnlyLoader", "forget_package", "import_entry", "package_name"]


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Loads a module by compiling its source file's text: no cached bytecode is read (one
    whose header matches the source's size and time would be run instead of it) or written."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


#: Folders whose modules load through :class:`SourceOnlyLoader` (solutions' folders).
_SOURCE_ONLY: set[str] = set()


def _source_only_hook(path: str) -> importlib.abc.PathEntryFinder:
    """The finder of a folder in or under one of :data:`_SOURCE_ONLY` (``ImportError``
    otherwise: the next hook finds the rest)."""
    if any(path == root or path.startswith(root + os.sep) for root in _SOURCE_ONLY):
        return importlib.machinery.FileFinder(path, (SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES))
    raise ImportError(path)


def _load_from_source(folder: Path) -> None:
    """Make every module under ``folder`` load from source only (once per folder)."""
    root = str(folder)
    if root in _SOURCE_ONLY:
        return
    _SOURCE_ONLY.add(root)
    if _source_only_hook not in sys.path_hooks:
        sys.path_hooks.insert(0, _source_only_hook)
    for cached in [k for k in sys.path_importer_cache if k == root or k.startswith(root + os.sep)]:
        del sys.path_importer_cache[cached]


def package_name(content_hash: str) -> str:
    """The unique package name of a solution."""
    return f"_sweep_sol_{content_hash}"


class _AliasLoader(importlib.abc.Loader):
    """Serves an already-imported module under a second (plain) name."""

    def __init__(self, real_name: str) -> None:
        self.real_name = real_name
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = importlib.import_module(self.real_name)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # The import system stamped the alias spec on the module: put the real one back so
        # the module's own relative imports keep resolving inside its package.
        module.__spec__ = self._spec


class _SiblingFinder(importlib.abc.MetaPathFinder):
    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases  # plain top-level name -> real dotted name

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top, dot, rest = fullname.partition(".")
        real_top = self.aliases.get(top)
        if real_top is None:
            return None
        real = real_top + dot + rest
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real))


def _top_level_names(folder: Path) -> list[str]:
    names = []
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.suffix == ".py" and p.stem.isidentifier() and p.stem != "__init__":
            names.append(p.stem)
        elif p.is_dir() and p.name.isidentifier() and any(p.rglob("*.py")):
            names.append(p.name)
    return names


def _ensure_package(pkg: str, folder: Path) -> None:
    if pkg in sys.modules:
        return
    init = folder / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(
            pkg, init, loader=SourceOnlyLoader(pkg, str(init)), submodule_search_locations=[str(folder)]
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[pkg] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(pkg, None)
            raise
    else:
        spec = importlib.machinery.ModuleSpec(pkg, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        module = importlib.util.module_from_spec(spec)
        module.__path__ = [str(folder)]
        sys.modules[pkg] = module


@contextmanager
def _sibling_imports(pkg: str, folder: Path, entry_rel: str) -> Iterator[None]:
    aliases: dict[str, str] = {}
    entry_dir = (folder / entry_rel).parent
    # The entry file's own folder wins over the root, as with ``python <entry>``.
    for base in (folder, entry_dir) if entry_dir != folder else (folder,):
        prefix = pkg
        rel = base.relative_to(folder)
        if rel.parts:
            prefix = pkg + "." + ".".join(rel.parts)
        for name in _top_level_names(base):
            aliases[name] = f"{prefix}.{name}"
    # A name some module already holds (``math``, ``torch``) keeps pointing at it.
    aliases = {k: v for k, v in aliases.items() if k not in sys.modules}
    finder = _SiblingFinder(aliases)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
        for key in list(sys.modules):
            if key.partition(".")[0] in aliases:
                del sys.modules[key]


def forget_package(pkg: str) -> None:
    """Drop a solution's package and submodules from ``sys.modules`` (after a failed import)."""
    for key in list(sys.modules):
        if key == pkg or key.startswith(pkg + "."):
            del sys.modules[key]


def import_entry(pkg: str, folder: Path, entry_rel: str) -> types.ModuleType:
    """Import a solution's entry file as ``<pkg>.<dotted path>`` and return the module.

    Raises:
        Whatever the solution's code raises while it is imported (SyntaxError, ImportError...).
    """
    rel = Path(entry_rel)
    dotted = ".".join((*rel.parent.parts, rel.stem))
    _load_from_source(folder)
    _ensure_package(pkg, folder)
    with _sibling_imports(pkg, folder, entry_rel):
        return importlib.import_module(f"{pkg}.{dotted}")

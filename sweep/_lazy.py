"""Faces of wings that import nothing until a name is asked for.

A wing's ``__init__`` names what the rest of the package may use (``__all__``) and where each
name lives. Python runs a package's ``__init__`` before any module in it, so an eager face
would import every module of the wing (torch, duckdb) whenever any one of them is imported;
a lazy face keeps ``import sweep.engine`` and ``sweep --help`` light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["face"]


def face(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """The module ``__getattr__`` of the face of ``package``: ``where`` maps each public name
    to the module of the wing that defines it (``{"Timer": "_timing"}``).

    The value is looked up on each access and never stored in the face, so the face's
    namespace stays what its source says (the integrity snapshot compares it)."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__

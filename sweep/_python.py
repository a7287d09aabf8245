"""A fresh Python interpreter that imports this very ``sweep``, for every stage that starts one
(ingest workers, the store's follower, zygotes, a profiled task under ncu).

``python -m pkg.mod`` and ``python -c code`` put the working folder first on ``sys.path``. A
``sweep`` folder there (another checkout, an older copy) would then be imported in place of
the one running, and parent and child would run two versions that speak to each other. The
child gets this package's folder first on ``PYTHONPATH`` (:func:`python_env`; the package may
have come on ``sys.path`` alone, through a Ray runtime_env) and drops the working folder's entry
before it imports anything (:func:`python_code`, :func:`python_module`).

Nothing of ``sweep`` is imported here: every stage may use it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["package_parent", "python_code", "python_env", "python_module"]

#: Run first in every child: ``-c`` puts ``''`` (the working folder) first on ``sys.path``, unless
#: the interpreter runs with a safe path (``-P``, ``PYTHONSAFEPATH``) and puts nothing there.
_NO_WORKING_FOLDER = "import sys\nif sys.path and sys.path[0] == '':\n    del sys.path[0]\n"


def package_parent() -> str:
    """The folder the running ``sweep`` package is imported from."""
    return str(Path(__file__).resolve().parent.parent)


def python_code(code: str) -> list[str]:
    """The command line of an interpreter (this one's executable) that runs ``code`` with the
    working folder left off ``sys.path``; the caller appends the arguments (``sys.argv[1:]``)."""
    return [sys.executable, "-c", _NO_WORKING_FOLDER + code]


def python_module(module: str) -> list[str]:
    """The command line of an interpreter that runs ``module`` as ``__main__``, as ``python -m``
    does, with the working folder left off ``sys.path``."""
    return python_code(f"import runpy\nrunpy.run_module({module!r}, run_name='__main__', alter_sys=True)\n")


def python_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment by default) with this package's folder first on
    ``PYTHONPATH``."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent(), out.get("PYTHONPATH")) if p)
    return out

"""The ``sweep`` command. Thin: each command parses, calls one library function, renders.

Command modules are imported here for their registration side effect; none of them may
import torch, ray or triton at module level, so ``sweep --help`` stays instant.
"""

from __future__ import annotations

from sweep._cli import backendbench as _backendbench  # noqa: F401
from sweep._cli import calibrate as _calibrate  # noqa: F401
from sweep._cli import compare as _compare  # noqa: F401

# Command groups register themselves on ``app``.
from sweep._cli import dataset as _dataset  # noqa: F401
from sweep._cli import evaluate as _evaluate  # noqa: F401
from sweep._cli import launch as _launch  # noqa: F401
from sweep._cli import new as _new  # noqa: F401
from sweep._cli import profile as _profile  # noqa: F401
from sweep._cli import scores as _scores  # noqa: F401
from sweep._cli import show as _show  # noqa: F401
from sweep._cli import store as _store  # noqa: F401
from sweep._cli import tune as _tune  # noqa: F401
from sweep._cli import tuning as _tuning  # noqa: F401
from sweep._cli import workers as _workers  # noqa: F401
from sweep._cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()

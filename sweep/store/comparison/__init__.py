"""Two sides compared task by task: the side syntax, the rows of each side, the verdicts with their
confidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.store.comparison._compare import TaskComparison as TaskComparison

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "TaskComparison": "_compare",
}
__all__ = ["TaskComparison"]
__getattr__ = face(__name__, _WHERE)

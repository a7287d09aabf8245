"""Scores that speak of whole models: time shares and the projected speedup (Amdahl), fast_p,
win@p and pass rates, and the verification of hidden (secret) runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.store.scores._scores import SET_SUMMARY_COLUMNS as SET_SUMMARY_COLUMNS
    from sweep.store.scores._scores import (
        ModelProjection as ModelProjection,
    )
    from sweep.store.scores._scores import (
        check_uncovered as check_uncovered,
    )
    from sweep.store.scores._scores import (
        projection_of as projection_of,
    )

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "check_uncovered": "_scores",
    "ModelProjection": "_scores",
    "projection_of": "_scores",
    "SET_SUMMARY_COLUMNS": "_scores",
}
__all__ = ["SET_SUMMARY_COLUMNS", "ModelProjection", "check_uncovered", "projection_of"]
__getattr__ = face(__name__, _WHERE)

"""What a solution must not change: the snapshot of what the harness times and checks with (integrity),
threads left running, process-global state put back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.engine.guard._global_state import (
        TorchFlags as TorchFlags,
    )
    from sweep.engine.guard._global_state import (
        pinned_flags as pinned_flags,
    )
    from sweep.engine.guard._global_state import (
        preserved_state as preserved_state,
    )
    from sweep.engine.guard._integrity import Guard as Guard

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "Guard": "_integrity",
    "pinned_flags": "_global_state",
    "preserved_state": "_global_state",
    "TorchFlags": "_global_state",
}
__all__ = ["Guard", "TorchFlags", "pinned_flags", "preserved_state"]
__getattr__ = face(__name__, _WHERE)

"""What the driver loop uses of Ray, as a protocol: the ``ray`` module satisfies it, and so
does a stand-in that simulates a cluster (``bench/scheduler_sim.py``), so the real loop can be
driven through a million tasks on a virtual clock."""

from __future__ import annotations

from typing import Any, Protocol, cast

__all__ = ["RayApi", "real_ray"]


class RayApi(Protocol):
    """The ``ray`` functions the driver loop calls, with the arguments it passes."""

    def remote(self, cls: type) -> Any:
        """An actor class: ``.options(**opts).remote(*args)`` starts an actor."""

    def wait(
        self, refs: list[Any], *, num_returns: int = 1, timeout: float | None = None
    ) -> tuple[list[Any], list[Any]]:
        """The refs that are ready (at least ``num_returns`` unless ``timeout`` ran out), and the rest."""

    def get(self, ref: Any) -> Any:
        """The value of a ready ref (raises what the call raised)."""

    def kill(self, actor: Any) -> None:
        """End an actor now."""


def real_ray() -> RayApi:
    """The ``ray`` module (imported here, when a loop starts: never at import time)."""
    import ray

    return cast(RayApi, ray)

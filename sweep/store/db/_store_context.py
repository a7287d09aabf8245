"""StoreContext: what the traces alone do not say (op_type, tags, author, language, hash)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sweep.schema import Definition, Solution, Trace, Workload

__all__ = ["DatasetLike", "StoreContext"]


class DatasetLike(Protocol):
    """The part of :class:`sweep.plan.Dataset` the store reads."""

    @property
    def definitions(self) -> Mapping[str, Definition]: ...

    @property
    def solutions(self) -> Mapping[str, Solution]: ...

    @property
    def workloads(self) -> Mapping[str, Sequence[Workload]]: ...


@dataclass(frozen=True)
class StoreContext:
    """Definitions, solutions and workloads that give traces their filterable columns.

    A writer stores every record of its context in the ``definitions``, ``solutions`` and
    ``workloads`` tables, and fills ``op_type``, ``tags``, ``author``, ``language`` and
    ``solution_hash`` of each trace from it. Traces whose records are not in the context get
    those columns from the tables when the records are there, now or later.

    Attributes:
        definitions: By name.
        solutions: By name.
        workloads: By definition name.
    """

    definitions: Mapping[str, Definition] = field(default_factory=dict)
    solutions: Mapping[str, Solution] = field(default_factory=dict)
    workloads: Mapping[str, Sequence[Workload]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        definitions: Iterable[Definition] = (),
        solutions: Iterable[Solution] = (),
        workloads: Iterable[Trace] = (),
    ) -> StoreContext:
        """Build a context from records.

        Args:
            definitions: Definition records.
            solutions: Solution records.
            workloads: Workload-only traces (they name their definition).
        """
        wls: dict[str, list[Workload]] = {}
        for t in workloads:
            wls.setdefault(t.definition, []).append(t.workload)
        return cls(
            definitions={d.name: d for d in definitions},
            solutions={s.name: s for s in solutions},
            workloads=wls,
        )

    @classmethod
    def from_dataset(cls, dataset: DatasetLike) -> StoreContext:
        """The context of a loaded dataset (:func:`sweep.plan.load_dataset`)."""
        return cls(
            definitions=dict(dataset.definitions),
            solutions=dict(dataset.solutions),
            workloads={k: list(v) for k, v in dataset.workloads.items()},
        )

    def solution_for(self, definition: str, name: str | None) -> Solution | None:
        """The solution a trace names, if it is known and implements ``definition``."""
        if name is None:
            return None
        sol = self.solutions.get(name)
        return sol if sol is not None and sol.definition == definition else None

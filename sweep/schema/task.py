"""Task: one evaluation to run (definition x solution x workload, with settings).

The unit that flows from the plan to the scheduler to the engine. Small and picklable;
it carries its records whole so a worker needs nothing else to evaluate it.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict

from sweep.schema.definition import Definition
from sweep.schema.distributed import RankSlot
from sweep.schema.params import params_json
from sweep.schema.peaks import Ceilings
from sweep.schema.settings import EvalSettings
from sweep.schema.solution import Solution
from sweep.schema.trace import Provenance, TuningNote
from sweep.schema.workload import Workload

__all__ = ["Task", "task_id"]


def task_id(
    definition: str,
    solution_hash: str,
    workload_uuid: str,
    settings_hash: str,
    hardware: str,
    params: dict[str, bool | int | float | str] | None = None,
    broken: str | None = None,
    secret_commitment: str | None = None,
) -> str:
    """Stable id of a task: the same inputs always give the same id, on any machine.

    The solution enters by content hash, so renaming a solution keeps its results,
    and editing its sources makes new tasks. A parameter point (canonical JSON) is one more
    part; without one the id is what it always was. So is ``broken`` (why the solution cannot
    be evaluated, :attr:`Task.broken`): a broken solution's tasks never share an id with a
    valid one's, and the same record fixed, or broken another way, gets new tasks. A secret
    run (``secret_commitment``, :mod:`sweep.schema.secret`) is a task of its own: its trace
    never stands for the public run of the same task, nor for a run with another secret.
    """
    sep = "\x1f"  # a control character: cannot occur inside any of the parts
    key = f"{definition}{sep}{solution_hash}{sep}{workload_uuid}{sep}{settings_hash}{sep}{hardware}"
    if params is not None:
        key += f"{sep}params{sep}{params_json(params)}"
    if broken is not None:
        key += f"{sep}broken{sep}{hashlib.sha256(broken.encode('utf-8', 'surrogatepass')).hexdigest()}"
    if secret_commitment is not None:
        key += f"{sep}secret{sep}{secret_commitment}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


class Task(BaseModel):
    """One evaluation, self-contained."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: str
    definition: Definition
    solution: Solution
    workload: Workload
    settings: EvalSettings
    hardware: str
    dataset_root: str | None = None
    sweep: str = ""
    config_hash: str = ""
    #: Ceilings measured on a node of the task's hardware (``sweep calibrate``): the engine
    #: prefers them to the datasheet for the achieved fraction of peak. Not part of the id.
    ceilings: Ceilings | None = None
    #: Planned although the solution's ``target_hardware`` excludes ``hardware`` (the config's
    #: ``solutions.ignore_target_hardware``): the trace records the targets it was written for.
    ported: bool = False
    #: The parameter point this task runs (keyword arguments of the entry point); ``None``
    #: for a solution without ``params``. Part of the id.
    params: dict[str, bool | int | float | str] | None = None
    #: Why the solution cannot be evaluated as it is (its file is not a valid record, or the
    #: checks ``sweep validate`` makes found it wrong), each problem naming the file; ``None``
    #: for a valid solution. The engine makes such a task a COMPILE_ERROR with this message,
    #: building and running nothing. Part of the id (see :func:`task_id`).
    broken: str | None = None
    #: A secret run (``sweep launch --secret-file``): what every input seed is mixed with
    #: (:func:`sweep.schema.secret.input_salt`, a one-way hash of the secret, never the
    #: secret), and the commitment its trace stores. ``None`` for a public run. The
    #: commitment is part of the id (see :func:`task_id`).
    secret_salt: str | None = None
    secret_commitment: str | None = None
    #: The confirmation run of a guided search's chosen point: the decision its trace carries
    #: (``provenance.tuning``). Not part of the id: it is the same task run once more.
    tuning: TuningNote | None = None

    def with_secret(self, secret: bytes) -> Task:
        """This task as a secret run: its inputs drawn from seeds mixed with the secret, its
        trace carrying the commitment, its id its own."""
        from sweep.schema.secret import commitment, input_salt

        name, uuid = self.definition.name, self.workload.uuid
        commit = commitment(secret, name, uuid)
        tid = task_id(
            name,
            self.solution.content_hash,
            uuid,
            self.settings.settings_hash(),
            self.hardware,
            self.params,
            self.broken,
            commit,
        )
        return self.model_copy(
            update={
                "task_id": tid,
                "secret_salt": input_salt(secret, name, uuid),
                "secret_commitment": commit,
            }
        )

    #: Set only on the copy of a distributed task one rank's sandbox runs (which rank, where its
    #: process group meets); ``None`` on every task a plan makes. Not part of the id.
    rank: RankSlot | None = None

    @classmethod
    def make(
        cls,
        definition: Definition,
        solution: Solution,
        workload: Workload,
        settings: EvalSettings,
        hardware: str,
        *,
        dataset_root: str | None = None,
        sweep: str = "",
        config_hash: str = "",
        ceilings: Ceilings | None = None,
        ported: bool = False,
        params: dict[str, bool | int | float | str] | None = None,
        broken: str | None = None,
        settings_hash: str | None = None,
    ) -> Task:
        """Build a task from records already validated, computing its stable id.

        The records are taken as they are: validating a model whose fields are models runs
        their own validators again on every instance (pydantic does), which for a plan of
        100,000 parameter points checked the same definition and solution 100,000 times.

        Args:
            settings_hash: ``settings.settings_hash()`` when the caller has it already (a plan
                makes every task with the same settings).

        Raises:
            TypeError: A record is not an instance of its model.
        """
        for value, model in (
            (definition, Definition),
            (solution, Solution),
            (workload, Workload),
            (settings, EvalSettings),
        ):
            if not isinstance(value, model):
                raise TypeError(f"Task.make: expected a {model.__name__}, got {type(value).__name__}")
        if ceilings is not None and not isinstance(ceilings, Ceilings):
            raise TypeError(f"Task.make: expected Ceilings, got {type(ceilings).__name__}")
        digest = settings_hash if settings_hash is not None else settings.settings_hash()
        tid = task_id(definition.name, solution.content_hash, workload.uuid, digest, hardware, params, broken)
        return cls.model_construct(
            task_id=tid,
            definition=definition,
            solution=solution,
            workload=workload,
            settings=settings,
            hardware=str(hardware),
            dataset_root=dataset_root,
            sweep=sweep,
            config_hash=config_hash,
            ceilings=ceilings,
            ported=bool(ported),
            params=dict(params) if params is not None else None,
            broken=broken,
        )

    def provenance(self, **run: str | int | None) -> Provenance:
        """The provenance of this task's trace: its identity (task id, sweep, solution,
        config and settings hashes, the targets a ported solution was written for; empty
        ones left out) and the ``run`` fields given
        (``Provenance.RUN_FIELDS``: where and when it ran; ``None`` values left out)."""
        identity: dict[str, str | int | list[str] | TuningNote | None] = {
            "task_id": self.task_id,
            "sweep": self.sweep or None,
            "solution_hash": self.solution.content_hash,
            "settings_hash": self.settings.settings_hash(),
            "config_hash": self.config_hash or None,
            "ported_from": list(self.solution.spec.target_hardware) if self.ported else None,
            "secret_commitment": self.secret_commitment,
            "tuning": self.tuning,
        }
        fields = {**identity, **run}
        return Provenance(**{k: v for k, v in fields.items() if v is not None})

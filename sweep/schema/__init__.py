"""The records every stage shares, as frozen pydantic v2 models. No torch import here.

FlashInfer-Bench's records (Definition, Solution, Workload, Trace), plus what travels with
them through the pipeline: the evaluation settings, the :class:`Task`, hardware names
(:mod:`sweep.schema.hardware`) and the call-argument format of imported operator calls
(:mod:`sweep.schema.call_args`, :mod:`sweep.schema.call_json`, :mod:`sweep.schema.op_tags`),
device peaks and the floor of a call (:mod:`sweep.schema.peaks`).
Nothing here imports from a stage above it.

The face is lazy (:mod:`sweep._lazy`): a name is imported when asked for, so a command that
needs one record (``sweep import-backendbench``: definitions and workloads) does not import
every model (traces, tasks, settings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.schema.checks import check_workload as check_workload
    from sweep.schema.checks import eval_axis_constraint as eval_axis_constraint
    from sweep.schema.definition import SEED_DTYPES as SEED_DTYPES
    from sweep.schema.definition import WORK_FIELDS as WORK_FIELDS
    from sweep.schema.definition import AxisConst as AxisConst
    from sweep.schema.definition import AxisVar as AxisVar
    from sweep.schema.definition import Definition as Definition
    from sweep.schema.definition import DType as DType
    from sweep.schema.definition import TensorSpec as TensorSpec
    from sweep.schema.energy import Energy as Energy
    from sweep.schema.energy import EnergySide as EnergySide
    from sweep.schema.expr import constraint_names as constraint_names
    from sweep.schema.peaks import Ceilings as Ceilings
    from sweep.schema.settings import EvalSettings as EvalSettings
    from sweep.schema.settings import Timeouts as Timeouts
    from sweep.schema.settings import Tolerance as Tolerance
    from sweep.schema.solution import Binding as Binding
    from sweep.schema.solution import BuildSpec as BuildSpec
    from sweep.schema.solution import Language as Language
    from sweep.schema.solution import Solution as Solution
    from sweep.schema.solution import SourceFile as SourceFile
    from sweep.schema.task import Task as Task
    from sweep.schema.task import task_id as task_id
    from sweep.schema.trace import FLAG_IMPOSSIBLE as FLAG_IMPOSSIBLE
    from sweep.schema.trace import FLAG_REFERENCE_FAILED as FLAG_REFERENCE_FAILED
    from sweep.schema.trace import FLAG_SUSPICIOUS as FLAG_SUSPICIOUS
    from sweep.schema.trace import FLAG_TAMPERED as FLAG_TAMPERED
    from sweep.schema.trace import Clocks as Clocks
    from sweep.schema.trace import Correctness as Correctness
    from sweep.schema.trace import Environment as Environment
    from sweep.schema.trace import Evaluation as Evaluation
    from sweep.schema.trace import Performance as Performance
    from sweep.schema.trace import Provenance as Provenance
    from sweep.schema.trace import Status as Status
    from sweep.schema.trace import TimingStats as TimingStats
    from sweep.schema.trace import Trace as Trace
    from sweep.schema.trace import TuningNote as TuningNote
    from sweep.schema.workload import BackendBenchArgsInput as BackendBenchArgsInput
    from sweep.schema.workload import BackendBenchSource as BackendBenchSource
    from sweep.schema.workload import InputSpec as InputSpec
    from sweep.schema.workload import RandomInput as RandomInput
    from sweep.schema.workload import SafetensorsInput as SafetensorsInput
    from sweep.schema.workload import ScalarInput as ScalarInput
    from sweep.schema.workload import Workload as Workload

#: Each public name of the face and the module that defines it.
_WHERE = {
    "AxisConst": "definition",
    "AxisVar": "definition",
    "BackendBenchArgsInput": "workload",
    "BackendBenchSource": "workload",
    "Binding": "solution",
    "BuildSpec": "solution",
    "Ceilings": "peaks",
    "Clocks": "trace",
    "Correctness": "trace",
    "DType": "definition",
    "Definition": "definition",
    "Energy": "energy",
    "EnergySide": "energy",
    "Environment": "trace",
    "EvalSettings": "settings",
    "Evaluation": "trace",
    "FLAG_IMPOSSIBLE": "trace",
    "FLAG_REFERENCE_FAILED": "trace",
    "FLAG_SUSPICIOUS": "trace",
    "FLAG_TAMPERED": "trace",
    "InputSpec": "workload",
    "Language": "solution",
    "Performance": "trace",
    "Provenance": "trace",
    "RandomInput": "workload",
    "SEED_DTYPES": "definition",
    "SafetensorsInput": "workload",
    "ScalarInput": "workload",
    "Solution": "solution",
    "SourceFile": "solution",
    "Status": "trace",
    "Task": "task",
    "TensorSpec": "definition",
    "Timeouts": "settings",
    "TimingStats": "trace",
    "Tolerance": "settings",
    "Trace": "trace",
    "TuningNote": "trace",
    "WORK_FIELDS": "definition",
    "Workload": "workload",
    "check_workload": "checks",
    "constraint_names": "expr",
    "eval_axis_constraint": "checks",
    "task_id": "task",
}

__all__ = [
    "FLAG_IMPOSSIBLE",
    "FLAG_REFERENCE_FAILED",
    "FLAG_SUSPICIOUS",
    "FLAG_TAMPERED",
    "SEED_DTYPES",
    "WORK_FIELDS",
    "AxisConst",
    "AxisVar",
    "BackendBenchArgsInput",
    "BackendBenchSource",
    "Binding",
    "BuildSpec",
    "Ceilings",
    "Clocks",
    "Correctness",
    "DType",
    "Definition",
    "Energy",
    "EnergySide",
    "Environment",
    "EvalSettings",
    "Evaluation",
    "InputSpec",
    "Language",
    "Performance",
    "Provenance",
    "RandomInput",
    "SafetensorsInput",
    "ScalarInput",
    "Solution",
    "SourceFile",
    "Status",
    "Task",
    "TensorSpec",
    "Timeouts",
    "TimingStats",
    "Tolerance",
    "Trace",
    "TuningNote",
    "Workload",
    "check_workload",
    "constraint_names",
    "eval_axis_constraint",
    "task_id",
]

__getattr__ = face(__name__, _WHERE)

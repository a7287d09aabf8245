"""The records every stage shares, as frozen pydantic v2 models. No torch import here.

FlashInfer-Bench's records (Definition, Solution, Workload, Trace), plus what travels with
them through the pipeline: the evaluation settings, the :class:`Task`, hardware names
(:mod:`sweep.schema.hardware`) and the call-argument format of imported operator calls
(:mod:`sweep.schema.call_args`, :mod:`sweep.schema.call_json`, :mod:`sweep.schema.op_tags`),
device peaks and the floor of a call (:mod:`sweep.schema.peaks`).
Nothing here imports from a stage above it.
"""

from sweep.schema.checks import check_workload, eval_axis_constraint
from sweep.schema.definition import (
    SEED_DTYPES,
    WORK_FIELDS,
    AxisConst,
    AxisVar,
    Definition,
    DType,
    TensorSpec,
)
from sweep.schema.energy import Energy, EnergySide
from sweep.schema.expr import constraint_names
from sweep.schema.peaks import Ceilings
from sweep.schema.settings import EvalSettings, Timeouts, Tolerance
from sweep.schema.solution import Binding, BuildSpec, Language, Solution, SourceFile
from sweep.schema.task import Task, task_id
from sweep.schema.trace import (
    FLAG_IMPOSSIBLE,
    FLAG_REFERENCE_FAILED,
    FLAG_SUSPICIOUS,
    FLAG_TAMPERED,
    Clocks,
    Correctness,
    Environment,
    Evaluation,
    Performance,
    Provenance,
    Status,
    TimingStats,
    Trace,
    TuningNote,
)
from sweep.schema.workload import (
    BackendBenchArgsInput,
    BackendBenchSource,
    InputSpec,
    RandomInput,
    SafetensorsInput,
    ScalarInput,
    Workload,
)

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

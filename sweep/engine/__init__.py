"""The evaluation engine: one Task in, one Trace out, in this process.

Importing this package does not import torch (the CLI imports it); torch, triton and the
compilers are loaded by the functions below when they run.

Public API:

- :func:`evaluate`: evaluate one :class:`~sweep.schema.Task`; never raises for what the
  solution does (build failures, exceptions, wrong outputs are statuses).
- :func:`evaluate_pair`: one solution over several workloads (for ``sweep eval``).
- :func:`build`: the build phase alone, for callers that give compilation its own deadline.
- :class:`EngineCache`: builds, reference outputs and reference timings kept across tasks.
- :func:`prepare_process`: call first in a fresh evaluating process (on CPU it sets
  ``TRITON_INTERPRET=1`` before triton is imported); :func:`preload`: in a zygote, import what
  evaluations use and take the harness's snapshot (``_integrity``) before any solution runs;
  :func:`start_process`: in a task's fresh process, make CUDA ready before its task arrives,
  and :func:`process_cache`, the cache it made ready; :func:`task_folders`: where a task writes
  besides its own folder (its sandbox allows nothing else once the task has arrived): its
  solution's build and its solution's own compilers' caches, which it points the process at.
- :func:`profile_run`: profile mode, the solution's calls alone inside a CUDA profiler range
  (``python -m sweep.engine.profile_main TASKFILE`` is the process ``sweep profile`` runs under
  ncu or compute-sanitizer); :func:`gpu_problem`: why this machine cannot profile.
- :func:`cuda_problem`: whether this process's CUDA context still works (asked by the cluster);
  :func:`device_of`: the device an evaluation asked for runs on (``cpu`` or ``cuda:N``);
  :func:`phase_marks`: where the last evaluation's time went (the phase clock, ``run/_clock.py``).
- :func:`calibrate`: measure this node's ceilings (copy bandwidth, dense GEMM rate per dtype)
  for ``sweep calibrate``.
- :func:`resolve_op`, :func:`schema_mutations`: an ATen operator by name and the arguments
  its schema writes (the engine is the one package that imports torch);
  :func:`operator_problem`: why this torch cannot run an imported operator on a target (the
  plan's ``unavailable`` check, passed by the launch stage).

Every evaluation runs the same phases (``_phases.EvalRun``); what depends on the kind of
workload is its call path (the ``_callpath.CallPath`` protocol): ``_aten_call.AtenCall`` for a
workload with a ``backendbench_args`` input (an imported BackendBench operator call),
``_named_inputs.NamedInputs`` for every other one; ``_phases.new_run`` picks it.
"""

from __future__ import annotations

from sweep.engine._api import (
    build,
    calibrate,
    evaluate,
    evaluate_pair,
    process_cache,
    profile_run,
    start_process,
)
from sweep.engine._process import (
    cuda_problem,
    device_of,
    gpu_problem,
    phase_marks,
    preload,
    prepare_process,
    task_folders,
)
from sweep.engine.aten._aten_ops import operator_problem, resolve_op, schema_mutations
from sweep.engine.aten._overloads import pick_overload
from sweep.engine.run._cache import EngineCache

__all__ = [
    "EngineCache",
    "build",
    "calibrate",
    "cuda_problem",
    "device_of",
    "evaluate",
    "evaluate_pair",
    "gpu_problem",
    "operator_problem",
    "phase_marks",
    "pick_overload",
    "preload",
    "prepare_process",
    "process_cache",
    "profile_run",
    "resolve_op",
    "schema_mutations",
    "start_process",
    "task_folders",
]

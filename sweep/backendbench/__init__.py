"""BackendBench operator trace files <-> kernel-sweep records (a trace format, nothing else).

- Read: :func:`parse_trace` / :func:`parse_trace_file` (whitelist parser, never ``eval``).
- Import: :func:`import_backendbench` (trace file -> Definitions and Workloads),
  :func:`import_kernels` (BackendBench kernel directory -> Solutions).
- Import a torch.profiler trace: :func:`import_torch_profile` (calls weighted by count).
- Export: :func:`export_backendbench` (dataset -> trace file).

The argument tree of a call and its JSON form are records (``sweep.schema.call_args``,
``sweep.schema.call_json``); evaluating a call is the engine's (``sweep.engine``). Nothing
here imports torch.
"""

from sweep.backendbench._exporter import ExportReport, export_backendbench, export_text
from sweep.backendbench._importer import (
    ImportedOp,
    ImportReport,
    build_records,
    import_backendbench,
    op_expression,
)
from sweep.backendbench._kernels import KernelImportReport, import_kernels, solution_from_file
from sweep.backendbench._ops import select_ops
from sweep.backendbench._parser import TraceRow, clear_tensor_cache, parse_trace, parse_trace_file
from sweep.backendbench._torch_profile import import_torch_profile, parse_torch_profile
from sweep.schema.call_args import TensorArg, parse_op_name
from sweep.schema.op_tags import BACKENDBENCH_OP_TYPE as OP_TYPE
from sweep.schema.op_tags import CALL_INPUT, MutatedArg

__all__ = [
    "CALL_INPUT",
    "OP_TYPE",
    "ExportReport",
    "ImportReport",
    "ImportedOp",
    "KernelImportReport",
    "MutatedArg",
    "TensorArg",
    "TraceRow",
    "build_records",
    "clear_tensor_cache",
    "export_backendbench",
    "export_text",
    "import_backendbench",
    "import_kernels",
    "import_torch_profile",
    "op_expression",
    "parse_op_name",
    "parse_torch_profile",
    "parse_trace",
    "parse_trace_file",
    "select_ops",
    "solution_from_file",
]

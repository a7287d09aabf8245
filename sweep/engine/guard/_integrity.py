"""What a solution could replace in this process, captured before its code runs and checked after.

A solution is arbitrary code in the evaluating process. The harness times and checks it
with functions of torch, triton, numpy, the standard library and its own modules; a solution
that replaces one of them (``torch.cuda.Event.elapsed_time``, ``torch.allclose``, the
engine's own comparison, ``time.perf_counter_ns``) could change its own result. So:

- :func:`baseline` captures, once per process and before any solution code runs (in a
  sandbox, in the zygote every task's process is forked from), every function, class and
  descriptor of the watched modules and classes, the modules themselves in ``sys.modules``,
  the tracing and profiling hooks, the number of torch function and dispatch modes, and the
  Python kernels registered with torch's dispatcher;
- :meth:`Guard.changes` lists what differs now: a replaced or removed entry of a watched
  namespace (or a function's code swapped), an entry added to a watched class
  (``__torch_dispatch__`` set on ``torch.Tensor``), a mode left pushed, a tracer set, a kernel
  registered from Python for an operator the dispatcher had before (``aten::softmax``
  overridden through ``torch.library``; Meta kernels, which compute no values, aside);
- :meth:`Guard.busy_threads` lists the threads started since the baseline that are running
  code (a thread idle in a pool's queue is left alone: ``torch.compile`` keeps some).

The evaluation checks after the solution's import, after its trials, after its timing and
before each reference call that follows its import, and never reports PASSED when anything
changed (``_phases``). What this cannot see: code that writes the process's memory directly
(ctypes, a compiled extension patching function pointers or the dispatcher from C++): the
docs/isolation.md says what to do about that.
"""

from __future__ import annotations

import importlib
import operator
import sys
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sweep.engine.guard._threads import busy_threads, thread_ids

__all__ = ["Guard", "baseline", "guard", "import_first", "watched_modules"]

#: What evaluations import, imported before a snapshot: some imports rebind torch's own
#: functions or register kernels (``torch._dynamo``, imported lazily by many torch functions,
#: wraps ``torch.manual_seed``), which must be part of the snapshot, not news after it.
_IMPORT_FIRST = (
    "numpy",
    "torch._dynamo",
    "torch.utils.flop_counter",
    "triton",
    "triton.language",
    "safetensors.torch",
    "sweep.engine._evaluate",
    "sweep.engine.run._work",
)
#: Modules whose functions, classes and submodules are watched (those not imported are skipped).
_MODULES = (
    "builtins",
    "time",
    "gc",
    "threading",
    "os",
    "sys",
    "math",
    "pickle",
    "json",
    "socket",
    "multiprocessing.connection",
    "torch",
    "torch.nn.functional",
    "torch.cuda",
    "torch.cuda.graphs",
    "torch.linalg",
    "torch.fft",
    "torch.special",
    "torch.testing",
    "torch.library",
    "torch.overrides",
    "torch.utils.flop_counter",
    "numpy",
    "numpy.random",
    "numpy.linalg",
    "triton",
    "triton.language",
    "triton.testing",
    "triton.runtime",
    "triton.runtime.jit",
    "triton.runtime.autotuner",
    "safetensors",
    "safetensors.torch",
    "pydantic",
    "pydantic_core",
)
#: Classes (``module:qualname``) whose own dictionaries are watched, additions included.
_CLASSES = (
    "torch:Tensor",
    "torch:Generator",
    "torch.cuda:Event",
    "torch.cuda:Stream",
    "torch.cuda:CUDAGraph",
    "torch.cuda.graphs:graph",
    "torch.overrides:TorchFunctionMode",
    "triton.runtime.jit:JITFunction",
    "triton.runtime.jit:KernelInterface",
    "triton.runtime.autotuner:Autotuner",
    "pydantic:BaseModel",
    "multiprocessing.connection:Connection",
    "threading:Thread",
)
#: Entries that change on their own as a process runs (lazily bound, caches).
_VOLATILE = frozenset({"__builtins__", "_", "__warningregistry__", "__loader__", "__spec__"})
#: Entries of one namespace that torch itself rebinds: ``torch.set_default_dtype`` points
#: ``torch.Storage`` at the new dtype's storage class.
_REBOUND_BY_TORCH = {"torch": frozenset({"Storage"})}


def _is_code(value: object) -> bool:
    """Whether ``value`` is something a call could go through: a function, a class, a
    descriptor, a module (data entries, caches and counters change legitimately)."""
    return callable(value) or isinstance(
        value, (types.ModuleType, property, staticmethod, classmethod, types.GetSetDescriptorType)
    )


def watched_modules() -> list[str]:
    """The names of the watched modules that are imported now, the engine's own included."""
    own = sorted(n for n in sys.modules if n == "sweep" or n.startswith("sweep."))
    return [n for n in (*_MODULES, *own) if n in sys.modules]


def _own_classes(modules: Iterable[types.ModuleType]) -> list[type]:
    out: list[type] = []
    for mod in modules:
        for value in vars(mod).values():
            if isinstance(value, type) and value.__module__ == mod.__name__:
                out.append(value)
    return out


def _resolve(spec: str) -> type | None:
    mod_name, _, qual = spec.partition(":")
    obj: object = sys.modules.get(mod_name)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


def _mode_depths() -> tuple[int, int]:
    torch = sys.modules.get("torch")
    if torch is None:
        return (0, 0)
    c = torch._C
    fn = getattr(c, "_len_torch_function_stack", None)
    disp = getattr(c, "_len_torch_dispatch_stack", None)
    return (int(fn()) if fn else 0, int(disp()) if disp else 0)


def _python_kernels() -> frozenset[str]:
    """Kernels registered from Python (``torch.library``), as ``namespace/op/key``."""
    library = sys.modules.get("torch.library")
    impls = getattr(library, "_impls", None)
    return frozenset(impls) if isinstance(impls, (set, frozenset)) else frozenset()


@dataclass(frozen=True)
class _Namespace:
    name: str
    owner: object  # the module or class
    space: dict[str, object]
    keys: tuple[str, ...]
    values: tuple[object, ...]
    size: int  # entries of the whole dictionary when captured (a class gaining one is seen)
    is_class: bool

    getter: Callable[[dict[str, object]], tuple[object, ...]]

    def get(self, space: dict[str, object]) -> tuple[object, ...]:
        """The current values of the watched keys (``KeyError`` when one is gone)."""
        return self.getter(space)


class Guard:
    """A snapshot of what a solution could replace (see the module's docstring)."""

    def __init__(self) -> None:
        spaces: list[_Namespace] = []
        modules = [sys.modules[n] for n in watched_modules()]
        self._modules = {m.__name__: m for m in modules}
        for mod in modules:
            spaces.append(self._namespace(mod.__name__, mod, vars(mod), False))
        classes = [c for c in (_resolve(s) for s in _CLASSES) if c is not None]
        own = _own_classes(m for m in modules if m.__name__.startswith("sweep"))
        seen: set[int] = set()
        for cls in [*classes, *own]:
            if id(cls) in seen:
                continue
            seen.add(id(cls))
            # A class's __dict__ is a read-only proxy of the live dict: reading it later sees changes.
            name = f"{cls.__module__}.{cls.__qualname__}"
            spaces.append(self._namespace(name, cls, cls.__dict__, True))  # type: ignore[arg-type]
        self._spaces = spaces
        # A function keeps its identity when its code is swapped (``f.__code__ = g.__code__``).
        funcs = {id(f): f for ns in spaces for f in map(_function_of, ns.values) if f is not None}
        self._funcs = tuple(funcs.values())
        self._codes = tuple(f.__code__ for f in self._funcs)
        self._defaults = tuple((f.__defaults__, f.__kwdefaults__) for f in self._funcs)
        self._trace = (sys.gettrace(), sys.getprofile())
        self._modes = _mode_depths()
        self._kernels = _python_kernels()
        self._operators = self._operator_names()
        self.threads = thread_ids()

    @staticmethod
    def _namespace(name: str, owner: object, space: dict[str, object], is_class: bool) -> _Namespace:
        items = list(space.items())
        rebound = _REBOUND_BY_TORCH.get(name, frozenset())
        entries = [(k, v) for k, v in items if k not in _VOLATILE and k not in rebound and _is_code(v)]
        keys = tuple(k for k, _ in entries)
        values = tuple(v for _, v in entries)
        return _Namespace(name, owner, space, keys, values, len(items), is_class, _getter(keys))

    def _operator_names(self) -> frozenset[str]:
        """Every operator the dispatcher knew at the snapshot, as ``namespace::name.overload``."""
        torch = sys.modules.get("torch")
        names = getattr(getattr(torch, "_C", None), "_dispatch_get_all_op_names", None)
        return frozenset(str(n) for n in names()) if names is not None else frozenset()

    def changes(self) -> list[str]:
        """What differs from the snapshot, one phrase each (empty when nothing does)."""
        out: list[str] = []
        for ns in self._spaces:
            space = ns.space
            # One pass in C over the identities; the names only when one differs.
            try:
                same = all(map(operator.is_, ns.get(space), ns.values))
            except KeyError:
                same = False
            if not same:
                for key, value in zip(ns.keys, ns.values):
                    now = space.get(key, _MISSING)
                    if now is not value:
                        out.append(f"{ns.name}.{key} {'removed' if now is _MISSING else 'replaced'}")
            if ns.is_class and len(space) != ns.size:
                known = set(ns.keys)
                added = [k for k, v in list(space.items()) if k not in known and _is_code(v)]
                out.extend(f"{ns.name}.{k} added" for k in added if k not in _VOLATILE)
        if not all(map(operator.is_, map(_CODE, self._funcs), self._codes)) or not all(
            map(_same_defaults, map(_DEFAULTS, self._funcs), self._defaults)
        ):
            for f, code, defaults in zip(self._funcs, self._codes, self._defaults):
                if f.__code__ is not code or not _same_defaults(_DEFAULTS(f), defaults):
                    out.append(f"{f.__module__}.{f.__qualname__}: its code or defaults replaced")
        for name, mod in self._modules.items():
            if sys.modules.get(name) is not mod:
                out.append(f"sys.modules[{name!r}] replaced")
        if (sys.gettrace(), sys.getprofile()) != self._trace:
            out.append("a trace or profile function set (sys.settrace / sys.setprofile)")
        fn_modes, dispatch_modes = _mode_depths()
        if fn_modes > self._modes[0]:
            out.append(f"{fn_modes - self._modes[0]} torch function mode(s) left pushed")
        if dispatch_modes > self._modes[1]:
            out.append(f"{dispatch_modes - self._modes[1]} torch dispatch mode(s) left pushed")
        for kernel in sorted(_python_kernels() - self._kernels):
            namespace, _, rest = kernel.partition("/")
            op, _, key = rest.rpartition("/")
            # A kernel for an operator defined since (torch defines some lazily) is new, not an
            # override; a Meta kernel computes shapes, never values.
            if key != "Meta" and f"{namespace}::{op}" in self._operators:
                out.append(
                    f"a kernel registered for the existing operator {namespace}::{op} ({key}, torch.library)"
                )
        return out

    def restore(self) -> None:
        """Put back every replaced or removed entry, code object and module, drop entries added
        to watched classes, clear tracers and pop modes left pushed: so that what runs after a
        tampering solution (the trace's building and sending) runs the harness's own code."""
        for ns in self._spaces:
            for key, value in zip(ns.keys, ns.values):
                if ns.space.get(key, _MISSING) is not value:
                    _put(ns, key, value)
            if ns.is_class and len(ns.space) != ns.size:
                known = set(ns.keys)
                for key in [k for k, v in list(ns.space.items()) if k not in known and _is_code(v)]:
                    _drop(ns, key)
        for f, code, (defaults, kwdefaults) in zip(self._funcs, self._codes, self._defaults):
            f.__code__, f.__defaults__, f.__kwdefaults__ = code, defaults, kwdefaults
        sys.modules.update(self._modules)
        sys.settrace(self._trace[0])
        sys.setprofile(self._trace[1])
        torch = sys.modules.get("torch")
        if torch is not None:
            c = torch._C
            while _mode_depths()[0] > self._modes[0] and hasattr(c, "_pop_torch_function_stack"):
                c._pop_torch_function_stack()
            while _mode_depths()[1] > self._modes[1] and hasattr(c, "_pop_torch_dispatch_stack"):
                c._pop_torch_dispatch_stack()

    def busy_threads(self) -> list[str]:
        """Threads started since the snapshot that are running code, as ``name (file:line)``;
        a thread waiting in the standard library's queues and pools is idle (``_threads``)."""
        return busy_threads(self.threads)


_CODE = operator.attrgetter("__code__")
_DEFAULTS = operator.attrgetter("__defaults__", "__kwdefaults__")


def _same_defaults(a: tuple[object, object], b: tuple[object, object]) -> bool:
    return a[0] is b[0] and a[1] is b[1]


def _function_of(value: object) -> types.FunctionType | None:
    """The Python function behind a watched value (a method's, a static or class method's)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return value if isinstance(value, types.FunctionType) else None


def _getter(keys: tuple[str, ...]) -> Callable[[dict[str, object]], tuple[object, ...]]:
    """A C-speed read of ``keys`` from a dictionary, always as a tuple."""
    if len(keys) > 1:
        return operator.itemgetter(*keys)
    if keys:
        key = keys[0]
        return lambda space: (space[key],)
    return lambda space: ()


def _put(ns: _Namespace, key: str, value: object) -> None:
    try:
        setattr(ns.owner, key, value)
    except (AttributeError, TypeError):
        pass


def _drop(ns: _Namespace, key: str) -> None:
    try:
        delattr(ns.owner, key)
    except (AttributeError, TypeError):
        pass


_MISSING = object()
_BASELINE: Guard | None = None


def import_first() -> None:
    """Import what evaluations use (once; later calls cost a lookup each)."""
    for name in _IMPORT_FIRST:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except ImportError:  # an optional package (triton beside a CPU-only torch, say)
            pass


def baseline() -> Guard:
    """Import what evaluations use, then capture this process's snapshot and keep it for every
    later evaluation here.

    A sandbox's zygote calls this (``sweep.engine.preload``), so every task's process, forked
    from it, starts from a snapshot no solution code preceded."""
    global _BASELINE
    import_first()
    _BASELINE = Guard()
    return _BASELINE


def guard() -> Guard:
    """The snapshot an evaluation checks against: the process's baseline when one was taken
    (a sandbox's process, fresh for its one task), else one taken now (an evaluation in a
    process that ran others: what they changed is not this task's)."""
    if _BASELINE is not None:
        return _BASELINE
    import_first()
    return Guard()

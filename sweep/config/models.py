"""The sweep config: one YAML file that says what to evaluate, where, and how.

Precedence, highest first, applied in one place (:func:`sweep.config.load_config`):

1. command-line flags (a :class:`ConfigOverrides`, applied by :func:`apply_overrides`);
   a flag left unset (``None``) leaves the value below alone;
2. the environment: ``RAY_ADDRESS``, when set and non-empty, for the Ray address;
3. the YAML file;
4. the defaults written on the models below (and :data:`DEFAULT_RESULTS_DIR`,
   :data:`STORE_FILE_NAME` for where results go).

``sweep eval`` has no config file: its flags go over :class:`EvalSettings`' defaults through
:func:`apply_settings_overrides`, the same rule :func:`apply_overrides` uses for ``evaluation``.
Relative paths in the YAML (``dataset``, ``output.results_dir``, ``output.store``) are
relative to the config file's folder; relative paths given as flags are relative to the
current directory. The environment layer is read where it is used: :func:`resolve_address`
applies flag > ``RAY_ADDRESS`` > YAML when the launch connects, so the environment never
changes a loaded config (nor its hash); a flag does, like every flag.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, StrictBool, field_validator

from sweep.config.search import SearchSettings, ShapeBucket
from sweep.errors import shown
from sweep.schema.hardware import HardwareChoice, hardware_choice, hardware_entries, hardware_shape_problem
from sweep.schema.limits import INT64_MAX, INT64_MIN
from sweep.schema.params import MAX_GRID_POINTS, ParamValue, space_problems
from sweep.schema.settings import EvalSettings, StrictModel, without_later_defaults

__all__ = [
    "DEFAULT_RESULTS_DIR",
    "DEFAULT_STORE_PATH",
    "STORE_FILE_NAME",
    "ConfigOverrides",
    "DefinitionSelect",
    "OutputSettings",
    "ParamsSample",
    "ProfileSettings",
    "RaySettings",
    "SearchSettings",
    "ShapeBucket",
    "SolutionSelect",
    "SweepConfig",
    "WorkloadSelect",
    "apply_overrides",
    "apply_settings_overrides",
    "default_store_path",
    "resolve_address",
]

#: Where results go when neither the config nor a flag says (relative to the config's folder).
DEFAULT_RESULTS_DIR = "results"
#: The DuckDB store's file name inside the results folder, when ``output.store`` is not set.
STORE_FILE_NAME = "sweep.duckdb"


def default_store_path(results_dir: str | Path = DEFAULT_RESULTS_DIR) -> Path:
    """The store of a results folder: ``<results_dir>/sweep.duckdb``."""
    return Path(results_dir) / STORE_FILE_NAME


#: The store the ``sweep ingest/query/report/export`` commands use by default.
DEFAULT_STORE_PATH = default_store_path()


class DefinitionSelect(StrictModel):
    """Which definitions to sweep; empty lists select everything. Filters combine with AND."""

    names: list[str] = Field(default_factory=list, description="exact names or globs (fnmatch)")
    op_types: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, description="a definition needs all of these")


class ParamsSample(StrictModel):
    """A seeded, reproducible subset of each solution's parameter points per workload."""

    max_points: int = Field(
        ge=1, le=MAX_GRID_POINTS, description="at most this many points per solution and workload"
    )
    seed: int = Field(default=0, ge=INT64_MIN, le=INT64_MAX)


class SolutionSelect(StrictModel):
    """Which solutions to sweep; empty lists select everything."""

    names: list[str] = Field(default_factory=list, description="exact names or globs (fnmatch)")
    authors: list[str] = Field(default_factory=list)
    languages: list[Literal["python", "triton", "cuda", "cpp", "tilelang"]] = Field(default_factory=list)
    ignore_target_hardware: StrictBool = Field(
        default=False,
        description=(
            "evaluate solutions whatever their target_hardware says (porting a kernel written for "
            "another GPU); each such trace records the targets it was written for "
            "(provenance.ported_from)"
        ),
    )
    params: dict[str, dict[str, list[ParamValue]]] = Field(
        default_factory=dict,
        description=(
            "per solution glob: parameter name -> the values to sweep, replacing the solution's list "
            "(a solution without params gets this space)"
        ),
    )
    params_sample: ParamsSample | None = Field(
        default=None, description="sweep a seeded subset of the valid points of each solution and workload"
    )
    search: SearchSettings = Field(
        default_factory=SearchSettings, description="how points are chosen: grid, random, forest, evolution"
    )

    @field_validator("params")
    @classmethod
    def _params(cls, v: dict[str, dict[str, list[ParamValue]]]) -> dict[str, dict[str, list[ParamValue]]]:
        for glob, space in v.items():
            problems = space_problems(space, [])
            if problems:
                raise ValueError(f"{shown(glob)}: " + "; ".join(problems))
        return v


class WorkloadSelect(StrictModel):
    """Which workloads of each definition to run."""

    limit_per_definition: int | None = Field(default=None, ge=1, le=INT64_MAX)
    uuids: list[str] = Field(default_factory=list)


class RaySettings(StrictModel):
    """Where to run: ``address`` of an existing cluster, or none for an embedded local Ray.

    On an existing cluster the GPU workers outlive the launch (``keep_workers``): the next
    launch reuses them when its code and setup match theirs, and an unused one stops itself
    after ``idle_timeout_s`` (``sweep workers`` lists and stops them).
    """

    address: str | None = None
    runtime_env: dict[str, JsonValue] = Field(default_factory=dict)
    num_cpus: int | None = Field(default=None, ge=1, le=INT64_MAX, description="embedded Ray only")
    num_gpus: int | None = Field(default=None, ge=0, le=INT64_MAX, description="embedded Ray only")
    compile_workers: Literal["auto"] | Annotated[int, Field(ge=0, le=256)] = Field(
        default="auto",
        description=(
            "processes beside each GPU worker that compile the tasks it runs next (0: none; "
            "auto: the node's CPUs per GPU less one, at most 8, and none on CPU)"
        ),
    )
    zygote_handover: bool = Field(
        default=True,
        description=(
            "embedded Ray only: the command starts its workers' zygotes (import torch and the "
            "engine) beside Ray's start, and each worker adopts one"
        ),
    )
    head_start: Literal["auto"] | bool = Field(
        default="auto",
        description=(
            "embedded Ray with zygotes handed over only: the command evaluates its first tasks "
            "itself, on those zygotes, while Ray starts; then each goes to its worker (auto: on "
            "GPUs, not CPUs, whose cores Ray's start needs)"
        ),
    )
    keep_workers: bool = Field(
        default=True, description="existing cluster only: workers outlive the launch, reused by the next"
    )
    idle_timeout_s: float = Field(
        default=600.0, gt=0, le=7 * 86400, description="a kept worker unused this long stops itself"
    )


class OutputSettings(StrictModel):
    """Where results go (relative paths are relative to the config file's folder)."""

    results_dir: str = Field(default=DEFAULT_RESULTS_DIR, min_length=1)
    store: str | None = Field(
        default=None, min_length=1, description=f"default: <results_dir>/{STORE_FILE_NAME}"
    )

    @field_validator("results_dir", "store")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        return _no_nul(v)

    def store_path(self) -> str:
        """The DuckDB file, defaulting to ``<results_dir>/sweep.duckdb``."""
        return self.store or str(default_store_path(self.results_dir))


class ProfileSettings(StrictModel):
    """``sweep profile``: the deadline of each tool run and how many solution calls it sees."""

    timeout_s: float = Field(default=600.0, gt=0, le=86400, description="per tool run, killed after")
    calls: int = Field(default=5, ge=1, le=1000, description="solution calls inside the profiled range")


class SweepConfig(StrictModel):
    """One sweep: what to evaluate (dataset and selections), on what, and how."""

    name: str = Field(min_length=1)
    dataset: list[str] = Field(min_length=1, description="dataset roots (FlashInfer-Bench layout)")
    hardware: str | list[str] = Field(
        default="auto",
        description=(
            "target: 'cpu', 'auto' (whatever this machine has), a GPU type like 'H100', a list of "
            "them ([H100, H200] or 'H100,H200': one task per type), or 'all' (every GPU type of "
            "the cluster)"
        ),
    )
    definitions: DefinitionSelect = DefinitionSelect()
    solutions: SolutionSelect = SolutionSelect()
    workloads: WorkloadSelect = WorkloadSelect()
    evaluation: EvalSettings = EvalSettings()
    ray: RaySettings = RaySettings()
    output: OutputSettings = OutputSettings()
    profile: ProfileSettings = ProfileSettings()

    @field_validator("dataset", mode="before")
    @classmethod
    def _one_root(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v

    @field_validator("dataset")
    @classmethod
    def _roots(cls, v: list[str]) -> list[str]:
        for root in v:
            if not root:
                raise ValueError("a dataset root must not be empty")
            _no_nul(root)
        return v

    @field_validator("evaluation")
    @classmethod
    def _iterations(cls, v: EvalSettings) -> EvalSettings:
        # Refused where a person writes them; the engine itself clamps (the stopping rule
        # takes the larger), so settings records stay loadable.
        if v.min_iterations > v.max_iterations:
            raise ValueError(
                f"min_iterations ({v.min_iterations}) is more than max_iterations ({v.max_iterations})"
            )
        return v

    @field_validator("hardware", mode="before")
    @classmethod
    def _hardware_list(cls, v: object) -> object:
        # 'H100,H200' (how --hardware lists several, and a YAML plain scalar) is the list
        # [H100, H200]; one name stays a string, so the hash of an existing config is unchanged.
        if isinstance(v, str):
            return hardware_entries(v) if "," in v else v
        # One message instead of pydantic's two (one per member of the union).
        if not isinstance(v, list):
            problem = f"must be a name ('H100') or a list of names ([H100, H200]), got {shown(v)}"
        else:
            bad = next(((i, e) for i, e in enumerate(v) if not isinstance(e, str)), None)
            if bad is None:
                return v
            problem = f"entry {bad[0] + 1} of the list must be a name such as 'H100', got {shown(bad[1])}"
        raise ValueError(problem)

    @field_validator("hardware")
    @classmethod
    def _hardware(cls, v: str | list[str]) -> str | list[str]:
        # Only the shape here (empty, duplicates, 'all' in a list): names are checked where a
        # person wrote them (load_config), since a launch re-validates the config with
        # whatever GPU the cluster reports.
        problem = hardware_shape_problem(v)
        if problem is not None:
            raise ValueError(problem)
        return v

    def hardware_choice(self) -> HardwareChoice:
        """What ``hardware`` asks for: ``auto``, ``all``, or its targets in normal form."""
        return hardware_choice(self.hardware)

    def config_hash(self) -> str:
        """Stable hash of the whole config (but ``profile``, whether workers are kept, how
        many processes compile ahead and whether zygotes are handed over: they change no result)."""
        skip: dict[str, Any] = {
            "profile": True,
            "ray": {
                "keep_workers": True,
                "idle_timeout_s": True,
                "compile_workers": True,
                "zygote_handover": True,
                "head_start": True,
            },
            # How points are chosen changes no result of a point; and configs written before
            # there was a search keep their hash.
            "solutions": {"search": True},
        }
        data = self.model_dump(mode="json", exclude=skip)
        data["evaluation"] = without_later_defaults(data["evaluation"], config=True)
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class ConfigOverrides(StrictModel):
    """What the command line may override in a config; ``None`` keeps the YAML value."""

    name: str | None = Field(default=None, min_length=1)
    hardware: str | None = Field(
        default=None, min_length=1, description="one target, 'auto', 'all', or several: 'H100,H200'"
    )
    address: str | None = Field(default=None, description="Ray cluster address (ray.address)")
    results_dir: str | None = Field(default=None, min_length=1)
    store: str | None = Field(default=None, min_length=1)
    seed: int | None = Field(default=None, ge=INT64_MIN, le=INT64_MAX)
    trials: int | None = Field(
        default=None, ge=1, le=INT64_MAX, description="correctness trials (evaluation.trials)"
    )
    limit_per_definition: int | None = Field(default=None, ge=1, le=INT64_MAX)
    #: The hardware named (by the flag or the YAML) is a new GPU type, not a typo of a known one.
    new_hardware: bool | None = None
    keep_workers: bool | None = Field(default=None, description="ray.keep_workers")

    @field_validator("results_dir", "store")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        return _no_nul(v)

    def is_empty(self) -> bool:
        """True when nothing is overridden."""
        return all(v is None for v in self.model_dump().values())


def _no_nul(path: str | None) -> str | None:
    """``path``, unless it holds a NUL, which no file system allows in a path."""
    if path is not None and "\x00" in path:
        raise ValueError(f"a path must not contain a NUL character, got {shown(path)}")
    return path


def resolve_address(flag: str | None, config: SweepConfig) -> str | None:
    """The Ray cluster to connect to: ``flag``, then ``RAY_ADDRESS``, then the config's
    ``ray.address`` (the first set and non-empty); ``None`` means an embedded local Ray."""
    for value in (flag, os.environ.get("RAY_ADDRESS"), config.ray.address):
        if value:
            return value
    return None


def _evaluation_overrides(overrides: ConfigOverrides) -> dict[str, int]:
    """The ``evaluation`` settings the flags set (``--seed``, ``--trials``)."""
    fields = {"seed": overrides.seed, "trials": overrides.trials}
    return {k: v for k, v in fields.items() if v is not None}


def apply_settings_overrides(settings: EvalSettings, overrides: ConfigOverrides | None) -> EvalSettings:
    """``settings`` with the evaluation flags of ``overrides`` (seed, trials) over them.

    The rule :func:`apply_overrides` applies to a config's ``evaluation`` section, for
    commands that have settings but no config (``sweep eval``). Validated again.
    """
    fields = _evaluation_overrides(overrides) if overrides is not None else {}
    if not fields:
        return settings
    return EvalSettings.model_validate({**settings.model_dump(mode="json", exclude_unset=True), **fields})


def apply_overrides(config: SweepConfig, overrides: ConfigOverrides | None) -> SweepConfig:
    """The config with every set field of ``overrides`` replacing its YAML value.

    The result is validated again, so an override gets the same checks as the YAML. The
    address flag lands in ``ray.address`` like any flag; ``RAY_ADDRESS``, which sits between
    the flag and the YAML, is read when connecting (:func:`resolve_address`), so the
    environment never changes the config or its hash.
    """
    if overrides is None or overrides.is_empty():
        return config
    o = overrides
    data = config.model_dump(mode="json", exclude_unset=True)
    if o.name is not None:
        data["name"] = o.name
    if o.hardware is not None:
        data["hardware"] = o.hardware
    if o.address is not None:
        data.setdefault("ray", {})["address"] = o.address
    if o.keep_workers is not None:
        data.setdefault("ray", {})["keep_workers"] = o.keep_workers
    if o.results_dir is not None:
        data.setdefault("output", {})["results_dir"] = o.results_dir
    if o.store is not None:
        data.setdefault("output", {})["store"] = o.store
    evaluation = _evaluation_overrides(o)
    if evaluation:
        data.setdefault("evaluation", {}).update(evaluation)
    if o.limit_per_definition is not None:
        data.setdefault("workloads", {})["limit_per_definition"] = o.limit_per_definition
    return SweepConfig.model_validate(data)

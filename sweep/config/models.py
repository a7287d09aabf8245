"""The sweep config: one YAML file that says what to evaluate, where, and how.

Precedence, in one place: command-line flags (a :class:`ConfigOverrides`) override the
YAML, which overrides the defaults written on the models below (see :func:`apply_overrides`).
A flag left unset (``None``) leaves the YAML value alone. Relative paths in the YAML
(``dataset``, ``output.results_dir``, ``output.store``) are relative to the config file's
folder; relative paths given as flags are relative to the current directory.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, field_validator

from sweep.schema.settings import EvalSettings, StrictModel

__all__ = [
    "ConfigOverrides",
    "DefinitionSelect",
    "OutputSettings",
    "RaySettings",
    "SolutionSelect",
    "SweepConfig",
    "WorkloadSelect",
    "apply_overrides",
]


class DefinitionSelect(StrictModel):
    """Which definitions to sweep; empty lists select everything. Filters combine with AND."""

    names: list[str] = Field(default_factory=list, description="exact names or globs (fnmatch)")
    op_types: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, description="a definition needs all of these")


class SolutionSelect(StrictModel):
    """Which solutions to sweep; empty lists select everything."""

    names: list[str] = Field(default_factory=list, description="exact names or globs (fnmatch)")
    authors: list[str] = Field(default_factory=list)
    languages: list[Literal["python", "triton", "cuda", "cpp", "tilelang"]] = Field(default_factory=list)


class WorkloadSelect(StrictModel):
    """Which workloads of each definition to run."""

    limit_per_definition: int | None = Field(default=None, ge=1)
    uuids: list[str] = Field(default_factory=list)


class RaySettings(StrictModel):
    """Where to run: ``address`` of an existing cluster, or none for an embedded local Ray."""

    address: str | None = None
    runtime_env: dict[str, JsonValue] = Field(default_factory=dict)
    num_cpus: int | None = Field(default=None, ge=1, description="embedded Ray only")
    num_gpus: int | None = Field(default=None, ge=0, description="embedded Ray only")


class OutputSettings(StrictModel):
    """Where results go (relative paths are relative to the config file's folder)."""

    results_dir: str = "results"
    store: str | None = Field(default=None, description="default: <results_dir>/sweep.duckdb")

    def store_path(self) -> str:
        """The DuckDB file, defaulting to ``<results_dir>/sweep.duckdb``."""
        return self.store or str(Path(self.results_dir) / "sweep.duckdb")


class SweepConfig(StrictModel):
    """One sweep: what to evaluate (dataset and selections), on what, and how."""

    name: str = Field(min_length=1)
    dataset: list[str] = Field(min_length=1, description="dataset roots (FlashInfer-Bench layout)")
    hardware: str = Field(
        default="auto",
        description="target: 'cpu', 'auto' (whatever this machine has), or a GPU type like 'H100'",
    )
    definitions: DefinitionSelect = DefinitionSelect()
    solutions: SolutionSelect = SolutionSelect()
    workloads: WorkloadSelect = WorkloadSelect()
    evaluation: EvalSettings = EvalSettings()
    ray: RaySettings = RaySettings()
    output: OutputSettings = OutputSettings()

    @field_validator("dataset", mode="before")
    @classmethod
    def _one_root(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v

    def config_hash(self) -> str:
        """Stable hash of the whole config."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class ConfigOverrides(StrictModel):
    """What the command line may override in a config; ``None`` keeps the YAML value."""

    name: str | None = Field(default=None, min_length=1)
    hardware: str | None = Field(default=None, min_length=1)
    address: str | None = Field(default=None, description="Ray cluster address (ray.address)")
    results_dir: str | None = None
    store: str | None = None
    seed: int | None = None
    limit_per_definition: int | None = Field(default=None, ge=1)

    def is_empty(self) -> bool:
        """True when nothing is overridden."""
        return all(v is None for v in self.model_dump().values())


def apply_overrides(config: SweepConfig, overrides: ConfigOverrides | None) -> SweepConfig:
    """The config with every set field of ``overrides`` replacing its YAML value.

    The result is validated again, so an override gets the same checks as the YAML.
    """
    if overrides is None or overrides.is_empty():
        return config
    data = config.model_dump(mode="json", exclude_unset=True)
    o = overrides
    if o.name is not None:
        data["name"] = o.name
    if o.hardware is not None:
        data["hardware"] = o.hardware
    if o.address is not None:
        data.setdefault("ray", {})["address"] = o.address
    if o.results_dir is not None:
        data.setdefault("output", {})["results_dir"] = o.results_dir
    if o.store is not None:
        data.setdefault("output", {})["store"] = o.store
    if o.seed is not None:
        data.setdefault("evaluation", {})["seed"] = o.seed
    if o.limit_per_definition is not None:
        data.setdefault("workloads", {})["limit_per_definition"] = o.limit_per_definition
    return SweepConfig.model_validate(data)

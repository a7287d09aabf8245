"""The config stage: the sweep YAML model, reading it, and command-line overrides.

- :mod:`sweep.config.models`: what a sweep config holds (:class:`SweepConfig` and its
  sections) and :class:`ConfigOverrides`, the one path by which flags reach a config.
- :mod:`sweep.config.yaml_file`: reading a config file with ``file:line`` errors, resolving
  its relative paths, applying overrides (:func:`load_config`).

Precedence, in one place: flags > YAML > the defaults on the models. The evaluation
settings are records (``sweep.schema.settings``: a task carries them) and are re-exported here.
"""

from sweep.config.models import (
    ConfigOverrides,
    DefinitionSelect,
    OutputSettings,
    RaySettings,
    SolutionSelect,
    SweepConfig,
    WorkloadSelect,
    apply_overrides,
)
from sweep.config.yaml_file import load_config, read_config_file, resolve_paths
from sweep.schema.settings import EvalSettings, Timeouts, Tolerance

__all__ = [
    "ConfigOverrides",
    "DefinitionSelect",
    "EvalSettings",
    "OutputSettings",
    "RaySettings",
    "SolutionSelect",
    "SweepConfig",
    "Timeouts",
    "Tolerance",
    "WorkloadSelect",
    "apply_overrides",
    "load_config",
    "read_config_file",
    "resolve_paths",
]

"""The config stage: the sweep YAML model, reading it, and command-line overrides.

- :mod:`sweep.config.models`: what a sweep config holds (:class:`SweepConfig` and its
  sections), :class:`ConfigOverrides` (the one path by which flags reach a config or the
  evaluation settings), the precedence rules (:func:`apply_overrides`,
  :func:`apply_settings_overrides`, :func:`resolve_address`) and where results go by
  default (:data:`DEFAULT_RESULTS_DIR`, :data:`STORE_FILE_NAME`).
- :mod:`sweep.config.yaml_file`: reading a config file with ``file:line`` errors, resolving
  its relative paths, and :func:`load_config`, where the layers are applied.

Precedence, in one module: flags > environment > YAML > the defaults on the models.
:func:`load_config` applies flags over the YAML; the one environment variable,
``RAY_ADDRESS``, sits between the address flag and the YAML and is applied when connecting
(:func:`resolve_address`), so it never changes a loaded config. ``sweep eval``,
which has no config, puts its flags over the default evaluation settings by the same rule
(:func:`apply_settings_overrides`). The evaluation settings are records
(``sweep.schema.settings``: a task carries them) and are re-exported here.
"""

from sweep.config import models, yaml_file
from sweep.config.models import *
from sweep.config.yaml_file import *
from sweep.schema.settings import EvalSettings, Timeouts, Tolerance

__all__ = ["EvalSettings", "Timeouts", "Tolerance"]
__all__ += models.__all__
__all__ += yaml_file.__all__

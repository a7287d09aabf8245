"""Command-line flags shared by several commands: one definition (name, help) per flag.

Most override a sweep config, for every command that reads one. Use them as parameter annotations, then build a :class:`~sweep.config.ConfigOverrides` with
:func:`make_overrides`: every flag that overrides a config or the evaluation settings reaches
them through it. Precedence (flags > ``RAY_ADDRESS`` > YAML > defaults) is applied in
:func:`sweep.config.load_config` and documented in ``sweep.config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pydantic
import typer

from sweep.config import ConfigOverrides
from sweep.errors import ConfigError

__all__ = [
    "AddressOpt",
    "DeviceOpt",
    "HardwareOpt",
    "KeepWorkersOpt",
    "LimitOpt",
    "NameOpt",
    "NewHardwareOpt",
    "QuietOpt",
    "ResultsDirOpt",
    "RootsOpt",
    "SeedOpt",
    "StoreLogsOpt",
    "StoreOpt",
    "make_overrides",
]

NameOpt = Annotated[str | None, typer.Option("--name", help="Sweep name (overrides 'name').")]
HardwareOpt = Annotated[
    str | None,
    typer.Option(
        "--hardware",
        help="Target: cpu, auto, a GPU type like H100, several (H100,H200: each task once per "
        "type), or all (every GPU type of the cluster) (overrides 'hardware').",
    ),
]
AddressOpt = Annotated[
    str | None, typer.Option("--address", help="Ray cluster address (overrides 'ray.address').")
]
ResultsDirOpt = Annotated[
    str | None, typer.Option("--results-dir", help="Results folder (overrides 'output.results_dir').")
]
StoreOpt = Annotated[str | None, typer.Option("--store", help="DuckDB file (overrides 'output.store').")]
NewHardwareOpt = Annotated[
    bool,
    typer.Option(
        "--new-hardware",
        help="The hardware named is a new GPU type on purpose, not a typo of a known one (H10 vs H100).",
    ),
]
KeepWorkersOpt = Annotated[
    bool | None,
    typer.Option(
        "--keep-workers/--no-keep-workers",
        help="On an existing cluster, leave the GPU workers running for the next launch, which "
        "reuses them when its code and setup match (overrides 'ray.keep_workers'; default: keep).",
        show_default=False,
    ),
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Input seed (overrides 'evaluation.seed').")]
LimitOpt = Annotated[
    int | None,
    typer.Option(
        "--limit-per-definition",
        min=1,
        help="At most this many workloads per definition (overrides 'workloads.limit_per_definition').",
    ),
]

# Flags of commands that take no sweep config.
DeviceOpt = Annotated[
    str | None, typer.Option("--device", help="cpu, cuda or cuda:N (default: cuda if available).")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress line.")]
RootsOpt = Annotated[
    list[Path] | None,
    typer.Option("--root", "-r", help="Dataset root (repeatable; default: the current directory)."),
]
StoreLogsOpt = Annotated[
    Path | None, typer.Option("--results-dir", help="Results folder whose logs complete --store.")
]


def make_overrides(
    *,
    name: str | None = None,
    hardware: str | None = None,
    address: str | None = None,
    results_dir: str | None = None,
    store: str | None = None,
    seed: int | None = None,
    trials: int | None = None,
    limit_per_definition: int | None = None,
    new_hardware: bool = False,
    keep_workers: bool | None = None,
) -> ConfigOverrides:
    """The overrides given on the command line (unset flags stay ``None``).

    Raises:
        ConfigError: A flag's value is out of range (e.g. an empty ``--hardware``).
    """
    try:
        return ConfigOverrides(
            name=name,
            hardware=hardware,
            address=address,
            results_dir=results_dir,
            store=store,
            seed=seed,
            trials=trials,
            limit_per_definition=limit_per_definition,
            new_hardware=True if new_hardware else None,
            keep_workers=keep_workers,
        )
    except pydantic.ValidationError as e:
        bad = "; ".join(
            f"--{str(x['loc'][0]).replace('_', '-')}: {str(x['msg']).removeprefix('Value error, ')}"
            for x in e.errors()
        )
        raise ConfigError(f"bad command-line value: {bad}") from None

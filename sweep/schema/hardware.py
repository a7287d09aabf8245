"""Hardware names: one normal form for device names, config targets and solution targets.

Real FlashInfer-Bench traces carry raw device names ("NVIDIA A800-SXM4-80GB"), its docs use
"NVIDIA_H100", Ray calls the same GPU "H100", users write "h100". All of them reduce to a short
model name ("H100", "A800", "CPU") for matching, and to ``NVIDIA_<model>`` for records.

A config's ``hardware`` becomes a *target* in one place, :func:`config_target`; the plan
stamps that target on every task and the launcher hands it on as it is (the scheduler
matches tasks to worker pools by it without normalising again).
"""

from __future__ import annotations

import re

__all__ = [
    "ANY_GPU_WORDS",
    "ANY_WORDS",
    "AUTO",
    "CPU",
    "config_target",
    "record_name",
    "short_name",
    "solution_targets_match",
]

CPU = "CPU"
#: A config's ``hardware`` meaning "whatever the machine (or the cluster) has".
AUTO = "auto"
ANY_WORDS = frozenset({"*", "any", "all"})
ANY_GPU_WORDS = frozenset({"gpu", "cuda", "nvidia"})
_VENDOR = re.compile(r"^(nvidia|amd|intel)[\s_-]+", re.IGNORECASE)
_NOISE = re.compile(r"^(geforce|tesla|quadro|rtx|instinct)[\s_-]+", re.IGNORECASE)


def short_name(name: str) -> str:
    """Reduce any spelling of a device to its model name.

    Examples: ``"NVIDIA H100 80GB HBM3" -> "H100"``, ``"NVIDIA_H200" -> "H200"``,
    ``"NVIDIA A800-SXM4-80GB" -> "A800"``, ``"h100" -> "H100"``, ``"cpu" -> "CPU"``,
    ``"NVIDIA GeForce RTX 4090" -> "RTX4090"``, ``"AMD Instinct MI300X" -> "MI300X"``.
    """
    text = name.strip()
    if text.lower() in ("cpu", "host") or text.lower().startswith("cpu"):
        return CPU
    text = _VENDOR.sub("", text)
    rtx = bool(re.match(r"^(geforce[\s_-]+)?rtx[\s_-]+", text, re.IGNORECASE))
    while _NOISE.match(text):
        text = _NOISE.sub("", text)
    model = re.split(r"[\s_]+|-(?=[A-Za-z]{2,})", text, maxsplit=1)[0]
    model = model.upper()
    return ("RTX" + model) if rtx and not model.startswith("RTX") else model


def config_target(hardware: str) -> str | None:
    """A config's ``hardware`` as a target (``"CPU"``, ``"H100"``...), or ``None`` for ``"auto"``.

    The one place a config's hardware string is normalised: ``"h100"``, ``"NVIDIA_H100"`` and
    ``"H100"`` are the same target. ``"auto"`` (any case) is left to whoever can look at the
    hardware: the launcher asks the cluster, a pure plan takes CPU.
    """
    if hardware.strip().lower() == AUTO:
        return None
    return short_name(hardware)


def record_name(name: str) -> str:
    """The normalized ``environment.hardware`` value: ``NVIDIA_H100``, or ``CPU``."""
    short = short_name(name)
    if short == CPU:
        return CPU
    vendor = _VENDOR.match(name.strip())
    prefix = vendor.group(1).upper() if vendor else "NVIDIA"
    return f"{prefix}_{short}"


def solution_targets_match(target: str, solution_targets: list[str]) -> bool:
    """Whether a solution whose ``spec.target_hardware`` is ``solution_targets`` may run on
    ``target`` (a target as :func:`config_target` gives it, ``"H100"``; any spelling works).

    ``*``/``any``/``all`` match everything; ``gpu``/``cuda``/``nvidia`` match every GPU;
    other entries match by model name, so ``NVIDIA_H100`` and ``H100`` are the same.
    """
    want = short_name(target)
    for entry in solution_targets:
        word = entry.strip().lower()
        if word in ANY_WORDS:
            return True
        if word in ANY_GPU_WORDS and want != CPU:
            return True
        if short_name(entry) == want:
            return True
    return False

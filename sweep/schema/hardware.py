"""Hardware names: one normal form for device names, config targets and solution targets.

Real FlashInfer-Bench traces carry raw device names ("NVIDIA A800-SXM4-80GB"), its docs use
"NVIDIA_H100", Ray calls the same GPU "H100", users write "h100". All of them reduce to a short
model name ("H100", "A800", "CPU") for matching, and to ``NVIDIA_<model>`` for records.

A config's ``hardware`` is one name, a list of names or one of two words: ``auto`` (the one
type this machine or cluster has) and ``all`` (every GPU type of the cluster, one task per
type). :func:`hardware_choice` reads it into a :class:`HardwareChoice`, whose targets are in
normal form; the plan stamps a target on every task and the launcher hands it on as it is
(the scheduler matches tasks to worker pools by it without normalising again).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sweep.errors import listing, shown

__all__ = [
    "ALL",
    "ANY_GPU_WORDS",
    "ANY_WORDS",
    "AUTO",
    "CPU",
    "KNOWN_MODELS",
    "MAX_HARDWARE_CHARS",
    "MAX_TARGETS",
    "HardwareChoice",
    "config_target",
    "hardware_choice",
    "hardware_entries",
    "hardware_problem",
    "hardware_shape_problem",
    "record_name",
    "short_name",
    "solution_target_problem",
    "solution_targets_match",
]

CPU = "CPU"
#: A config's ``hardware`` meaning "whatever the machine (or the cluster) has".
AUTO = "auto"
#: A config's ``hardware`` meaning "every GPU type the cluster has", one task per type.
ALL = "all"
#: The most targets one config may list (a cluster has a few GPU types, not dozens).
MAX_TARGETS = 16
_NO_TARGET = "must name a target: 'auto', 'all', 'cpu', a GPU type such as 'H100', or a list of them"
ANY_WORDS = frozenset({"*", "any", "all"})
ANY_GPU_WORDS = frozenset({"gpu", "cuda", "nvidia"})
#: GPU models known by name (short form). A config may name another, with a warning; a name
#: one typo away from one of these is refused. Every key of ``peaks.DATASHEETS`` is here.
KNOWN_MODELS: frozenset[str] = frozenset(
    {
        *("H100", "H200", "H800", "H20", "GH200", "B100", "B200", "B300", "GB200", "GB300"),
        *("A100", "A800", "A10", "A10G", "A16", "A2", "A30", "A40", "L4", "L20", "L40", "L40S"),
        *("T4", "V100", "P100", "P40", "P4"),
        *(f"RTX{n}" for n in (2060, 2070, 2080, 3050, 3060, 3070, 3080, 3090, 4060, 4070, 4080, 4090)),
        *(f"RTX{n}" for n in (5060, 5070, 5080, 5090, 6000, 8000)),
        *(f"RTXA{n}" for n in (1000, 2000, 4000, 4500, 5000, 5500, 6000)),
        *("MI100", "MI210", "MI250", "MI250X", "MI300A", "MI300X", "MI325X", "MI350X", "MI355X"),
    }
)
#: The longest ``hardware`` a person may write (raw device names are about 30 characters).
MAX_HARDWARE_CHARS = 64
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


@dataclass(frozen=True)
class HardwareChoice:
    """What a config's ``hardware`` asks for.

    ``mode`` is ``"auto"`` (the one GPU type of the machine or cluster, or CPU without GPUs),
    ``"all"`` (every GPU type of the cluster: one task per type present) or ``"named"``
    (``targets``: short names such as ``("H100", "H200")``, in the order written, each once).
    """

    mode: Literal["auto", "all", "named"]
    targets: tuple[str, ...] = ()


def hardware_entries(hardware: str | Sequence[str]) -> list[str]:
    """The names a ``hardware`` value holds: a list as it is; a string split at its commas
    (``"H100,H200"``, how ``--hardware`` lists several), each part stripped of spaces."""
    if isinstance(hardware, str):
        return [part.strip() for part in hardware.split(",")] if "," in hardware else [hardware]
    return list(hardware)


def _word(entry: str) -> str | None:
    """``"auto"`` or ``"all"`` when ``entry`` is one of the two words (any case), else None."""
    word = entry.strip().lower()
    return word if word in (AUTO, ALL) else None


def hardware_shape_problem(hardware: str | Sequence[str]) -> str | None:
    """What is wrong with the shape of a ``hardware`` value, or ``None``.

    Its names are not judged here (:func:`hardware_problem` does, where a person wrote them):
    a list must not be empty nor longer than :data:`MAX_TARGETS`, hold no empty entry (nor
    one with a comma), name each target once (``H100`` and ``NVIDIA_H100`` are one), and
    ``auto`` and ``all`` stand alone, never in a list.
    """
    entries = hardware_entries(hardware)
    if not entries:
        return (
            "an empty list names no target: list GPU types ([H100, H200]), or write 'all' for "
            "every GPU type of the cluster"
        )
    if len(entries) > MAX_TARGETS:
        return f"lists {len(entries)} targets, more than {MAX_TARGETS}; a sweep runs on a few GPU types"
    if len(entries) == 1 and not entries[0].strip():
        return _NO_TARGET
    seen: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if not entry.strip():
            return f"entry {i + 1} of {len(entries)} is empty (a stray comma?): {shown(hardware)}"
        if "," in entry:  # only in a list: a string is split at its commas
            return f"entry {i + 1} of the list, {shown(entry)}, holds a comma: give each name its own entry"
        word = _word(entry)
        if word is not None and not (isinstance(hardware, str) and len(entries) == 1):
            return f"{shown(entry)} stands alone ('hardware: {word}'), never in a list of targets"
        short = short_name(entry)
        if short in seen:
            return f"names {short} twice ({shown(seen[short])} and {shown(entry)}); list each GPU type once"
        seen[short] = entry
    return None


def hardware_choice(hardware: str | Sequence[str]) -> HardwareChoice:
    """A config's ``hardware`` read: ``auto``, ``all``, or its targets in normal form.

    The one place a config's hardware is normalised: ``"h100"``, ``"NVIDIA_H100"`` and
    ``"H100"`` are the same target; ``"H100,H200"`` and ``["H100", "H200"]`` the same two.

    Raises:
        ValueError: The shape is wrong (:func:`hardware_shape_problem`).
    """
    problem = hardware_shape_problem(hardware)
    if problem is not None:
        raise ValueError(problem)
    entries = hardware_entries(hardware)
    word = _word(entries[0]) if len(entries) == 1 else None
    if word == AUTO:
        return HardwareChoice("auto")
    if word == ALL:
        return HardwareChoice("all")
    return HardwareChoice("named", tuple(short_name(e) for e in entries))


def config_target(hardware: str) -> str | None:
    """A config's ``hardware`` naming one target, as a target (``"CPU"``, ``"H100"``...);
    ``None`` for ``"auto"`` and ``"all"``, which only whoever can look at the hardware decides
    (the launcher asks the cluster; a pure plan takes CPU for ``auto``), and for several names.
    """
    choice = hardware_choice(hardware)
    return choice.targets[0] if len(choice.targets) == 1 else None


def hardware_problem(hardware: str, *, new: bool = False) -> tuple[str | None, str | None]:
    """Whether one ``hardware`` name a person wrote names a target: ``(error, warning)``.

    ``auto``, ``all``, ``cpu`` and :data:`KNOWN_MODELS` (any spelling) are fine (a list: ask
    for each entry of :func:`hardware_entries`). A name close to one of
    them is an error with a "did you mean" (``H10`` is a typo of ``H100``, not a new GPU),
    unless ``new`` says the name is a new GPU type on purpose (``--new-hardware``); any other
    name is allowed with a warning (a GPU this table does not list yet). Only for names people
    write: a device name a cluster reports is never refused.
    """
    if not hardware.strip():
        return _NO_TARGET, None
    if any(ord(c) < 32 for c in hardware):
        return f"must not contain control characters, got {shown(hardware)}", None
    if len(hardware) > MAX_HARDWARE_CHARS:
        # It names worker pools and goes into every task id: a GPU type is a short name.
        return f"longer than {MAX_HARDWARE_CHARS} characters, no GPU type: {shown(hardware)}", None
    if _word(hardware) is not None:
        return None, None
    short = short_name(hardware)
    if short == CPU or short in KNOWN_MODELS:
        return None, None
    if not short:  # '_', 'nvidia_': nothing is left once the vendor and separators go
        return f"{shown(hardware)} names no GPU type (write one such as 'H100')", None
    # The three words get a looser match: 'cpy' is no GPU's name.
    close = difflib.get_close_matches(hardware.strip().lower(), ["cpu", AUTO, ALL], n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(short, sorted(KNOWN_MODELS), n=1, cutoff=0.75)
    if close and not new:
        return (
            f"unknown GPU type {shown(hardware)} (did you mean {close[0]!r}? if it is a new GPU "
            "type, say so with --new-hardware)"
        ), None
    return None, (
        f"hardware {shown(hardware)} is not a GPU type kernel-sweep knows (known: "
        f"{listing(sorted(KNOWN_MODELS), most=12)}); planned for {shown(short)}, without datasheet peaks"
    )


def record_name(name: str) -> str:
    """The normalized ``environment.hardware`` value: ``NVIDIA_H100``, or ``CPU``."""
    short = short_name(name)
    if short == CPU:
        return CPU
    vendor = _VENDOR.match(name.strip())
    prefix = vendor.group(1).upper() if vendor else "NVIDIA"
    return f"{prefix}_{short}"


def solution_target_problem(entry: str) -> str | None:
    """Why one entry of a solution's ``spec.target_hardware`` can never match a target (the
    solution would never run there), or ``None``.

    Refused: empty or blank, control characters, longer than :data:`MAX_HARDWARE_CHARS`,
    ``auto`` (a config's word, which no target is), and names that reduce to no model (``_``,
    ``nvidia_``). Any other name may be a GPU this table does not know: it is kept.
    """
    word = entry.strip().lower()
    if not word:
        return (
            f"{shown(entry)} names no hardware: write 'gpu' (any GPU), 'cpu', a GPU type such as "
            "'H100', or '*' (anything)"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in entry):
        return f"must not contain control characters, got {shown(entry)}"
    if len(entry) > MAX_HARDWARE_CHARS:
        return f"longer than {MAX_HARDWARE_CHARS} characters, no hardware name: {shown(entry)}"
    if word in ANY_WORDS or word in ANY_GPU_WORDS:
        return None
    if word == AUTO:
        return "'auto' is a config's word, no solution target: write 'gpu' (any GPU) or '*' (anything)"
    if not short_name(entry):
        return f"{shown(entry)} names no hardware (write 'gpu', 'cpu' or a GPU type such as 'H100')"
    return None


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

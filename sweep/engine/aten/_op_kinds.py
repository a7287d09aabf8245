"""What kind of result an ATen call has, from torch's operator tags and names.

- *random*: the operator has torch's tag ``nondeterministic_seeded`` (it draws from a
  generator: ``bernoulli``, ``normal``, ``uniform_``, ``rand_like``, ``dropout``,
  ``randperm``, ``multinomial``, ...), unless the call turns the drawing off (an argument
  ``train``/``training`` false, or ``dropout``/``dropout_p`` (``p`` of a dropout) zero:
  ``_cudnn_rnn`` and ``scaled_dot_product_attention`` without dropout are deterministic).
  Two correct calls differ, so results are checked for shape, dtype and device and by a
  statistical test (``_call_random``), never element by element;
- *uninitialised*: the result's values are unspecified (``empty``, ``empty_like``,
  ``empty_strided``, ``empty_permuted``, ``new_empty``, ``new_empty_strided``, ``resize_``,
  ``resize_as_``; torch has no tag for this, so by name): checked for shape, dtype, device
  and strides, not values;
- *opaque outputs*: some results are an implementation's scratch (cuDNN's reserve space,
  output 3 of ``_cudnn_rnn``, ``miopen_rnn`` and ``cudnn_batch_norm``: kept for the backward
  pass, its bytes differ from one correct call to the next); by name, since torch has no tag:
  checked for shape, dtype and device only. The other results are checked as usual;
- *in-place view*: torch's tag ``inplace_view`` (``as_strided_``, ``squeeze_``,
  ``unsqueeze_``, ``t_``, ``transpose_``, ``swapdims_``, ``resize_``, ...): the operator
  changes its argument's shape and strides; those (and the storage offset) are compared
  too, and the argument is put back, metadata and values, before every timed call.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from sweep.engine.aten._aten_ops import resolve_op
from sweep.errors import EngineError
from sweep.schema.call_args import ArgValue

if TYPE_CHECKING:
    from sweep.engine.aten._call_inputs import CallSpec

__all__ = ["OPAQUE_OUTPUTS", "UNINITIALIZED", "OpKind", "op_kind", "seeded"]

#: Packets (trailing ``_`` dropped) whose results hold unspecified values.
UNINITIALIZED = frozenset(
    {
        "empty",
        "empty_like",
        "empty_strided",
        "empty_permuted",
        "new_empty",
        "new_empty_strided",
        "resize",
        "resize_as",
        "_resize_output",
        "_empty_affine_quantized",
        "_empty_per_channel_affine_quantized",
        "empty_quantized",
    }
)
#: Packets whose results at these output positions are opaque scratch (not checked by value).
OPAQUE_OUTPUTS: dict[str, tuple[int, ...]] = {
    "_cudnn_rnn": (3,),
    "miopen_rnn": (3,),
    "cudnn_batch_norm": (3,),
}
_OFF_IF_FALSE = ("train", "training")
_OFF_IF_ZERO = ("dropout", "dropout_p")


@dataclass(frozen=True)
class OpKind:
    """How a call's results are checked (see the module docstring)."""

    op: str | None = None
    packet: str = ""
    random: bool = False
    uninitialized: bool = False
    inplace_view: bool = False
    opaque: tuple[int, ...] = ()

    @property
    def note(self) -> str | None:
        """The log line saying how this call's results were checked, when not element-wise."""
        if self.opaque and not (self.uninitialized or self.random):
            where = ", ".join(f"output[{i}]" for i in self.opaque)
            return (
                f"note: {where} of {self.op} is the implementation's scratch (a reserve space): "
                "checked for shape, dtype and device, not for values"
            )
        if self.uninitialized:
            return (
                f"note: {self.op} returns uninitialised memory: its results are checked for shape, "
                "dtype, device and strides, not for values"
            )
        if self.random:
            return (
                f"note: {self.op} is random (torch tag nondeterministic_seeded): its results are checked "
                "for shape, dtype and device and by a statistical test, not element by element"
            )
        return None


def _packet(op: str) -> str:
    packet = op.split(".")[1]
    return packet[:-1] if packet.endswith("_") and not packet.endswith("__") else packet


@functools.lru_cache(maxsize=1024)
def _tags(op: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The operator's tag names and its positional schema argument names."""
    try:
        overload = resolve_op(op)
    except EngineError:
        return frozenset(), ()
    names = tuple(a.name for a in overload._schema.arguments if not a.kwarg_only)
    return frozenset(str(t).removeprefix("Tag.") for t in overload.tags), names


def _drawing_off(
    packet: str, names: Sequence[str], args: Sequence[ArgValue], kwargs: dict[str, ArgValue]
) -> bool:
    """Whether the call's own arguments turn a seeded operator's drawing off."""
    bound: dict[str, ArgValue] = dict(zip(names, args))
    bound.update(kwargs)
    for name in _OFF_IF_FALSE:
        if bound.get(name) is False:
            return True
    zero_names = _OFF_IF_ZERO + (("p",) if "dropout" in packet else ())
    for name in zero_names:
        v = bound.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == 0:
            return True
    return False


def op_kind(spec: CallSpec) -> OpKind:
    """The kind of the call's operator (plain for an unknown or unnamed one)."""
    if spec.op is None:
        return OpKind()
    tags, names = _tags(spec.op)
    packet = _packet(spec.op)
    random = "nondeterministic_seeded" in tags and not _drawing_off(packet, names, spec.args, spec.kwargs)
    return OpKind(
        op=spec.op,
        packet=packet,
        random=random,
        uninitialized=spec.op.startswith("aten.") and packet in UNINITIALIZED,
        inplace_view="inplace_view" in tags,
        opaque=OPAQUE_OUTPUTS.get(packet, ()) if spec.op.startswith("aten.") else (),
    )


@contextmanager
def seeded(device: torch.device, seed: int) -> Iterator[None]:
    """Within it the default generators (the host's, and ``device``'s) start from ``seed``,
    and they are put back afterwards: a random operator's trials draw the same on every run."""
    cuda = (
        [device.index if device.index is not None else torch.cuda.current_device()]
        if device.type == "cuda"
        else []
    )
    with torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(seed)
        if cuda:
            with torch.cuda.device(cuda[0]):
                torch.cuda.manual_seed(seed)
        yield

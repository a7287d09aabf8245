"""Peak rates of devices, and the least time a call's work can take on one (its floor).

Two kinds of :class:`Ceilings`, one record type:

- **datasheet** peaks, from :data:`DATASHEETS` below (vendor datasheets; dense tensor-core
  rates, i.e. without 2:4 sparsity, which the datasheets list first and mark with an
  asterisk; we halve those), keyed by the short hardware name
  (:func:`sweep.schema.hardware.short_name`) with form-factor variants told apart by the
  raw device name;
- **calibrated** ceilings, measured on a node by ``sweep calibrate`` (a large device copy, a
  dense GEMM per dtype), stored with the node's hardware name.

Rates are TFLOP/s per dtype key (:data:`RATE_KEYS`) and memory GB/s (10^9 bytes per second).
A call on tensors of some dtypes may run at the fastest rate any of them allows
(:meth:`Ceilings.flops_peak`): float32 data may go through TF32 tensor cores, so its peak is
the larger of the float32 and tf32 rates; integer-only calls, or dtypes a table lacks, take
the fastest rate the device has (a floor must never be above the truth).

The floor of a call is ``max(flops / peak_flops, bytes / peak_bandwidth)``; a latency under
:func:`floor_margin` times the floor cannot be right and is flagged ``impossible``. A call
that moves no bytes and does no FLOPs (a view, an allocation) has no floor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import Field

from sweep.schema._base import Record
from sweep.schema.hardware import record_name, short_name

__all__ = [
    "COUNTED_MARGIN",
    "DATASHEETS",
    "DECLARED_MARGIN",
    "NVLINK_GBPS",
    "RATE_KEYS",
    "Ceilings",
    "Datasheet",
    "datasheet_ceilings",
    "floor_margin",
    "floor_ms",
    "link_peak_gbps",
]

#: Keys of :attr:`Ceilings.tflops`: dense rates for float64, float32 (no tensor cores on
#: NVIDIA; matrix cores on AMD), tf32 tensor cores, float16, bfloat16 and float8.
RATE_KEYS: tuple[str, ...] = ("float64", "float32", "tf32", "float16", "bfloat16", "float8")

#: Which rates a dtype's data can be computed at (its peak is the fastest of them).
_RATES_OF_DTYPE: dict[str, tuple[str, ...]] = {
    "float64": ("float64",),
    "complex128": ("float64",),
    "float32": ("float32", "tf32"),
    "complex64": ("float32", "tf32"),
    "float16": ("float16",),
    "complex32": ("float16",),
    "bfloat16": ("bfloat16",),
    "float8_e4m3fn": ("float8",),
    "float8_e5m2": ("float8",),
}

#: A latency under this share of the floor is impossible, when the work is declared by the
#: definition (its author's statement of the least work): 10% covers datasheet rounding
#: and clocks above the rated boost, nothing else.
DECLARED_MARGIN = 0.9
#: The same for counted work (or declared and counted mixed): counting takes what the
#: reference does and every input and output byte, which can be more than a kernel must
#: do (a dense-masked causal attention counts twice the FLOPs of a causal kernel; an input
#: a kernel reads only part of counts whole), so only a latency under half the floor is
#: flagged.
COUNTED_MARGIN = 0.5


def floor_margin(work_source: str | None) -> float:
    """The share of the floor under which a latency is impossible, for a work source."""
    return DECLARED_MARGIN if work_source == "declared" else COUNTED_MARGIN


class Ceilings(Record):
    """Peak rates of one kind of device: from a datasheet, or measured on a node.

    Attributes:
        hardware: The normalized hardware name (``NVIDIA_H100``, ``CPU``).
        source: Where the numbers come from, for logs (``datasheet NVIDIA H100 SXM5``,
            ``calibrated on node-3 at 2026-...``).
        tflops: Dense TFLOP/s by rate key (:data:`RATE_KEYS`); absent keys are unknown.
        gbps: Memory bandwidth in GB/s (a copy moves its bytes twice: read and write).
        device_name: The raw device name measured or described.
        node: The node measured (calibrated ceilings only).
        measured_at: When (ISO 8601; calibrated ceilings only).
    """

    hardware: str = Field(min_length=1)
    source: str = ""
    tflops: dict[str, float] = Field(default_factory=dict)
    gbps: float | None = Field(default=None, gt=0)
    device_name: str | None = None
    node: str | None = None
    measured_at: str | None = None

    @property
    def calibrated(self) -> bool:
        """Whether these were measured on a node (else they come from a datasheet)."""
        return self.measured_at is not None

    def flops_peak(self, dtypes: Iterable[str]) -> float | None:
        """The fastest dense TFLOP/s a call on data of ``dtypes`` can reach (see the module
        docstring); ``None`` when nothing is known."""
        rates = [
            self.tflops[k] for d in dtypes for k in _RATES_OF_DTYPE.get(d, ()) if self.tflops.get(k, 0) > 0
        ]
        if rates:
            return max(rates)
        known = [v for v in self.tflops.values() if v > 0]
        return max(known) if known else None


def floor_ms(
    flops: float | None, nbytes: float | None, dtypes: Iterable[str], ceilings: Ceilings
) -> tuple[float, str] | None:
    """The least time the work can take, in ms, and what bounds it (``compute``/``memory``);
    ``None`` when neither the work nor the peaks say anything, and when the work is none (no
    FLOPs, no bytes: no latency is too short for it)."""
    terms: list[tuple[float, str]] = []
    peak = ceilings.flops_peak(dtypes)
    if flops and peak:
        terms.append((flops / (peak * 1e12) * 1e3, "compute"))
    if nbytes and ceilings.gbps:
        terms.append((nbytes / (ceilings.gbps * 1e9) * 1e3, "memory"))
    return max(terms) if terms else None


@dataclass(frozen=True)
class Datasheet:
    """One form factor's datasheet peaks.

    Attributes:
        label: The product as named in its datasheet.
        match: Lower-case words that must all be in the raw device name for this variant
            (empty: the default, which is the fastest variant, so that a name that does
            not tell the form factor gets the lowest floor).
        tflops: Dense TFLOP/s by rate key.
        gbps: Memory bandwidth, GB/s.
    """

    label: str
    match: tuple[str, ...]
    tflops: dict[str, float]
    gbps: float


def _r(f64: float, f32: float, tf32: float, f16: float, f8: float | None) -> dict[str, float]:
    rates = {"float64": f64, "float32": f32, "tf32": tf32, "float16": f16, "bfloat16": f16}
    if f8 is not None:
        rates["float8"] = f8
    return rates


# Dense rates (TFLOP/s) and memory bandwidth (GB/s) from the vendors' datasheets. NVIDIA lists
# tensor rates "with sparsity" (2:4); the dense rate is half. float64 is the FP64 tensor rate
# where there is one. Variants are tried in order; the last (no match words) is the default.
DATASHEETS: dict[str, tuple[Datasheet, ...]] = {
    # NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100): SXM FP64 TC 67,
    # FP32 67, TF32 989*, BF16/FP16 1,979*, FP8 3,958*, 3.35 TB/s; PCIe FP64 TC 51, FP32 51,
    # TF32 756*, BF16/FP16 1,513*, FP8 3,026*, 2 TB/s; NVL FP64 TC 60, FP32 60, TF32 835*,
    # BF16/FP16 1,671*, FP8 3,341*, 3.9 TB/s (* with sparsity).
    "H100": (
        Datasheet("NVIDIA H100 PCIe", ("pcie",), _r(51, 51, 378, 756.5, 1513), 2000),
        Datasheet("NVIDIA H100 NVL", ("nvl",), _r(60, 60, 417.5, 835.5, 1670.5), 3900),
        Datasheet("NVIDIA H100 SXM5", (), _r(67, 67, 494.5, 989.5, 1979), 3350),
    ),
    # NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200): SXM the compute
    # of H100 SXM, 4.8 TB/s; NVL FP64 TC 60, FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341*,
    # 4.8 TB/s.
    "H200": (
        Datasheet("NVIDIA H200 NVL", ("nvl",), _r(60, 60, 417.5, 835.5, 1670.5), 4800),
        Datasheet("NVIDIA H200 SXM", (), _r(67, 67, 494.5, 989.5, 1979), 4800),
    ),
    # NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100): FP64 TC 19.5,
    # FP32 19.5, TF32 156 (312*), BF16/FP16 312 (624*), no FP8; 80GB SXM 2,039 GB/s, 80GB PCIe
    # 1,935 GB/s, 40GB 1,555 GB/s. The A800 datasheet gives the same rates and bandwidths.
    "A100": (
        Datasheet("NVIDIA A100 40GB", ("40gb",), _r(19.5, 19.5, 156, 312, None), 1555),
        Datasheet("NVIDIA A100 80GB PCIe", ("pcie",), _r(19.5, 19.5, 156, 312, None), 1935),
        Datasheet("NVIDIA A100 80GB SXM", (), _r(19.5, 19.5, 156, 312, None), 2039),
    ),
    "A800": (
        Datasheet("NVIDIA A800 40GB", ("40gb",), _r(19.5, 19.5, 156, 312, None), 1555),
        Datasheet("NVIDIA A800 80GB PCIe", ("pcie",), _r(19.5, 19.5, 156, 312, None), 1935),
        Datasheet("NVIDIA A800 80GB SXM", (), _r(19.5, 19.5, 156, 312, None), 2039),
    ),
    # NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx), per GPU of the 8:
    # FP64 TC 40 (37 in some editions; the larger kept), FP32 80 (75), TF32 2.2 PF*,
    # BF16/FP16 4.5 PF*, FP8 9 PF*, HBM3e 8 TB/s.
    "B200": (Datasheet("NVIDIA B200 (HGX)", (), _r(40, 80, 1100, 2250, 4500), 8000),),
    # NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s): FP32 91.6, TF32 183 (366*),
    # BF16/FP16 362.05 (733*), FP8 733 (1,466*), GDDR6 864 GB/s; FP64 1/64 of FP32.
    "L40S": (Datasheet("NVIDIA L40S", (), _r(1.4, 91.6, 183, 362.05, 733), 864),),
    # AMD Instinct MI300X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x):
    # FP64 matrix 163.4, FP32 matrix 163.4, TF32 653.7, FP16/BF16 1,307.4, FP8 2,614.9 (dense;
    # the sheet lists sparsity separately), HBM3 5.3 TB/s.
    "MI300X": (Datasheet("AMD Instinct MI300X", (), _r(163.4, 163.4, 653.7, 1307.4, 2614.9), 5300),),
}


def datasheet_ceilings(device: str, *, hardware: str | None = None) -> Ceilings | None:
    """The datasheet peaks of a device named any way (``"NVIDIA H100 PCIe"``,
    ``"NVIDIA_H100"``), or ``None`` when the table has no entry for it.

    Args:
        device: The raw device name (it tells form factors apart).
        hardware: The normalized name, when ``device`` alone does not give the model (a CPU's
            model name); default: from ``device``.
    """
    sheets = DATASHEETS.get(short_name(hardware or device))
    if not sheets:
        return None
    name = device.lower()
    sheet = next((s for s in sheets if s.match and all(w in name for w in s.match)), sheets[-1])
    return Ceilings(
        hardware=record_name(hardware or device),
        source=f"datasheet {sheet.label}",
        tflops=dict(sheet.tflops),
        gbps=sheet.gbps,
        device_name=device,
    )


# NVLink bandwidth of one GPU, GB/s in each direction (half the datasheets' bidirectional
# "NVLink: 900GB/s" figure): the ceiling a collective's bus bandwidth (nccl-tests) is a fraction
# of. H100 SXM5 and H200 SXM: 18 NVLink 4 links, 900 GB/s (H100/H200 datasheets); H100 NVL and
# H200 NVL: 600 GB/s through bridges; A100/A800 SXM: 600 GB/s (A800: 400 GB/s); B200 (HGX): 1.8 TB/s.
NVLINK_GBPS: dict[str, tuple[tuple[tuple[str, ...], float], ...]] = {
    "H100": ((("pcie",), 0.0), (("nvl",), 300.0), ((), 450.0)),
    "H200": ((("nvl",), 300.0), ((), 450.0)),
    "A100": ((("pcie",), 0.0), ((), 300.0)),
    "A800": ((("pcie",), 0.0), ((), 200.0)),
    "B200": (((), 900.0),),
}


def link_peak_gbps(device: str) -> float | None:
    """The NVLink bandwidth per GPU and direction of a device named any way (GB/s), or ``None``
    when the table has none for it (a PCIe card, a CPU, an unknown GPU)."""
    rows = NVLINK_GBPS.get(short_name(device))
    if not rows:
        return None
    name = device.lower()
    gbps = next((g for words, g in rows if words and all(w in name for w in words)), rows[-1][1])
    return gbps or None

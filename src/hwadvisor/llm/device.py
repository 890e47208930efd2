"""The device figures LLM serving is priced on: plain numbers, from the catalog or measured.

A :class:`DeviceSpec` is what :mod:`hwadvisor.llm.serving` and :mod:`hwadvisor.llm.fit`
take: peak FLOP/s per compute type, memory bandwidth with the fraction of it streaming
reaches, memory size and the share of it a GPU may use. Build one from a catalog entry
(:meth:`DeviceSpec.from_catalog`) or from this machine's measured bandwidth and threads
(:meth:`DeviceSpec.measured_cpu`), or from its theoretical figures without a bench
(:meth:`DeviceSpec.theoretical_cpu`), so the estimator can use any of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hwadvisor.catalog.schema import GEMM_FRACTION_MAX, DeviceEntry
from hwadvisor.errors import UsageError

#: What one process's runtime holds beside the job's tensors, by device kind: on a GPU the
#: CUDA context with cuBLAS/cuDNN workspaces (0.5-2 GiB by GPU and CUDA version; 1 GiB
#: taken), on a CPU or an Apple chip what importing torch and running its first operators
#: occupies (about 300 MiB). The one reserve the training, fine-tuning and serving
#: estimates all use.
RUNTIME_BYTES = {"gpu": 1 << 30, "cpu": 300 << 20, "soc": 300 << 20}


def runtime_bytes(kind: str) -> int:
    """The runtime reserve of a device of ``kind`` (gpu, cpu, soc)."""
    return RUNTIME_BYTES.get(kind, RUNTIME_BYTES["gpu"])


#: Where a device lacks a compute type, the next one tried (then fp32).
_FALLBACK = {
    "fp4": ("bf16", "fp16"),  # no FP4 tensor cores: engines dequantize to 16-bit (W4A16)
    "fp8": ("fp16", "bf16"),
    "int8": ("fp16", "bf16"),
    "bf16": ("fp16",),
    "fp16": ("bf16",),
}


@dataclass(frozen=True)
class DeviceSpec:
    """One device (or one GPU of a group) in the units serving uses (bytes, FLOP/s)."""

    name: str
    kind: str  # gpu, cpu, soc
    memory_bytes: float
    bandwidth_bytes_s: float
    peak_flops: Mapping[str, float]
    memory_fraction: float = 0.9
    gemm_fraction: float = 0.75
    fp4_gemm_fraction: float | None = None
    usable_memory_fraction: float = 1.0
    link_bytes_s: float | None = None
    link_kind: str | None = None
    network_bytes_s: float | None = None
    threads: int | None = None
    fp16_accumulate_flops: float | None = None
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        """Refuse non-positive sizes and rates."""
        if self.memory_bytes <= 0 or self.bandwidth_bytes_s <= 0:
            raise UsageError(f"device {self.name}: memory and bandwidth must be positive")
        if not self.peak_flops or min(self.peak_flops.values()) <= 0:
            raise UsageError(f"device {self.name}: needs a positive peak FLOP/s")
        for name in ("memory_fraction", "usable_memory_fraction"):
            if not 0 < getattr(self, name) <= 1:
                raise UsageError(f"device {self.name}: {name} must be in (0, 1]")
        # A product can pass the datasheet peak where boards hold clocks above the rated
        # boost clock (GeForce, catalog achieved.gemm).
        if not 0 < self.gemm_fraction <= GEMM_FRACTION_MAX:
            raise UsageError(
                f"device {self.name}: gemm_fraction must be in (0, {GEMM_FRACTION_MAX:g}]"
            )

    def flops(self, compute: str) -> tuple[float, str]:
        """Peak FLOP/s for ``compute`` and the type it really is (fp8 on a part without: fp16)."""
        for key in (compute, *_FALLBACK.get(compute, ()), "fp32"):
            if self.peak_flops.get(key):
                return float(self.peak_flops[key]), key
        key, value = max(self.peak_flops.items(), key=lambda kv: kv[1])
        return float(value), key

    def product_fraction(self, compute: str) -> float:
        """The achieved share of the peak for products of ``compute``: FP4 at its own
        measured fraction where the catalog has one (FP4 kernels reach a smaller share
        of their peak than 16-bit ones), else the GEMM fraction."""
        _, real = self.flops(compute)
        if real == "fp4" and self.fp4_gemm_fraction:
            return self.fp4_gemm_fraction
        return self.gemm_fraction

    def fp16_accumulate_rate(self) -> float:
        """Peak FLOP/s of FP16 products accumulated in FP16 (cuBLAS compute type 16F).

        GeForce parts run them at twice the FP32-accumulate rate the ``fp16`` peak holds;
        data-centre and professional parts at the same rate (NVIDIA's Ampere GA102 and Ada
        AD102 whitepapers list both). Where the catalog states none, the ``fp16`` peak.
        """
        return self.fp16_accumulate_flops or self.flops("fp16")[0]

    @property
    def effective_bandwidth(self) -> float:
        """Bytes/s that streaming reaches: bandwidth x achieved fraction."""
        return self.bandwidth_bytes_s * self.memory_fraction

    @property
    def usable_memory(self) -> float:
        """Bytes a model may occupy (all of a GPU; the Metal working-set share of a Mac)."""
        return self.memory_bytes * self.usable_memory_fraction

    @classmethod
    def from_catalog(cls, entry: DeviceEntry) -> DeviceSpec:
        """The catalog's datasheet figures, with its achieved fractions of peak."""
        peaks = {
            k: v * 1e12
            for k, v in entry.peaks_tflops.model_dump(exclude={"fp16_accumulate"}).items()
            if isinstance(v, (int, float)) and v > 0
        }
        fp16_acc = entry.peaks_tflops.fp16_accumulate
        achieved = entry.achieved
        link = entry.interconnect.gb_s_per_direction
        return cls(
            name=entry.id,
            kind=entry.kind.value,
            memory_bytes=float(entry.memory_bytes),
            bandwidth_bytes_s=entry.bandwidth_gb_s * 1e9,
            peak_flops=peaks,
            memory_fraction=achieved.memory,
            gemm_fraction=achieved.gemm,
            fp4_gemm_fraction=achieved.fp4_gemm,
            usable_memory_fraction=getattr(entry, "gpu_memory_fraction", None) or 1.0,
            link_bytes_s=link * 1e9 if link else None,
            link_kind=entry.interconnect.kind,
            network_bytes_s=(entry.interconnect.network_gb_s_per_gpu or 0) * 1e9 or None,
            fp16_accumulate_flops=fp16_acc * 1e12 if fp16_acc else None,
            source=f"catalog:{entry.id} ({entry.source}); achieved: {achieved.source}",
        )

    @classmethod
    def measured_cpu(
        cls,
        *,
        name: str,
        bandwidth_bytes_s: float,
        threads: int,
        flops_per_thread: float,
        memory_bytes: float,
    ) -> DeviceSpec:
        """This machine's CPU as measured: streaming bandwidth and per-thread matmul rate.

        Measured figures are already achieved rates, so both fractions are 1. The compute
        rate is ``threads`` x ``flops_per_thread`` for every type (llama.cpp's CPU kernels
        run quantized dot products; pricing them at the measured fp32 rate is conservative).
        """
        if threads <= 0 or flops_per_thread <= 0:
            raise UsageError("threads and flops_per_thread must be positive")
        rate = threads * flops_per_thread
        return cls(
            name=name,
            kind="cpu",
            memory_bytes=memory_bytes,
            bandwidth_bytes_s=bandwidth_bytes_s,
            peak_flops={"fp32": rate, "fp16": rate, "bf16": rate, "int8": rate},
            memory_fraction=1.0,
            gemm_fraction=1.0,
            threads=threads,
            source="measured on this machine",
        )

    @classmethod
    def theoretical_cpu(
        cls,
        *,
        name: str,
        bandwidth_bytes_s: float,
        threads: int,
        flops_per_thread: float,
        memory_bytes: float,
        source: str,
    ) -> DeviceSpec:
        """This machine's CPU without a bench: the streaming bandwidth the catalog or the
        CPU's class states, and its theoretical peak at the assumed GEMM efficiency
        (:func:`hwadvisor.estimate.timing.cpu.here_model`). Both are already achieved
        rates, priced as :meth:`measured_cpu` prices measured ones; ``source`` says where
        they come from."""
        spec = cls.measured_cpu(
            name=name,
            bandwidth_bytes_s=bandwidth_bytes_s,
            threads=threads,
            flops_per_thread=flops_per_thread,
            memory_bytes=memory_bytes,
        )
        return replace(spec, source=source)

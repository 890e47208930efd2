"""A catalog CPU priced operator by operator, as "here" is, from what is known of it.

"here" has its bench's figures; a catalog CPU (``--on xeon-8480``, a CPU instance's share
of one) has its datasheet and the figures the project measured on real cores of its
kind. The time model (``estimate.timing``) prices it with the same per-operator model:

- products and convolutions at the catalog's large-GEMM fraction of the fp32 (or native
  16-bit / int8) peak, along the catalog's size curve (``rates.catalog_rates``), the peak
  taken at the clock the cores sustain under vector load (:func:`sustained_scale`);
- memory-bound operators (element-wise, normalisation, dropout's mask, softmax, GELU,
  pooling) at the per-core rates eager PyTorch reached on a real core of the same kind
  (``catalog/data/cpu_sweeps.yaml``, recorded by ``scripts/record_cpu_sweep.py``), run on
  as many of the share's cores as PyTorch splits the operator over, and from DRAM at the
  share's part of the socket's bandwidth, or what one core streams alone where that is
  more (:class:`SharedLevels`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from hwadvisor.estimate.timing.levels import MIN_DATA_SHARE, MemoryLevels

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry

#: PyTorch splits an element-wise CPU kernel over threads in chunks of at least this many
#: elements (``at::internal::GRAIN_SIZE`` = 32768, aten/src/ATen/Parallel.h): a smaller
#: operator runs on one thread however many cores the share has.
GRAIN_ELEMENTS = 32768
#: Bytes the sweep counts per element of a family's call (read + written), to turn a
#: working set into elements for the grain (the sweep's ``bytes_per_element``, 8-12).
BYTES_PER_ELEMENT = 8.0


@functools.cache
def sweeps() -> list[dict[str, Any]]:
    """The recorded per-core sweeps, ``catalog/data/cpu_sweeps.yaml``."""
    from hwadvisor.io import load_yaml

    text = resources.files("hwadvisor.catalog").joinpath("data").joinpath("cpu_sweeps.yaml")
    doc = load_yaml(text.read_text(encoding="utf-8")) or {}
    return list(doc.get("sweeps") or [])


def reference_sweep(microarchitecture: str | None = None) -> dict[str, Any] | None:
    """The sweep recorded on ``microarchitecture``, else the first recorded one."""
    recorded = sweeps()
    if not recorded:
        return None
    match = [s for s in recorded if s["microarchitecture"] == microarchitecture]
    return (match or recorded)[0]


def sweep_label(sweep: dict[str, Any]) -> str:
    """Where a recorded sweep comes from, for the assumptions."""
    return (
        f"{sweep['microarchitecture']} core ({sweep['cpu'].split(',')[0]}), torch "
        f"{sweep['torch']}, {sweep['threads']} thread, {sweep['date']}"
    )


def sustained_scale(entry: DeviceEntry) -> tuple[float, str | None]:
    """The factor from the catalog's base-clock peak to the clock sustained under vector load.

    AMD states an all-core boost clock that holds for AVX-512 and AVX2 work alike (Zen 4
    executes AVX-512 on its 256-bit units without a frequency offset); Intel lowers the
    clock under AVX-512 to per-SKU licence frequencies its specification updates list, which
    the catalog does not carry, so an Intel part keeps its base clock.
    """
    if entry.vendor.lower() != "amd" or not entry.all_core_ghz or not entry.base_ghz:
        return 1.0, None
    scale = entry.all_core_ghz / entry.base_ghz
    if scale <= 1.0:
        return 1.0, None
    return scale, (
        f"{entry.id}: peak at the {entry.all_core_ghz:g} GHz all-core boost AMD states, not "
        f"the {entry.base_ghz:g} GHz base ({scale:.2f}x): AMD's clocks hold under vector load"
    )


@dataclass
class SharedLevels(MemoryLevels):
    """A recorded core's memory-bound rates, spread over a share's cores, DRAM capped.

    An operator of working set ``w`` on ``n`` cores runs on ``t = min(n, w / grain)``
    threads, each moving ``w / t`` at the recorded core's rate for that working set; past
    the share's caches it moves no faster than the share's DRAM bandwidth: its part of the
    socket's, and at least what the recorded core streams alone.
    """

    cores: int = 1
    cache_bytes: float = 0.0
    dram_seconds_per_byte: float = 0.0
    #: The recorded core is of this CPU's own microarchitecture (not another kind's).
    matched: bool = False

    def threads_for(self, working_set: float) -> int:
        """Threads PyTorch splits an operator of ``working_set`` bytes over."""
        elements = working_set / BYTES_PER_ELEMENT
        return max(1, min(self.cores, math.ceil(elements / GRAIN_ELEMENTS)))

    def seconds_per_byte(self, family: str, working_set: float) -> float | None:
        """Seconds per byte of ``family`` at ``working_set`` on the share."""
        t = self.threads_for(working_set)
        one = super().seconds_per_byte(family, working_set / t)
        if one is None:
            return None
        spb = one / t
        if working_set > self.cache_bytes:
            spb = max(spb, self.dram_seconds_per_byte)
        return spb

    def cold_seconds_per_byte(self, family: str, working_set: float) -> float:
        """Past the share's private caches: the recorded core's DRAM figure over the
        threads, and no faster than the share's DRAM bandwidth."""
        pts = self.curves.get(family) or self.curves.get("eltwise") or []
        one = pts[-1][1] / self.threads_for(working_set) if pts else 0.0
        return max(one, self.dram_seconds_per_byte)


def core_clock_ghz(entry: DeviceEntry) -> float | None:
    """The clock a core of ``entry`` sustains under vector load (:func:`sustained_scale`)."""
    if not entry.base_ghz:
        return None
    return entry.base_ghz * sustained_scale(entry)[0]


def _curves(sweep: dict[str, Any], speed: float, dispatch: float) -> dict[str, list[tuple[float, float]]]:  # fmt: skip
    """Seconds per byte by family and working set, at ``speed`` x the recorded core's rate.

    As for "here" (``levels.memory_levels``): the per-call cost leaves each figure and is
    charged once per operator launch instead.
    """
    curves: dict[str, list[tuple[float, float]]] = {}
    for family, points in sweep["families_gb_s"].items():
        calls = [(float(ws), ws / (gbs * 1e9 * speed)) for ws, gbs in points if gbs > 0]
        curves[family] = [
            (ws, max(call - dispatch, MIN_DATA_SHARE * call) / ws) for ws, call in calls
        ]
    return curves


def _one_core_stream(curves: dict[str, list[tuple[float, float]]], speed: float) -> float:
    """Bytes/s the recorded core streamed from DRAM alone (its element-wise DRAM figure,
    unscaled: DRAM does not follow the clock)."""
    stream = curves.get("eltwise") or []
    return 1.0 / (stream[-1][1] * speed) if stream else 0.0


def _levels_note(entry: DeviceEntry, sweep: dict[str, Any], levels: SharedLevels, speed: float) -> str:  # fmt: skip
    """The assumption the catalog levels add to the estimate."""
    clock, ref = core_clock_ghz(entry), float(sweep.get("clock_ghz") or 0)
    scaled = f" x {speed:.2f} (its {clock:g} GHz over {ref:g})" if speed != 1.0 else ""
    if not levels.matched:
        scaled += f", another kind of core than this {entry.microarchitecture or 'CPU'}'s"
    return (
        f"{entry.id}: memory-bound operators at the per-core rates recorded on a "
        f"{sweep_label(sweep)} (catalog/data/cpu_sweeps.yaml){scaled}, over up to "
        f"{levels.cores} core(s) as PyTorch splits them, from DRAM at the share's part of the "
        "socket's bandwidth (at least what one core streams alone)"
    )


def catalog_levels(entry: DeviceEntry, bandwidth: float) -> tuple[SharedLevels | None, str]:
    """The memory-bound rates of catalog CPU ``entry`` (at ``bandwidth`` bytes/s from DRAM).

    A memory-bound operator whose data sits in cache is bound by the instructions its core
    runs per element, so the recorded core's rates scale with the clock: ``entry``'s
    sustained clock over the recorded core's (same work per cycle assumed). A share draws
    its part of the socket's bandwidth when every neighbour streams too, and never less
    than one core alone draws.
    """
    sweep = reference_sweep(entry.microarchitecture)
    if sweep is None:
        return None, "no recorded CPU sweep: memory-bound operators over bandwidth"
    clock, ref = core_clock_ghz(entry), float(sweep.get("clock_ghz") or 0)
    speed = clock / ref if clock and ref else 1.0
    mops = float(sweep.get("dispatch_mops") or 0)
    dispatch = 1.0 / (mops * 1e6 * speed) if mops else 0.0
    curves = _curves(sweep, speed, dispatch)
    cores = max(1, entry.cores or 1)
    cache = cores * float(sweep.get("l2_bytes") or 0) + float(sweep.get("l3_bytes") or 0)
    dram = max(bandwidth, _one_core_stream(curves, speed))
    levels = SharedLevels(
        curves=curves,
        dispatch_s=dispatch or None,
        threads=cores,
        private_bytes=cores * float(sweep.get("l2_bytes") or 0) or None,
        cores=cores,
        cache_bytes=cache,
        dram_seconds_per_byte=1.0 / dram if dram else 0.0,
        matched=sweep["microarchitecture"] == entry.microarchitecture,
    )
    return levels, _levels_note(entry, sweep, levels, speed)

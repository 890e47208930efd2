"""The CPU facts from what a CPU probe collected: features, the AMX note and the peak.

Both CPU probes, from ``/proc`` (:mod:`hwadvisor.probe.cpu`) and through py-cpuinfo
(:mod:`hwadvisor.probe.cpu_other`), end here, so neither imports the other.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.models.facts import Cpu
from hwadvisor.probe.cpu_features import amx_note, is_arm, normalise_features
from hwadvisor.probe.cpu_peak import PeakInputs, peak_gflops


def finish_cpu(f: dict[str, Any]) -> Cpu:
    """Build the :class:`Cpu` from collected fields, adding features, AMX note and peak."""
    flags = f.get("flags", [])
    features = normalise_features(flags, f.get("architecture"))
    peak = peak_gflops(
        PeakInputs(
            features=features,
            flags=frozenset(flags),
            arm=is_arm(f.get("architecture")),
            microarch=f.get("microarchitecture"),
            model=f.get("model"),
            usable_cores=f.get("usable_cores"),
            physical_cores=f.get("physical_cores"),
            max_mhz=f.get("max_mhz"),
            base_mhz=f.get("base_mhz"),
        )
    )
    return Cpu(**f, features=features, amx_note=amx_note(features), peak_gflops=peak)

"""The device model of a catalog entry: a CPU's or a GPU's."""

from __future__ import annotations

from hwadvisor.catalog.schema import DeviceEntry, DeviceKind
from hwadvisor.estimate.timing.cpu import catalog_cpu_model
from hwadvisor.estimate.timing.device import DeviceModel
from hwadvisor.estimate.timing.gpu import catalog_gpu_model
from hwadvisor.models.workload import Precision


def device_model(entry: DeviceEntry, precision: Precision) -> DeviceModel:
    """The model of ``entry`` at ``precision``: a CPU's from its datasheet, any other
    kind's (GPUs, Apple chips) from its peaks and the catalog's achieved fractions."""
    if entry.kind is DeviceKind.CPU:
        return catalog_cpu_model(entry, precision)
    return catalog_gpu_model(entry, precision)

"""The reference catalogs: devices (peak rates, memory, interconnect), models (cost) and
their families.

They are YAML data files shipped inside the package (``catalog/data/``); users add or
override entries with their own files of the same schema, merged by ``id``. The other
files there are read where they are used: ``instances.csv`` (:mod:`.instances`),
``cuda.yaml`` (``engine.versions``), ``quant.yaml`` and ``engines.yaml`` (``llm``),
``error_bands.yaml``, ``gpu_time.yaml`` and ``op_profiles.yaml`` (``estimate``). Names as
people type them (``h100``, ``GeForce RTX 4090``) resolve through :mod:`.names` (:func:`lookup_device`, :func:`lookup_model`).
"""

from __future__ import annotations

from hwadvisor.catalog.loader import (
    did_you_mean,
    find_device,
    find_model,
    load_devices,
    load_families,
    load_models,
    lookup_device,
    lookup_model,
)
from hwadvisor.catalog.names import Found
from hwadvisor.catalog.schema import DeviceEntry, DeviceKind, FamilyEntry, ModelEntry

__all__ = [
    "DeviceEntry",
    "DeviceKind",
    "FamilyEntry",
    "Found",
    "ModelEntry",
    "did_you_mean",
    "find_device",
    "find_model",
    "load_devices",
    "load_families",
    "load_models",
    "lookup_device",
    "lookup_model",
]

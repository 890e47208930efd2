"""An estimate's error band: the range the project's own validation found for its class."""

from __future__ import annotations

from pydantic import Field

from hwadvisor.models.common import Document

#: The band classes of this machine's own estimates: cpu_measured (from its bench, which
#: its load moves from one run to the next), then cpu_theoretical (without a bench: the
#: theoretical peak and the stated memory bandwidth).
HERE_CLASSES = ("cpu_measured", "cpu_theoretical")


class TimeBand(Document):
    """Low and high of a time (or throughput) estimate, from a validation table."""

    low: float = Field(description="the estimate x the lowest measured/estimated ratio seen")
    high: float = Field(description="the estimate x the highest measured/estimated ratio seen")
    band_class: str = Field(
        description="cpu_measured, cpu_theoretical, catalog_cpu, catalog_gpu, catalog_gpu_host_bound, multi_gpu, llm_decode"
    )
    validated: bool = Field(
        True,
        description="false: no validation run covers this class; the widest validated band is used",
    )
    basis: str = Field(description="the validation run the band comes from")
    check: str = Field(description="the command that checks the estimate on your machine")

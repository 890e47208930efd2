"""One estimate of a workload, shared by every view of it: :class:`Rows`.

``estimate`` shows a table of devices, prices it, and gives the guidance ``recommend``
would give, which weighs its own set of devices (this machine, single catalog GPUs, an
8-GPU node, this machine's own GPUs, and under ``--budget low`` older generations).
Where the two sets meet, each row is estimated once: :class:`Rows` keeps the rows made,
by the device asked for and the GPU count, and estimates only those it has not made.

A catalog device's row depends on the workload and the catalogs only; the ``here`` row
also on the machine's facts and bench figures, so it is shared only for the same ones
(:meth:`Rows.for_machine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.estimate import DeviceEstimate
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.workload import Workload

#: The device name of this machine's row.
HERE = "here"


@dataclass
class Rows:
    """The rows of one workload estimated so far, for one machine (``facts``, ``bench``)."""

    workload: Workload
    facts: Facts | None
    bench: BenchReport | None
    extra_catalogs: list[Path] | None = None
    made: dict[tuple[str, int], DeviceEstimate] = field(default_factory=dict)

    def on(self, devices: Sequence[str], gpus: int = 1) -> list[DeviceEstimate]:
        """The rows for ``devices`` ("here" or catalog ids, any case) with ``gpus`` GPUs
        per catalog GPU, in order and without repeats, as
        :func:`~hwadvisor.estimate.estimate_workload` gives them; those not made yet are
        estimated in one call (an unknown id raises before any is estimated)."""
        from hwadvisor.estimate import estimate_workload

        names = list(dict.fromkeys(d.lower() for d in devices))
        missing = [d for d in names if (d, gpus) not in self.made]
        if missing:
            report = estimate_workload(
                self.workload,
                facts=self.facts,
                bench=self.bench,
                on=missing,
                gpus=gpus,
                extra_catalogs=self.extra_catalogs,
            )
            self.made.update(zip([(d, gpus) for d in missing], report.estimates, strict=True))
        return [self.made[(d, gpus)] for d in names]

    def for_machine(self, facts: Facts | None, bench: BenchReport | None) -> Rows:
        """The rows for another machine: the catalog rows shared, ``here`` kept only when
        the facts and bench figures are the same ones."""
        if facts is self.facts and bench is self.bench:
            return self
        catalog = {key: row for key, row in self.made.items() if key[0] != HERE}
        return Rows(self.workload, facts, bench, self.extra_catalogs, catalog)

"""The probe: reads CPU, memory, GPUs, software and host facts into a :class:`Facts`.

Only ``probe/`` and ``bench/`` touch the machine. Every source reads through
:class:`~hwadvisor.probe.seams.Seams`, so a recorded host folder can stand in for the
real machine, and every source records a status in ``Facts.probes``.

The probe fills the facts dataclasses of :mod:`hwadvisor.models.facts` directly, without
importing pydantic (only the records of an NVML child that answered are checked
through it), so that ``check --json`` starts fast.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hwadvisor.errors import UsageError
from hwadvisor.probe.seams import Seams

if TYPE_CHECKING:
    # Imported lazily: the NVML child process imports this package and needs no facts.
    from hwadvisor.models.facts import Facts, Gpu

#: Default deadline for the whole GPU probe (NVML runs in a child process under it).
DEFAULT_TIMEOUT_S = 10.0
#: The longest deadline accepted: a healthy NVML answers in well under a second, and a
#: deadline like 1e308 s overflows the child-process wait (and is no deadline at all).
MAX_TIMEOUT_S = 3600.0


def probe_machine(seams: Seams | None = None, *, timeout: float = DEFAULT_TIMEOUT_S) -> Facts:
    """Probe everything into :class:`Facts`; never raises for a machine's quirks.

    A reading outside its field's bounds (see :func:`~hwadvisor.models.plain.settled`)
    is left null, with a ``facts.bounds`` record that names it.

    Only an impossible ``timeout`` (not finite, not above 0, over :data:`MAX_TIMEOUT_S`)
    raises, as a :class:`UsageError`.
    """
    from hwadvisor.models.facts import Facts, ProbeRecord
    from hwadvisor.models.plain import ProbeStatus, settled
    from hwadvisor.probe import amd, apple, cpu, host, memory, nvidia, software
    from hwadvisor.probe.runner import ProbeLog

    if not math.isfinite(timeout) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise UsageError(
            f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}, "
            f"not {timeout:g}"
        )
    seams = seams or Seams()
    log = ProbeLog()
    host_facts = host.probe_host(seams, log)
    cpu_facts = cpu.probe_cpu(seams, log)
    mem_facts = memory.probe_memory(seams, log)
    gpus: list[Gpu] = []
    gpus += nvidia.probe_nvidia(seams, log, timeout=timeout)
    gpus += amd.probe_amd(seams, log, start_index=len(gpus))
    gpus += apple.probe_apple(seams, log, mem_facts, start_index=len(gpus))
    sw = software.probe_software(seams, log, gpus)
    facts, dropped = settled(
        Facts(
            host=host_facts,
            cpu=cpu_facts,
            memory=mem_facts,
            gpus=gpus,
            software=sw,
            probes=log.records,
        )
    )
    if dropped:
        record = ProbeRecord(
            name="facts.bounds",
            status=ProbeStatus.ERROR,
            error="impossible readings left null: " + ", ".join(dropped),
        )
        facts = facts.model_copy(update={"probes": [*facts.probes, record]})
    return facts

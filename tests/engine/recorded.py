"""Every recorded machine as facts, for the tests that sweep the rules over all of them.

Saved facts documents, optionally the synthetic GPU reports, and the recorded host
folders run through the real probe (a GPU-only recording gives the GPUs alone).
"""

from __future__ import annotations

import json
from pathlib import Path

from hwadvisor.models.facts import Facts

DATA = Path(__file__).parents[1] / "data"


def probed_host(folder: Path) -> Facts:
    """A recorded host folder probed as the real probe would (GPU-only recordings too)."""
    from hwadvisor.probe import amd, cpu, host, memory
    from hwadvisor.probe.runner import ProbeLog
    from hwadvisor.probe.seams import Seams

    seams, log = Seams.recorded(folder), ProbeLog()
    if (folder / "proc").exists():
        return Facts(
            host=host.probe_host(seams, log),
            cpu=cpu.probe_cpu(seams, log),
            memory=memory.probe_memory(seams, log),
        )
    return Facts(gpus=amd.probe_amd(seams, log, start_index=0))


def _read(path: Path) -> Facts:
    return Facts.model_validate(json.loads(path.read_text(encoding="utf-8")))


def recorded_machines(*, synthetic: bool = False) -> dict[str, Facts]:
    """Every recorded machine by a name for the test id; ``synthetic`` adds the GPU reports."""
    out = {f"facts/{p.stem}": _read(p) for p in sorted((DATA / "facts").glob("*.json"))}
    if synthetic:
        for p in sorted((DATA / "reports").glob("synthetic-*.json")):
            out[f"reports/{p.stem}"] = _read(p)
    for sub in ("hosts", "gpu_hosts"):
        for folder in sorted(p for p in (DATA / sub).iterdir() if p.is_dir()):
            out[f"{sub}/{folder.name}"] = probed_host(folder)
    return out

"""The human view of a facts document: one panel per device, DL features highlighted."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.columns import Columns
from rich.panel import Panel
from rich.table import Table

from hwadvisor.models.plain import ProbeStatus
from hwadvisor.render import stdout_console, yes_no
from hwadvisor.units import human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.facts import Cpu, Facts, Gpu

#: Features shown on the CPU panel, by architecture family, with their display names.
X86_FEATURES = [
    ("avx2", "AVX2"),
    ("fma", "FMA"),
    ("avx512f", "AVX-512F"),
    ("avx512_vnni", "AVX512-VNNI"),
    ("avx512_bf16", "AVX512-BF16"),
    ("avx512_fp16", "AVX512-FP16"),
    ("avx_vnni", "AVX-VNNI"),
    ("amx_tile", "AMX-TILE"),
    ("amx_bf16", "AMX-BF16"),
    ("amx_int8", "AMX-INT8"),
    ("amx_fp16", "AMX-FP16"),
]
ARM_FEATURES = [
    ("neon", "NEON"),
    ("sve", "SVE"),
    ("sve2", "SVE2"),
    ("sme", "SME"),
    ("i8mm", "I8MM"),
    ("bf16", "BF16"),
]


def _kv_table() -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="cyan", no_wrap=True)
    # Values wrap at spaces; a word longer than the room is folded, never cut with "…".
    table.add_column(overflow="fold")
    return table


def _features(cpu: Cpu) -> Columns:
    """``LABEL: yes`` items that wrap as units (a label never parts from its value)."""
    names = (
        ARM_FEATURES if (cpu.architecture or "").startswith(("aarch64", "arm")) else X86_FEATURES
    )
    items = [f"{label}: {yes_no(getattr(cpu.features, key))}" for key, label in names]
    return Columns(items, padding=(0, 2))


def amx_hidden(cpu: Cpu, virtualization: str | None) -> str | None:
    """Why a CPU whose microarchitecture has AMX shows no AMX flag, or None.

    Read from the microarchitecture table (:data:`~hwadvisor.probe.microarch.AMX_MICROARCHS`),
    never from a model name: under a hypervisor it hides the tiles, on bare metal the
    kernel is older than the first that reports them.
    """
    from hwadvisor.probe.microarch import has_amx

    f = cpu.features
    if not has_amx(cpu.microarchitecture) or f.amx_tile or f.amx_bf16 or f.amx_int8:
        return None
    if not cpu.flags:
        return None  # no flags were read: nothing is known to be missing
    if virtualization:
        return f"AMX not exposed by the hypervisor ({virtualization}; the CPU model has it)"
    return "AMX not reported by this kernel (the CPU model has it; Linux 5.16 and later report it)"


def _num(value: float | int | None, fmt: str = "{}") -> str:
    return "unknown" if value is None else fmt.format(value)


def cpu_panel(cpu: Cpu, virtualization: str | None = None) -> Panel:
    """CPU identity, cores as this process sees them, and the features that matter;
    ``virtualization`` (the host's) says who hides AMX from a CPU that has it."""
    t = _kv_table()
    t.add_row("model", cpu.model or "unknown")
    arch = " / ".join(x for x in (cpu.architecture, cpu.microarchitecture) if x) or "unknown"
    t.add_row("architecture", arch)
    t.add_row(
        "cores",
        f"{_num(cpu.usable_cores)} usable · {_num(cpu.physical_cores)} physical · "
        f"{_num(cpu.logical_cores)} logical · {_num(cpu.sockets)} socket(s)",
    )
    if cpu.cgroup_quota_cores is not None:
        t.add_row("cgroup quota", f"{cpu.cgroup_quota_cores:g} cores")
    t.add_row(
        "clock", f"{_num(cpu.base_mhz, '{:.0f}')} MHz base · {_num(cpu.max_mhz, '{:.0f}')} MHz max"
    )
    t.add_row("caches", f"L2 {human_bytes(cpu.l2_bytes)}/core · L3 {human_bytes(cpu.l3_bytes)}")
    t.add_row("features", _features(cpu))
    peak = cpu.peak_gflops
    if peak.fp32 is not None:
        t.add_row(
            "peak (theory)",
            f"fp32 {peak.fp32:,.0f} · bf16 {_num(peak.bf16, '{:,.0f}')} GFLOP/s · int8 {_num(peak.int8, '{:,.0f}')} GOP/s",
        )
    if cpu.amx_note:
        t.add_row("note", f"[yellow]{cpu.amx_note}[/]")
    hidden = amx_hidden(cpu, virtualization)
    if hidden:
        t.add_row("note", f"[yellow]{hidden}[/]")
    return Panel(t, title="[bold]CPU[/]", title_align="left")


def _alike(gpu: Gpu) -> tuple[object, ...]:
    """What a GPU's panel shows, less what differs between GPUs of one kind."""
    return (
        gpu.name,
        gpu.vendor,
        gpu.memory_total_bytes,
        gpu.unified_memory,
        gpu.architecture,
        gpu.compute_capability,
        gpu.supports,
        gpu.pcie_generation,
        gpu.pcie_width,
        gpu.nvlink_active_links,
        gpu.mig_enabled,
        gpu.driver_version,
        gpu.cuda_driver_version,
    )


def gpu_groups(gpus: list[Gpu]) -> list[list[Gpu]]:
    """Consecutive GPUs that look alike, together: eight H100s are one panel, not eight."""
    groups: list[list[Gpu]] = []
    for gpu in gpus:
        if groups and _alike(groups[-1][0]) == _alike(gpu):
            groups[-1].append(gpu)
        else:
            groups.append([gpu])
    return groups


def gpu_panel(gpu: Gpu, alike: int = 1, last_index: int | None = None) -> Panel:
    """One GPU (or ``alike`` GPUs like it, up to ``last_index``): memory, generation,
    tensor-core dtypes, links and driver."""
    t = _kv_table()
    free = f" · {human_bytes(gpu.memory_free_bytes)} free" if alike == 1 else " each"
    t.add_row("memory", f"{human_bytes(gpu.memory_total_bytes)} total{free}")
    if gpu.unified_memory:
        t.add_row("", "[yellow]unified with system memory[/]")
    t.add_row(
        "architecture",
        f"{gpu.architecture or 'unknown'} (compute {gpu.compute_capability or 'unknown'})",
    )
    s = gpu.supports
    t.add_row(
        "tensor dtypes",
        f"FP16: {yes_no(s.fp16)}  BF16: {yes_no(s.bf16)}  TF32: {yes_no(s.tf32)}  "
        f"FP8: {yes_no(s.fp8)}  INT8: {yes_no(s.int8_tensor)}",
    )
    if gpu.pcie_generation is not None:
        t.add_row("PCIe", f"gen {gpu.pcie_generation} x{_num(gpu.pcie_width)}")
    if gpu.nvlink_active_links is not None:
        t.add_row("NVLink", f"{gpu.nvlink_active_links} active link(s)")
    if gpu.mig_enabled:
        t.add_row("MIG", "[yellow]enabled[/]")
    if gpu.driver_version:
        t.add_row("driver", f"{gpu.driver_version} (CUDA ≤ {gpu.cuda_driver_version or 'unknown'})")
    if alike > 1:
        title = f"GPUs {gpu.index}-{last_index}: {alike} x {gpu.name or gpu.vendor}"
        return Panel(t, title=f"[bold]{title}[/]", title_align="left")
    ident = gpu.uuid or gpu.pci_bus_id or f"index {gpu.index}"
    return Panel(
        t,
        title=f"[bold]GPU {gpu.index}: {gpu.name or gpu.vendor}[/]",
        subtitle=ident,
        title_align="left",
    )


def memory_software_panel(facts: Facts) -> Panel:
    """System memory (and its container limit), the host and the DL software found."""
    t = _kv_table()
    m = facts.memory
    t.add_row(
        "memory", f"{human_bytes(m.total_bytes)} total · {human_bytes(m.available_bytes)} available"
    )
    if m.cgroup_limit_bytes is not None:
        t.add_row("cgroup limit", human_bytes(m.cgroup_limit_bytes))
    h = facts.host
    t.add_row(
        "host",
        " · ".join(x for x in (h.os, h.kernel, h.virtualization, h.container) if x) or "unknown",
    )
    if h.shm_bytes is not None:
        t.add_row("/dev/shm", human_bytes(h.shm_bytes))
    sw = facts.software
    torch = sw.torch
    if torch is None:
        t.add_row("torch", "[dim]not installed[/]")
    else:
        accel = (
            f"CUDA {torch.cuda}"
            if torch.cuda
            else (f"HIP {torch.hip}" if torch.hip else "CPU build")
        )
        t.add_row("torch", f"{torch.version} ({accel})")
    for name in ("onnxruntime", "openvino", "tensorflow"):
        version = getattr(sw, name)
        if version:
            t.add_row(name, version)
    for issue in sw.issues:
        t.add_row("[red]issue[/]", f"[red]{issue}[/]")
    return Panel(t, title="[bold]Memory & software[/]", title_align="left")


def probe_counts(facts: Facts) -> str:
    """'8 probes ok, 3 absent': the probes by outcome. A source that is simply not there
    (no NVIDIA driver, not a Mac) is counted as absent, not as a failure."""
    counts = Counter(p.status for p in facts.probes)
    parts = [(n, status.value) for status in ProbeStatus if (n := counts[status])]
    if not parts:
        return "no probes ran"
    (n, first), rest = parts[0], parts[1:]
    return ", ".join([f"{n} probe{'s' if n != 1 else ''} {first}", *(f"{k} {s}" for k, s in rest)])


def probes_line(facts: Facts) -> str:
    """A summary of the probes: failures in yellow, absent sources dimmed, with reasons."""
    parts = []
    for p in facts.probes:
        if p.status is ProbeStatus.ABSENT:
            parts.append(f"[dim]{p.name}: absent ({p.error or 'not found'})[/]")
        elif p.status is not ProbeStatus.OK:
            parts.append(f"[yellow]{p.name}: {p.status.value} ({p.error or 'no detail'})[/]")
    return "\n".join([f"[dim]{probe_counts(facts)}[/]", *parts])


def render_facts(facts: Facts, console: Console | None = None) -> None:
    """Print the facts as panels (on stdout unless a console is given)."""
    console = console or stdout_console()
    console.print(cpu_panel(facts.cpu, facts.host.virtualization))
    console.print(memory_software_panel(facts))
    if facts.gpus:
        panels = [gpu_panel(g[0], len(g), g[-1].index) for g in gpu_groups(list(facts.gpus))]
        console.print(Columns(panels))
    else:
        console.print("[dim]No GPU found.[/]")
    if facts.bench is not None:
        from hwadvisor.render.bench import render_bench

        render_bench(facts.bench, console)
    console.print(probes_line(facts))

"""The roles a node suits, for labels and fleet summaries: one small documented function.

When a report carries recommendations (``recommend --json`` verdicts), their verdicts are
the roles: ``<scenario>-<device>`` for each verdict that does not say the machine falls
short (``training-gpu``, ``inference-cpu``, ``distributed-multi-gpu``). Otherwise the
roles are derived from the facts and the measurements, by these thresholds:

==================  ===========================================================================
role                when
==================  ===========================================================================
training-multi-gpu  two or more GPUs of the 16 GB class or larger (GUIDANCE S3, R2)
training-gpu        at least one GPU of the 16 GB class or larger (S2; R1 used one 16 GB GPU; M2)
inference-gpu       at least one GPU (S6)
inference-cpu       4+ usable cores, or AVX-512 / AMX (R7, T4), or a measured fp32 matmul of
                    100 GFLOP/s or more on the CPU (S5: low-QPS inference belongs on a CPU)
preprocessing-cpu   8+ usable cores (S8, C3: data pipelines want cores beside the GPU)
prototyping-cpu     only when nothing above applies: any CPU can debug a model (S1)
==================  ===========================================================================

The order of the table is the order of preference: the first role is the node's main one.
"""

from __future__ import annotations

from hwadvisor.export.report import Report

GIB = 1024**3

#: A "16 GB" card reports about 15 GiB to NVML once the driver has reserved its share.
TRAINING_GPU_MIN_BYTES = 15 * GIB
INFERENCE_CPU_MIN_CORES = 4
PREPROCESSING_CPU_MIN_CORES = 8
#: fp32 matmul rate that serves a low-QPS model in tens of ms (e.g. BERT-base, 22.4 GFLOP
#: per sample at seq 128: 2 FLOPs per weight of its ~85 M encoder weights per token, plus
#: attention; Devlin et al., arXiv:1810.04805; ~0.2 s at 100 GFLOP/s).
INFERENCE_CPU_MIN_GFLOPS = 100.0

ROLE_ORDER = (
    "training-multi-gpu",
    "training-gpu",
    "inference-gpu",
    "inference-cpu",
    "preprocessing-cpu",
    "prototyping-cpu",
)


def verdict_roles(report: Report) -> list[str]:
    """Roles named by the saved recommendations that do not say the machine falls short."""
    roles: list[str] = []
    for v in report.verdicts:
        if v.fits_here is False or v.scenario is None:
            continue
        role = f"{v.scenario}-{v.device.replace('_', '-')}"
        if role not in roles:
            roles.append(role)
    return roles


def derived_roles(report: Report) -> list[str]:
    """Roles from facts and measurements alone, by the thresholds in this module's table."""
    facts = report.facts
    big_gpus = [g for g in facts.gpus if (g.memory_total_bytes or 0) >= TRAINING_GPU_MIN_BYTES]
    cores = facts.cpu.usable_cores or 0
    feats = facts.cpu.features
    fp32 = report.bench.best("cpu", "matmul", "fp32") if report.bench else None
    wide_isa = feats.avx512f or feats.amx_bf16 or feats.amx_int8
    roles: list[str] = []
    if len(big_gpus) >= 2:
        roles.append("training-multi-gpu")
    if big_gpus:
        roles.append("training-gpu")
    if facts.gpus:
        roles.append("inference-gpu")
    if (
        cores >= INFERENCE_CPU_MIN_CORES
        or wide_isa
        or (fp32 is not None and fp32.value >= INFERENCE_CPU_MIN_GFLOPS)
    ):
        roles.append("inference-cpu")
    if cores >= PREPROCESSING_CPU_MIN_CORES:
        roles.append("preprocessing-cpu")
    return roles or ["prototyping-cpu"]


def node_roles(report: Report) -> list[str]:
    """The node's roles, main one first: the saved verdicts when any apply, else derived."""
    return verdict_roles(report) or derived_roles(report)

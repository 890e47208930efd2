"""The guidance ids a rule may cite in ``source`` (the claims the rule set encodes), with a
short title each.

A rule citing an id not listed here is refused when rules load; a test checks that the
shipped rules cite every id, so no piece of the guidance is left unencoded.
"""

from __future__ import annotations

#: GUIDANCE id -> short title (for ``rules show`` and ``docs/rules.md``).
GUIDANCE: dict[str, str] = {
    "W1": "training is dominated by highly parallel matrix math",
    "W2": "a CPU has few, powerful cores built for serial work",
    "W3": "a GPU has thousands of light cores and tensor cores",
    "W4": "memory bandwidth is the CPU's bottleneck (~100 GB/s vs TB/s)",
    "W5": "CPU and GPU run the same framework code",
    "R1": "ResNet-50, 10 epochs: 24-core CPU ~120 min, one GPU ~12 min (~10x)",
    "R2": "four GPUs, data parallel: ~3 min (near-linear)",
    "R3": "ResNet-50 on ImageNet: CPU days to weeks, GPU hours (10x-100x+)",
    "R4": "BERT-base inference: CPU tens of ms, GPU a few ms (5x-20x)",
    "R5": "YOLOv5n inference: CPU ~30-50 ms, GPU <5 ms (2x-5x)",
    "R6": "the exact ratio depends on bandwidth, PCIe and the model",
    "R7": "current server CPUs with AVX-512/AMX infer 2-3x faster than older ones",
    "S1": "prototyping and debugging: a CPU is enough",
    "S2": "small and mid-size training: one GPU; tight budget: older GPU or spot",
    "S3": "large-scale distributed training: a multi-GPU cluster with fast interconnect",
    "S4": "training on CPU: only research with no time pressure",
    "S5": "low-QPS, latency-tolerant inference: CPU with batching, quantized",
    "S6": "high-QPS or latency-critical inference: GPU",
    "S7": "ultra-light models and edge: CPU",
    "S8": "data preprocessing and pipelines: keep them on the CPU",
    "C1": "experienced team: a GPU pool with a scheduler",
    "C2": "new team, limited budget: start on CPU cloud instances",
    "C3": "mixed workloads: CPU pipeline, GPU tensors, in parallel",
    "C4": "small team without multi-GPU operations: cloud GPUs, not owned servers",
    "C5": "GPU instances are cheaper now; GPUs core, CPUs helper",
    "T1": "export to ONNX; ONNX Runtime or OpenVINO",
    "T2": "quantize FP32 to INT8",
    "T3": "prune or distil to a smaller model",
    "T4": "choose a current CPU generation with AVX-512 and AMX",
    "M1": "data loading: move tensors to GPU, load asynchronously",
    "M2": "GPU memory is small: lower batch size or accumulate gradients",
    "M3": "FP16 mixed precision needs loss scaling",
    "M4": "driver and CUDA versions must match the framework build",
    "M5": "monitor GPU utilisation, memory, temperature and power",
    "P1": "a CPU trains longer, so total energy is not lower",
    "P2": "GPU servers need strong cooling and stable power",
    "P3": "CPU cheap to buy, expensive in time; GPU the reverse",
    "P4": "cloud GPU capacity is elastic: rent and release",
}

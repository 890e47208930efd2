"""The schema of catalog entries: devices (peaks, memory, interconnect, achieved
fractions), models (cost) and families."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hwadvisor.models import bounds
from hwadvisor.models.memory import CatalogMemoryCounts
from hwadvisor.models.workload import ModelKind

# A user's ``--catalog`` file is untrusted: every number has its limit from the table of
# :mod:`hwadvisor.models.bounds`, and no number may be NaN or infinite (the entries' config).
Tflops = Annotated[float, bounds.TFLOPS]
Watts = Annotated[float, bounds.WATTS]
Ghz = Annotated[float, bounds.CLOCK_GHZ]
Cores = Annotated[int, bounds.CORES]
Width = Annotated[int, bounds.WIDTH]
Heads = Annotated[int, bounds.HEADS]
Context = Annotated[int, bounds.CONTEXT]
Bytes = Annotated[float, bounds.BYTES]


class _Entry(BaseModel):
    """Catalog entries refuse unknown fields, so a typo in a user's file is an error;
    a number must be finite and a string valid Unicode."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _valid_text(cls, data: Any) -> Any:
        """Refuse a string that is not valid Unicode (a lone surrogate), naming the field."""
        bad = bounds.text_problem(data)
        if bad is not None:
            raise ValueError(f"{bad}: not valid Unicode (a lone surrogate)")
        return data


class DeviceKind(str, Enum):
    """What sort of processor an entry describes."""

    GPU = "gpu"
    CPU = "cpu"
    SOC = "soc"


class Peaks(_Entry):
    """Dense peak rate per data type, TFLOP/s (TOPS for int8); absent where unsupported."""

    fp32: Tflops | None = None
    tf32: Tflops | None = None
    bf16: Tflops | None = None
    fp16: Tflops | None = None
    fp8: Tflops | None = None
    fp4: Tflops | None = Field(
        None,
        description="4-bit floating point (NVFP4/MXFP4) on Blackwell and CDNA 4 tensor cores, dense",
    )
    int8: Tflops | None = None
    fp16_accumulate: Tflops | None = Field(
        None,
        description="FP16 tensor rate with FP16 accumulate, dense, where it differs from fp16 "
        "(GeForce parts run FP32 accumulate, the fp16 figure, at half this rate)",
    )


class Interconnect(_Entry):
    """How devices of this kind talk to each other in a multi-device job."""

    kind: str = Field(
        description="nvlink2, nvlink3, nvlink4, pcie3, pcie4, pcie5, infinity-fabric, none"
    )
    gb_s_per_direction: Tflops | None = None
    host: str | None = Field(
        None,
        description="the PCIe generation between the host and the GPU (pcie3, pcie4, pcie5) "
        "where kind names a GPU-to-GPU link: the board's own (SXM, OAM: the reference "
        "node's host interface)",
    )
    network_gb_s_per_gpu: Tflops | None = Field(
        None,
        gt=0,
        description="the network between nodes, per GPU and direction, of the vendor's "
        "reference cluster node (GB/s)",
    )
    network_source: str | None = None


#: The most of a datasheet peak a measured product may reach: GeForce boards hold clocks
#: above the rated boost clock the peak is computed at (RTX 5090: 1.096 measured).
GEMM_FRACTION_MAX = 1.2


class Achieved(_Entry):
    """Typical fraction of the matching peak reached per workload class, with its source."""

    gemm: float = Field(
        gt=0,
        le=GEMM_FRACTION_MAX,
        description="fraction of the datasheet peak a large product reaches; past 1 where "
        "measured on boards that hold clocks above the rated boost clock (GeForce)",
    )
    cnn_train: float = Field(gt=0, le=1)
    transformer_train: float = Field(gt=0, le=1)
    inference: float = Field(gt=0, le=1)
    memory: float = Field(gt=0, le=1, description="fraction of bandwidth reached by streaming")
    fp32: float = Field(
        0.55, gt=0, le=1, description="fraction of the fp32 peak reached by fp32 training"
    )
    fp32_gemm: float | None = Field(
        None,
        gt=0,
        le=1,
        description="GPUs: fraction of the fp32 peak a large fp32 GEMM reaches on the FMA "
        "units (no tensor cores), where measured; else gemm",
    )
    tensor_gemm: float | None = Field(
        None,
        gt=0,
        le=1,
        description="fraction of the 16-bit/int8 matrix-unit peak, when it differs from gemm",
    )
    fp4_gemm: float | None = Field(
        None,
        gt=0,
        le=1,
        description="fraction of the fp4 peak a large FP4 (NVFP4/MXFP4) product reaches, "
        "where measured; else gemm",
    )
    transformer_infer: float | None = Field(
        None,
        gt=0,
        le=1,
        description="fraction of the peak a transformer's forward pass reaches (inference), "
        "where a measurement was published; else inference",
    )
    source: str


class DeviceEntry(_Entry):
    """One device of the catalog."""

    id: str
    name: str
    kind: DeviceKind
    vendor: str
    peaks_tflops: Peaks
    memory_bytes: Annotated[int, bounds.SIZE]
    bandwidth_gb_s: Tflops = Field(gt=0)
    interconnect: Interconnect
    tdp_watts: Watts | None = None
    achieved: Achieved
    notes: str | None = None
    source: str = Field(min_length=3)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    # Power and CPU topology (issue 13): energy per job and CPU instances priced by vCPU.
    board_power_w: Watts | None = Field(
        None,
        gt=0,
        description="power the part draws at full load: the GPU's board power, the CPU package's TDP",
    )
    power_source: str | None = Field(None, description="where board_power_w comes from")
    released: int | None = Field(
        None, ge=1990, le=2100, description="year of launch (tells a previous generation)"
    )
    cores: Cores | None = Field(None, description="CPU: physical cores over all its sockets")
    threads: Cores | None = Field(None, description="CPU: hardware threads (cores x SMT)")
    sockets: Annotated[int, bounds.SOCKETS] | None = Field(
        None, description="CPU: sockets the peaks and cores cover"
    )
    base_ghz: Ghz | None = Field(None, description="CPU: base clock")
    all_core_ghz: Ghz | None = Field(
        None, gt=0, description="CPU: sustained all-core turbo clock, where the vendor states it"
    )
    microarchitecture: str | None = Field(
        None,
        description="CPU: archspec's name of its cores (zen4, sapphirerapids)",
    )
    # LLM serving on unified memory (issue 12).
    gpu_memory_fraction: float | None = Field(
        None,
        gt=0,
        le=1,
        description="SoC: share of unified memory the GPU may hold (Metal's working-set limit)",
    )
    gpu_memory_source: str | None = Field(None, description="where gpu_memory_fraction comes from")
    # Names as people type them (issue 16): other spellings of this part's id.
    aliases: tuple[str, ...] = Field(
        (),
        description="other spellings that name this entry (4090 for rtx-4090); see families.yaml",
    )

    @property
    def streaming_bytes_s(self) -> float:
        """Bytes/s a streaming kernel reaches: the datasheet bandwidth at its achieved share."""
        return self.bandwidth_gb_s * 1e9 * self.achieved.memory


class ModelEntry(_Entry):
    """One model of the catalog: its size and cost at a stated input size."""

    id: str
    name: str
    kind: ModelKind
    params: Annotated[int, bounds.PARAMS]
    flops_per_sample: Annotated[float, bounds.FLOPS_PER_SAMPLE] = Field(
        description="real forward FLOPs per sample (not MACs)"
    )
    input_shape: list[Annotated[int, bounds.SHAPE_DIM]] | None = Field(None, max_length=16)
    seq_len: Context | None = None
    layers: Annotated[int, bounds.LAYERS] | None = None
    hidden: Width | None = None
    heads: Heads | None = None
    kv_heads: Heads | None = None
    vocab: Annotated[int, bounds.VOCAB] | None = None
    activation_bytes_per_sample: Bytes | None = Field(
        None,
        description="fp32 bytes saved for backward per sample (CNNs; measured on meta tensors)",
    )
    memory_counts: CatalogMemoryCounts | None = Field(
        None,
        description="peaks of one training step and one inference pass per precision, counted on fake tensors (scripts/count_activations.py)",
    )
    memory_bytes_per_sample: Bytes | None = Field(
        None, description="fp32 bytes moved by memory-bound forward operators per sample"
    )
    conv_fraction: float = Field(
        0.0, ge=0, le=1, description="share of forward FLOPs in convolutions"
    )
    conv_sizes: list[tuple[int, float]] | None = Field(
        None,
        description="[effective product size, share of convolution FLOPs] pairs, counted at batch 32",
    )
    kernels: Annotated[int, bounds.KERNELS] | None = Field(
        None, description="operator launches per forward pass"
    )
    backward_memory_bytes_per_sample: Bytes | None = Field(
        None, description="cost-weighted bytes of the backward's memory-bound operators per sample"
    )
    backward_kernels: Annotated[int, bounds.KERNELS] | None = Field(
        None, description="operator launches per backward pass"
    )
    dropout: float = Field(
        0.0, ge=0, lt=1, description="dropout probability in training (transformers)"
    )
    fused_attention: bool = Field(
        False,
        description="encoders: attention runs as one fused scaled-dot-product kernel "
        "(F.scaled_dot_product_attention), the scores never stored; else the eager "
        "products, scaling, mask and softmax",
    )
    dataset: str | None = Field(
        None, description="the data set the model is usually trained on, when there is one"
    )
    dataset_size: Annotated[int, bounds.PARAMS] | None = Field(
        None,
        gt=0,
        description="samples in that data set's training split (the default --dataset-size)",
    )
    activation_depends_on: str
    # The LLM shape of a decoder, from its published config.json (issue 12).
    head_dim: Width | None = Field(None, description="attention head width (config head_dim)")
    intermediate: Width | None = Field(None, description="MLP width (intermediate_size)")
    tied_embeddings: bool | None = Field(None, description="lm_head shares the embedding matrix")
    attention_bias: bool | None = Field(None, description="q/k/v projections have biases (Qwen2)")
    norms_per_layer: Width | None = Field(None, description="norm weight vectors per layer")
    experts: Heads | None = Field(None, description="MoE: experts per layer")
    experts_per_token: Heads | None = Field(None, description="MoE: experts routed per token")
    active_params: Annotated[int, bounds.PARAMS] | None = Field(
        None, description="MoE: parameters one token uses"
    )
    sliding_window: Context | None = Field(None, description="sliding-window attention span")
    sliding_layers: str | None = Field(
        None,
        pattern=r"^(all|alternate)$",
        description="which layers slide: all, or alternate (layer 0 sliding, 1 global, ...)",
    )
    max_context: Context | None = Field(None, description="max_position_embeddings")
    dtype: str | None = Field(None, description="torch_dtype of the published checkpoint")
    hf_repo: str | None = Field(None, description="the Hugging Face repository of the config")
    source: str = Field(min_length=3)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")
    aliases: tuple[str, ...] = Field((), description="other spellings that name this entry")


class FamilyEntry(_Entry):
    """A family name people type (``h100``) and the part it is taken to mean, with why."""

    family: str = Field(min_length=1)
    default: str = Field(description="the catalog id the family name resolves to")
    members: tuple[str, ...] = Field(min_length=1, description="the catalog ids of the family")
    reason: str = Field(min_length=3, description="why the default is the part meant")
    source: str = Field(min_length=3)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")

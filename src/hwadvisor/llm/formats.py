"""Weight formats (fp32 ... nf4): bits per weight from each format's definition.

The data is ``hwadvisor/catalog/data/quant.yaml``; each entry carries its source. A
format prices a model's weights in bytes: the transformer matrices at
``bits_per_weight``, the token embedding and the output projection at what the tools
that make the format keep them in (AWQ/GPTQ/NF4 leave them 16-bit; llama.cpp stores the
Q4_0 output matrix as Q6_K).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hwadvisor.catalog.loader import did_you_mean
from hwadvisor.errors import UsageError
from hwadvisor.llm._data import shipped_models
from hwadvisor.llm.arch import PARTS, LlmArch

Compute = Literal["fp32", "fp16", "bf16", "fp8", "int8", "fp4"]


class QuantFormat(BaseModel):
    """One weight format: storage bits, what the matmuls compute in, and the source."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    bits_per_weight: float = Field(gt=0, le=32)
    embedding_bits: float | None = Field(None, gt=0, le=32)
    head_bits: float | None = Field(None, gt=0, le=32)
    compute: Compute
    block_quantized: bool = False
    source: str = Field(min_length=3)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")

    @property
    def embedding_bpw(self) -> float:
        """Bits per weight of the token embedding."""
        return self.embedding_bits or self.bits_per_weight

    @property
    def head_bpw(self) -> float:
        """Bits per weight of the output projection (lm_head)."""
        return self.head_bits or self.bits_per_weight

    def part_bits(self, arch: LlmArch) -> dict[str, float]:
        """Bits per weight of each matrix part: this format's, except the parts the
        checkpoint's own quantization_config keeps in 16 bits when it is this format
        (gpt-oss: attention and router bf16 beside MXFP4 experts)."""
        q = arch.quantization
        skip = set(q.skip) if q is not None and q.format_id == self.id else set()
        return {part: 16.0 if part in skip else self.bits_per_weight for part in PARTS}

    def _skips(self, arch: LlmArch, part: str) -> bool:
        q = arch.quantization
        return q is not None and q.format_id == self.id and part in q.skip

    def _embedding_head_bytes(self, arch: LlmArch) -> float:
        emb = 16.0 if self._skips(arch, "embedding") else self.embedding_bpw
        head = 16.0 if self._skips(arch, "head") else self.head_bpw
        if arch.tied_embeddings:
            return arch.embedding_params * max(emb, head) / 8
        return (arch.embedding_params * emb + arch.head_params * head) / 8

    def body_bytes(self, arch: LlmArch, experts: float | None = None) -> float:
        """Bytes of the layers' matrices with ``experts`` routed experts each (default:
        those one token uses), each part at its bits."""
        bits = self.part_bits(arch)
        parts = arch.matrix_params_by_part(experts)
        return sum(parts[p] * bits[p] for p in PARTS) / 8

    def weight_bytes(self, arch: LlmArch) -> float:
        """Bytes of all weights in memory: every expert, embedding, head and norms (fp32
        for an fp32 model, else 16-bit). The MTP module is apart (:meth:`mtp_bytes`)."""
        norms = arch.norm_params * (4.0 if self.bits_per_weight >= 32 else 2.0)
        return self.body_bytes(arch, arch.experts) + norms + self._embedding_head_bytes(arch)

    def mtp_bytes(self, arch: LlmArch) -> float:
        """The multi-token-prediction modules in this format (0 without them)."""
        return arch.params_mtp * self.bits_per_weight / 8

    def bytes_read_per_step(self, arch: LlmArch, experts: float | None = None) -> float:
        """Weight bytes one decode step reads: routed experts, the lm_head, not the embedding.

        ``experts`` is the mean number of distinct experts a step touches per layer (default
        the experts per token: one sequence). The embedding contributes one row only.
        """
        emb = 16.0 if self._skips(arch, "embedding") else self.embedding_bpw
        head = 16.0 if self._skips(arch, "head") else self.head_bpw
        head_bpw = max(emb, head) if arch.tied_embeddings else head
        return self.body_bytes(arch, experts) + arch.lm_head_matrix_params * head_bpw / 8


@lru_cache(maxsize=1)
def load_formats() -> dict[str, QuantFormat]:
    """Every shipped weight format by id."""
    return {fmt.id: fmt for fmt in shipped_models("quant.yaml", "formats", QuantFormat, "format")}


def find_format(ident: str) -> QuantFormat:
    """The format ``ident`` (case-insensitive); unknown -> UsageError listing the choices."""
    formats = load_formats()
    key = ident.strip().lower().replace("-", "_")
    if key in formats:
        return formats[key]
    raise UsageError(
        f"unknown quant '{ident}'{did_you_mean(key, formats)}; choose one of {', '.join(formats)}"
    )


#: Hugging Face ``torch_dtype`` names -> format ids.
DTYPE_FORMATS = {
    "float32": "fp32",
    "float": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8",
}


def format_for_dtype(dtype: str | None) -> QuantFormat:
    """The format of an unquantized checkpoint's ``torch_dtype`` (unknown/absent: bf16)."""
    key = (dtype or "bfloat16").lower().removeprefix("torch.")
    return load_formats()[DTYPE_FORMATS.get(key, "bf16")]


def default_format(arch: LlmArch) -> QuantFormat:
    """What a checkpoint is stored in: its quantization_config's format, else its dtype."""
    q = arch.quantization
    if q is not None and q.format_id in load_formats():
        return load_formats()[q.format_id]
    return format_for_dtype(arch.dtype)

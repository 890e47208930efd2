"""The shape of a decoder-only language model, and what follows from it.

:class:`LlmArch` holds what a Hugging Face ``config.json`` says (layers, widths, heads,
grouped-query KV heads, MoE experts, sliding-window layers); its properties derive the
parameter counts (total, and active per token for a mixture of experts), the matrix
parameters a decode step reads, the FLOPs per token and the KV cache per token.

Counts follow the layer definitions of the Llama family in ``transformers``
(``modeling_llama.py``): attention q, k, v, o projections (q/k/v bias where the config says
so, as Qwen2 has), a gated MLP (gate, up, down: SwiGLU/GeGLU) or a plain two-matrix MLP,
``norms_per_layer`` RMSNorm weight vectors per layer (2; Gemma-2 has 4) and a final norm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.errors import UsageError


@dataclass(frozen=True)
class QuantConfig:
    """What a checkpoint's ``quantization_config`` says: the method and its settings."""

    method: str
    bits: int | None = None
    group_size: int | None = None
    format_id: str | None = None  # the hwadvisor quant format it maps to, when known


@dataclass(frozen=True)
class LlmArch:
    """A decoder-only transformer's shape, as its config states it (frozen)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool = False
    gated_mlp: bool = True
    attention_bias: bool = False
    norms_per_layer: int = 2
    experts: int = 1
    experts_per_token: int = 1
    expert_intermediate: int | None = None
    sliding_window: int | None = None
    #: One flag per layer, True where the layer attends over a sliding window only.
    sliding_layers: tuple[bool, ...] = ()
    max_context: int | None = None
    dtype: str = "bfloat16"
    quantization: QuantConfig | None = None
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        """Refuse shapes no model has (a UsageError names the field)."""
        for name in ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise UsageError(
                    f"model {self.name}: {name} must be a positive integer, got {value!r}"
                )
        if self.kv_heads > self.heads or self.heads % self.kv_heads:
            raise UsageError(
                f"model {self.name}: {self.heads} attention heads cannot share {self.kv_heads} KV heads"
            )
        if self.experts < 1 or not 1 <= self.experts_per_token <= self.experts:
            raise UsageError(
                f"model {self.name}: {self.experts_per_token} experts per token of {self.experts}"
            )
        if self.sliding_window is not None and self.sliding_window <= 0:
            raise UsageError(f"model {self.name}: sliding_window must be positive")
        if self.sliding_layers and len(self.sliding_layers) != self.layers:
            raise UsageError(
                f"model {self.name}: {len(self.sliding_layers)} layer types for {self.layers} layers"
            )

    # -- parameters -------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        """True for a mixture of experts (more than one expert MLP per layer)."""
        return self.experts > 1

    @property
    def embedding_params(self) -> int:
        """The input embedding matrix (vocab x hidden)."""
        return self.vocab * self.hidden

    @property
    def head_params(self) -> int:
        """The output projection (lm_head); 0 when it is the tied input embedding."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @property
    def attention_params(self) -> int:
        """Attention weights of one layer: q, k, v, o (and q/k/v biases where present)."""
        q_out, kv_out = self.heads * self.head_dim, self.kv_heads * self.head_dim
        weights = self.hidden * q_out + 2 * self.hidden * kv_out + q_out * self.hidden
        return weights + (q_out + 2 * kv_out if self.attention_bias else 0)

    @property
    def expert_params(self) -> int:
        """One MLP (one expert of an MoE): gate, up and down, or up and down."""
        inner = self.expert_intermediate or self.intermediate
        return (3 if self.gated_mlp else 2) * self.hidden * inner

    @property
    def router_params(self) -> int:
        """The MoE router of one layer (hidden x experts); 0 for a dense model."""
        return self.hidden * self.experts if self.is_moe else 0

    @property
    def norm_params(self) -> int:
        """All norm weight vectors: per layer, and the final norm."""
        return self.layers * self.norms_per_layer * self.hidden + self.hidden

    def _layer_params(self, experts: int) -> int:
        return self.attention_params + experts * self.expert_params + self.router_params

    @property
    def params_total(self) -> int:
        """Every parameter the checkpoint stores (what must sit in memory)."""
        body = self.layers * self._layer_params(self.experts)
        return body + self.embedding_params + self.head_params + self.norm_params

    @property
    def params_active(self) -> int:
        """Parameters one token uses: the routed experts only (equals the total when dense)."""
        body = self.layers * self._layer_params(self.experts_per_token)
        return body + self.embedding_params + self.head_params + self.norm_params

    @property
    def lm_head_matrix_params(self) -> int:
        """The output projection a decode step multiplies by (the embedding when tied)."""
        return self.vocab * self.hidden

    def body_matrix_params(self, experts: float | None = None) -> float:
        """Matrix parameters of all layers with ``experts`` experts each (default: routed)."""
        n = self.experts_per_token if experts is None else experts
        return self.layers * (self.attention_params + n * self.expert_params + self.router_params)

    # -- compute ----------------------------------------------------------------------

    def attention_span(self, context: int) -> int:
        """Keys summed over layers that one token at position ``context`` attends to."""
        if not self.sliding_layers or self.sliding_window is None:
            return self.layers * context
        window = min(context, self.sliding_window)
        return sum(window if s else context for s in self.sliding_layers)

    def flops_per_token(self, context: int, *, with_head: bool = True) -> float:
        """Real FLOPs (2 per multiply-accumulate) of one token at position ``context``.

        2 x the matrix parameters it uses, plus QK^T and AV over the keys it attends to
        (2 x 2 x heads x head_dim per key per layer). ``with_head`` False leaves out the
        lm_head, as engines compute logits for the last prompt token only.
        """
        matrices = self.body_matrix_params() + (self.lm_head_matrix_params if with_head else 0)
        attention = 4 * self.heads * self.head_dim * self.attention_span(context)
        return 2 * matrices + attention

    def prefill_flops(self, tokens: int, start: int = 0) -> float:
        """FLOPs of a prompt of ``tokens`` after ``start`` cached ones (causal attention).

        Matrices: 2 x params per token; attention: the mean position is start + tokens / 2.
        The lm_head runs once, for the last token.
        """
        mean = start + tokens / 2
        body = tokens * self.flops_per_token(max(1, round(mean)), with_head=False)
        return body + 2 * self.lm_head_matrix_params

    # -- KV cache ---------------------------------------------------------------------

    def kv_bytes_per_token_per_layer(self, bytes_per_element: float = 2) -> float:
        """K and V of one token in one layer: 2 x kv_heads x head_dim x bytes."""
        return 2 * self.kv_heads * self.head_dim * bytes_per_element

    def kv_cache_bytes(self, context: int, bytes_per_element: float = 2) -> float:
        """KV cache of one sequence of ``context`` tokens; sliding layers hold their window."""
        if context < 0:
            raise UsageError(f"context must not be negative, got {context}")
        return self.attention_span(context) * self.kv_bytes_per_token_per_layer(bytes_per_element)

    def kv_bytes_per_token(self, context: int | None = None, bytes_per_element: float = 2) -> float:
        """KV bytes per token: 2 x layers x kv_heads x head_dim x bytes.

        With ``context``, the mean per token of a sequence that long, so sliding-window
        layers count their window only (Gemma-2 at 8192 tokens: half the layers hold 4096).
        """
        if context is None or context <= 0:
            return self.layers * self.kv_bytes_per_token_per_layer(bytes_per_element)
        return self.kv_cache_bytes(context, bytes_per_element) / context

    def with_changes(self, **changes: object) -> LlmArch:
        """A copy with some fields replaced (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)  # type: ignore[arg-type]

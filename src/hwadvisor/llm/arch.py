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
    #: Parts the checkpoint leaves in 16 bits (``modules_to_not_convert``): attention,
    #: router, embedding, head, dense_mlp, shared_experts.
    skip: tuple[str, ...] = ()


#: The parts of the weights, as :meth:`LlmArch.matrix_params_by_part` names them.
PARTS = ("attention", "dense_mlp", "routed_experts", "shared_experts", "router")


@dataclass(frozen=True)
class LlmArch:
    """A decoder-only transformer's shape, as its config states it (frozen).

    Multi-head latent attention (MLA, DeepSeek-V2/V3, Kimi-K2) is set by ``kv_lora_rank``:
    keys and values are cached as one compressed latent of ``kv_lora_rank`` plus a
    decoupled rope key of ``qk_rope_head_dim`` per token and layer, shared by all heads
    (so ``kv_heads`` is 1: absorbed, MLA is multi-query attention over that latent).
    ``head_dim`` is then the query/key head width (``qk_nope_head_dim + qk_rope_head_dim``).
    """

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
    # -- 2025-26 architectures (all default to the plain decoder) ----------------------
    #: MLA: the query low-rank width (None: a full query projection).
    q_lora_rank: int | None = None
    #: MLA: the compressed KV latent width (None: ordinary per-head K and V).
    kv_lora_rank: int | None = None
    #: MLA: the decoupled rope key width, cached beside the latent.
    qk_rope_head_dim: int | None = None
    #: MLA: the value head width (None: head_dim).
    v_head_dim: int | None = None
    #: MoE: shared experts every token uses, and their total MLP width (None: experts
    #: of ``expert_intermediate`` each).
    shared_experts: int = 0
    shared_intermediate: int | None = None
    #: MoE: the first ``dense_layers`` layers have a dense MLP (``first_k_dense_replace``).
    dense_layers: int = 0
    #: MoE: every ``moe_layer_step``-th layer is MoE, the others dense (Llama-4 Maverick 2).
    moe_layer_step: int = 1
    #: Multi-token-prediction modules shipped beside the model (DeepSeek-V3), counted apart.
    mtp_layers: int = 0
    #: A learned sink logit per head and layer (gpt-oss).
    attention_sinks: bool = False
    #: The windowed layers attend within fixed chunks (Llama-4), not a sliding window.
    chunked_attention: bool = False

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
        for name in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "v_head_dim"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value <= 0):
                raise UsageError(f"model {self.name}: {name} must be positive, got {value!r}")
        if self.kv_lora_rank is not None and self.qk_rope_head_dim is None:
            raise UsageError(f"model {self.name}: MLA needs qk_rope_head_dim")
        if not 0 <= self.dense_layers <= self.layers or self.moe_layer_step < 1:
            raise UsageError(
                f"model {self.name}: {self.dense_layers} dense layers, MoE every "
                f"{self.moe_layer_step}, of {self.layers} layers"
            )
        if self.shared_experts < 0 or self.mtp_layers < 0:
            raise UsageError(f"model {self.name}: shared experts and MTP layers must be >= 0")

    # -- parameters -------------------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        """True for a mixture of experts (more than one expert MLP per layer)."""
        return self.experts > 1

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (a compressed KV latent)."""
        return self.kv_lora_rank is not None

    @property
    def moe_layers(self) -> int:
        """Layers with routed experts: after the dense ones, every ``moe_layer_step``-th
        (Llama-4's ``range(step - 1, layers, step)``); 0 for a dense model."""
        if not self.is_moe:
            return 0
        step = self.moe_layer_step
        return self.layers // step - self.dense_layers // step

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
        """Attention weights of one layer: q, k, v, o (and q/k/v biases where present).

        MLA (DeepSeek-V3 ``modeling_deepseek.py``): q_a (hidden x q_lora) and q_b
        (q_lora x heads x head_dim), or one q projection; kv_a (hidden x (kv_lora + rope));
        kv_b (kv_lora x heads x (nope + v)); o (heads x v x hidden); the two latent norms.
        Attention sinks add one logit per head.
        """
        sinks = self.heads if self.attention_sinks else 0
        if self.kv_lora_rank is not None:
            rope = self.qk_rope_head_dim or 0
            v = self.v_head_dim or self.head_dim
            q_out = self.heads * self.head_dim
            q = (
                self.hidden * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * q_out
                if self.q_lora_rank
                else self.hidden * q_out
            )
            kv = self.hidden * (self.kv_lora_rank + rope) + self.kv_lora_rank
            kv += self.kv_lora_rank * self.heads * (self.head_dim - rope + v)
            return q + kv + self.heads * v * self.hidden + sinks
        q_out, kv_out = self.heads * self.head_dim, self.kv_heads * self.head_dim
        weights = self.hidden * q_out + 2 * self.hidden * kv_out + q_out * self.hidden
        return weights + (q_out + 2 * kv_out if self.attention_bias else 0) + sinks

    @property
    def expert_params(self) -> int:
        """One MLP (one expert of an MoE): gate, up and down, or up and down."""
        inner = self.expert_intermediate or self.intermediate
        return (3 if self.gated_mlp else 2) * self.hidden * inner

    @property
    def dense_mlp_params(self) -> int:
        """The MLP of one dense layer (``intermediate_size`` wide)."""
        return (3 if self.gated_mlp else 2) * self.hidden * self.intermediate

    @property
    def shared_expert_params(self) -> int:
        """The shared experts of one MoE layer (every token uses them)."""
        if not self.shared_experts:
            return 0
        inner = self.shared_intermediate or self.shared_experts * (
            self.expert_intermediate or self.intermediate
        )
        return (3 if self.gated_mlp else 2) * self.hidden * inner

    @property
    def router_params(self) -> int:
        """The MoE router of one layer (hidden x experts); 0 for a dense model."""
        return self.hidden * self.experts if self.is_moe else 0

    @property
    def norm_params(self) -> int:
        """All norm weight vectors: per layer, and the final norm."""
        return self.layers * self.norms_per_layer * self.hidden + self.hidden

    def matrix_params_by_part(self, experts: float | None = None) -> dict[str, float]:
        """Matrix parameters of all layers by part, with ``experts`` routed experts per
        MoE layer (default: those one token uses)."""
        n = self.experts_per_token if experts is None else experts
        moe = self.moe_layers
        return {
            "attention": float(self.layers * self.attention_params),
            "dense_mlp": float((self.layers - moe) * self.dense_mlp_params),
            "routed_experts": moe * n * self.expert_params,
            "shared_experts": float(moe * self.shared_expert_params),
            "router": float(moe * self.router_params),
        }

    @property
    def params_total(self) -> int:
        """Every parameter the served model stores (the MTP module apart: ``params_mtp``)."""
        body = round(self.body_matrix_params(self.experts))
        return body + self.embedding_params + self.head_params + self.norm_params

    @property
    def params_active(self) -> int:
        """Parameters one token uses: the routed experts only (equals the total when dense)."""
        body = round(self.body_matrix_params())
        return body + self.embedding_params + self.head_params + self.norm_params

    @property
    def params_mtp(self) -> int:
        """The multi-token-prediction modules (DeepSeek-V3 ``num_nextn_predict_layers``):
        per module two norms, a 2h x h projection, one MoE layer and its norms, and a
        final norm; the embedding and the head are the main model's. Not in the totals:
        engines load it only for speculative decoding."""
        if not self.mtp_layers:
            return 0
        layer = self.attention_params + self.norms_per_layer * self.hidden
        if self.is_moe:
            layer += self.experts * self.expert_params + self.shared_expert_params
            layer += self.router_params
        else:
            layer += self.dense_mlp_params
        return self.mtp_layers * (layer + 2 * self.hidden * self.hidden + 3 * self.hidden)

    @property
    def lm_head_matrix_params(self) -> int:
        """The output projection a decode step multiplies by (the embedding when tied)."""
        return self.vocab * self.hidden

    def body_matrix_params(self, experts: float | None = None) -> float:
        """Matrix parameters of all layers with ``experts`` experts each (default: routed)."""
        return sum(self.matrix_params_by_part(experts).values())

    # -- compute ----------------------------------------------------------------------

    def attention_span(self, context: int) -> int:
        """Keys summed over layers that one token at position ``context`` attends to.

        Windowed layers hold at most their window; Llama-4's chunked layers (attention
        within fixed chunks of ``sliding_window`` tokens) are priced as a window of the
        chunk, the most such a layer caches and attends to."""
        if not self.sliding_layers or self.sliding_window is None:
            return self.layers * context
        window = min(context, self.sliding_window)
        local = sum(self.sliding_layers)
        return local * window + (self.layers - local) * context

    def flops_per_token(self, context: int, *, with_head: bool = True) -> float:
        """Real FLOPs (2 per multiply-accumulate) of one token at position ``context``.

        2 x the matrix parameters it uses, plus QK^T and AV over the keys it attends to
        (2 x 2 x heads x head_dim per key per layer). ``with_head`` False leaves out the
        lm_head, as engines compute logits for the last prompt token only.
        """
        matrices = self.body_matrix_params() + (self.lm_head_matrix_params if with_head else 0)
        return 2 * matrices + self.attention_flops_per_key * self.attention_span(context)

    @property
    def attention_flops_per_key(self) -> int:
        """FLOPs of QK^T and AV for one query against one cached key, in one layer.

        Per-head attention: 2 x heads x head_dim for the scores and as much for the values.
        MLA in its absorbed form (the DeepSeek-V2 paper, section 2.1.2: W_UK folded into
        the query, W_UV into the output), as engines decode it: each head scores against
        the (kv_lora + rope)-wide cached key and sums kv_lora-wide values.
        """
        if self.kv_lora_rank is not None:
            rope = self.qk_rope_head_dim or 0
            return 2 * self.heads * (2 * self.kv_lora_rank + rope)
        return 4 * self.heads * self.head_dim

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
        """K and V of one token in one layer: 2 x kv_heads x head_dim x bytes; MLA caches
        the latent and the rope key: (kv_lora_rank + qk_rope_head_dim) x bytes."""
        if self.kv_lora_rank is not None:
            return (self.kv_lora_rank + (self.qk_rope_head_dim or 0)) * bytes_per_element
        return 2 * self.kv_heads * self.head_dim * bytes_per_element

    def kv_cache_bytes(self, context: int, bytes_per_element: float = 2) -> float:
        """KV cache of one sequence of ``context`` tokens; sliding layers hold their window."""
        if context < 0:
            raise UsageError(f"context must not be negative, got {context}")
        return self.attention_span(context) * self.kv_bytes_per_token_per_layer(bytes_per_element)

    def kv_bytes_per_token(self, context: int | None = None, bytes_per_element: float = 2) -> float:
        """KV bytes per token: 2 x layers x kv_heads x head_dim x bytes (MLA: the latent).

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

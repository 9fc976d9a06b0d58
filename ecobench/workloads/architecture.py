"""A transformer described by the numbers of its ``transformers`` config, and its parameter count.

One dataclass covers the BERT-style encoders (learned positions, LayerNorm, GELU feed-forward,
biases, a pooler) and the decoders LLM teams train today (GPT-3: learned positions, LayerNorm,
GELU, tied embeddings; Llama: rotary positions, RMSNorm, SwiGLU, grouped-query attention, no
biases, untied LM head).

Two opt-in parts describe the models most new runs train: :class:`MoE` (a mixture-of-experts
feed-forward in some layers: routed experts of which each token uses a few, shared experts every
token uses) and :class:`Mla` (DeepSeek's multi-head latent attention: queries and keys/values
projected through low-rank latents; the cache keeps the key/value latent). Without them an
architecture is exactly the dense one it always was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["encoder", "decoder"]
Ffn = Literal["gelu", "swiglu"]
Norm = Literal["layernorm", "rmsnorm"]
Position = Literal["learned", "rotary"]
Task = Literal["pretrain", "classification"]


@dataclass(frozen=True)
class MoE:
    """A mixture-of-experts feed-forward (GShard/Switch style, as Mixtral and DeepSeek run it).

    Layer ``i`` (0-based) is a MoE layer when ``i >= first_dense_layers`` and ``i % layer_freq == 0``
    (the rule of the DeepSeek configs; Mixtral: every layer). ``capacity_factor`` is the load of the
    busiest expert over the mean (1.0: perfectly balanced, as benchmarks that force balance run; a
    token-dropping run pads every expert to its capacity)."""

    experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_experts: int = 0  # each as wide as a routed expert (DeepSeek's shared expert)
    first_dense_layers: int = 0  # DeepSeek's first_k_dense_replace
    layer_freq: int = 1
    capacity_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) must not exceed experts "
                             f"({self.experts})")

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has the expert feed-forward."""
        return layer >= self.first_dense_layers and layer % self.layer_freq == 0


@dataclass(frozen=True)
class Mla:
    """Multi-head latent attention (DeepSeek-V2/V3): dimensions of the ``transformers`` config."""

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None  # None: queries projected directly (DeepSeek-V2-Lite)

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class Architecture:
    """A transformer: the numbers in a ``transformers`` config."""

    name: str
    layers: int
    hidden_size: int
    heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int = 512
    kind: Kind = "encoder"
    kv_heads: int | None = None  # grouped-query attention; None: as many as heads
    ffn: Ffn = "gelu"
    tied_embeddings: bool = True
    norm: Norm = "layernorm"
    position: Position = "learned"
    bias: bool = True
    type_vocab_size: int = 2  # BERT's segment embeddings (0 for decoders)
    layout_2d: bool = False  # LayoutLM's x/y/h/w position embeddings
    max_2d_position_embeddings: int = 1024
    head_dim_override: int | None = None  # a config's own head_dim (Qwen3); None: hidden / heads
    qkv_bias: bool | None = None  # biases on the query/key/value projections (Qwen2); None: as ``bias``
    qk_norm: bool = False  # RMSNorm of each query and key head (Qwen3)
    moe: MoE | None = None  # mixture-of-experts feed-forward; None: dense
    mla: Mla | None = None  # multi-head latent attention; None: multi-/grouped-query attention

    def __post_init__(self) -> None:
        if self.head_dim_override is None and self.mla is None and self.hidden_size % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden_size ({self.hidden_size})")
        if self.heads % self.kv:
            raise ValueError(f"kv_heads ({self.kv}) must divide heads ({self.heads})")

    @property
    def kv(self) -> int:
        """Key/value heads (grouped-query attention shares each among heads / kv of the heads)."""
        return self.kv_heads or self.heads

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.head_dim_override or self.hidden_size // self.heads

    @property
    def qk_head_dim(self) -> int:
        """Width of one query/key head (MLA: the no-position part and the rotary part)."""
        return self.mla.qk_head_dim if self.mla else self.head_dim

    @property
    def v_head_dim(self) -> int:
        """Width of one value head."""
        return self.mla.v_head_dim if self.mla else self.head_dim

    @property
    def qkv_width(self) -> int:
        """Output width of the fused query/key/value projection (MLA: of the up-projected queries,
        keys and values)."""
        if self.mla is not None:
            return self.heads * (2 * self.mla.qk_head_dim + self.mla.v_head_dim)
        return (self.heads + 2 * self.kv) * self.head_dim

    @property
    def norm_params(self) -> int:
        """Parameters of one normalisation layer (LayerNorm: scale and shift; RMSNorm: scale)."""
        return (2 if self.norm == "layernorm" else 1) * self.hidden_size

    @property
    def embedding_params(self) -> int:
        """Token, position, segment (and LayoutLM 2-D) tables, plus the encoder's embedding norm."""
        h = self.hidden_size
        n = self.vocab_size * h + self.type_vocab_size * h
        if self.position == "learned":
            n += self.max_position_embeddings * h
        if self.layout_2d:
            n += 4 * self.max_2d_position_embeddings * h
        if self.kind == "encoder":
            n += self.norm_params
        return n

    @property
    def attention_params(self) -> int:
        """Query/key/value and output projections of one layer (and Qwen3's per-head norms; MLA's
        down- and up-projections and latent norms)."""
        h = self.hidden_size
        if self.mla is not None:
            m, n = self.mla, self.heads
            q = (h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * n * m.qk_head_dim if m.q_lora_rank
                 else h * n * m.qk_head_dim)
            kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank \
                + m.kv_lora_rank * n * (m.qk_nope_head_dim + m.v_head_dim)
            return q + kv + n * m.v_head_dim * h
        qkv_bias = self.bias if self.qkv_bias is None else self.qkv_bias
        return (h * self.qkv_width + self.heads * self.head_dim * h + (self.qkv_width if qkv_bias else 0)
                + (h if self.bias else 0) + (2 * self.head_dim if self.qk_norm else 0))

    @property
    def ffn_params(self) -> int:
        """Feed-forward block of one layer (SwiGLU has gate, up and down projections)."""
        h, i = self.hidden_size, self.intermediate_size
        if self.ffn == "swiglu":
            return 3 * h * i + ((2 * i + h) if self.bias else 0)
        return 2 * h * i + ((i + h) if self.bias else 0)

    def expert_ffn_params(self, width: int) -> int:
        """A SwiGLU (or GELU) feed-forward of inner width ``width`` (one expert), no biases."""
        return (3 if self.ffn == "swiglu" else 2) * self.hidden_size * width

    @property
    def moe_layers(self) -> int:
        """Layers with the expert feed-forward (0 for a dense model)."""
        return 0 if self.moe is None else sum(self.moe.is_moe_layer(i) for i in range(self.layers))

    @property
    def moe_ffn_params(self) -> int:
        """The expert feed-forward of one MoE layer, every expert: router, routed and shared experts."""
        m = self.moe
        if m is None:
            return 0
        f = m.expert_intermediate_size
        return self.hidden_size * m.experts + m.experts * self.expert_ffn_params(f) \
            + self.expert_ffn_params(m.shared_experts * f)

    @property
    def moe_ffn_active_params(self) -> int:
        """The part of one MoE layer's feed-forward a token uses: router, its experts, shared ones."""
        m = self.moe
        if m is None:
            return 0
        f = m.expert_intermediate_size
        used = m.experts_per_token + m.shared_experts
        return self.hidden_size * m.experts + self.expert_ffn_params(used * f)

    @property
    def routed_expert_params(self) -> int:
        """Parameters of every routed expert of every layer (what expert parallelism shards)."""
        m = self.moe
        if m is None:
            return 0
        return self.moe_layers * m.experts * self.expert_ffn_params(m.expert_intermediate_size)

    @property
    def layer_params(self) -> float:
        """Parameters of one transformer layer (two norms); with experts, the mean over the layers."""
        dense = self.attention_params + self.ffn_params + 2 * self.norm_params
        if self.moe is None:
            return dense
        return self.layers_params / self.layers

    @property
    def layers_params(self) -> int:
        """Parameters of every transformer layer together."""
        dense = self.attention_params + self.ffn_params + 2 * self.norm_params
        n_moe = self.moe_layers
        return (self.layers - n_moe) * dense + n_moe * (dense - self.ffn_params + self.moe_ffn_params)

    @property
    def active_params(self) -> int:
        """Parameters one token uses (:attr:`params` with only its experts): what sets FLOPs."""
        if self.moe is None:
            return self.params
        return self.params - self.moe_layers * (self.moe_ffn_params - self.moe_ffn_active_params)

    @property
    def lm_head_params(self) -> int:
        """The decoder's output projection: none when tied to the token embeddings."""
        return 0 if self.tied_embeddings else self.vocab_size * self.hidden_size

    @property
    def params(self) -> int:
        """Parameters of the base model: ``BertModel`` (with pooler) for encoders, the causal LM
        (final norm and LM head, as ``LlamaForCausalLM`` / ``GPT2LMHeadModel``) for decoders."""
        h = self.hidden_size
        body = self.embedding_params + self.layers_params
        if self.kind == "encoder":
            return body + h * h + h  # pooler
        return body + self.norm_params + self.lm_head_params

    def head_params(self, task: Task, num_labels: int = 2) -> int:
        """Parameters a training task adds to :attr:`params`: BERT's MLM and NSP heads (the MLM
        decoder weight is tied to the embeddings), or a sequence-classification head."""
        h = self.hidden_size
        if task == "classification":
            if self.kind == "decoder":
                return h * num_labels - self.lm_head_params  # score layer replaces the LM head
            return h * num_labels + num_labels
        if self.kind == "encoder":
            return h * h + h + self.norm_params + self.vocab_size + 2 * h + 2
        return 0  # the LM head is part of the causal LM

"""Read a local Hugging Face ``config.json`` into an :class:`Architecture` (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ecobench.errors import InputError
from ecobench.words import parsed_kind
from ecobench.workloads.architecture import Architecture, Mla, MoE
from ecobench.workloads.hf_fields import check_fields

# model_type -> how its config names the numbers (Llama-style decoders, GPT-2-style decoders, BERT-style
# encoders). Anything else is refused rather than guessed.
LLAMA_LIKE = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3"}
GPT2_LIKE = {"gpt2"}
BERT_LIKE = {"bert", "roberta", "layoutlm", "electra"}
SUPPORTED = sorted(LLAMA_LIKE | GPT2_LIKE | BERT_LIKE)
MAX_CONFIG_BYTES = 1 << 20  # a config.json is 1-5 KB; a megabyte is no model config
MAX_CONFIG_DEPTH = 16  # configs nest 2-3 levels (rope_scaling, quantization_config)
MAX_CONFIG_VALUES = 100_000


def _need(cfg: dict[str, Any], key: str, where: str) -> int:
    v = cfg.get(key)
    if v is None:
        raise InputError(f"{where}: field {key!r} is missing; a positive integer is required")
    assert isinstance(v, int), "check_fields checked every number"
    return v


def _given(cfg: dict[str, Any], key: str, default: Any) -> Any:
    """``cfg[key]``, or ``default`` where it is missing or ``null`` (transformers' own reading)."""
    v = cfg.get(key)
    return default if v is None else v
def _moe_mla(cfg: dict[str, Any], mt: str, where: str) -> tuple[MoE | None, Mla | None]:
    """The experts and the latent attention of a mixture-of-experts config (Mixtral, Qwen3-MoE,
    DeepSeek-V2/V3), as those configs name them."""
    if mt == "mixtral":
        return MoE(_need(cfg, "num_local_experts", where), _need(cfg, "num_experts_per_tok", where),
                   _need(cfg, "intermediate_size", where)), None
    if mt == "qwen3_moe":
        if cfg.get("mlp_only_layers"):
            raise InputError(f"{where}: mlp_only_layers {cfg['mlp_only_layers']!r}: ecobench places dense "
                             "layers first (first_dense_layers); use an inline architecture")
        return MoE(_need(cfg, "num_experts", where), _need(cfg, "num_experts_per_tok", where),
                   _need(cfg, "moe_intermediate_size", where),
                   layer_freq=cfg.get("decoder_sparse_step") or 1), None
    if mt in ("deepseek_v2", "deepseek_v3"):
        moe = MoE(_need(cfg, "n_routed_experts", where), _need(cfg, "num_experts_per_tok", where),
                  _need(cfg, "moe_intermediate_size", where), shared_experts=cfg.get("n_shared_experts") or 0,
                  first_dense_layers=cfg.get("first_k_dense_replace") or 0,
                  layer_freq=cfg.get("moe_layer_freq") or 1)
        mla = Mla(_need(cfg, "kv_lora_rank", where), _need(cfg, "qk_rope_head_dim", where),
                  _need(cfg, "qk_nope_head_dim", where), _need(cfg, "v_head_dim", where),
                  cfg.get("q_lora_rank") or None)
        return moe, mla
    return None, None


def architecture_from_hf(cfg: dict[str, Any], name: str, where: str) -> Architecture:
    """The architecture a ``transformers`` config describes; every value it reads is checked
    against the scenario's bounds first (``ecobench.workloads.hf_fields``)."""
    check_fields(cfg, where)
    mt = cfg.get("model_type")
    try:
        if mt in LLAMA_LIKE:
            act = _given(cfg, "hidden_act", "silu")
            if act != "silu":
                raise InputError(f"{where}: hidden_act {act!r}: a {mt} config with a SwiGLU "
                                 "feed-forward uses 'silu'")
            heads = _need(cfg, "num_attention_heads", where)
            moe, mla = _moe_mla(cfg, mt, where)
            return Architecture(
                name, layers=_need(cfg, "num_hidden_layers", where),
                hidden_size=_need(cfg, "hidden_size", where), heads=heads,
                intermediate_size=_need(cfg, "intermediate_size", where),
                vocab_size=_need(cfg, "vocab_size", where),
                max_position_embeddings=_need(cfg, "max_position_embeddings", where), kind="decoder",
                kv_heads=cfg.get("num_key_value_heads") or heads, ffn="swiglu",
                tied_embeddings=bool(_given(cfg, "tie_word_embeddings", False)), norm="rmsnorm",
                position="rotary", bias=bool(cfg.get("attention_bias", False)), type_vocab_size=0,
                head_dim_override=_need(cfg, "head_dim", where) if cfg.get("head_dim") is not None else None,
                qkv_bias=True if mt == "qwen2" else None, qk_norm=mt in ("qwen3", "qwen3_moe"), moe=moe,
                mla=mla)
        if mt in GPT2_LIKE:
            h = _need(cfg, "n_embd", where)
            return Architecture(
                name, layers=_need(cfg, "n_layer", where), hidden_size=h, heads=_need(cfg, "n_head", where),
                intermediate_size=cfg.get("n_inner") or 4 * h, vocab_size=_need(cfg, "vocab_size", where),
                max_position_embeddings=_need(cfg, "n_positions", where), kind="decoder",
                tied_embeddings=bool(_given(cfg, "tie_word_embeddings", True)), type_vocab_size=0)
        if mt in BERT_LIKE:
            return Architecture(
                name, layers=_need(cfg, "num_hidden_layers", where),
                hidden_size=_need(cfg, "hidden_size", where), heads=_need(cfg, "num_attention_heads", where),
                intermediate_size=_need(cfg, "intermediate_size", where),
                vocab_size=_need(cfg, "vocab_size", where),
                max_position_embeddings=_need(cfg, "max_position_embeddings", where),
                type_vocab_size=_given(cfg, "type_vocab_size", 2), layout_2d=mt == "layoutlm")
    except ValueError as exc:  # heads / kv_heads that do not divide
        raise InputError(f"{where}: {exc}") from None
    raise InputError(f"{where}: model_type {mt!r} is not a decoder or encoder config ecobench reads "
                     f"(supported: {', '.join(SUPPORTED)})")


def load_hf_config(path: Path, where: str) -> Architecture:
    """Read ``path`` (a local config.json) into an architecture named after its folder."""
    from ecobench.io.bounded import load_json

    try:
        cfg = load_json(path, "config.json", MAX_CONFIG_BYTES, max_depth=MAX_CONFIG_DEPTH,
                        max_values=MAX_CONFIG_VALUES)
    except InputError as exc:  # the message starts with the path; `where` adds the field
        if where == str(path):
            raise
        raise InputError(f"{where}: {exc}") from None
    if not isinstance(cfg, dict):
        at = where if where == str(path) else f"{where}: {path}"
        raise InputError(f"{at}: a config.json is a JSON object of the model's fields (hidden_size, "
                         f"num_hidden_layers, ...), got {parsed_kind(cfg)}")
    return architecture_from_hf(cfg, f"hf:{path.parent.name or path.stem}", where)


def to_transformers_config(arch: Architecture, transformers: Any, layers: int | None = None) -> Any:
    """The ``transformers`` config that builds ``arch`` (optionally with fewer layers), for the
    reference backend and the tests that count FLOPs and parameters against PyTorch."""
    n = arch.layers if layers is None else layers
    if arch.kind == "decoder" and arch.ffn == "swiglu" and (arch.qk_norm or arch.qkv_bias):
        cls = transformers.Qwen3Config if arch.qk_norm else transformers.Qwen2Config
        return cls(vocab_size=arch.vocab_size, hidden_size=arch.hidden_size,
                   intermediate_size=arch.intermediate_size, num_hidden_layers=n,
                   num_attention_heads=arch.heads, num_key_value_heads=arch.kv, head_dim=arch.head_dim,
                   max_position_embeddings=arch.max_position_embeddings,
                   tie_word_embeddings=arch.tied_embeddings, attn_implementation="eager", pad_token_id=0)
    if arch.kind == "decoder" and arch.ffn == "swiglu":
        return transformers.LlamaConfig(head_dim=arch.head_dim,
            vocab_size=arch.vocab_size, hidden_size=arch.hidden_size,
            intermediate_size=arch.intermediate_size, num_hidden_layers=n, num_attention_heads=arch.heads,
            num_key_value_heads=arch.kv,
            max_position_embeddings=arch.max_position_embeddings, tie_word_embeddings=arch.tied_embeddings,
            attention_bias=arch.bias, attn_implementation="eager", pad_token_id=0)
    if arch.kind == "decoder":
        return transformers.GPT2Config(
            vocab_size=arch.vocab_size, n_embd=arch.hidden_size, n_inner=arch.intermediate_size, n_layer=n,
            n_head=arch.heads, n_positions=arch.max_position_embeddings,
            tie_word_embeddings=arch.tied_embeddings, attn_implementation="eager", pad_token_id=0)
    common = dict(vocab_size=arch.vocab_size, hidden_size=arch.hidden_size, num_hidden_layers=n,
                  num_attention_heads=arch.heads, intermediate_size=arch.intermediate_size,
                  max_position_embeddings=arch.max_position_embeddings, type_vocab_size=arch.type_vocab_size)
    if arch.layout_2d:
        return transformers.LayoutLMConfig(max_2d_position_embeddings=arch.max_2d_position_embeddings,
                                           **common)
    return transformers.BertConfig(**common)

"""Model presets: the published configurations of the models ecobench knows by name.

Each preset carries the figures of its published ``transformers`` config (or paper) and the
parameter count its authors publish, which a test checks ours against (within 1%).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecobench.errors import UnknownNameError
from ecobench.workloads.architecture import Architecture, Mla, MoE


@dataclass(frozen=True)
class Published:
    """A preset's published parameter count and where it is stated."""

    params: float
    source: str


def _llama(name: str, layers: int, hidden: int, heads: int, kv: int, inter: int, vocab: int,
           positions: int) -> Architecture:
    return Architecture(name, layers=layers, hidden_size=hidden, heads=heads, intermediate_size=inter,
                        vocab_size=vocab, max_position_embeddings=positions, kind="decoder", kv_heads=kv,
                        ffn="swiglu", tied_embeddings=False, norm="rmsnorm", position="rotary",
                        bias=False, type_vocab_size=0)


def _moe(name: str, layers: int, hidden: int, heads: int, kv: int, inter: int, vocab: int, positions: int,
         moe: MoE, tied: bool = False, head_dim: int | None = None, qk_norm: bool = False,
         mla: Mla | None = None) -> Architecture:
    return Architecture(name, layers=layers, hidden_size=hidden, heads=heads, intermediate_size=inter,
                        vocab_size=vocab, max_position_embeddings=positions, kind="decoder", kv_heads=kv,
                        ffn="swiglu", tied_embeddings=tied, norm="rmsnorm", position="rotary", bias=False,
                        type_vocab_size=0, head_dim_override=head_dim, qk_norm=qk_norm, moe=moe, mla=mla)


PRESETS: dict[str, Architecture] = {
    # BertConfig / LayoutLMConfig defaults and the bert-large-uncased, microsoft/layoutlm-base-uncased
    # configs.
    "bert-base": Architecture("bert-base", layers=12, hidden_size=768, heads=12,
                              intermediate_size=3072, vocab_size=30522),
    "bert-large": Architecture("bert-large", layers=24, hidden_size=1024, heads=16,
                               intermediate_size=4096, vocab_size=30522),
    "layoutlm-base": Architecture("layoutlm-base", layers=12, hidden_size=768, heads=12,
                                  intermediate_size=3072, vocab_size=30522, layout_2d=True),
    # GPT-3 paper (Brown et al. 2020, arXiv 2005.14165), Table 2.1: 96 layers, d_model 12288, 96 heads
    # of 128, context 2048; GPT-2's BPE vocabulary (50,257), learned positions, tied embeddings.
    "gpt3-175b": Architecture("gpt3-175b", layers=96, hidden_size=12288, heads=96,
                              intermediate_size=4 * 12288, vocab_size=50257, max_position_embeddings=2048,
                              kind="decoder", type_vocab_size=0),
    # meta-llama config.json files on the Hugging Face Hub.
    "llama2-7b": _llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096),
    "llama2-13b": _llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096),
    "llama2-70b": _llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096),
    "llama3-8b": _llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192),
    "llama3-70b": _llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192),
    # Mixture-of-experts, from the config.json files on the Hugging Face Hub: mistralai/Mixtral-8x7B-v0.1
    # and Mixtral-8x22B-v0.1 (num_local_experts 8, num_experts_per_tok 2; intermediate_size is the
    # expert's), deepseek-ai/DeepSeek-V3 and DeepSeek-V2 (n_routed_experts, num_experts_per_tok,
    # n_shared_experts, moe_intermediate_size, first_k_dense_replace, moe_layer_freq and the MLA
    # ranks; the multi-token-prediction module is not counted, as the 671B figure leaves it out),
    # Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B (head_dim 128, norm_topk_prob; every layer MoE).
    "mixtral-8x7b": _moe("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768,
                         MoE(experts=8, experts_per_token=2, expert_intermediate_size=14336)),
    "mixtral-8x22b": _moe("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32768, 65536,
                          MoE(experts=8, experts_per_token=2, expert_intermediate_size=16384)),
    "deepseek-v3": _moe("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 163840,
                        MoE(experts=256, experts_per_token=8, expert_intermediate_size=2048, shared_experts=1,
                            first_dense_layers=3),
                        mla=Mla(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
                                q_lora_rank=1536)),
    "deepseek-v2": _moe("deepseek-v2", 60, 5120, 128, 128, 12288, 102400, 163840,
                        MoE(experts=160, experts_per_token=6, expert_intermediate_size=1536, shared_experts=2,
                            first_dense_layers=1),
                        mla=Mla(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
                                q_lora_rank=1536)),
    "qwen3-30b-a3b": _moe("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936, 40960,
                          MoE(experts=128, experts_per_token=8, expert_intermediate_size=768),
                          head_dim=128, qk_norm=True),
    "qwen3-235b-a22b": _moe("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 151936, 40960,
                            MoE(experts=128, experts_per_token=8, expert_intermediate_size=1536),
                            head_dim=128, qk_norm=True),
}

_HF = "https://huggingface.co/{} (config.json; parameter count from the model page's safetensors metadata)"
PUBLISHED: dict[str, Published] = {
    "bert-base": Published(110e6, "Devlin et al. 2019, BERT (arXiv 1810.04805), §3: BERT-BASE 110M"),
    "bert-large": Published(340e6, "Devlin et al. 2019, BERT (arXiv 1810.04805), §3: BERT-LARGE 340M"),
    "layoutlm-base": Published(113e6, "Xu et al. 2020, LayoutLM (arXiv 1912.13318), §3.1: BASE 113M"),
    "gpt3-175b": Published(175.0e9, "Brown et al. 2020, GPT-3 (arXiv 2005.14165), Table 2.1: 175.0B"),
    "llama2-7b": Published(6.74e9, _HF.format("meta-llama/Llama-2-7b-hf") + ": 6.74B"),
    "llama2-13b": Published(13.0e9, _HF.format("meta-llama/Llama-2-13b-hf") + ": 13.0B"),
    "llama2-70b": Published(69.0e9, _HF.format("meta-llama/Llama-2-70b-hf") + ": 69.0B"),
    "llama3-8b": Published(8.03e9, _HF.format("meta-llama/Meta-Llama-3-8B") + ": 8.03B"),
    "llama3-70b": Published(70.6e9, _HF.format("meta-llama/Meta-Llama-3-70B") + ": 70.6B"),
    "mixtral-8x7b": Published(46.7e9, "Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088), §2: 47B "
                                      "parameters, 13B active; model page: 46.7B"),
    "mixtral-8x22b": Published(141e9, "https://mistral.ai/news/mixtral-8x22b (2024-04-17): 141B parameters, "
                                      "39B active"),
    "deepseek-v3": Published(671e9, "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv 2412.19437), "
                                    "abstract: 671B total, 37B activated per token"),
    "deepseek-v2": Published(236e9, "DeepSeek-AI 2024, DeepSeek-V2 (arXiv 2405.04434), abstract: 236B total, "
                                    "21B activated per token"),
    "qwen3-30b-a3b": Published(30.5e9, "https://huggingface.co/Qwen/Qwen3-30B-A3B (model card: 30.5B "
                                       "parameters, 3.3B activated)"),
    "qwen3-235b-a22b": Published(235e9, "https://huggingface.co/Qwen/Qwen3-235B-A22B (model card: 235B "
                                        "parameters, 22B activated)"),
}
# Active parameters (one token's) where the source states them.
PUBLISHED_ACTIVE: dict[str, Published] = {
    "mixtral-8x7b": Published(12.9e9, "Jiang et al. 2024, Mixtral of Experts (arXiv 2401.04088), §2: 13B "
                                      "active (12.9B in the model card's table)"),
    "mixtral-8x22b": Published(39e9, "https://mistral.ai/news/mixtral-8x22b: 39B active"),
    "deepseek-v3": Published(37e9, "DeepSeek-V3 Technical Report (arXiv 2412.19437): 37B activated"),
    "deepseek-v2": Published(21e9, "DeepSeek-V2 (arXiv 2405.04434): 21B activated"),
    "qwen3-30b-a3b": Published(3.3e9, "https://huggingface.co/Qwen/Qwen3-30B-A3B: 3.3B activated"),
    "qwen3-235b-a22b": Published(22e9, "https://huggingface.co/Qwen/Qwen3-235B-A22B: 22B activated"),
}


def preset(name: str) -> Architecture:
    """The preset ``name``; an unknown name suggests the nearest known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownNameError("model preset", name, PRESETS) from None

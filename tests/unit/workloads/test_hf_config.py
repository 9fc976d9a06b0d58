import json

import pytest

from ecobench.errors import InputError
from ecobench.workloads import PRESETS
from ecobench.workloads.hf_config import load_hf_config

LLAMA3_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
             "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
             "max_position_embeddings": 8192, "hidden_act": "silu", "tie_word_embeddings": False}


def _write(tmp_path, cfg, name="config.json"):
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    f = d / name
    f.write_text(json.dumps(cfg) if isinstance(cfg, dict) else cfg)
    return f


def test_llama_config_gives_the_preset(tmp_path):
    arch = load_hf_config(_write(tmp_path, LLAMA3_8B), "x")
    assert arch.params == PRESETS["llama3-8b"].params and arch.kind == "decoder" and arch.kv == 8


def test_gpt2_and_bert_configs(tmp_path):
    gpt2 = load_hf_config(_write(tmp_path, {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
                                            "vocab_size": 50257, "n_positions": 1024}), "x")
    assert gpt2.params == pytest.approx(124_439_808)  # GPT-2 small, as transformers counts it
    bert = load_hf_config(_write(tmp_path, {"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
                                            "num_attention_heads": 12, "intermediate_size": 3072,
                                            "vocab_size": 30522, "max_position_embeddings": 512}), "x")
    assert bert.params == PRESETS["bert-base"].params


@pytest.mark.parametrize("cfg,match", [
    ({"model_type": "whisper"}, "model_type 'whisper' is not a decoder or encoder config"),
    ({**LLAMA3_8B, "num_key_value_heads": 5}, "kv_heads"),
    ({**LLAMA3_8B, "hidden_size": "4096"}, "hidden_size"),
    ("{not json", "not a valid config.json JSON file"),
    (" \n", "an empty file; allowed: the config.json as JSON"),  # trial18: was "Expecting value: line 1 ..."
    ("[1, 2]", "a config.json is a JSON object of the model.s fields .*, got a list"),
])
def test_bad_configs_are_input_errors(tmp_path, cfg, match):
    with pytest.raises(InputError, match=match):
        load_hf_config(_write(tmp_path, cfg), "workload.architecture.from_hf_config")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_hf_config(tmp_path / "none.json", "x")


QWEN3_SMALL = {"model_type": "qwen3", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
               "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1000,
               "max_position_embeddings": 512, "hidden_act": "silu", "tie_word_embeddings": True}
QWEN2_SMALL = {"model_type": "qwen2", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
               "num_attention_heads": 8, "num_key_value_heads": 2, "vocab_size": 1000,
               "max_position_embeddings": 512, "hidden_act": "silu", "tie_word_embeddings": False}


@pytest.mark.parametrize("cfg", [QWEN3_SMALL, QWEN2_SMALL], ids=["qwen3-head_dim", "qwen2-qkv-bias"])
def test_qwen_configs_count_what_transformers_builds(tmp_path, cfg):
    """Qwen3 sets its own head_dim (64 x 8 heads = 512, not the hidden 256) and normalises each query
    and key head; Qwen2 has biases on the query/key/value projections only."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    arch = load_hf_config(_write(tmp_path, cfg), "x")
    cls = transformers.Qwen3ForCausalLM if cfg["model_type"] == "qwen3" else transformers.Qwen2ForCausalLM
    config_cls = transformers.Qwen3Config if cfg["model_type"] == "qwen3" else transformers.Qwen2Config
    with torch.device("meta"):
        model = cls(config_cls(**{k: v for k, v in cfg.items() if k != "model_type"}))
    assert arch.params == sum(p.numel() for p in model.parameters())
    assert arch.head_dim == cfg.get("head_dim", 256 // 8)

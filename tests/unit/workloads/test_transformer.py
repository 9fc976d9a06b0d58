import pytest

from ecobench.errors import UnknownNameError
from ecobench.workloads import PRESETS, build_kernels, preset, totals


def _matmul_flops(kernels):
    return sum(k.flops for k in kernels if k.kind == "matmul")


def test_params_match_transformers_configs():
    transformers = pytest.importorskip("transformers")
    import torch

    for name, cls, cfg in [
        ("bert-base", transformers.BertModel, transformers.BertConfig()),
        ("layoutlm-base", transformers.LayoutLMModel, transformers.LayoutLMConfig()),
    ]:
        with torch.device("meta"):
            model = cls(cfg)
        assert PRESETS[name].params == sum(p.numel() for p in model.parameters())


def _torch_flops(model, inputs, backward):
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        out = model(**inputs)
        if backward:
            loss = out.prediction_logits.float().sum() + out.seq_relationship_logits.float().sum()
            loss.backward()
    return counter.get_total_flops()


@pytest.mark.slow
def test_inference_flops_match_pytorch_counter_layoutlm():
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    cfg = transformers.LayoutLMConfig(attn_implementation="eager")
    model = transformers.LayoutLMModel(cfg).eval()
    s = 256
    bbox = torch.randint(0, 500, (1, s, 4))
    bbox[..., 2:] = bbox[..., :2] + 10  # right >= left, lower >= upper
    inputs = {"input_ids": torch.randint(0, cfg.vocab_size, (1, s)), "bbox": bbox}
    with torch.no_grad():
        counted = _torch_flops(model, inputs, backward=False)
    ours = _matmul_flops(build_kernels(preset("layoutlm-base"), s, 1, "fp32", "inference"))
    assert ours == pytest.approx(counted, rel=0.02)


@pytest.mark.slow
def test_training_flops_match_pytorch_counter_bert_base():
    transformers = pytest.importorskip("transformers")
    import torch

    torch.manual_seed(0)
    cfg = transformers.BertConfig(attn_implementation="eager")
    model = transformers.BertForPreTraining(cfg).train()
    s = 128
    inputs = {"input_ids": torch.randint(0, cfg.vocab_size, (1, s))}
    counted = _torch_flops(model, inputs, backward=True)
    kernels = build_kernels(preset("bert-base"), s, 1, "fp32", "training")
    ours = sum(k.flops for k in kernels if k.kind == "matmul")
    assert ours == pytest.approx(counted, rel=0.02)


def test_training_is_three_times_forward_plus_optimizer():
    arch = preset("bert-large")
    fwd = build_kernels(arch, 128, 8, "bf16", "training")
    f = sum(k.flops for k in fwd if k.phase == "forward")
    b = sum(k.flops for k in fwd if k.phase == "backward")
    assert b == pytest.approx(2 * f)
    assert [k for k in fwd if k.per_step] and all(k.phase == "optimizer" for k in fwd if k.per_step)


def test_bytes_fall_with_batch_and_dtype():
    arch = preset("bert-base")
    f1, b1 = totals(build_kernels(arch, 128, 1, "fp32", "inference"))
    f8, b8 = totals(build_kernels(arch, 128, 8, "fp32", "inference"))
    _, b16 = totals(build_kernels(arch, 128, 8, "bf16", "inference"))
    assert f1 == f8 and b8 < b1 and b16 == pytest.approx(b8 / 2)


def test_layoutlm_adds_2d_embeddings_only():
    base, lay = preset("bert-base"), preset("layoutlm-base")
    assert lay.params - base.params == 4 * 1024 * 768
    kb = build_kernels(base, 128, 1, "fp32", "inference")
    kl = build_kernels(lay, 128, 1, "fp32", "inference")
    assert _matmul_flops(kb) == _matmul_flops(kl)
    assert kl[0].bytes > kb[0].bytes


def test_seq_len_beyond_positions_and_unknown_preset():
    with pytest.raises(ValueError, match="max_position_embeddings"):
        build_kernels(preset("bert-base"), 1024, 1, "fp32", "inference")
    with pytest.raises(UnknownNameError, match="bert-large"):
        preset("bert-larg")

"""The emulated backend: encoders and decoders, every training layout, Trainium2, serving steps."""

import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends import BACKENDS, Job
from ecobench.hardware.catalog import load_catalog
from ecobench.parallel.layout import Layout
from ecobench.workloads import preset

CAT = load_catalog()
EMU = BACKENDS["emulated"]


def test_encoder_inference_reports_engines_and_error():
    job = Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=8, dtype="bf16")
    perf = EMU.evaluate(job, CAT.instance("inf2.xlarge"), CAT)
    assert perf.provenance == "emulated" and 0 < perf.utilization.accelerator <= 1
    assert 1e-4 < perf.numeric_error < 1e-2
    assert {k["engine"] for k in perf.engine.kernels} >= {"tensor", "vector"}


def test_decoder_training_with_tensor_and_pipeline_parallelism():
    a = preset("llama2-70b")
    lay = Layout(32, 8, 4, 1, "selective", 1)
    job = Job(
        arch=a,
        mode="training",
        seq_len=4096,
        batch_size=1,
        dtype="bf16",
        instances=32,
        global_batch_size=1024,
        layout=lay,
    )
    perf = EMU.evaluate(job, CAT.instance("trn1.32xlarge"), CAT)
    step = perf.step
    assert step["tp_comm_s"] > 0 and step["pp_comm_s"] > 0 and step["bubble_s"] > 0
    assert 0.1 < step["mfu"] < 0.5 and perf.engine.numeric_format == "bf16_sr"
    assert "heads / " in perf.method  # decoder numerics: a grouped-query attention layer


def test_trainium2_trains_faster_than_trainium_per_instance():
    a = preset("llama2-7b")
    lay1, lay2 = Layout(8, 1, 16, 1, "selective", 1), Layout(8, 1, 32, 1, "selective", 1)
    j1 = Job(
        arch=a,
        mode="training",
        seq_len=4096,
        batch_size=1,
        dtype="bf16",
        instances=4,
        global_batch_size=1024,
        layout=lay1,
    )
    j2 = Job(
        arch=a,
        mode="training",
        seq_len=4096,
        batch_size=1,
        dtype="bf16",
        instances=4,
        global_batch_size=1024,
        layout=lay2,
    )
    t1 = EMU.evaluate(j1, CAT.instance("trn1.32xlarge"), CAT)
    t2 = EMU.evaluate(j2, CAT.instance("trn2.48xlarge"), CAT)
    ratio = t2.throughput_per_instance_per_s / t1.throughput_per_instance_per_s
    assert 1.5 < ratio < 6  # 3.5x the BF16 peak and memory bandwidth per instance


def test_zero_beyond_neuron_libraries_is_refused():
    a = preset("llama2-7b")
    job = Job(
        arch=a,
        mode="training",
        seq_len=4096,
        batch_size=1,
        dtype="bf16",
        instances=1,
        global_batch_size=256,
        layout=Layout(8, 1, 4, 3, "none", 1),
    )
    with pytest.raises(BackendError, match="ZeRO"):
        EMU.evaluate(job, CAT.instance("trn1.32xlarge"), CAT)


def test_non_neuron_instance_is_refused():
    with pytest.raises(BackendError, match="no Neuron device"):
        EMU.evaluate(
            Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=8, dtype="bf16"),
            CAT.instance("g4dn.xlarge"),
            CAT,
        )


def _fp8_vs_bf16(instance_type, layout):
    out = {}
    for dt in ("bf16", "fp8"):
        job = Job(arch=preset("llama2-7b"), mode="training", seq_len=4096, batch_size=1, dtype=dt,
                  instances=1, global_batch_size=64, layout=layout)
        perf = EMU.evaluate(job, CAT.instance(instance_type), CAT)
        kernels = {k["kernel"]: k["time_us"] for k in perf.engine.kernels if k["engine"] == "tensor"}
        out[dt] = (perf.step["step_s"], kernels["ffn.gate_up"])
    return out


def test_fp8_training_runs_weight_matmuls_at_fp8_on_trainium2_only():
    # FP8 training runs the weight matmuls in FP8 (parallel/step.py FP8_ACTIVATION_DTYPE): NeuronCore-v3
    # does them at twice BF16's rate (arch.py fp8_speedup), NeuronCore-v2 at BF16's
    t2 = _fp8_vs_bf16("trn2.48xlarge", Layout(4, 1, 16, 1, "none", 1))
    assert t2["fp8"][1] < 0.75 * t2["bf16"][1]  # the kernel table's weight matmul
    assert t2["fp8"][0] < 0.9 * t2["bf16"][0]  # and the step the planner searches with
    t1 = _fp8_vs_bf16("trn1.32xlarge", Layout(4, 1, 8, 1, "none", 1))
    assert t1["fp8"] == pytest.approx(t1["bf16"], rel=1e-9)


def test_tf32_training_reports_a_tf32_layer_error():
    job = Job(arch=preset("llama2-7b"), mode="training", seq_len=4096, batch_size=1, dtype="tf32",
              instances=4, global_batch_size=64, layout=Layout(8, 1, 32, 1, "none", 2))
    perf = EMU.evaluate(job, CAT.instance("trn2.48xlarge"), CAT)
    assert perf.engine.numeric_format == "tf32" and 0.0 < perf.numeric_error
    assert "tf32" in perf.method


@pytest.mark.parametrize("instance_type,dtype", [("trn2.48xlarge", "fp8"), ("inf2.xlarge", "int8")])
def test_kernel_utilization_is_of_the_kernels_own_tensore_peak(instance_type, dtype):
    """emu24: FP8 (v3) and INT8 (v2) matmuls run at twice BF16's rate, but their utilisation was
    taken over the BF16 peak, so every weight matmul read 100% (clipped)."""
    util = {}
    for dt in ("bf16", dtype):
        job = Job(arch=preset("bert-large"), mode="inference", seq_len=512, batch_size=8, dtype=dt)
        perf = EMU.evaluate(job, CAT.instance(instance_type), CAT)
        util[dt] = {k["kernel"]: k["utilization"] for k in perf.engine.kernels if k["engine"] == "tensor"}
    assert max(util[dtype].values()) < 0.99
    for name, u in util["bf16"].items():
        if name in util[dtype] and name.startswith(("ffn", "attention.qkv")):
            assert util[dtype][name] == pytest.approx(u, rel=0.35), name


def test_fp8_training_numerics_keep_attention_in_bf16_as_its_timing_does():
    """emu24: FP8 training times attention in BF16 (FP8_ACTIVATION_DTYPE) but its layer error ran
    attention's matmuls in FP8 too, as FP8 inference does."""
    lay, trn2 = Layout(4, 1, 16, 1, "none", 1), CAT.instance("trn2.48xlarge")
    train = EMU.evaluate(Job(arch=preset("llama2-7b"), mode="training", seq_len=4096, batch_size=1,
                             dtype="fp8", instances=1, global_batch_size=64, layout=lay), trn2, CAT)
    infer = EMU.evaluate(Job(arch=preset("llama2-7b"), mode="inference", seq_len=4096, batch_size=1,
                             dtype="fp8"), trn2, CAT)
    # the weight matmuls dominate the error: the two were equal (7.65e-3), now 7.52e-3 against 7.65e-3
    assert 0.0 < train.numeric_error < infer.numeric_error
    assert "attention in bf16" in train.method and "attention in bf16" not in infer.method

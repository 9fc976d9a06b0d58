import json

import numpy as np
import pytest

from ecobench.cli import main
from ecobench.hardware.neuron.arch import DEVICES, NEURONCORE_V2, NEURONCORE_V3
from ecobench.hardware.neuron.timing import EngineParams, overlap, sequence_times, time_kernels
from ecobench.hardware.neuron.work import MECH_INDEX, WorkModel, mm_cycles
from ecobench.workloads import preset
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.transformer import layer_kernels
from tests.conftest import SCENARIOS

TRN1, TRN2 = DEVICES["trainium"], DEVICES["trainium2"]
IDEAL = EngineParams(exposed=0.0, sync_s=0.0, launch_s=0.0, tensor_limit=1.0, collective=1.0)


def _mm(m, k, n, weights=True, dtype="bf16", batch=1):
    b = 2 if dtype in ("bf16", "fp16") else 4
    nbytes = (m * k + m * n) * b + k * n * b / batch
    return Kernel("mm", "matmul", "forward", "", 2.0 * m * k * n, nbytes, dtype, dims=(1, m, k, n),
                  weights=weights)


def test_documented_peaks_follow_from_array_and_clock():
    assert NEURONCORE_V2.tensor_tflops == pytest.approx(91.75, rel=1e-3)  # "92 TFLOPS" (NKI guide)
    assert NEURONCORE_V3.tensor_tflops / 2 == pytest.approx(78.6, rel=1e-3)  # 79 per physical core
    assert TRN1.core_dma_gb_per_s == pytest.approx(272)  # 16 DMA engines x 17 B/ns


def test_matmul_instructions_cost_max_of_moving_rows_and_mm_init():
    # 1024 rows, K=N=128: two 512-row MultiplyMoving instructions of 512 cycles each
    assert mm_cycles(NEURONCORE_V2, 1024, 128, 128, "bf16")[0] == 1024
    # a half-height contraction (K=64) costs as many cycles: half the array idles
    assert mm_cycles(NEURONCORE_V2, 1024, 64, 128, "bf16")[0] == 1024
    # one row: the short operand moves (perf guide Opt #7): 32 x 16 instructions at the 64-cycle
    # MM_INIT floor, cheaper than streaming the weight as 512-column moving tiles (32 x 4 x 512)
    assert mm_cycles(NEURONCORE_V2, 1, 4096, 2048, "bf16")[0] == 32 * 16 * 64
    # 32 rows against a 128-column weight: the 64-cycle MM_INIT floor, not 32 cycles
    assert mm_cycles(NEURONCORE_V2, 32, 128, 128, "bf16")[0] == 64
    assert mm_cycles(NEURONCORE_V2, 1024, 128, 128, "fp32")[0] == 4 * 1024
    assert mm_cycles(NEURONCORE_V3, 1024, 256, 128, "fp8")[0] == 1024  # double-FP8: K=256 per pass
    with pytest.raises(ValueError, match="FP32"):
        mm_cycles(DEVICES["inferentia"].core, 128, 128, 128, "fp32")


def test_full_tiles_reach_the_peak_and_small_batch_streams_weights():
    t = time_kernels([_mm(4096, 1024, 1024)], TRN1, 1, IDEAL)[0]
    assert t.engine == "tensor" and t.utilization > 0.95
    w = time_kernels([_mm(1, 4096, 4096)], TRN1, 1, IDEAL)[0]
    assert w.bound == "memory"
    assert w.time_s == pytest.approx(4096 * 4096 * 2 / 272e9, rel=0.02)


def test_layernorm_needs_transposes_rmsnorm_does_not():
    a = preset("llama2-7b")
    norm = next(k for k in layer_kernels(a, 128, 1, "bf16", 0) if k.name == "ffn.residual_norm")
    ln = WorkModel(TRN1, "layernorm").work(norm, 1)
    rms = WorkModel(TRN1, "rmsnorm").work(norm, 1)
    assert ln[MECH_INDEX["tensor", "transpose"]] > 0 and rms[MECH_INDEX["tensor", "transpose"]] == 0


def test_psum_evacuation_shared_by_vector_and_scalar_only_on_v3():
    k = _mm(2048, 128, 2048, weights=False)
    v2 = WorkModel(TRN1).work(k, 1)
    v3 = WorkModel(TRN2).work(k, 1)
    assert v2[MECH_INDEX["scalar", "evacuation"]] == 0 and v2[MECH_INDEX["vector", "evacuation"]] > 0
    assert v3[MECH_INDEX["scalar", "evacuation"]] > 0 and v3[MECH_INDEX["vector", "evacuation"]] > 0


def test_fused_causal_attention_is_vector_bound_on_v2():
    a = preset("llama2-7b")
    att = next(k for k in layer_kernels(a, 4096, 1, "bf16", 0) if k.kind == "attention")
    t = time_kernels([att], TRN1, 1, IDEAL)[0]
    assert t.engine == "vector" and t.utilization < 0.5


def test_engines_pipeline_across_kernels_with_partial_overlap():
    assert overlap(np.array([3.0, 1.0, 0.0]), 0.25) == pytest.approx(3.25)
    work = np.zeros((2, 12))
    work[0, MECH_INDEX["tensor", "matmul"]] = 1.0  # a matmul, then a weight load for the next one
    work[1, MECH_INDEX["dma", "weights"]] = 2.0
    p = EngineParams(exposed=0.5, sync_s=1e-3, launch_s=0.0, tensor_limit=1.0, collective=1.0)
    t, busy = sequence_times(work, p)
    # the DMA queue runs beside TensorE: max(2, 1) + 0.5 x 1, not 1 + 2; plus a sync per kernel
    assert t.sum() == pytest.approx(2.0 + 0.5 * 1.0 + 2e-3)
    assert busy[1, -1] == pytest.approx(2.0)
    t3, _ = sequence_times(work, p, mult=np.array([3.0, 1.0]))  # three matmuls: TensorE-bound
    assert (t3 * [3.0, 1.0]).sum() == pytest.approx(3.0 + 0.5 * 2.0 + 4e-3)


def test_overheads_slow_a_kernel_down():
    k = [_mm(512, 768, 768)]
    fast = time_kernels(k, TRN1, 1, IDEAL)[0].time_s
    slow = time_kernels(k, TRN1, 1, EngineParams(0.5, 2e-6, 0.0, 0.5, 1.0))[0].time_s
    assert slow > 2 * fast - 1e-12


def test_emulate_cli_json_and_run_dir(tmp_path, capsys):
    assert main(["emulate", str(SCENARIOS / "bert_large_pretrain.yaml"), "--format", "json",
                 "--out", str(tmp_path / "e")]) == 0
    rep = json.loads(capsys.readouterr().out)
    (c,) = rep["configs"]  # only the Trn1 configuration runs on Neuron
    assert c["numeric_format"] == "bf16_sr" and c["kernels"] and c["layout"].startswith("TP1 PP1")
    assert c["throughput_per_core_per_s"] * 2 == pytest.approx(c["throughput_per_chip_per_s"])
    assert c["throughput_per_chip_per_s"] * 16 == pytest.approx(c["throughput_per_instance_per_s"])
    assert (tmp_path / "e" / "kernels.csv").exists()
    assert main(["emulate", "--training-demo", "--format", "json"]) == 0
    demo = json.loads(capsys.readouterr().out)
    assert set(demo["final_loss"]) == {"fp32", "bf16_rne", "bf16_sr"}
    assert main(["emulate", str(SCENARIOS / "small_encoder_pretrain.yaml"), "--out",
                 str(tmp_path / "x")]) == 0

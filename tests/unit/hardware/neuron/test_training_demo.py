from ecobench.hardware.neuron.training_demo import run_demo


def test_sr_tracks_fp32_and_rne_falls_behind():
    d = run_demo()
    f = d["final_loss"]
    assert d["initial_loss"]["fp32"] > 2 * f["fp32"]  # it learns
    assert abs(f["bf16_sr"] - f["fp32"]) / f["fp32"] < 0.05
    assert f["bf16_rne"] > 1.15 * f["fp32"]
    assert all(len(c) == d["steps"] for c in d["loss_curves"].values())


def test_the_emulated_kernel_table_counts_the_busiest_stages_layers():
    """train23: `ecobench emulate` of TP4 PP3 over Llama 2 7B's 32 layers listed each layer kernel 10
    times on "the busiest pipeline stage", which holds 11 (stages of 11, 11 and 10)."""
    from ecobench.hardware.neuron.step import set_kernels
    from ecobench.parallel.layout import Layout
    from ecobench.parallel.step import Workload
    from ecobench.workloads.presets import preset

    w = Workload(preset("llama2-7b"), 4096, 1024, "bf16")
    counts = {name: reps for name, (_, reps, _) in set_kernels(w, Layout(4, 3, 8, 1, "none", 1)).items()}
    assert counts["layer_fwd"] == counts["layer_bwd"] == 11
    assert set_kernels(w, Layout(4, 4, 8, 1, "full", 1))["layer_fwd"][1] == 2 * 8

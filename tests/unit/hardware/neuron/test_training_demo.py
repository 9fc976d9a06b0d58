from ecobench.hardware.neuron.training_demo import run_demo


def test_sr_tracks_fp32_and_rne_falls_behind():
    d = run_demo()
    f = d["final_loss"]
    assert d["initial_loss"]["fp32"] > 2 * f["fp32"]  # it learns
    assert abs(f["bf16_sr"] - f["fp32"]) / f["fp32"] < 0.05
    assert f["bf16_rne"] > 1.15 * f["fp32"]
    assert all(len(c) == d["steps"] for c in d["loss_curves"].values())

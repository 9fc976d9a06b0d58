"""Serving on the emulated NeuronCore: the timer, its fitted correction and its holdout by source."""

import json
from importlib import resources

import numpy as np
import pytest

from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster
from ecobench.hardware.neuron import serving as ns
from ecobench.hardware.neuron.arch import DEVICES
from ecobench.parallel.serving import ServeWorkload
from ecobench.workloads.presets import preset


@pytest.fixture(scope="module")
def inf2():
    cat = load_catalog()
    inst = cat.instance("inf2.48xlarge")
    return instance_cluster(cat, inst, "bf16"), DEVICES[inst.spec.accelerator]


def _w(tensor=8, **kw):
    return ServeWorkload(preset("llama3-8b"), 1024, 256, "bf16", tensor, static_cache=True, **kw)


def test_decode_step_grows_with_batch_and_shrinks_with_tensor(inf2):
    cl, dev = inf2
    timer = ns.EmulatedServeTimer(dev, ns.current_correction())
    b = np.array([1.0, 8.0, 64.0, 256.0])
    t8 = timer.decode_s(_w(8), cl, b)
    assert (np.diff(t8) > 0).all()
    assert (timer.decode_s(_w(24), cl, b) < t8).all()
    # interpolation between grid sizes stays between its neighbours
    lo, mid, hi = timer.decode_s(_w(8), cl, np.array([32.0, 48.0, 64.0]))
    assert lo < mid < hi


def test_correction_applies_scale_and_fixed_time(inf2):
    cl, dev = inf2
    raw = ns.raw_decode_s(_w(), cl, dev, 4)
    c = ns.Correction({"tpot_ms": 2.0, "ttft_ms": 1.0}, {"tpot_ms": 5.0, "ttft_ms": 0.0})
    timer = ns.EmulatedServeTimer(dev, c)
    assert timer.decode_s(_w(), cl, np.array([4.0]))[0] == pytest.approx(2 * raw + 5e-3)
    # a cached prompt prefix is not prefilled
    assert timer.prefill_s(_w(cached_input_tokens=768), cl) < 0.5 * timer.prefill_s(_w(), cl)


def test_fit_recovers_a_known_correction():
    pts = ns.serve_points()[:12]
    truth = ns.Correction({"tpot_ms": 1.5, "ttft_ms": 2.0}, {"tpot_ms": 4.0, "ttft_ms": 20.0})
    fake = [ns.ServePoint(type("P", (), {"id": s.point.id, **{f: 1e3 * float(truth.apply(f, 1e-3 * v))
                                                              for f, v in s.raw.items()}})(), s.source, s.raw)
            for s in pts]
    got = ns.fit_correction(fake)
    for f in ns.FIGURES:
        assert got.scale[f] == pytest.approx(truth.scale[f], rel=0.03)
        assert got.fixed_ms[f] == pytest.approx(truth.fixed_ms[f], rel=0.1)


@pytest.mark.slow
def test_stored_correction_is_the_fit_on_every_point(tmp_path):
    c = ns.write_correction(str(tmp_path / "fit.json"))
    stored = json.loads(resources.files("ecobench.hardware").joinpath(ns.CORRECTION_FILE).read_text())
    assert stored["scale"] == pytest.approx(c.scale) and stored["fixed_ms"] == pytest.approx(c.fixed_ms)
    assert stored["points"] == list(c.points)


@pytest.mark.slow
def test_holdout_keeps_each_source_out_of_its_own_correction():
    rows = ns.holdout()
    assert {r.source for r in rows} == {s.source for s in ns.serve_points()}
    tpot = sorted(abs(r.error_pct) for r in rows if r.figure == "tpot_ms")
    assert tpot[len(tpot) // 2] < 15.0  # held-out TPOT median (report: 8.5% inf2, 7.4% trn1)

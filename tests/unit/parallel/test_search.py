import numpy as np

from ecobench.parallel.layout import Layout, problems
from ecobench.parallel.search import Phase, enumerate_layouts, evaluate_phases, fixes_that_fit
from ecobench.parallel.step import Efficiency, Workload
from ecobench.workloads import PRESETS
from tests.integration.parallel.test_step import A100, EFF

GPT3 = [Phase(Workload(PRESETS["gpt3-175b"], 2048, 1536, "bf16"), 3e11 / 2048)]


def test_every_enumerated_layout_is_valid():
    L = enumerate_layouts(GPT3, 8, 16)
    assert len(L) > 50
    for i in range(0, len(L), max(1, len(L) // 200)):
        assert problems(L.layout(i), PRESETS["gpt3-175b"], 128, 8, 1536) == []


def test_search_over_cluster_sizes_covers_only_valid_counts():
    L = enumerate_layouts(GPT3, 8, None, 64)
    assert set(np.unique(L.nodes)) <= set(range(1, 65))
    assert np.all(L.tensor * L.pipeline * L.data == L.nodes * 8)
    assert np.all(1536 % (L.data * L.microbatch) == 0)
    assert np.all(L.zero <= 3)
    assert np.all(enumerate_layouts(GPT3, 32, None, 16, max_zero_stage=1).zero <= 1)


def test_auto_picks_a_fitting_layout_faster_than_the_rest():
    L = enumerate_layouts(GPT3, 8, 64)
    ev = evaluate_phases(GPT3, A100, L, EFF)
    i = ev.best()
    assert i is not None and ev.fits[i]
    assert ev.total_s[i] <= ev.total_s[ev.fits].min()
    assert not ev.fits.all()  # some layouts of 175B on 512 GPUs do not fit in 80 GiB


def test_fixes_name_single_changes_that_fit():
    w = [Phase(Workload(PRESETS["llama2-13b"], 4096, 1024, "bf16"), 1e6)]
    fixes = fixes_that_fit(w, A100, Layout(1, 1, 128, 0, "none", 1), 16, EFF)
    kinds = {"tensor", "pipeline", "zero", "recompute"}
    assert fixes and all(f.split()[0].rstrip(":") in kinds for f in fixes)
    assert any(f.startswith("zero: ") for f in fixes)
    eff = Efficiency(0.5, 0.5, 1e-5, 0.5)
    # one 8-GPU instance cannot hold 175B whatever single change is made
    assert fixes_that_fit(GPT3, A100, Layout(1, 1, 8, 0, "none", 1), 1, eff) == []

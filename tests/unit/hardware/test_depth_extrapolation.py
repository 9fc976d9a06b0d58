"""Full-depth rates from a shallow measurement: what is not a layer is paid once, and a layer's share
of a step is read from alternated pairs of steps."""

import statistics
import time
from types import SimpleNamespace

import pytest

from ecobench.errors import BackendError
from ecobench.hardware.backends.torch_ref import depth_pair, extrapolate_depth, paired_steps


def test_the_part_outside_the_layers_is_paid_once_not_per_layer():
    # 4 ms outside the layers, 2 ms per layer: 1 layer -> 6 ms, 2 -> 8 ms, 24 layers -> 52 ms
    rates, how = extrapolate_depth([1 / 0.006, 1 / 0.006], [(0.006, 0.008)] * 4, (1, 2), 1, 24)
    assert rates == pytest.approx([1 / 0.052, 1 / 0.052])
    assert "24 layers" in how and "4 alternated 1- and 2-layer steps" in how
    assert "8% of the full-depth time" in how  # 4 of 52 ms


def test_the_first_layers_extra_is_not_charged_to_every_layer():
    # 1 ms outside the layers, the first layer 3 ms, each further one 2 ms: 1 layer -> 4 ms,
    # 4 -> 10 ms, 12 -> 26 ms; a slope from no layers (9 ms over 4) would say 1 + 12 x 2.25 = 28 ms
    assert depth_pair(4) == (1, 4)
    rates, _ = extrapolate_depth([1 / 0.010], [(0.004, 0.010)] * 3, depth_pair(4), 4, 12)
    assert rates == pytest.approx([1 / 0.026])


def test_drift_between_pairs_cancels_and_each_window_keeps_its_own_spread():
    # the host runs at half speed for the first half of the pairs: each pair's ratio is the same
    pairs = [(0.010, 0.020)] * 5 + [(0.005, 0.010)] * 5  # 1 and 2 layers; 2 of 4 layers measured
    rates, _ = extrapolate_depth([100.0, 200.0], pairs, depth_pair(2), 2, 4)
    assert rates == pytest.approx([50.0, 100.0])  # x (1 + 2 x 1/2)


def test_one_measured_layer_is_paired_with_two():
    assert depth_pair(1) == (1, 2)


def test_a_layer_no_slower_is_refused_not_extrapolated():
    with pytest.raises(BackendError, match="too noisy to time one layer"):
        extrapolate_depth([100.0, 101.0], [(0.010, 0.0101), (0.010, 0.0099)] * 4, (1, 2), 1, 24)


def _busy(seconds):
    def step():
        t = time.perf_counter() + seconds
        while time.perf_counter() < t:
            pass
        return 0.0  # seconds not to count (torch_ref.Step): none
    return step


def test_paired_steps_alternate_and_time_each_side():
    calls = []
    lo, hi = _busy(0.001), _busy(0.002)
    spec = SimpleNamespace(warmup_s=0.0, min_window_s=0.01, repetitions=2, min_batches=2)
    pairs = paired_steps(lambda: (calls.append("lo"), lo())[1], lambda: (calls.append("hi"), hi())[1],
                         4, spec, "t")
    assert len(pairs) >= 10  # repetitions x max(min_batches, 5)
    assert calls[2:10] == ["lo", "hi", "hi", "lo", "lo", "hi", "hi", "lo"]  # after the warm-up pair
    assert sum(b > a for a, b in pairs) > len(pairs) / 2  # (lo, hi): a busy host may preempt one



class _Cuda:
    """torch.cuda as the memory check sees it: 80 GiB, ``cached`` GiB held by the caching allocator
    until ``empty_cache`` (when it ``releases``)."""

    def __init__(self, cached: float, releases: bool) -> None:
        self.cached, self.releases = cached, releases

    def empty_cache(self) -> None:
        if self.releases:
            self.cached = 0.0

    def mem_get_info(self) -> tuple[float, float]:
        return (80 - self.cached) * 2**30, 80 * 2**30


@pytest.mark.parametrize("releases", [True, False])
def test_a_cuda_memory_check_hands_back_cached_blocks_first(monkeypatch, releases):
    """On an H100 (2026-11-27) a scenario's second full-depth measurement was refused: 24.4 of 80 GiB
    read free while the first one's blocks sat in PyTorch's caching allocator. The check hands them
    back before it reads what is free."""
    import dataclasses

    from ecobench.hardware.backends import torch_ref
    from ecobench.hardware.backends.base import Job
    from ecobench.workloads.presets import preset

    cuda = _Cuda(cached=56.0, releases=releases)
    monkeypatch.setattr(torch_ref, "require_torch", lambda: (SimpleNamespace(cuda=cuda), None))
    job = Job(arch=preset("bert-base"), mode="inference", seq_len=128, batch_size=8, dtype="fp16",
              device="cuda")
    while torch_ref.memory_needed_bytes(job) < 30 * 2**30:
        job = dataclasses.replace(job, batch_size=job.batch_size + 8)
    assert 30 < torch_ref.memory_needed_bytes(job) / 2**30 < 50  # fits 80 GiB, not the 24 left
    if releases:
        torch_ref.check_memory(job, "cuda")
    else:
        with pytest.raises(BackendError, match="24.0 GiB free"):
            torch_ref.check_memory(job, "cuda")


def test_seconds_a_step_leaves_out_are_not_timed():
    """A training step says how much of its time the workload does not spend (all but its share of an
    AdamW step): windows and alternated pairs time the rest. Here 15 of each 20 ms step."""
    from ecobench.hardware.backends.torch_ref import _window

    busy = _busy(0.02)

    def step():
        busy()
        return 0.015

    spec = SimpleNamespace(warmup_s=0.0, min_window_s=0.2, repetitions=1, min_batches=2)
    assert _window(step, 4, spec) > 400  # 4 samples in 5 ms: 800/s; all 20 ms timed: 200/s
    pairs = paired_steps(step, step, 4, spec, "t")
    assert statistics.median(t for pair in pairs for t in pair) < 0.01  # 5 ms, not 20 ms

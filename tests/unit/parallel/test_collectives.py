import numpy as np
import pytest

from ecobench.parallel.collectives import all_gather_s, all_reduce_s, hierarchical_all_reduce_s, send_s

GB = 1e9


def test_ring_formulas():
    # 8 peers at 100 GB/s, no latency: all-gather moves 7/8 of the buffer, all-reduce twice that
    assert all_gather_s(8 * GB, 8, 100, 0.0) == pytest.approx(7 / 8 * 8 / 100)
    assert all_reduce_s(8 * GB, 8, 100, 0.0) == pytest.approx(2 * all_gather_s(8 * GB, 8, 100, 0.0))
    # logarithmic latency: 3 steps each way for 8 peers
    assert all_reduce_s(8 * GB, 8, 100, 1e-5) == pytest.approx(2 * 3 * 1e-5 + 2 * 7 / 8 * 8 / 100)
    assert all_reduce_s(8e3, 24, 100, 1e-6) == pytest.approx(2 * 5 * 1e-6, rel=0.02)  # tiny: latency-bound
    assert all_reduce_s(8 * GB, 1, 100, 1e-5) == 0.0  # alone: nothing to do
    assert send_s(GB, 50, 2e-6) == pytest.approx(2e-6 + 1 / 50)


def test_hierarchical_is_flat_when_one_member_per_node_and_cheaper_otherwise():
    flat = all_reduce_s(4 * GB, 16, 10, 1e-5)
    assert hierarchical_all_reduce_s(4 * GB, 16, 1, 300, 3e-6, 10, 1e-5) == pytest.approx(flat)
    # 8 members share a node: the network carries 1/8 of the buffer per member
    two_level = hierarchical_all_reduce_s(4 * GB, 16, 8, 300, 3e-6, 10, 1e-5)
    assert two_level < flat / 4


def test_broadcasts_over_arrays():
    out = all_reduce_s(np.array([GB, 2 * GB]), np.array([2, 4]), 100, 0.0)
    assert out.shape == (2,) and out[1] > out[0]

"""The lengths CSV reader alone: rows as samples, a histogram's bins repeated by their count."""

import numpy as np
import pytest

from ecobench.errors import InputError
from ecobench.io.lengths_csv import MAX_SAMPLES, read_lengths_csv


def test_rows_are_samples_and_a_histogram_weighs_its_bins(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("input_tokens,output_tokens\n100,10\n300,30\n")
    li, lo = read_lengths_csv(p, "f")
    assert li.tolist() == [100, 300] and lo.tolist() == [10, 30]
    p.write_text("input_tokens,output_tokens,count\n100,10,3\n300,30,1\n500,50,0\n")
    li, lo = read_lengths_csv(p, "f")
    assert np.mean(li) == pytest.approx(150) and np.mean(lo) == pytest.approx(15)


def test_a_huge_histogram_is_scaled_to_the_sample_cap_keeping_its_shape(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text(f"input_tokens,output_tokens,count\n100,10,{10 * MAX_SAMPLES}\n200,20,{10 * MAX_SAMPLES}\n")
    li, _ = read_lengths_csv(p, "f")
    assert len(li) == MAX_SAMPLES and np.mean(li) == pytest.approx(150)


def test_every_count_zero_is_bad_input_naming_the_field(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("input_tokens,output_tokens,count\n100,10,0\n")
    with pytest.raises(InputError, match=r"^workload\.serving\.lengths_csv: .*every count is 0"):
        read_lengths_csv(p, "workload.serving.lengths_csv")

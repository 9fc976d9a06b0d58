"""Counted nouns and articles in messages (trial14: "a folder of 1 runs", "a run results must be ...")."""

import pytest

from ecobench.words import a, close_names, counted


@pytest.mark.parametrize("n,noun,text", [
    (1, "run", "1 run"), (2, "run", "2 runs"), (0, "row", "0 rows"), (1000, "row", "1,000 rows"),
    (1.0, "instance", "1 instance"), (2.5, "instance", "2.5 instances"),
    (1, "rank", "1 rank"), (3, "rank", "3 ranks"), (2, "body", "2 bodies")])
def test_counted_is_singular_for_one_only(n, noun, text):
    assert counted(n, noun, "bodies" if noun == "body" else None) == text


@pytest.mark.parametrize("what,text", [
    ("scenario", "a scenario"), ("architecture", "an architecture"), ("lengths CSV", "a lengths CSV"),
    ("run results", "run results"), ("baseline results", "baseline results"),
    ("calibration points", "calibration points"), ("vllm bench serve result", "a vllm bench serve result")])
def test_a_takes_an_article_for_one_thing_only(what, text):
    assert a(what) == text


def test_a_change_that_rounds_to_none_reads_0_pct_with_no_sign():
    from ecobench.words import signed_pct

    # '%+.0f%%' wrote -0% for -0.003 (a band's end in the report: "-55% to -0%") and +0% for 0.3
    assert [signed_pct(v) for v in (-0.003, 0.3, -0.0, 0.0, -0.6, 0.6, -54.7, 12.0)] == \
        ["0%", "0%", "0%", "0%", "-1%", "+1%", "-55%", "+12%"]


def test_close_names_sets_case_aside():
    # 'BF16' had no suggestion (difflib's ratio against 'bf16' is 0.5, under the cutoff)
    assert close_names("BF16", ["fp32", "bf16", "fp16"]) == ["bf16"]
    assert close_names("Contiuous", ["continuous", "static"]) == ["continuous"]
    assert close_names("xyz", ["continuous", "static"]) == []

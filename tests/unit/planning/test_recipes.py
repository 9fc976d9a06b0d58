"""The auto search's preference for published recipes."""

import numpy as np

from ecobench.parallel.layout import Layout
from ecobench.parallel.search import Evaluated
from ecobench.parallel.step import Layouts
from ecobench.planning.recipes import RECIPE_TOLERANCE_PCT, published_recipes, recipes_for
from ecobench.planning.recipes import prefer_published as prefer
from ecobench.workloads import preset


def _ev(layouts, totals):
    L = Layouts.of(layouts, 24)
    t = np.array(totals, dtype=float)
    return Evaluated(L, [], t, np.ones(len(t), dtype=bool))


def test_recipes_come_from_published_llm_training_points_with_their_vendor():
    rs = published_recipes()
    assert len(rs) > 50
    assert {r.vendor for r in rs} == {"nvidia", "aws"}
    gpt3 = recipes_for(preset("gpt3-175b"), "nvidia")
    assert gpt3 and all(0.5 <= r.params / preset("gpt3-175b").params <= 2 for r in gpt3)
    assert any((r.tensor, r.pipeline) == (8, 12) for r in gpt3)  # Megatron's 175B: TP8 PP12


def test_a_recipe_within_the_tolerance_wins_over_the_fastest():
    fastest = Layout(8, 24, 1, 1, "none", 1)
    recipe = Layout(8, 12, 2, 1, "none", 1)
    ev = _ev([fastest, recipe], [100.0, 100.0 * (1 + RECIPE_TOLERANCE_PCT / 100 / 2)])
    i, note = prefer(ev, 0, preset("gpt3-175b"), ev.fits, "nvidia")
    assert i == 1 and "nearest a published recipe" in note and "slower than the fastest" in note


def test_a_recipe_beyond_the_tolerance_does_not():
    ev = _ev([Layout(8, 24, 1, 1), Layout(8, 12, 2, 1)], [100.0, 110.0])
    i, note = prefer(ev, 0, preset("gpt3-175b"), ev.fits, "nvidia")
    assert i == 0 and "like a published recipe" in note


def test_a_pick_unlike_every_recipe_says_so():
    ev = _ev([Layout(1, 96, 1, 1)], [100.0])
    i, note = prefer(ev, 0, preset("gpt3-175b"), ev.fits, "nvidia")
    assert i == 0 and "unlike any published recipe" in note


def test_no_recipe_of_that_size_says_so():
    ev = _ev([Layout(1, 1, 24, 1)], [1.0])
    i, note = prefer(ev, 0, preset("bert-base"), ev.fits, "aws")  # Neuron recipes start at 7B
    assert i == 0 and "no published aws recipe for a model of 0.109B parameters" in note


def test_a_moe_model_follows_moe_recipes_and_a_dense_one_dense_recipes():
    # Mixtral 8x7B (46.7B total) was "like a published recipe (torchtitan2404_l3_70b_full_64gpu: TP1
    # PP1, 70.6B)", a dense Llama 3 70B run with no expert degree, though MoE recipes are published
    moe = recipes_for(preset("mixtral-8x7b"), "nvidia")
    assert moe and all(r.moe for r in moe) and any(r.expert == 8 for r in moe)
    dense = recipes_for(preset("llama3-70b"), "nvidia")
    assert dense and not any(r.moe for r in dense)
    # among equally fast layouts the one at a recipe's expert degree wins
    ep1, ep8 = Layout(1, 2, 64, 1, expert=1), Layout(1, 2, 64, 1, expert=8)
    ev = _ev([ep1, ep8], [100.0, 100.0])
    i, note = prefer(ev, 0, preset("mixtral-8x7b"), ev.fits, "nvidia")
    assert i == 1 and "EP8" in note and "like a published recipe" in note


def test_a_pick_unlike_every_recipe_is_the_fastest():
    # a slower layout that was merely less unlike a recipe was taken, and the note said only "unlike"
    fastest, slower = Layout(1, 96, 1, 1), Layout(1, 48, 2, 1)  # 3 and 2 factors of two from TP8 PP12
    ev = _ev([fastest, slower], [100.0, 100.0 * (1 + RECIPE_TOLERANCE_PCT / 100 / 2)])
    i, note = prefer(ev, 0, preset("gpt3-175b"), ev.fits, "nvidia")
    assert i == 0 and "unlike any published recipe" in note

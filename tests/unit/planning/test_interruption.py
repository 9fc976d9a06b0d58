import pytest

from ecobench.planning.interruption import HOURS_PER_MONTH, SpotTerms, fleet_overhead, training_overhead


def test_training_overhead_is_lost_half_interval_and_restart_per_cluster_interruption():
    terms = SpotTerms(interruption_pct_per_month=7.3, checkpoint_interval_h=2.0, restart_h=0.5)
    assert HOURS_PER_MONTH == pytest.approx(730.5)
    assert terms.rate_per_instance_h == pytest.approx(0.073 / 730.5)
    assert training_overhead(terms, 100) == pytest.approx(100 * 0.073 / 730.5 * 1.5)
    assert training_overhead(terms, 200) == pytest.approx(2 * training_overhead(terms, 100))
    longer = SpotTerms(7.3, 4.0, 0.5)
    assert training_overhead(longer, 100) > training_overhead(terms, 100)
    assert training_overhead(SpotTerms(0.0, 4.0, 0.5), 100) == 0


def test_a_fleet_keeps_the_interrupted_share():
    assert fleet_overhead(SpotTerms(15.0, 1.0, 0.25)) == pytest.approx(0.15)

import pytest

from ecobench.planning.plan import instances_for_rate


@pytest.mark.parametrize("rate,t,u,n", [(277.7777777, 277.7777777 / 6, 1.0, 6), (100, 10, 1.0, 10),
                                        (100, 10, 0.5, 20), (101, 10, 1.0, 11), (1, 1000, 1.0, 1)])
def test_instances_for_rate(rate, t, u, n):
    assert instances_for_rate(rate, t, u) == n

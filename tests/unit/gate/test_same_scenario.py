"""A baseline of several runs holds repeated runs of one scenario: the files a scenario names (a model
config, a length CSV, measured serving figures, measured power points) are made absolute when it is
read, so runs of it from two checkouts differ in those paths only and are still one scenario."""

from types import SimpleNamespace

import pytest

from ecobench.errors import InputError
from ecobench.gate.check import check_same_scenario


def _doc(path: str, **scenario) -> SimpleNamespace:
    return SimpleNamespace(path=path, meta={"scenario": {"name": "s", **scenario}})


@pytest.mark.parametrize("scenario", [
    lambda root: {"power_points": f"{root}/watts.yaml"},
    lambda root: {"configs": [{"id": "a", "measured_serving": f"{root}/bench.json"}]},
    lambda root: {"workload": {"serving": {"lengths_csv": f"{root}/lengths.csv"}}},
    lambda root: {"configs": [{"id": "a", "from_hf_config": f"{root}/config.json"}]},
])
def test_runs_from_two_checkouts_are_one_scenario(scenario):
    check_same_scenario(_doc("a", **scenario("/home/x/repo")), _doc("b", **scenario("/ci/repo")))


def test_another_value_is_still_another_scenario():
    with pytest.raises(InputError, match=r"scenario.pue: 1.1 -> 1.2"):
        check_same_scenario(_doc("a", pue=1.1), _doc("b", pue=1.2))

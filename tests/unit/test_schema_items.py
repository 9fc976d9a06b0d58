"""A number out of range inside a list or mapping of numbers (``ecobench/scenario/base.py``): one
message naming the item, its value and the whole range, as for a plain field."""

import pytest
from pydantic import ValidationError

from ecobench.scenario.messages import error_lines
from ecobench.scenario.model import MESSAGE_SCHEMA, Overrides
from ecobench.scenario.profile import ProfileSpec


def _lines(cls, data):
    with pytest.raises(ValidationError) as exc:
        cls.model_validate(data)
    return error_lines(exc.value.errors(), MESSAGE_SCHEMA)


def test_a_list_item_out_of_range_is_named_with_the_field_range():
    assert _lines(ProfileSpec, {"rates_per_h": [1] * 5 + [-1, -2] + [1] * 17}) == [
        "rates_per_h[5]: -1 is out of range; allowed: a number from 0 to 10^12"]


def test_a_mapping_value_out_of_range_is_named_by_its_key():
    assert _lines(Overrides, {"grid_g_per_kwh": {"us-east-1": 0.05}}) == [
        "grid_g_per_kwh.us-east-1: 0.05 is out of range; allowed: a number from 0.1 to 2,000"]


def test_items_in_range_and_on_the_bounds_pass():
    assert ProfileSpec.model_validate({"multipliers": [0] + [1000] * 23}).multipliers[0] == 0

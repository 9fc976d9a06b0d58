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


def test_a_key_that_is_no_text_is_said_in_words_with_the_fields_allowed():
    """trial17: an unquoted YAML key read as a number or boolean (``5: 1``, ``true: 2``) said pydantic's
    '[5]: Keys should be strings' and '[1]: ...' (True as an index), with nothing allowed."""
    from ecobench.scenario.model import Scenario

    workload = {"model": "bert-base", "inference": {"rate_per_h": 1, "seq_len": 128}}
    doc = {"schema_version": 2, "name": "x", "baseline": "a", "workload": workload,
           "configs": [{"id": "a", "instance_type": "inf1.xlarge"}]}
    lines = _lines(Scenario, {5: 1, True: 2, **doc})
    assert lines[0].startswith("(top level): key 5 is a number, not a field name; allowed here: "
                               "schema_version, name, description, workload"), lines
    assert lines[1].startswith("(top level): key true is a boolean, not a field name; allowed here: "), lines
    assert len(lines) == 2 and not any("Keys should" in ln for ln in lines)
    [line] = _lines(Scenario, {**doc, "workload": {**workload, 7: "x"}})
    assert line.startswith("workload: key 7 is a number, not a field name; allowed here: model, "), line
    [line] = _lines(Overrides, {"grid_g_per_kwh": {3: 100}})
    assert line == "grid_g_per_kwh: key 3 is a number, not text; allowed: a text key (quote it: '3')", line

"""The logical NeuronCore setting (``configs[].lnc``; ``hardware/lnc.py``): which chips offer it, the
ranks a chip has at each setting, and what the planner picks from them."""

import pytest

from ecobench.errors import InputError
from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.cluster import instance_cluster, ranks_per_instance
from ecobench.hardware.lnc import (
    catalog_at_lnc,
    default_lnc,
    device_at_lnc,
    device_in,
    given_lnc,
    lnc_of,
    lnc_refusal,
)
from ecobench.hardware.neuron.arch import DEVICES
from ecobench.parallel.layout import divisors
from ecobench.parallel.serving import prefill_fused_attention
from ecobench.scenario.load import scenario_from_dict

TRN2 = "trn2.48xlarge"


def _scenario(instance_type: str = TRN2, **config: object) -> dict:
    return {"schema_version": 2, "name": "t", "baseline": "a",
            "workload": {"model": "llama3-8b",
                         "serving": {"requests_per_h": 3600, "input_tokens": 1024, "output_tokens": 256}},
            "configs": [{"id": "a", "instance_type": instance_type, "precision": "bf16", **config}]}


@pytest.mark.parametrize("lnc", [1, 2])
def test_a_trn2_configuration_takes_either_setting(lnc):
    assert scenario_from_dict(_scenario(lnc=lnc)).configs[0].lnc == lnc


def test_no_setting_given_is_the_chips_default():
    assert scenario_from_dict(_scenario()).configs[0].lnc is None


@pytest.mark.parametrize("value", [0, 3, 4, 1.5, "two", True])
def test_a_value_other_than_1_or_2_names_the_field_and_what_is_allowed(value):
    with pytest.raises(InputError) as exc:
        scenario_from_dict(_scenario(lnc=value), "s.yaml")
    text = str(exc.value)
    assert text.startswith("s.yaml: invalid scenario") and "configs[0].lnc" in text
    assert "1" in text.split("allowed", 1)[1] and "2" in text.split("allowed", 1)[1]


@pytest.mark.parametrize(("instance_type", "why"), [
    ("inf2.48xlarge", "inferentia2 runs one physical NeuronCore a rank (LNC=1 only)"),
    ("trn1.32xlarge", "trainium runs one physical NeuronCore a rank (LNC=1 only)"),
    ("p5.48xlarge", "p5.48xlarge has no NeuronCores"),
])
@pytest.mark.parametrize("lnc", [1, 2])
def test_lnc_on_a_chip_without_the_setting_is_refused(instance_type, why, lnc):
    with pytest.raises(InputError) as exc:
        scenario_from_dict(_scenario(instance_type, lnc=lnc), "s.yaml")
    text = str(exc.value)
    assert text.startswith(f"s.yaml: configs[0].lnc: {lnc}: ") and why in text
    assert "allowed: lnc on trainium2 (trn2) instances only" in text


def test_a_swept_setting_is_checked_against_the_baselines_instance():
    data = _scenario("inf2.48xlarge") | {"sweep": {"lnc": [1, 2]}}
    with pytest.raises(InputError, match=r"sweep\.lnc\[0\]: 1: inf2\.48xlarge's inferentia2"):
        scenario_from_dict(data, "s.yaml")


def test_refusal_is_none_where_the_setting_is_offered():
    assert lnc_refusal("trainium2", TRN2, 1) is None and lnc_refusal("trainium2", TRN2, 2) is None
    assert "allowed on trn2.48xlarge: 1 or 2" in (lnc_refusal("trainium2", TRN2, 4) or "")


def test_lnc_1_doubles_the_ranks_and_halves_each_ranks_share_of_the_chip():
    cat = load_catalog()
    inst = cat.instance(TRN2)
    at1, at2 = catalog_at_lnc(cat, "trainium2", 1), catalog_at_lnc(cat, "trainium2", 2)
    assert at2 is cat  # the catalog describes Trainium2 at its default
    assert at1.accelerators["trainium2"].ranks_per_chip == 8
    assert cat.accelerators["trainium2"].ranks_per_chip == 4
    assert ranks_per_instance(at1, inst) == 128 and ranks_per_instance(cat, inst) == 64
    c1, c2 = instance_cluster(at1, inst, "bf16"), instance_cluster(cat, inst, "bf16")
    assert c1.ranks_per_node == 128 and c2.ranks_per_node == 64
    assert c1.memory_gib == pytest.approx(12.0) and c2.memory_gib == pytest.approx(24.0)
    assert c1.peak_tflops == pytest.approx(c2.peak_tflops / 2)
    assert c1.memory_gb_per_s == pytest.approx(c2.memory_gb_per_s / 2)
    # every other chip unchanged, and the packaged catalog itself untouched
    assert all(at1.accelerators[k] == v for k, v in cat.accelerators.items() if k != "trainium2")
    assert load_catalog().accelerators["trainium2"].ranks_per_chip == 4


def test_the_tensor_degrees_a_plan_tries_follow_the_ranks():
    cat = load_catalog()
    inst = cat.instance(TRN2)
    at1 = catalog_at_lnc(cat, "trainium2", 1)
    assert divisors(instance_cluster(cat, inst, "bf16").ranks_per_node) == [1, 2, 4, 8, 16, 32, 64]
    assert divisors(instance_cluster(at1, inst, "bf16").ranks_per_node) == [1, 2, 4, 8, 16, 32, 64, 128]


def test_the_setting_read_back_from_a_catalog():
    cat = load_catalog()
    assert lnc_of(cat, "trainium2") == 2 and lnc_of(catalog_at_lnc(cat, "trainium2", 1), "trainium2") == 1
    assert lnc_of(cat, "inferentia2") == 1 and lnc_of(cat, "trainium") == 1 and lnc_of(cat, "h100-sxm") == 1


def test_the_prefill_kernel_follows_the_setting():
    # optimum-neuron's flash kernel: at LNC=2 on multiples of 1,024 tokens, at LNC=1 from 4,096 only
    cat = load_catalog()
    at1 = catalog_at_lnc(cat, "trainium2", 1)
    assert prefill_fused_attention("optimum-neuron", lnc_of(cat, "trainium2"), 2048) is True
    assert prefill_fused_attention("optimum-neuron", lnc_of(at1, "trainium2"), 2048) is False


def test_the_emulated_core_at_lnc_1_is_one_physical_core():
    dev = DEVICES["trainium2"]
    one = device_at_lnc(dev, 1)
    assert device_at_lnc(dev, 2) is dev
    assert (one.cores, one.core.physical, one.core.name) == (8, 1, "NeuronCore-v3 (LNC=1)")
    assert one.core.tensor_tflops == pytest.approx(dev.core.tensor_tflops / 2)
    assert one.core_hbm_gb_per_s == pytest.approx(dev.core_hbm_gb_per_s / 2)
    assert one.cores * one.core.tensor_tflops == pytest.approx(dev.cores * dev.core.tensor_tflops)
    assert device_in(catalog_at_lnc(load_catalog(), "trainium2", 1), "trainium2") == one
    assert device_in(load_catalog(), "inferentia2") is DEVICES["inferentia2"]


def test_a_setting_the_chip_does_not_offer_is_an_error_not_a_silent_default():
    with pytest.raises(ValueError, match="offers LNC"):
        catalog_at_lnc(load_catalog(), "inferentia2", 2)


def test_a_given_setting_is_checked_and_applied_by_one_function():
    """ux29: serve-point checked --lnc with its own copy of the configs' check; both call given_lnc."""
    import inspect

    from ecobench.planning import configs, serve_point

    cat = load_catalog()
    assert given_lnc(cat, "trainium2", TRN2, None) is cat and given_lnc(cat, "trainium2", TRN2, 2) is cat
    assert lnc_of(given_lnc(cat, "trainium2", TRN2, 1), "trainium2") == 1
    with pytest.raises(InputError) as exc:
        given_lnc(cat, "inferentia2", "inf2.48xlarge", 1)
    assert str(exc.value) == lnc_refusal("inferentia2", "inf2.48xlarge", 1)
    for module in (configs, serve_point):
        text = inspect.getsource(module)
        assert "given_lnc(" in text and "lnc_refusal(" not in text, module.__name__


def test_the_default_setting_of_a_chip_with_a_choice():
    assert default_lnc("trainium2") == 2 and default_lnc("trainium") is None and default_lnc("h100") is None

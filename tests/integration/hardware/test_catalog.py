from importlib import resources

import pytest
import yaml

from ecobench.errors import UnknownNameError
from ecobench.hardware.catalog import load_catalog

LLM_INSTANCES = ["trn2.48xlarge", "inf2.8xlarge", "inf2.24xlarge", "p4de.24xlarge", "p5e.48xlarge",
                 "p5en.48xlarge", "g6.xlarge", "g6.12xlarge", "g6.48xlarge", "g6e.xlarge", "g6e.12xlarge",
                 "g6e.48xlarge"]
SHARED_INSTANCES = ["inf1.xlarge", "inf1.2xlarge", "inf1.6xlarge", "inf1.24xlarge", "inf2.xlarge",
                    "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "g4dn.xlarge",
                    "g4dn.2xlarge", "g4dn.12xlarge", "g5.xlarge", "g5.2xlarge", "p3.2xlarge",
                    "p3dn.24xlarge", "p4d.24xlarge", "p5.48xlarge", "c6i.2xlarge", "c7g.2xlarge"]


def test_every_data_file_loads_from_the_installed_package():
    for name in ("instances.yaml", "accelerators.yaml", "regions.yaml", "published_points.yaml"):
        text = resources.files("ecobench.hardware").joinpath(f"data/{name}").read_text("utf-8")
        assert yaml.safe_load(text)


def test_catalog_holds_every_reference_instance_with_sources():
    cat = load_catalog()
    assert set(SHARED_INSTANCES + LLM_INSTANCES) <= set(cat.instances)
    for inst in cat.instances.values():
        for block in (inst.spec, inst.price_usd_per_h, inst.embodied):
            assert block.source.startswith("http") and block.as_of
        prices = inst.price_usd_per_h.regions
        assert all(v > 0 for v in prices.values())
        if not prices:  # no sourced on-demand price: the block says why
            assert inst.price_usd_per_h.note
        assert 0 < inst.host_share <= 1
        if inst.spec.accelerator:
            assert inst.spec.accelerator in cat.accelerators
            link = inst.spec.intra_link
            assert link is not None and link.source.startswith("http") and link.gb_per_s > 0, inst.name
        assert inst.spec.cpu_microarchitecture in cat.cpu_power


def test_neuron_ranks_are_neuroncores_as_the_docs_count_them():
    from ecobench.hardware.cluster import ranks_per_instance

    cat = load_catalog()
    expect = {"trn1.32xlarge": 32, "trn2.48xlarge": 64, "inf2.48xlarge": 24, "inf1.xlarge": 4,
              "p5.48xlarge": 8}
    for name, ranks in expect.items():
        assert ranks_per_instance(cat, cat.instance(name)) == ranks, name
    assert cat.accelerators["trainium2"].memory_gib / cat.accelerators["trainium2"].ranks_per_chip == 24


def test_neuron_chip_power_is_a_range_from_cited_evidence():
    import statistics

    cat = load_catalog()
    for key in ("inferentia", "inferentia2", "trainium", "trainium2"):
        p = cat.accelerators[key].power
        assert p.inferred_from and p.uncertain and len(p.evidence) >= 3, key
        assert all(e.source.startswith("http") and e.low_w <= e.estimate_w <= e.high_w for e in p.evidence)
        assert p.max_w == pytest.approx(statistics.median(e.estimate_w for e in p.evidence), abs=0.06)
        assert p.low_w < p.max_w < p.high_w and 0 <= p.idle_w < p.low_w
    assert not cat.accelerators["a100-40gb"].power.uncertain  # datasheet figure, no range


def test_power_range_must_follow_its_evidence():
    from pydantic import ValidationError

    from ecobench.hardware.catalog import ChipPower

    good = load_catalog().accelerators["trainium"].power.model_dump()
    ChipPower.model_validate(good)
    with pytest.raises(ValidationError, match="max_w must be 243.6"):
        ChipPower.model_validate(good | {"max_w": 300.0})
    with pytest.raises(ValidationError, match="needs its lines of evidence"):
        ChipPower.model_validate(good | {"evidence": ()})


def test_reference_figures_carried_over():
    cat = load_catalog()
    assert cat.instance("inf1.2xlarge").price_usd_per_h.regions["us-east-1"] == 0.362
    assert cat.instance("g4dn.2xlarge").price_usd_per_h.regions["us-east-1"] == 0.752
    assert cat.instance("trn1.32xlarge").spec.accelerator_count == 16
    assert cat.accelerators["a100-40gb"].peak_tflops["tf32"] == 156
    assert cat.accelerators["trainium"].peak_tflops["bf16"] * 16 == 3040


def test_unknown_instance_suggests_nearest():
    with pytest.raises(UnknownNameError, match="did you mean 'trn1.32xlarge'"):
        load_catalog().instance("trn1.32xlarg")


def _p3dn_scenario(tensor: int, data: int) -> dict:
    return {"schema_version": 2, "name": "t",
            "workload": {"model": "llama2-7b", "training": {
                "total_tokens": 1e9, "phases": [{"seq_len": 4096, "fraction": 1.0}],
                "global_batch_size": 64}},
            "configs": [{"id": "a", "instance_type": "p3dn.24xlarge", "instances": 1, "precision": "fp16",
                         "parallelism": {"tensor": tensor, "pipeline": 1, "data": data, "zero": 0,
                                         "recompute": "full", "microbatch": 1}}],
            "baseline": "a"}


def test_p3dn_carries_the_32_gb_v100_and_the_memory_check_uses_it(monkeypatch):
    from ecobench.errors import EcobenchError
    from ecobench.hardware.cluster import instance_cluster
    from ecobench.planning.evaluate import evaluate
    from ecobench.scenario.load import scenario_from_dict

    cat = load_catalog()
    p3dn, p3 = cat.instance("p3dn.24xlarge"), cat.instance("p3.2xlarge")
    mem = p3dn.spec.accelerator_memory
    assert mem is not None and mem.gib == 32 and mem.as_of
    assert "aws.amazon.com/ec2/instance-types/p3" in mem.source and "32768 MiB" in mem.source
    assert p3dn.spec.accelerator == p3.spec.accelerator == "v100"  # one chip: same fitted efficiency
    assert instance_cluster(cat, p3dn, "fp16").memory_gib == 32
    assert instance_cluster(cat, p3, "fp16").memory_gib == 16 and p3.spec.accelerator_memory is None
    # Llama 2 7B at tensor 4 x data 2 without ZeRO needs about 27 GiB a GPU: it fits the 32 GB part ...
    row = evaluate(scenario_from_dict(_p3dn_scenario(4, 2))).iloc[0]
    assert 16 < row["memory_per_device_gib"] < 32
    # ... and was refused while p3dn was read as the 16 GB part
    monkeypatch.setitem(cat.instances, "p3dn.24xlarge", p3dn.model_copy(
        update={"spec": p3dn.spec.model_copy(update={"accelerator_memory": None})}))
    with pytest.raises(EcobenchError, match="16.0 GiB"):
        evaluate(scenario_from_dict(_p3dn_scenario(4, 2)))


def test_a10g_peaks_are_the_a10_datasheet_marked_as_standing_in():
    from ecobench.hardware.cluster import instance_cluster

    cat = load_catalog()
    a10g = cat.accelerators["a10g"]
    assert a10g.peak_tflops == {"fp32": 31.2, "tf32": 62.5, "bf16": 125, "fp16": 125, "fp8": None,
                                "int8": 250}
    assert "a10-datasheet.pdf" in a10g.spec_source and a10g.spec_as_of
    assert a10g.spec_inferred_from and "A10 datasheet" in a10g.spec_inferred_from
    assert "baseten.co" in a10g.spec_inferred_from  # the public A10/A10G comparison it rests on
    assert a10g.memory_bandwidth_gb_per_s == 600
    for name in ("g5.xlarge", "g5.2xlarge"):
        assert instance_cluster(cat, cat.instance(name), "bf16").peak_tflops == 125
    # every other chip's peaks are its own figures
    assert [k for k, a in cat.accelerators.items() if a.spec_inferred_from] == ["a10g"]


def test_every_catalog_gpu_has_a_sourced_16_bit_peak():
    cat = load_catalog()
    for inst in cat.instances.values():
        acc = cat.accelerator_of(inst)
        if acc is not None:
            assert acc.peak_tflops.get("bf16") or acc.peak_tflops.get("fp16"), inst.name

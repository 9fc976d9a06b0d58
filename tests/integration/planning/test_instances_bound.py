"""A plan needing more instances than the documented bound (bounds.MAX_INSTANCES, README "Input
bounds") is bad input naming the configuration, the instances it needs and the bound (exit 2), as a
given configs[].instances or training.max_instances beyond it is: serving and inference alike."""

import json

import pytest
import yaml

from ecobench.bounds import MAX_INSTANCES
from ecobench.cli import main

SERVING = {"input_tokens": 1500, "output_tokens": 300, "p99_ttft_ms": 5000, "horizon_h": 1}
INFERENCE = {"horizon_h": 1, "seq_len": 512, "batch_size": 1}


def _run(tmp_path, capsys, workload):
    doc = {"schema_version": 2, "name": "t", "workload": {"model": "llama3-8b", **workload},
           "configs": [{"id": "l40s", "instance_type": "g6e.xlarge", "precision": "bf16"}],
           "baseline": "l40s", "uncertainty": {"draws": 0}}
    if "inference" in workload:
        doc["workload"]["model"] = "layoutlm-base"
        doc["configs"] = [{"id": "gpu", "instance_type": "g4dn.2xlarge", "precision": "fp32"}]
        doc["baseline"] = "gpu"
    path = tmp_path / f"s{len(list(tmp_path.glob('s*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    code = main(["run", str(path), "-q", "--out", str(out)])
    err = capsys.readouterr().err
    rows = json.loads((out / "results.json").read_text())["rows"] if code == 0 else None
    return code, err, rows


@pytest.mark.parametrize("key, field, within, beyond", [
    ("serving", "requests_per_h", 1e9, 1e12),  # about 79,000 and 79 million g6e.xlarge
    ("inference", "rate_per_h", 1e9, 1e12)])
def test_a_plan_beyond_the_instances_bound_is_bad_input(tmp_path, capsys, key, field, within, beyond):
    base = SERVING if key == "serving" else INFERENCE
    code, err, rows = _run(tmp_path, capsys, {key: {**base, field: within}})
    assert code == 0, err
    assert 10_000 < rows[0]["instances"] <= MAX_INSTANCES
    code, err, _ = _run(tmp_path, capsys, {key: {**base, field: beyond}})
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    cid = "l40s" if key == "serving" else "gpu"
    assert line.startswith("ecobench: error: ") and f"configs[{cid}] (" in line
    needs = int(line.split("needs ")[1].split(" instances")[0].replace(",", ""))
    assert needs > 100 * MAX_INSTANCES
    assert f"above the {MAX_INSTANCES:,} instances a plan may have" in line
    assert f"lower workload.{key}.{field}" in line

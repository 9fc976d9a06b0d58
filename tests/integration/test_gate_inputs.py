"""What the gate accepts: mixed measured and modelled rows; never a non-finite or negative figure,
a baseline of another scenario, kind or schema, or a duplicate id; measured figures tested on
samples computed through the planner; noisy measurements refused; nothing from a file is markup."""

import json
import math
import xml.etree.ElementTree as ET

import pytest

from ecobench.cli import main
from ecobench.hardware.backends import BACKENDS
from ecobench.hardware.backends.base import Measurement, Performance, Utilization
from ecobench.hardware.backends.testing import ReplayBackend
from ecobench.planning.evaluate import evaluate
from ecobench.planning.plan import plan_inference
from ecobench.reports.tables import records
from ecobench.runner import results_document
from ecobench.scenario.load import scenario_from_dict
from tests.conftest import SCENARIOS


def replayed(rates, power_w=(5.0, 20.0), warnings=()) -> Performance:
    """A measurement as the reference backend reports it: per-window throughput and power."""
    cpu, mem = power_w
    per_window = tuple({"accelerator": 0.0, "cpu": cpu * (1 + 0.01 * (i % 3)), "memory": mem}
                       for i in range(len(rates)))
    mean = sum(rates) / len(rates)
    m = Measurement(tuple(rates), None, {"accelerator": 0.0, "cpu": cpu, "memory": mem},
                    "replayed", "2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00", mean, mean,
                    power_w_samples=per_window, power_method="replayed",
                    energy_provenance="modelled", warnings=tuple(warnings))
    return Performance(mean, Utilization(0.0, 1.0, 1.0, 0.0), "measured", "replayed", 0.0, measured=m)


def replay(rates, **kw) -> ReplayBackend:
    """The reference backend replaced by a replay of a measurement of the host."""
    return ReplayBackend({"host": replayed(rates, **kw)}, name="reference",
                         capabilities=BACKENDS["reference"].capabilities)


def _scenario(rate_per_h=100_000):
    return scenario_from_dict({
        "schema_version": 1, "name": "replayed",
        "workload": {"model": "bert-base", "inference": {"rate_per_h": rate_per_h, "seq_len": 128,
                                                          "batch_size": 4}},
        "configs": [{"id": "host", "instance_type": "local", "backend": "reference"},
                    {"id": "inf1", "instance_type": "inf1.xlarge", "precision": "bf16"}],
        "baseline": "host"})


def _write_run(tmp_path, name, rates, **kw):
    s = _scenario()
    backends = dict(BACKENDS) | {"reference": replay(rates, **kw)}
    doc = results_document(s, records(evaluate(s, backends=backends)), name)
    d = tmp_path / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps(doc))
    return d, doc


def _rates(mean, cv=0.02, n=10, seed=0):
    import numpy as np

    return list(np.random.default_rng(seed).normal(mean, mean * cv, n))


def test_mixed_measured_and_modelled_rows_are_gated(tmp_path, capsys):
    run, doc = _write_run(tmp_path, "r", _rates(5.0))
    rows = {r["config_id"]: r for r in doc["rows"]}
    assert rows["inf1"].get("samples") is None and rows["host"]["samples"]
    assert main(["check", str(run), "--baseline", str(run)]) == 0
    out = capsys.readouterr().out
    assert "welch" in out and "exact" in out


def test_samples_are_planned_per_repetition_at_fractional_instances():
    rates = _rates(5.0)
    s = _scenario()
    row = evaluate(s, backends=dict(BACKENDS) | {"reference": replay(rates)}).iloc[0]
    assert row.samples_basis.endswith("fractional instances")
    assert float(row.instances).is_integer()
    # each sample is what the planner gives for that repetition alone (not the row scaled)
    from ecobench.hardware.catalog import load_catalog, local_instance
    from ecobench.planning.plan import Context
    from ecobench.power.carbon import grid_intensity
    from ecobench.power.setup import power_setup

    cat = load_catalog()
    host = local_instance("us-east-1", None)
    ctx = Context(cat, host, 0.0, grid_intensity(cat, "us-east-1", {}), s.pue,
                  power_setup(cat, host, None, None, None, None))
    perf = replayed(rates)
    from ecobench.planning.samples import at_repetition

    for i in (0, 4, 9):
        direct = plan_inference(s.workload.inference, at_repetition(perf, i), ctx, whole_instances=False).row
        assert row.samples["energy_kwh"][i] == pytest.approx(direct["energy_kwh"])
        assert row.samples["instances"][i] == pytest.approx(27.777 / rates[i], rel=1e-3)
    assert not all(float(v).is_integer() for v in row.samples["instances"])


def test_instance_step_alone_does_not_fail_the_gate(tmp_path, capsys):
    """27.8 inferences/s: 5.6/s needs 5 instances, 5.45/s needs 6 (+20% energy in the row). A 3%
    throughput change is a 3% change of the continuous quantity, well within energy_kwh:+5%."""
    base, bdoc = _write_run(tmp_path, "b", _rates(5.62, seed=1))
    cur, cdoc = _write_run(tmp_path, "c", _rates(5.45, seed=2))
    assert bdoc["rows"][0]["instances"] == 5 and cdoc["rows"][0]["instances"] == 6
    assert cdoc["rows"][0]["energy_kwh"] / bdoc["rows"][0]["energy_kwh"] > 1.15
    assert main(["check", str(cur), "--baseline", str(base)]) == 0
    out = capsys.readouterr().out
    assert "instances 5 -> 6 (an integer step" in out


def test_real_measured_regression_fails(tmp_path, capsys):
    base, _ = _write_run(tmp_path, "b", _rates(5.0, seed=1))
    cur, _ = _write_run(tmp_path, "c", _rates(4.4, seed=2))  # 12% slower: 13.6% more energy
    assert main(["check", str(cur), "--baseline", str(base)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_noisy_measurement_is_refused_exit_5_unless_allowed(tmp_path, capsys):
    base, _ = _write_run(tmp_path, "b", _rates(5.0, seed=1))
    cur, _ = _write_run(tmp_path, "c", _rates(5.0, seed=2),
                        warnings=["other processes used 46% of the host's CPU while measuring"])
    assert main(["check", str(cur), "--baseline", str(base), "--junit", str(tmp_path / "j.xml")]) == 5
    captured = capsys.readouterr()
    assert "NOISY: not gated" in captured.out and "46%" in captured.err and "--allow-noisy" in captured.err
    # the counts first, then the noisy ids ('not gated: host in 2 check(s)' read as if host were checks)
    assert "\nno regression in 2 check(s); 1 noisy configuration(s) not gated: host\n" in captured.out
    assert ET.parse(tmp_path / "j.xml").getroot().get("skipped") == "1"
    assert main(["check", str(cur), "--baseline", str(base), "--allow-noisy"]) == 0
    assert "pass (noisy)" in capsys.readouterr().out
    assert main(["baseline", str(cur), "--to", str(tmp_path / "nb.json")]) == 5
    assert main(["baseline", str(cur), "--to", str(tmp_path / "nb.json"), "--allow-noisy"]) == 0


def _doc(tmp_path):
    run, doc = _write_run(tmp_path, "r", _rates(5.0))
    return run, doc


def _bad_baseline(tmp_path, capsys, mutate, *expect, raw=None):
    run, doc = _doc(tmp_path)
    mutate(doc)
    f = tmp_path / "b.json"
    f.write_text(raw(doc) if raw else json.dumps(doc))
    code = main(["check", str(run), "--baseline", str(f)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    for e in expect:
        assert e in err, err


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_baseline_figure_is_bad_input(tmp_path, capsys, literal):
    _bad_baseline(tmp_path, capsys, lambda d: d["rows"][1].update(energy_kwh="@@"), "not a valid",
                  raw=lambda d: json.dumps(d).replace('"@@"', literal))


@pytest.mark.parametrize("value,shown", [(-0.5, "-0.5"), (None, "null"), ("12", "'12'"), (True, "True")])
def test_negative_or_missing_gated_figure_is_bad_input(tmp_path, capsys, value, shown):
    _bad_baseline(tmp_path, capsys, lambda d: d["rows"][1].update(energy_kwh=value),
                  "configuration 'inf1': energy_kwh is " + shown)


def test_a_figure_a_configuration_does_not_have_says_how_to_scope_the_rule(tmp_path, capsys):
    """The measured host has no price, so its cost_usd is null. `--fail-on cost_usd:+5%` said only
    'cost_usd is null (not a finite number); a gated figure must be a finite number, 0 or more', as if
    the file were corrupt, and never what to do (the rule can hold for the configurations that have
    it)."""
    run, doc = _write_run(tmp_path, "r", _rates(5.0))
    rows = {r["config_id"]: r for r in doc["rows"]}
    assert rows["host"]["cost_usd"] is None and rows["inf1"]["cost_usd"] > 0
    assert main(["check", str(run), "--baseline", str(run), "--fail-on", "cost_usd:+5%"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ecobench: error: {run / 'results.json'}: configuration 'host': cost_usd is null: "
                          "this configuration has no such figure (as a host with no price has no cost); "
                          "allowed: scope the rule to the configurations that have it "
                          "(RULE@ID[,ID...]: @inf1)")
    assert main(["check", str(run), "--baseline", str(run), "--fail-on", "cost_usd:+5%@inf1"]) == 0


def test_huge_integer_is_refused_when_read(tmp_path, capsys):
    """A 401-digit integer is refused by the reader's cap, naming it (issue 24)."""
    _bad_baseline(tmp_path, capsys, lambda d: d["rows"][1].update(energy_kwh=10**400),
                  "an integer of 401 digits; at most 40")


@pytest.mark.parametrize("bad", [[1.0, float("nan")], [1.0, -2.0], [1.0, 0.0], [1.0, "x"], [True, 1.0]])
def test_bad_samples_are_bad_input(tmp_path, capsys, bad):
    def mutate(d):
        d["rows"][0]["samples"]["energy_kwh"] = bad

    raw = (lambda d: json.dumps(d, allow_nan=True)) if any(isinstance(v, float) and math.isnan(v)
                                                           for v in bad) else None
    _bad_baseline(tmp_path, capsys, mutate, "samples", raw=raw)


def test_non_finite_current_run_is_bad_input(tmp_path, capsys):
    run, doc = _doc(tmp_path)
    text = json.dumps(doc).replace('"energy_kwh": ', '"energy_kwh": NaN, "x": ', 1)
    (run / "results.json").write_text(text)
    assert main(["check", str(run), "--baseline", str(run)]) == 2
    assert "NaN is not a number JSON allows" in capsys.readouterr().err


def test_duplicate_configuration_id_is_bad_input(tmp_path, capsys):
    _bad_baseline(tmp_path, capsys, lambda d: d["rows"].append(dict(d["rows"][1])),
                  "configuration id 'inf1' appears twice")


@pytest.mark.parametrize("field,value,expect", [
    ("kind", "something-else", "kind"), ("schema_version", 99, "schema_version 99"),
    ("schema_version", "1", "schema_version"), ("mode", "training", "has mode 'training'")])
def test_wrong_kind_schema_or_mode_is_bad_input(tmp_path, capsys, field, value, expect):
    _bad_baseline(tmp_path, capsys, lambda d: d.update({field: value}), expect)


def test_baseline_of_another_scenario_with_the_same_ids_is_bad_input(tmp_path, capsys):
    """small_encoder_pretrain checked against a bert_large_pretrain baseline: same ids, −96%."""
    import yaml

    s = yaml.safe_load((SCENARIOS / "small_encoder_pretrain.yaml").read_text())
    b = yaml.safe_load((SCENARIOS / "bert_large_pretrain.yaml").read_text())
    s["configs"], s["baseline"] = b["configs"], b["baseline"]
    f = tmp_path / "small.yaml"
    f.write_text(yaml.safe_dump(s))
    assert main(["run", str(f), "-q", "--out", str(tmp_path / "small")]) == 0
    big = str(SCENARIOS / "bert_large_pretrain.yaml")
    assert main(["run", big, "-q", "--out", str(tmp_path / "big")]) == 0
    assert main(["baseline", str(tmp_path / "big"), "--to", str(tmp_path / "big.json")]) == 0
    assert main(["check", str(tmp_path / "small"), "--baseline", str(tmp_path / "big.json")]) == 2
    assert "is of scenario 'bert_large_pretrain'" in capsys.readouterr().err


def test_a_baseline_is_not_a_run(tmp_path, capsys):
    run, _ = _doc(tmp_path)
    assert main(["baseline", str(run), "--to", str(tmp_path / "b.json")]) == 0
    assert main(["check", str(tmp_path / "b.json"), "--baseline", str(run)]) == 2
    assert "is a baseline file" in capsys.readouterr().err


def test_rule_with_an_overflowing_threshold_is_bad_input(tmp_path, capsys):
    run, _ = _doc(tmp_path)
    huge = "energy_kwh:+" + "9" * 400 + "%"
    assert main(["check", str(run), "--baseline", str(run), "--fail-on", huge]) == 2


@pytest.mark.parametrize("rule,figure", [("energy_change_pct:+5%", "energy_kwh"),
                                          ("co2_change_pct<0", "co2_kg")])
def test_a_rule_on_a_change_against_the_scenarios_baseline_is_refused_naming_the_figure(
        tmp_path, capsys, rule, figure):
    """A change column is negative wherever a configuration beats the scenario's baseline: the rule
    was refused as bad data in the baseline file ('energy_change_pct is -84.9; a gated figure must be
    ... 0 or more'), blaming a file that was right."""
    run, _ = _doc(tmp_path)
    assert main(["check", str(run), "--baseline", str(run), "--fail-on", rule]) == 2
    err = capsys.readouterr().err
    metric = rule.split(":")[0].split("<")[0]
    assert f"--fail-on '{rule}': {metric} is the change against the scenario's baseline configuration" in err
    assert f"allowed: the figure itself, e.g. {figure}:+5%" in err and "0 or more" not in err


EVIL = "![x](https://evil.example/x.png)\n# Heading <img src=x> @team \x1b[2J\x07"


def test_markdown_summary_and_junit_carry_no_markup_or_control_characters(tmp_path, capsys, monkeypatch):
    run, doc = _doc(tmp_path)
    doc["machine"]["node"] = EVIL
    doc["catalog_version"] = EVIL
    for r in doc["rows"]:
        if r.get("samples"):
            r["samples_basis"] = EVIL
            r["samples"]["energy_kwh"] = [v * 1.5 for v in r["samples"]["energy_kwh"]]  # a regression
            r["energy_kwh"] *= 1.5
    (tmp_path / "b.json").write_text(json.dumps(doc))
    cur = json.loads((run / "results.json").read_text())
    for r in cur["rows"]:
        r["samples_basis"] = EVIL
    (run / "results.json").write_text(json.dumps(cur))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code = main(["check", str(run), "--baseline", str(tmp_path / "b.json"), "--fail-on", "energy_kwh:-5%",
                 "--markdown", str(tmp_path / "v.md"), "--junit", str(tmp_path / "v.xml")])
    assert code == 1
    captured = capsys.readouterr()
    for md in ((tmp_path / "v.md").read_text(), summary.read_text()):
        assert "![" not in md and "](http" not in md and "<img" not in md and "\n# " not in md
        assert "\x1b" not in md and "\x07" not in md and "\\@team" in md
    assert "\x1b" not in captured.out + captured.err and "\x07" not in captured.out + captured.err
    root = ET.parse(tmp_path / "v.xml").getroot()  # well-formed despite the control characters
    assert int(root.get("failures")) >= 1


def test_several_run_baseline_sees_run_to_run_drift(tmp_path, capsys):
    """Five baseline runs, each steady (CV 2%) but 5-15% apart, as on a shared VM. A run 8% slower
    than their mean is within that drift: a one-run baseline fails it, a five-run baseline does not;
    a 40% slowdown fails either way."""
    runs = [str(_write_run(tmp_path, f"b{i}", _rates(m, seed=i))[0])
            for i, m in enumerate([5.0, 5.4, 4.7, 5.2, 4.9])]
    cur, _ = _write_run(tmp_path, "c", _rates(4.6, seed=9))
    slow, _ = _write_run(tmp_path, "s", _rates(3.0, seed=10))
    assert main(["check", str(cur), "--baseline", runs[0]]) == 1
    assert main(["baseline", *runs, "--to", str(tmp_path / "b.json")]) == 0
    doc = json.loads((tmp_path / "b.json").read_text())
    assert len(doc["runs"]) == 5 and len(doc["rows"][0]["run_means"]["energy_kwh"]) == 5
    capsys.readouterr()
    assert main(["check", str(cur), "--baseline", str(tmp_path / "b.json")]) == 0
    assert "spread of 5 baseline runs" in capsys.readouterr().out
    assert main(["check", str(slow), "--baseline", str(tmp_path / "b.json")]) == 1
    assert main(["baseline", runs[0], runs[0], "--to", str(tmp_path / "twice.json")]) == 2
    assert "the same run" in capsys.readouterr().err


def test_measured_verdict_shows_the_geometric_means_it_tests(tmp_path):
    """Issue 24: the table showed central values while the test used geometric means of samples."""
    import math
    import statistics

    from ecobench.gate.check import compare, parse_rule
    from ecobench.gate.files import read_gate_doc

    base, _ = _write_run(tmp_path, "b", _rates(5.0, cv=0.1, seed=1))
    cur, _ = _write_run(tmp_path, "c", _rates(4.0, cv=0.1, seed=2))
    bd, cd = read_gate_doc(base, "baseline"), read_gate_doc(cur, "run")
    v = next(v for v in compare(cd, bd, [parse_rule("energy_kwh:+5%")]) if v.config_id == "host")
    geo = lambda xs: math.exp(statistics.fmean(math.log(x) for x in xs))  # noqa: E731
    assert v.baseline == pytest.approx(geo(bd.rows["host"]["samples"]["energy_kwh"]))
    assert v.current == pytest.approx(geo(cd.rows["host"]["samples"]["energy_kwh"]))
    assert v.change_pct == pytest.approx((v.current / v.baseline - 1) * 100)
    assert "geometric means" in v.method


@pytest.mark.parametrize("name,words", [("missing", "no such run directory"),
                                        ("results.json", "a file, not a run directory")])
def test_report_of_no_directory_says_what_it_is_and_what_to_give(tmp_path, capsys, name, words):
    """Both were 'PATH: not a run directory', the same for a typo'd path as for a file."""
    path = tmp_path / name
    if name == "results.json":
        path.write_text("{}")
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {words} (give the directory `ecobench run` wrote, which holds results.json)" in err, err


def test_a_folder_that_is_not_a_run_says_what_it_is(tmp_path, capsys):
    """results/<scenario>/ (a folder of runs) or a folder without results.json was reported as
    'no such run directory', though the folder was there."""
    runs = tmp_path / "results"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--results", str(runs)]) == 0
    (run,) = (runs / "layoutlm_realtime").iterdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    folder = str(runs / "layoutlm_realtime")
    cases = [(["check", folder, "--baseline", str(run)], f"a folder holding 1 run, not a run: give that run "
                                                         f"({run})"),
             (["check", str(run), "--baseline", str(empty)], "a folder without results.json, not a run"),
             (["baseline", str(empty), "--to", str(tmp_path / "b.json")], "a folder without results.json"),
             (["report", str(empty)], "a folder without results.json, not a run directory")]
    for args, words in cases:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert words in err and "no such run directory" not in err, err
    assert not (tmp_path / "b.json").exists()


# A baseline's problems, each one line naming the field, the value and what is allowed, in the scenario's
# words (ecobench.scenario.messages); before, pydantic's own: 'Input should be a valid integer', 'Field
# required', 'Input should be greater than 0'. A gate document keeps keys it does not know (a row's result
# columns, results.json's versions and machine), so a misspelt field is the required field it is not.
@pytest.mark.parametrize("mutate,lines", [
    (lambda d: d.update(schema_versoin=d.pop("schema_version")),
     ["schema_version: missing; this field is required (the results format's version)"]),
    (lambda d: d["rows"][0].update(samples={"energy_kwh": [1.0, -2.0]}),
     ["rows[0].samples.energy_kwh[1]: -2.0 is out of range; allowed: more than 0"]),
    (lambda d: d.update(schema_version="1", mode="trainig"),
     ["schema_version: '1' is text, not a number; allowed: an integer, unquoted",
      "mode: 'trainig' is not allowed; allowed: 'inference', 'training' or 'serving'; did you mean "
      "'training'?"]),
    (lambda d: (d.pop("mode"), d["rows"][1].pop("config_id")),
     ["mode: missing; this field is required (the scenario's workload mode)",
      "rows[1].config_id: missing; this field is required (the configuration's id)"]),
], ids=["misspelt", "range", "type", "missing"])
def test_a_bad_baseline_reads_like_a_scenarios_errors(tmp_path, capsys, mutate, lines):
    run, doc = _doc(tmp_path)
    mutate(doc)
    f = tmp_path / "b.json"
    f.write_text(json.dumps(doc))
    assert main(["check", str(run), "--baseline", str(f)]) == 2
    err = capsys.readouterr().err
    head, *problems = err.strip().splitlines()
    assert head == f"ecobench: error: {f}: not a valid baseline document", err
    assert [p.strip() for p in problems] == lines, err
    for pydantics in ("Input should", "Field required", "Value error", "Traceback"):
        assert pydantics not in err, err


def test_a_baseline_without_a_column_the_run_has_says_to_write_it_again(tmp_path, capsys):
    """A baseline written by an ecobench before a column existed (the run has co2_kg_per_million, the
    baseline's rows do not) was refused as '--fail-on: unknown metric' with a list of 150 columns that
    held no way forward; it names the baseline, its ecobench version and the command to write it again."""
    run = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_realtime.yaml"), "-q", "--out", str(run)]) == 0
    old = tmp_path / "old.json"
    assert main(["baseline", str(run), "--to", str(old)]) == 0
    doc = json.loads(old.read_text())
    for r in doc["rows"]:
        del r["co2_kg_per_million"]
    doc["ecobench_version"] = "0.0.9"
    old.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["check", str(run), "--baseline", str(old), "--fail-on", "co2_kg_per_million:+5%"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "numeric columns" not in err, err
    assert (f"{old}: configuration 'inf1' has no co2_kg_per_million, which the run has: a baseline written "
            "by an ecobench (0.0.9) without that figure; write the baseline again with this one (`ecobench "
            f"baseline RUN_DIR --to {old} --force`)") in err, err

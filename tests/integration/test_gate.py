"""The regression gate: modelled changes compared exactly, measured ones tested statistically."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from ecobench.cli import main
from ecobench.errors import InputError
from ecobench.gate.check import Rule, Threshold, parse_rule, welch_regression
from ecobench.measure.defaults import DEFAULT_REPETITIONS
from tests.conftest import SCENARIOS


def _run(tmp_path, name, scenario_file, mutate=None):
    s = yaml.safe_load((SCENARIOS / scenario_file).read_text())
    if mutate:
        mutate(s)
    f = tmp_path / f"{name}.yaml"
    f.write_text(yaml.safe_dump(s))
    out = tmp_path / name
    assert main(["run", str(f), "-q", "--out", str(out)]) == 0
    return out


def test_unchanged_scenario_passes_and_bigger_model_fails(tmp_path, capsys):
    base = _run(tmp_path, "base", "small_encoder_pretrain.yaml")
    same = _run(tmp_path, "same", "small_encoder_pretrain.yaml")
    bigger = _run(tmp_path, "bigger", "small_encoder_pretrain.yaml",
                  lambda s: s["workload"]["architecture"].update(layers=7))
    longer = _run(tmp_path, "longer", "layoutlm_realtime.yaml")  # 512 tokens
    lbase = _run(tmp_path, "lbase", "layoutlm_realtime.yaml",
                 lambda s: s["workload"]["inference"].update(seq_len=448))
    assert main(["baseline", str(base), "--to", str(tmp_path / "b.json")]) == 0
    assert main(["check", str(same), "--baseline", str(tmp_path / "b.json")]) == 0
    assert main(["check", str(same), "--baseline", str(base)]) == 0
    capsys.readouterr()
    assert main(["check", str(bigger), "--baseline", str(tmp_path / "b.json"),
                 "--markdown", str(tmp_path / "v.md"), "--junit", str(tmp_path / "v.xml")]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "energy_kwh:+5%" in out
    assert "regression" in (tmp_path / "v.md").read_text()
    suite = ET.parse(tmp_path / "v.xml").getroot()
    assert int(suite.get("failures")) >= 1
    # a longer sequence raises energy per million inferences
    assert main(["check", str(longer), "--baseline", str(lbase),
                 "--fail-on", "energy_kwh_per_million:+5%"]) == 1


def test_github_step_summary_is_appended(tmp_path, monkeypatch):
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["check", str(run), "--baseline", str(run)]) == 0
    assert "no regression" in summary.read_text()


def test_bad_inputs_exit_2(tmp_path, capsys):
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    other = _run(tmp_path, "o", "bert_large_pretrain.yaml")
    assert main(["check", str(tmp_path / "missing"), "--baseline", str(run)]) == 2
    assert "no such run directory" in capsys.readouterr().err
    assert main(["check", str(run), "--baseline", str(run), "--fail-on", "energy_kwhh:+5%"]) == 2
    assert "unknown metric 'energy_kwhh'" in capsys.readouterr().err
    assert main(["check", str(run), "--baseline", str(run), "--fail-on", "energy_kwh=5"]) == 2
    assert "unknown operator '=5'; allowed: METRIC:+PCT%" in capsys.readouterr().err
    assert main(["check", str(run), "--baseline", str(other)]) == 2
    assert "is of scenario 'bert_large_pretrain'" in capsys.readouterr().err
    fewer = _run(tmp_path, "f", "layoutlm_realtime.yaml",
                 lambda s: s.update(configs=[c for c in s["configs"] if c["id"] == s["baseline"]]))
    assert main(["check", str(run), "--baseline", str(fewer)]) == 0  # added ones are not gated
    assert "added, not gated" in capsys.readouterr().out
    assert main(["baseline", str(run), "--to", str(tmp_path / "b.json")]) == 0
    assert main(["baseline", str(run), "--to", str(tmp_path / "b.json")]) == 2


def test_a_baseline_of_runs_of_different_scenarios_is_refused_naming_the_field(tmp_path, capsys):
    """trial14: runs whose requests_per_h differ (18000, 20000) made a baseline of the first run's rows
    "from 2 run(s)"; a baseline of several runs is repeated runs of one scenario."""
    a = _run(tmp_path, "a", "llama3_8b_chat.yaml")
    b = _run(tmp_path, "b", "llama3_8b_chat.yaml",
             lambda s: s["workload"]["serving"].update(requests_per_h=20000))
    again = _run(tmp_path, "again", "llama3_8b_chat.yaml", lambda s: s.update(description="reworded"))
    capsys.readouterr()
    assert main(["baseline", str(a), str(b), "--to", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert "not a run of the scenario of" in err and "scenario.workload.serving.requests_per_h" in err
    assert "-> 20000" in err and "repeated runs of one scenario" in err and "Traceback" not in err
    assert not (tmp_path / "b.json").exists()
    assert main(["baseline", str(a), str(again), "--to", str(tmp_path / "b.json")]) == 0  # wording only
    assert "from 2 run(s)" in capsys.readouterr().err  # the `wrote` line, on stderr


def test_a_baseline_of_runs_of_two_named_scenarios_speaks_of_a_baseline(tmp_path, capsys):
    """trial15: runs of two scenario names got check's message, "baseline RUN_A is of scenario ... but
    run RUN_B has ...; compare runs of one scenario (write its baseline with `ecobench baseline`)", while
    the user was running `ecobench baseline`."""
    a = _run(tmp_path, "a", "layoutlm_realtime.yaml")
    b = _run(tmp_path, "b", "layoutlm_realtime.yaml", lambda s: s.update(name="layoutlm_other"))
    capsys.readouterr()
    assert main(["baseline", str(a), str(b), "--to", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert "not a run of the scenario of" in err
    assert "scenario.name: layoutlm_realtime -> layoutlm_other" in err
    assert "repeated runs of one scenario" in err and "compare runs" not in err
    assert not (tmp_path / "b.json").exists()


def test_warns_when_baseline_from_other_machine(tmp_path, capsys):
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    doc = json.loads((run / "results.json").read_text())
    doc["machine"]["node"] = "elsewhere"
    doc["catalog_version"] = "2020-01-01"
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert main(["check", str(run), "--baseline", str(tmp_path / "b.json")]) == 0
    err = capsys.readouterr().err
    assert "machine differs" in err and "catalog version differs" in err


def test_rule_parsing():
    assert parse_rule("energy_kwh:+5%") == Rule("energy_kwh", 5.0, True)
    assert parse_rule("throughput_per_instance_per_s:-2.5%") == Rule(
        "throughput_per_instance_per_s", 2.5, False)
    assert parse_rule("ttft_p99_ms<1000") == Threshold("ttft_p99_ms", "<", 1000.0)
    assert parse_rule(" energy_kwh > 2.5e2 ") == Threshold("energy_kwh", ">", 250.0)


def _rates(true_change, trials=200, cv=0.05, n=DEFAULT_REPETITIONS, seed=1234):
    rng = np.random.default_rng(seed)
    rule = parse_rule("energy_kwh:+5%")
    fails = 0
    for _ in range(trials):
        base = rng.normal(1.0, cv, n)
        cur = rng.normal(1.0 + true_change, cv * (1.0 + true_change), n)
        fails += welch_regression(list(base), list(cur), rule)[2]
    return fails / trials


def test_noise_alone_rarely_fails_and_real_regression_is_caught():
    """200 seeded trials, 5% coefficient of variation, the default repetition count."""
    assert _rates(0.0) < 0.05
    assert _rates(0.10) > 0.90


def test_measured_rows_use_the_test(tmp_path, capsys):
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    doc = json.loads((run / "results.json").read_text())
    rng = np.random.default_rng(7)
    base = json.loads(json.dumps(doc))
    for d, scale in ((base, 1.0), (doc, 1.10)):
        for row in d["rows"]:
            samples = list(row["energy_kwh"] * scale * rng.normal(1, 0.05, DEFAULT_REPETITIONS))
            row["samples"] = {"energy_kwh": samples}
            row["energy_kwh"] = float(np.mean(samples))
    (tmp_path / "b.json").write_text(json.dumps(base))
    (tmp_path / "cur").mkdir()
    (tmp_path / "cur" / "results.json").write_text(json.dumps(doc))
    code = main(["check", str(tmp_path / "cur"), "--baseline", str(tmp_path / "b.json")])
    out = capsys.readouterr().out
    assert "welch" in out
    assert code == 1


def test_the_readme_ci_example_rules_are_accepted_on_a_serving_run(tmp_path, capsys):
    """README "Gate energy in CI": its fail-on rules named `cost_usd_per_million` (an encoder
    inference column) beside `ttft_ms_p99` (a serving one), so no scenario could take them (exit 2)."""
    readme = (SCENARIOS.parent / "README.md").read_text()
    ci = readme.split("## Gate energy in CI", 1)[1].split("\n## ", 1)[0]
    rules = ci.split('fail-on: "', 1)[1].split('"', 1)[0].split()
    assert len(rules) >= 2
    run = _run(tmp_path, "chat", "llama3_8b_chat.yaml")
    args = ["check", str(run), "--baseline", str(run)]
    for r in rules:
        args += ["--fail-on", r]
    assert main(args) in (0, 1), capsys.readouterr().err


def test_a_changed_power_basis_is_named_beside_the_verdict(tmp_path, capsys):
    """Switching a configuration to tdp moved its energy 15% with no word why: the gate passed (or
    failed, the other way round) on a change of accounting convention as if the workload had changed."""
    base = _run(tmp_path, "base", "layoutlm_realtime.yaml")
    tdp = _run(tmp_path, "tdp", "layoutlm_realtime.yaml", lambda s: s["configs"][1].update(power_basis="tdp"))
    capsys.readouterr()
    assert main(["check", str(base), "--baseline", str(tdp), "--markdown", str(tmp_path / "v.md")]) == 1
    out = capsys.readouterr().out
    note = ("power_basis tdp -> modelled (the accounting convention changed: energy and CO2 are not like "
            "for like)")
    gpu = next(line for line in out.splitlines() if line.startswith("gpu "))
    assert note in gpu and "FAIL" in gpu
    inf1 = next(line for line in out.splitlines() if line.startswith("inf1 "))
    assert "power_basis" not in inf1
    assert "power\\_basis tdp \\-&gt; modelled" in (tmp_path / "v.md").read_text()


def test_a_folder_where_an_output_file_goes_is_bad_input_even_with_force(tmp_path, capsys):
    """`baseline --to DIR` said 'already exists; not overwritten (pass --force to replace it)', and
    with --force exited 4 ('cannot write: Is a directory'); `check --markdown DIR --force` gated and
    warned. A folder is no file to replace: exit 2, naming the flag, whatever --force says."""
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "keep").write_text("x")
    capsys.readouterr()
    for force in ([], ["--force"]):
        for args in (["baseline", str(run), "--to", str(folder)],
                     ["check", str(run), "--baseline", str(run), "--markdown", str(folder)],
                     ["compare", str(run), str(run), "--out", str(folder)],
                     ["validate", "--mode", "replay", "-q", "--html", str(folder)]):
            assert main([*args, *force]) == 2, args
            err = capsys.readouterr().err
            assert f"{args[-2]} {folder}: is a folder; allowed: a file name" in err, err
            assert err.count("\n") == 1, err
    assert (folder / "keep").read_text() == "x"


def test_a_scenario_or_a_runs_other_file_given_as_results_is_named_as_such(tmp_path, capsys):
    """`check RUN --baseline scenario.yaml` (or a run's results.csv) said 'not a valid baseline
    results JSON file (Expecting value: line 1 column 1 (char 0))'."""
    from ecobench.api import load_run
    from ecobench.errors import InputError

    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    scenario = SCENARIOS / "layoutlm_realtime.yaml"
    capsys.readouterr()
    assert main(["check", str(run), "--baseline", str(scenario)]) == 2
    err = capsys.readouterr().err
    assert "a YAML file (a scenario?), not a run's results; allowed: a run directory" in err
    assert main(["compare", str(run / "results.csv"), str(run)]) == 2
    err = capsys.readouterr().err
    assert f"a run's results.csv, not its results; allowed: the run directory ({run})" in err
    with pytest.raises(InputError, match="a YAML file"):
        load_run(scenario)



@pytest.mark.parametrize("command", ["check", "compare", "report"])
def test_an_empty_results_file_is_said_to_be_empty(tmp_path, capsys, command):
    """trial18: an empty results.json or baseline said 'not a valid results JSON file (Expecting value:
    line 1 column 1 (char 0))'."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text("\n")
    args = {"check": ["check", str(run), "--baseline", str(run)], "compare": ["compare", str(run), str(run)],
            "report": ["report", str(run)]}[command]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{run / 'results.json'}: an empty file; allowed: " in err, err
    assert "Expecting value" not in err


def test_a_rule_given_twice_is_applied_once_in_its_first_place(tmp_path, capsys):
    """trial: `--fail-on energy_kwh:+5% --fail-on cost_usd:+2% --fail-on energy_kwh:+5%` checked every
    configuration's energy twice (and once more for energy_kwh:+5.0%, the same rule)."""
    run = _run(tmp_path, "r", "small_encoder_pretrain.yaml")  # configurations trn1, p4d
    capsys.readouterr()
    rules = ["energy_kwh:+5%", "cost_usd:+2%", "energy_kwh:+5%", "energy_kwh:+5.0%", "cost_usd:+2%"]
    fail_on = [a for r in rules for a in ("--fail-on", r)]
    assert main(["check", str(run), "--baseline", str(run), *fail_on]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0].splitlines()[1:]  # the rows, before the headline
    shown = [tuple(line.split()[:2]) for line in table]
    assert shown == [("trn1", "energy_kwh:+5%"), ("trn1", "cost_usd:+2%"),
                     ("p4d", "energy_kwh:+5%"), ("p4d", "cost_usd:+2%")], out
    assert "in 4 check(s)" in out



@pytest.mark.parametrize("metric,pct,factor", [("energy_kwh", 5, 1.05), ("energy_kwh", 30, 1.3),
                                               ("throughput_per_instance_per_s", 5, 0.95),
                                               ("throughput_per_instance_per_s", 30, 0.7)])
def test_a_change_exactly_at_the_tolerance_passes_and_just_over_fails(tmp_path, capsys, metric, pct, factor):
    """A rule fails when the figure changes by *more* than PCT: a figure of exactly baseline x 1.05
    (the threshold recomputed by hand) passed +10% and +20% but failed +5% and +30%, as the rounding
    of (current / baseline - 1) x 100 happened to fall (5.000000000000004 > 5)."""
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    sign, step = ("+", 1e-7) if factor > 1 else ("-", -1e-7)
    for name, f, code in (("at", factor, 0), ("over", factor + step, 1)):
        doc = json.loads((run / "results.json").read_text())
        doc["rows"][0][metric] *= f
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(doc))
        assert main(["check", str(tmp_path / name), "--baseline", str(run),
                     "--fail-on", f"{metric}:{sign}{pct}%"]) == code, name
        out = capsys.readouterr().out
        assert f"{sign}{pct:.2f}%" in out and ("FAIL" in out) == bool(code), out


@pytest.mark.parametrize("text", ["energy_kwh:+5% cost_usd_per_million_output_tokens:+5% ttft_ms_p99<1000",
                                  "energy_kwh:+5%\nco2_kg:+5%"])
def test_the_actions_rules_in_one_fail_on_are_named_as_several_rules(text):
    """The Action's fail-on string given to one --fail-on (as a local run of the README's example) was
    refused as "the percentage '5% cost_usd_per_mill' is not a finite number"."""
    parts = text.split()
    with pytest.raises(InputError) as err:
        parse_rule(text)
    assert f"{len(parts)} rules in one; allowed: one rule per --fail-on: " in str(err.value)
    assert str(err.value).endswith(" ".join(f"--fail-on '{p}'" for p in parts))
    assert parse_rule("energy_kwh < 500") == Threshold("energy_kwh", "<", 500.0)  # spaces inside one rule


def test_a_changed_instance_type_is_named_beside_the_verdict(tmp_path, capsys):
    """Configuration gpu moved from g4dn.2xlarge to g5.2xlarge under the same id: the gate showed its
    energy -29% (or a rise, failing) with nothing to say the configuration itself had changed."""
    base = _run(tmp_path, "base", "layoutlm_realtime.yaml")
    g5 = _run(tmp_path, "g5", "layoutlm_realtime.yaml",
              lambda s: s["configs"][1].update(instance_type="g5.2xlarge", precision="fp16"))
    capsys.readouterr()
    assert main(["check", str(g5), "--baseline", str(base)]) == 0
    out = capsys.readouterr().out
    gpu = next(line for line in out.splitlines() if line.startswith("gpu "))
    assert ("configuration changed: instance_type g4dn.2xlarge -> g5.2xlarge, precision fp32 -> fp16"
            in gpu), gpu
    inf1 = next(line for line in out.splitlines() if line.startswith("inf1 "))
    assert "configuration changed" not in inf1


def test_each_file_check_writes_is_said_on_stderr(tmp_path, capsys):
    """new-user try: check --markdown/--junit/--export wrote their files without run's `wrote PATH`
    line (the step summary, CI's own file, is not named)."""
    run = _run(tmp_path, "r", "layoutlm_realtime.yaml")
    files = [tmp_path / "v.md", tmp_path / "v.xml", tmp_path / "e.json"]
    capsys.readouterr()
    assert main(["check", str(run), "--baseline", str(run), "--markdown", str(files[0]), "--junit",
                 str(files[1]), "--export", "benchmark-action", str(files[2])]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("wrote ")] == [f"wrote {f}" for f in files]
    assert all(f.is_file() for f in files)

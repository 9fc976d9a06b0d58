"""The gate across change: configurations added or removed are listed, not gated by the change rules
(an added one is held to the absolute limits); absolute limits;
the summary and JUnit file on every outcome (bad input included); the github-action-benchmark export."""

import json
import xml.etree.ElementTree as ET

import pytest

from ecobench.cli import main
from ecobench.gate.check import ALLOWED_FORMS, Threshold, benchmark_action, parse_rule
from ecobench.gate.files import read_gate_doc
from ecobench.io.textsafe import markdown
from tests.conftest import SCENARIOS


@pytest.fixture(scope="module")
def chat_run(tmp_path_factory):
    """One serving run (six configurations, TTFT/TPOT columns), written once for the module."""
    out = tmp_path_factory.mktemp("chat") / "run"
    assert main(["run", str(SCENARIOS / "llama3_8b_chat.yaml"), "-q", "--out", str(out)]) == 0
    return out


def _variant(tmp_path, run, name, mutate):
    doc = json.loads((run / "results.json").read_text())
    mutate(doc)
    d = tmp_path / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps(doc))
    return d


def _drop(*ids):
    return lambda d: d.update(rows=[r for r in d["rows"] if r["config_id"] not in ids])


def _scale(cid, metric, factor):
    def mutate(d):
        for r in d["rows"]:
            if r["config_id"] == cid:
                r[metric] *= factor
    return mutate


def _outputs(tmp_path):
    return ["--markdown", str(tmp_path / "v.md"), "--junit", str(tmp_path / "v.xml")]


def test_added_and_removed_configurations_are_listed_not_gated(tmp_path, capsys, chat_run):
    base = _variant(tmp_path, chat_run, "base", _drop("p5"))  # the run adds p5
    cur = _variant(tmp_path, chat_run, "cur", _drop("g6e"))  # ... and removes g6e
    assert main(["check", str(cur), "--baseline", str(base), *_outputs(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "added, not gated" in out and ": p5" in out and "removed since the baseline, not gated: g6e" in out
    assert "in 4 check(s) of 4 configuration(s) in both runs; 1 added, 1 removed (not gated)" in out
    md = (tmp_path / "v.md").read_text()
    assert "✅" in md and "p5" in md and "g6e" in md and "not gated" in md
    suite = ET.parse(tmp_path / "v.xml").getroot()
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("6", "2", "0")
    skipped = {c.get("classname") for c in suite if c.find("skipped") is not None}
    assert skipped == {"ecobench.p5", "ecobench.g6e"}


def test_a_gated_regression_still_fails_beside_an_added_configuration(tmp_path, capsys, chat_run):
    base = _variant(tmp_path, chat_run, "base", _drop("p5"))
    cur = _variant(tmp_path, chat_run, "cur", _scale("trn1", "energy_kwh", 1.2))
    assert main(["check", str(cur), "--baseline", str(base)]) == 1
    out = capsys.readouterr().out
    assert "1 regression(s)" in out and "p5" in out


def test_an_added_configuration_is_held_to_the_absolute_limits_only(tmp_path, capsys, chat_run):
    """A change rule needs a baseline, an absolute limit does not: a configuration the run adds is
    held to ``METRIC<VALUE`` too (it passed any limit, not being gated at all), and never to a change
    rule."""
    base = _variant(tmp_path, chat_run, "base", _drop("p5"))
    cur = _variant(tmp_path, chat_run, "cur", _scale("p5", "energy_kwh", 100.0))
    rows = {r["config_id"]: r for r in json.loads((cur / "results.json").read_text())["rows"]}
    limit = 1.01 * max(r["energy_kwh"] for cid, r in rows.items() if cid != "p5")
    assert rows["p5"]["energy_kwh"] > limit
    assert main(["check", str(cur), "--baseline", str(base)]) == 0  # the change rule: not for p5
    capsys.readouterr()
    rule = ["--fail-on", f"energy_kwh<{limit}"]
    assert main(["check", str(cur), "--baseline", str(base), *rule, *_outputs(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert ("1 regression(s) in 6 check(s) of 5 configuration(s) in both runs; 1 added (absolute limits "
            "only)") in out
    p5 = [line for line in out.splitlines() if line.startswith("p5 ")]
    assert len(p5) == 1 and "added since the baseline" in p5[0] and "FAIL" in p5[0], out
    assert f"1 configuration(s) added, gated by the absolute limit(s) energy_kwh<{limit:g} only" in out
    suite = ET.parse(tmp_path / "v.xml").getroot()
    failed = [c.get("classname") for c in suite if c.find("failure") is not None]
    assert failed == ["ecobench.p5"] and suite.get("failures") == "1"


def test_no_configuration_in_common_is_bad_input(tmp_path, capsys, chat_run):
    base = _variant(tmp_path, chat_run, "base", _drop("inf2", "inf2_int8", "trn1"))
    cur = _variant(tmp_path, chat_run, "cur", _drop("trn2", "g6e", "p5"))
    assert main(["check", str(cur), "--baseline", str(base)]) == 2
    err = capsys.readouterr().err
    assert "no configuration in both, nothing to gate" in err
    # the files, and what to do (the ids had been renamed, say): the message named neither
    assert f"run {cur / 'results.json'} has inf2, inf2_int8, trn1" in err
    assert f"baseline {base / 'results.json'} has g6e, p5, trn2" in err
    assert err.rstrip().endswith("configurations are matched by id: after renaming them, write the baseline "
                                 "again (`ecobench baseline RUN_DIR --to FILE`)")


def test_absolute_limits(tmp_path, capsys, chat_run):
    doc = read_gate_doc(chat_run, "run")
    worst = max(r["ttft_ms_p99"] for r in doc.rows.values())
    best = min(r["ttft_ms_p99"] for r in doc.rows.values())
    run = str(chat_run)
    assert main(["check", run, "--baseline", run, "--fail-on", f"ttft_ms_p99<{worst * 1.01}"]) == 0
    capsys.readouterr()
    assert main(["check", run, "--baseline", run, "--fail-on", f"ttft_ms_p99<{worst}",
                 *_outputs(tmp_path)]) == 1  # at the limit fails: it must stay below
    out = capsys.readouterr().out
    assert "absolute limit (< " in out and "1 regression(s)" in out
    failure = ET.parse(tmp_path / "v.xml").getroot().find("testcase/failure")
    assert "outside the limit ttft_ms_p99<" in failure.get("message")
    assert main(["check", run, "--baseline", run, "--fail-on", f"ttft_ms_p99>{best * 0.99}"]) == 0
    assert main(["check", run, "--baseline", run, "--fail-on", f"ttft_ms_p99>{best}"]) == 1
    # beside a relative rule, in the same check
    assert main(["check", run, "--baseline", run, "--fail-on", "energy_kwh:+5%",
                 "--fail-on", "energy_kwh<1e12"]) == 0
    assert Threshold("x", "<", 5.0).fails(5.0) and not Threshold("x", ">", 5.0).fails(6.0)


@pytest.mark.parametrize("rule,expect", [
    ("energy_kwh=5", "unknown operator '=5'"), ("energy_kwh<=5", "unknown operator '<=5'"),
    ("energy_kwh>=5", "unknown operator '>=5'"), ("energy_kwh~5", "unknown operator '~5'"),
    ("energy_kwh<five", "the limit 'five' is not a finite number"),
    ("energy_kwh<1e999", "not a finite number"),
    ("Energy", "not a rule"), ("", "not a rule"),
    ("energy_kwh:5%", "needs its sign, + (a rise fails) or - (a fall fails) (nearest valid: energy_kwh:+5%)"),
    ("energy_kwh:5", "needs its sign")])
def test_unknown_operator_is_one_line_listing_the_allowed_forms(tmp_path, capsys, chat_run, rule, expect):
    assert main(["check", str(chat_run), "--baseline", str(chat_run), "--fail-on", rule]) == 2
    err = capsys.readouterr().err
    assert expect in err and ALLOWED_FORMS in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_unknown_metric_in_a_limit_is_one_line_listing_the_metrics(tmp_path, capsys, chat_run):
    assert main(["check", str(chat_run), "--baseline", str(chat_run), "--fail-on", "ttft_ms_p999<5"]) == 2
    err = capsys.readouterr().err
    assert "unknown metric 'ttft_ms_p999' (did you mean 'ttft_ms_p99'?)" in err
    assert "energy_kwh, " in err and err.count("\n") == 1


@pytest.mark.parametrize("args,expect", [
    (["--fail-on", "energy_kwh=5"], "unknown operator"),
    (["--fail-on", "nope<5"], "unknown metric 'nope'"),
    (["--export", "csv", "x.json"], "--export 'csv': unknown format"),
    (["--baseline-missing"], "no such run directory"),
])
def test_bad_input_still_writes_the_summary_and_a_junit_error(tmp_path, capsys, monkeypatch, chat_run,
                                                             args, expect):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    baseline = str(tmp_path / "missing") if args == ["--baseline-missing"] else str(chat_run)
    extra = [] if args == ["--baseline-missing"] else args
    code = main(["check", str(chat_run), "--baseline", baseline, *extra, *_outputs(tmp_path)])
    assert code == 2
    assert expect in capsys.readouterr().err
    for md in (summary.read_text(), (tmp_path / "v.md").read_text()):
        assert "not gated (exit 2)" in md and expect in md.replace("\\", "")
    suite = ET.parse(tmp_path / "v.xml").getroot()
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("1", "1", "0")
    assert expect in suite.find("testcase/error").get("message")


def test_the_error_summary_carries_no_markup(tmp_path, capsys, chat_run):
    evil = "x<img src=y>![a](http://e/x.png)"
    assert main(["check", str(chat_run), "--baseline", str(chat_run), "--fail-on", evil,
                 *_outputs(tmp_path)]) == 2
    md = (tmp_path / "v.md").read_text()
    assert "<img" not in md and "](http" not in md
    ET.parse(tmp_path / "v.xml")


def test_export_benchmark_action(tmp_path, capsys, chat_run):
    base = _variant(tmp_path, chat_run, "base", _drop("p5"))
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    assert main(["check", str(chat_run), "--baseline", str(base), "--fail-on", "energy_kwh:+5%",
                 "--fail-on", "ttft_ms_p99<100000", "--fail-on", "throughput_per_instance_per_s:-5%",
                 "--export", "benchmark-action", str(small),
                 "--export", "benchmark-action-bigger", str(big)]) == 0
    doc = read_gate_doc(chat_run, "run")
    entries = json.loads(small.read_text())
    assert isinstance(entries, list) and len(entries) == 2 * 6  # p5 (added) starts its history too
    assert all(set(e) >= {"name", "unit", "value"} for e in entries)
    by_name = {e["name"]: e for e in entries}
    assert by_name["p5 energy_kwh"] == {**by_name["p5 energy_kwh"], "unit": "kWh",
                                        "value": doc.rows["p5"]["energy_kwh"]}
    assert by_name["g6e ttft_ms_p99"]["unit"] == "ms"
    bigger = json.loads(big.read_text())
    assert [e["name"] for e in bigger] == [f"{c} throughput_per_instance_per_s" for c in doc.rows]
    assert benchmark_action(doc, [parse_rule("energy_kwh:-5%")]) == []


def test_export_is_written_on_a_regression(tmp_path, chat_run):
    cur = _variant(tmp_path, chat_run, "cur", _scale("trn1", "energy_kwh", 1.2))
    out = tmp_path / "bench.json"
    assert main(["check", str(cur), "--baseline", str(chat_run),
                 "--export", "benchmark-action", str(out)]) == 1
    assert len(json.loads(out.read_text())) == 6


def test_unknown_metric_does_not_list_the_change_columns_it_refuses(capsys, chat_run):
    """The allowed list is what a rule may gate: no ``*_change_pct`` column (refused as signed)."""
    assert main(["check", str(chat_run), "--baseline", str(chat_run), "--fail-on", "nope:+5%"]) == 2
    allowed = capsys.readouterr().err.rpartition("): ")[2].strip().split(", ")
    assert "energy_kwh" in allowed and "pareto_rank" in allowed
    assert not [m for m in allowed if "_change_pct" in m], allowed


def _ranks(ranks):
    """Every row's pareto_rank set from ``ranks`` in row order (None: off the front)."""
    return lambda d: [r.update(pareto_rank=k) for r, k in zip(d["rows"], ranks, strict=False)]


def test_a_configuration_off_the_pareto_front_ranks_after_every_rank(tmp_path, capsys, chat_run):
    """pareto_rank is null off the front (dominated or not eligible): a rank limit fails it, leaving the
    front fails a rank rule, staying off it is no change; never 'bad data in the baseline'."""
    n = len(json.loads((chat_run / "results.json").read_text())["rows"])
    base = _variant(tmp_path, chat_run, "base", _ranks([None, *range(1, n)]))
    cur = _variant(tmp_path, chat_run, "cur", _ranks([None, None, *range(2, n)]))
    first, second = (r["config_id"] for r in json.loads((cur / "results.json").read_text())["rows"][:2])
    assert main(["check", str(cur), "--baseline", str(base), "--fail-on", f"pareto_rank<{n + 1}",
                 *_outputs(tmp_path)]) == 1
    out = capsys.readouterr().out
    failed = [line.split()[0] for line in out.splitlines() if line.endswith("FAIL")]
    assert failed == [first, second] and "2 regression(s)" in out, out
    assert "baseline and run off the Pareto front" in out and "off the front" in out
    message = ET.parse(tmp_path / "v.xml").getroot().find("testcase/failure").get("message")
    assert message == f"pareto_rank is off the front, outside the limit pareto_rank<{n + 1}"
    assert main(["check", str(cur), "--baseline", str(base), "--fail-on", "pareto_rank:+5%"]) == 1
    out = capsys.readouterr().out
    failed = [line.split()[0] for line in out.splitlines() if line.endswith("FAIL")]
    assert failed == [second] and "run off the Pareto front" in out, out  # left it; first: off in both


def _front(run):
    """(configuration ranked first, configurations off the front) of a run."""
    ranks = {r["config_id"]: r["pareto_rank"] for r in json.loads((run / "results.json").read_text())["rows"]}
    off = [c for c, k in ranks.items() if k is None]
    assert off, ranks  # the scenario has a dominated configuration: an unscoped rank limit fails it
    return next(c for c, k in ranks.items() if k == 1), off


def test_a_scoped_rule_passes_where_the_unscoped_one_fails(tmp_path, capsys, chat_run):
    """A rank limit fails every configuration off the front (the usual GPU baseline among them);
    scoped to the chosen configuration it gates that one only, and says which were not gated."""
    first, off = _front(chat_run)
    run = str(chat_run)
    assert main(["check", run, "--baseline", run, "--fail-on", "pareto_rank<2"]) == 1
    out = capsys.readouterr().out
    assert {line.split()[0] for line in out.splitlines() if line.endswith("FAIL")} >= set(off)
    assert main(["check", run, "--baseline", run, "--fail-on", f"pareto_rank<2@{first}"]) == 0
    out = capsys.readouterr().out
    gated = [line.split()[:2] for line in out.splitlines()[1:] if line.endswith("pass")]
    assert gated == [[first, f"pareto_rank<2@{first}"]], out
    assert "5 configuration(s) in no rule's scope, not gated: " in out
    assert "no regression in 1 check(s); 5 in no rule's scope (not gated)" in out
    # only the trn1 row's energy may not rise
    cur = _variant(tmp_path, chat_run, "cur", _scale("inf2", "energy_kwh", 1.2))
    assert main(["check", str(cur), "--baseline", run]) == 1
    assert main(["check", str(cur), "--baseline", run, "--fail-on", "energy_kwh:+5%@trn1"]) == 0
    assert main(["check", str(cur), "--baseline", run, "--fail-on", "energy_kwh:+5%@trn1,inf2"]) == 1
    out = capsys.readouterr().out
    assert "1 regression(s) in 2 check(s)" in out


def test_an_unknown_configuration_in_a_scope_exits_2_naming_it(tmp_path, capsys, monkeypatch, chat_run):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run = str(chat_run)
    assert main(["check", run, "--baseline", run, "--fail-on", "energy_kwh:+5%@trn1,inf3",
                 *_outputs(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (f"--fail-on 'energy_kwh:+5%@trn1,inf3': unknown configuration 'inf3' in its scope (did you mean "
            f"'inf2'?); the run {chat_run / 'results.json'} has inf2, inf2_int8, trn1, trn2, g6e, p5") in err
    # one line for the error, beside the files written (which say it too)
    assert [line for line in err.splitlines() if not line.startswith("wrote ")] == [err.splitlines()[-1]]
    assert err.count("\nwrote ") + err.startswith("wrote ") == len(_outputs(tmp_path)) // 2
    assert "Traceback" not in err and "not gated (exit 2)" in summary.read_text()
    assert "unknown configuration 'inf3'" in ET.parse(tmp_path / "v.xml").getroot().find(
        "testcase/error").get("message")
    assert main(["check", run, "--baseline", run, "--fail-on", "energy_kwh:+5%@"]) == 2  # parsed first
    assert "an empty configuration id" in capsys.readouterr().err


def test_the_table_markdown_junit_and_export_show_the_scope(tmp_path, capsys, chat_run):
    first, _ = _front(chat_run)
    run = str(chat_run)
    rules = [f"pareto_rank<2@{first}", "energy_kwh:+5%@trn1,inf2"]
    small = tmp_path / "small.json"
    assert main(["check", run, "--baseline", run, *[a for r in rules for a in ("--fail-on", r)],
                 *_outputs(tmp_path), "--export", "benchmark-action", str(small)]) == 0
    out = capsys.readouterr().out
    assert all(r in out for r in rules)
    md = (tmp_path / "v.md").read_text()
    assert all(markdown(r) in md for r in rules) and markdown("configuration(s) in no rule's scope") in md
    suite = ET.parse(tmp_path / "v.xml").getroot()
    names = [(c.get("classname"), c.get("name")) for c in suite if c.find("skipped") is None]
    assert names == [("ecobench.inf2", rules[1]), ("ecobench.trn1", rules[1]),
                     (f"ecobench.{first}", rules[0])]
    assert suite.get("skipped") == "3"  # the three in no rule's scope
    entries = {e["name"]: e["extra"] for e in json.loads(small.read_text())}
    assert entries == {f"{first} pareto_rank": f"scenario llama3_8b_chat; gated by {rules[0]}",
                       "trn1 energy_kwh": f"scenario llama3_8b_chat; gated by {rules[1]}",
                       "inf2 energy_kwh": f"scenario llama3_8b_chat; gated by {rules[1]}"}


def test_a_scoped_configuration_added_or_removed_is_listed_not_gated(tmp_path, capsys, chat_run):
    base = _variant(tmp_path, chat_run, "base", _drop("p5"))  # the run adds p5
    cur = _variant(tmp_path, chat_run, "cur", _drop("g6e"))  # ... and removes g6e
    rule = "energy_kwh:+5%@p5,g6e,trn1"
    assert main(["check", str(cur), "--baseline", str(base), "--fail-on", rule, *_outputs(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"rule {rule} does not gate p5: added since the baseline, no baseline to compare with" in out
    assert f"rule {rule} does not gate g6e: removed since the baseline" in out
    assert ("in 1 check(s) of 4 configuration(s) in both runs; 1 added, 1 removed (not gated); 3 in no "
            "rule's scope (not gated)") in out
    skipped = {(c.get("classname"), c.get("name")) for c in ET.parse(tmp_path / "v.xml").getroot()
               if c.find("skipped") is not None}
    assert {("ecobench.p5", rule), ("ecobench.g6e", rule)} <= skipped


def test_a_sweeps_rows_outside_results_json_are_said_not_gated(tmp_path, capsys):
    """A sweep's results.json holds the rows it shows (14 of layoutlm_sweep's 16): the gate checked
    those and said nothing of the others, as if the whole run had passed."""
    run = tmp_path / "run"
    assert main(["run", str(SCENARIOS / "layoutlm_sweep.yaml"), "-q", "--out", str(run)]) == 0
    capsys.readouterr()
    doc = json.loads((run / "results.json").read_text())
    shown, in_csv = len(doc["rows"]), doc["sweep"]["rows_in_csv"]
    assert in_csv > shown
    assert main(["check", str(run), "--baseline", str(run), *_outputs(tmp_path)]) == 0
    captured = capsys.readouterr()
    said = (f"a sweep of {in_csv:,} rows; the gate reads the {shown:,} in its results.json (the "
            f"configurations, the Pareto front, the best by each objective and the picks); the other "
            f"{in_csv - shown:,}, in results.csv only, are not gated")
    assert said in captured.err and markdown(said) in (tmp_path / "v.md").read_text()


def test_a_run_without_a_sweep_has_no_sweep_note(tmp_path, capsys, chat_run):
    assert main(["check", str(chat_run), "--baseline", str(chat_run)]) == 0
    assert "sweep" not in capsys.readouterr().err


def test_a_rank_lost_to_a_value_added_to_the_sweep_says_so(tmp_path, capsys):
    """A cheaper price added to a sweep put a new row ahead of the front's first: the old first left
    the front and pareto_rank:+0% failed it with 'dominated, or not eligible', as if it had got worse;
    its figures are unchanged, and the note names the added configuration that ranks ahead."""
    import yaml

    doc = {"schema_version": 2, "name": "pr", "baseline": "base", "uncertainty": {"draws": 0},
           "workload": {"model": "layoutlm-base", "inference": {"rate_per_h": 1000000, "seq_len": 512}},
           "configs": [{"id": "base", "instance_type": "g4dn.2xlarge", "precision": "fp16"}],
           "sweep": {"instance_type": ["inf2.xlarge"], "region": ["eu-north-1"]}}
    runs = {}
    for name, prices in (("before", [0.5, 0.7]), ("after", [0.3, 0.5, 0.7])):
        doc["sweep"]["price_usd_per_h"] = prices
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc))
        runs[name] = tmp_path / name
        assert main(["run", str(tmp_path / f"{name}.yaml"), "-q", "--out", str(runs[name])]) == 0
    base = tmp_path / "b.json"
    assert main(["baseline", str(runs["before"]), "--to", str(base)]) == 0
    capsys.readouterr()
    assert main(["check", str(runs["after"]), "--baseline", str(base), "--fail-on", "pareto_rank:+0%"]) == 1
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("inf2.xlarge_0.5_"))
    assert "its own cost_usd, co2_kg unchanged: behind 1 configuration(s) added since the baseline " \
           "(inf2.xlarge_0.3_eu-north-1)" in line


def test_a_sweep_row_that_leaves_the_results_json_is_gated_from_results_csv(tmp_path, capsys):
    """A sweep's results.json holds the rows it shows (the front, the best, the picks). A regression
    that pushes a shown configuration off them (the T4 drawing 2 kW: g4dn.xlarge_fp16_eu-north-1 x16
    the energy) took its row out of results.json, and the gate listed it as 'removed since the
    baseline, not gated' and passed (exit 0); the row is in the run's results.csv, and is gated."""
    from tests.conftest import HOT_SWEEP_ROW as cid
    from tests.conftest import sweep_runs_with_a_hot_t4

    base, hot = sweep_runs_with_a_hot_t4(tmp_path)
    shown = lambda run: {r["config_id"] for r in json.loads((run / "results.json").read_text())["rows"]}  # noqa: E731
    assert cid in shown(base) and cid not in shown(hot)  # the case: in results.csv only
    assert main(["baseline", str(base), "--to", str(tmp_path / "b.json")]) == 0
    capsys.readouterr()
    assert main(["check", str(hot), "--baseline", str(tmp_path / "b.json"),
                 "--fail-on", f"energy_kwh:+5%@{cid}"]) == 1
    out, err = capsys.readouterr()
    row = [line for line in out.splitlines() if line.startswith(cid)]
    assert len(row) == 1 and "FAIL" in row[0] and "run row from results.csv" in row[0], out
    assert "removed" not in out and "grid_source differs" not in err, (out, err)
    assert "and 1 the baseline has from its results.csv" in err


def test_a_run_of_another_workload_is_gated_with_a_warning_naming_what_changed(tmp_path, capsys):
    """User26, 2026-11-29: requests_per_h 36,000 -> 40,000 gated as '+9.10% FAIL' with nothing saying
    the run answered another question; baselines held only the scenario's name. They now keep the
    resolved workload, and `check` names the fields that differ (a regression still fails)."""
    import yaml

    s = yaml.safe_load((SCENARIOS / "layoutlm_realtime.yaml").read_text())
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(s))
    s["workload"]["inference"]["rate_per_h"] = s["workload"]["inference"]["rate_per_h"] * 2
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(s))
    for name in ("a", "b"):
        assert main(["run", str(tmp_path / f"{name}.yaml"), "-q", "--out", str(tmp_path / name)]) == 0
    assert main(["baseline", str(tmp_path / "a"), "--to", str(tmp_path / "base.json")]) == 0
    base = json.loads((tmp_path / "base.json").read_text())
    assert base["workload"]["inference"]["rate_per_h"] == s["workload"]["inference"]["rate_per_h"] / 2
    capsys.readouterr()
    assert main(["check", str(tmp_path / "b"), "--baseline", str(tmp_path / "base.json"),
                 "--fail-on", "energy_kwh:+5%"]) == 1
    err = capsys.readouterr().err
    assert "the workload differs from the baseline's: workload.inference.rate_per_h" in err
    assert "ecobench baseline RUN_DIR --to FILE --force" in err
    assert main(["check", str(tmp_path / "a"), "--baseline", str(tmp_path / "base.json")]) == 0
    assert "workload differs" not in capsys.readouterr().err
    del base["workload"]  # a baseline written before it kept the workload: nothing to tell
    (tmp_path / "old.json").write_text(json.dumps(base))
    assert main(["check", str(tmp_path / "b"), "--baseline", str(tmp_path / "old.json"),
                 "--fail-on", "energy_kwh:+5%"]) == 1
    assert "workload differs" not in capsys.readouterr().err

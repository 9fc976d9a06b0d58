"""The `ecobench` command: parses arguments and calls the library; nothing else."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from ecobench import process
from ecobench.errors import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_OUTPUT,
    EXIT_REGRESSION,
    EXIT_TERMINATED,
    BackendError,
    EcobenchError,
    InputError,
    NoisyMeasurementError,
    OutputError,
)
from ecobench.io.textsafe import terminal
from ecobench.process import Terminated, sigterm_raises, silence_stdout
from ecobench.version import __version__
from ecobench.words import did_you_mean

SUMMARY_LAYOUT = ["config_id", "tensor_parallel", "context_parallel", "pipeline_parallel", "data_parallel",
                  "zero_stage", "offload", "recompute", "microbatch", "memory_per_device_gib", "mfu",
                  "comm_overhead_pct", "layout_choice"]


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _wrote(path: Path | str, detail: str = "") -> None:
    """Where a file or folder went: one line, ``wrote PATH [DETAIL]``, on stderr. Every command that
    writes says it here, never on stdout, which holds only the table, JSON or YAML (``| head`` and
    ``> file`` keep it clean, and never hide the line)."""
    line = f"wrote {path}" + (f" {detail}" if detail else "")
    print(terminal(line, keep_newlines=False), file=sys.stderr, flush=True)


def _out_or_results(command: str, args: argparse.Namespace) -> None:
    """Refuse --out with --results: --out is the run's whole directory, so the results root would be
    silently left unread."""
    if args.out and args.results:
        raise InputError(f"{command}: --out {args.out} and --results {args.results} both given; --out names "
                         "the run directory itself, so no results root is used; allowed: one of them "
                         "(--out DIR, or --results ROOT for ROOT/<scenario>/<run-id>/)")


def cmd_run(args: argparse.Namespace) -> int:
    from ecobench.io.rundir import target_dir
    from ecobench.runner import run
    from ecobench.scenario.load import load_scenario

    if args.format == "parquet":  # before anything is read or written
        from ecobench.reports.tables import require_parquet

        require_parquet()
    _out_or_results("run", args)
    results = Path(args.results or "results")
    s = load_scenario(args.scenario)
    final = target_dir(results, s.name, Path(args.out) if args.out else None)  # before the work
    process.settled()
    try:
        out_dir, ev = run(s, results, Path(args.out) if args.out else None,
                          None if args.quiet else _progress, table_format=args.format, final=final)
    except (InputError, BackendError) as exc:  # name the file for errors found while evaluating
        raise InputError(f"{args.scenario}: {exc}") from None
    from ecobench.reports.summary import format_decisions, format_summary, number
    from ecobench.table import text_table

    rows = ev.rows
    try:  # the run directory is complete: a reader that went away (`| head`) is no failure
        print(format_summary([r for r in rows if "sweep_index" not in r or r["sweep_index"] is None], s))
        if s.workload.mode == "training" and any(r.get("tensor_parallel") is not None for r in rows):
            print("\nlayouts (ranks: GPUs or NeuronCores; memory per rank):")
            print(text_table(rows, SUMMARY_LAYOUT, number))
        print(format_decisions(ev, s), flush=True)
    except BrokenPipeError:
        silence_stdout()
    _wrote(f"{out_dir}/", f"(scenario.yaml, results.{args.format}, results.json, report.html)")
    from ecobench.planning.evaluate import run_warnings

    for w in run_warnings(s, rows, noisy=False):  # the noisy rows: _warn_noisy's block below
        print(f"ecobench: warning: {terminal(w, keep_newlines=False)}", file=sys.stderr, flush=True)
    _warn_noisy(rows)
    return EXIT_OK


def cmd_examples(args: argparse.Namespace) -> int:
    import textwrap

    from ecobench.scenario import examples
    from ecobench.table import terminal_width

    stem = (args.name or "").removesuffix(".yaml").removesuffix(".yml")
    if args.name not in examples.names() and stem in examples.names():
        args.name = stem  # the file's name, as `ecobench examples` lists them and scenarios/ holds them
    if args.name is None:
        if args.to is not None:
            raise InputError(f"--to {args.to}: give the NAME of the example to write (`ecobench examples` "
                             "lists them)")
        names = examples.names()
        width = max(map(len, names))
        room = max(60, terminal_width() - width - 2)
        for name in names:
            print(f"{name:<{width}}  {textwrap.shorten(examples.describe(name), room, placeholder='...')}")
        print("\n`ecobench examples NAME > NAME.yaml` prints one; `ecobench examples NAME --to DIR` writes "
              "one (and the files it reads) into DIR; then `ecobench run DIR/NAME.yaml`.")
        return EXIT_OK
    examples.describe(args.name)  # an unknown name first, with the known ones
    if args.to is None:
        sys.stdout.write(examples.text(args.name))
        if reads := examples.referenced(args.name):
            print(terminal(f"ecobench: warning: {args.name} reads {', '.join(reads)} beside it, which "
                           f"stdout does not hold: `ecobench examples {args.name} --to DIR` writes them "
                           "too"), file=sys.stderr, flush=True)
        return EXIT_OK
    written = examples.write(args.name, Path(args.to))
    for path in written:
        _wrote(path)
    print(terminal(f"run it: ecobench run {written[0]}", keep_newlines=False), file=sys.stderr, flush=True)
    return EXIT_OK


def _warn_noisy(rows: list[dict[str, Any]]) -> None:
    """A loud block on stderr for every measured row flagged as not reproducible."""
    for r in rows:
        if not r.get("measurement_warnings"):
            continue
        print(f"\necobench: WARNING: the measurement of {r['config_id']!r} is not reproducible on this "
              "host:\n  " + "\n  ".join(str(r["measurement_warnings"]).split("; ")) +
              "\n  It is recorded with this warning (results.csv: measurement_warnings); `ecobench check` "
              "and `ecobench baseline` refuse it (exit 5) unless --allow-noisy. Measure on a quiet host.",
              file=sys.stderr, flush=True)


def _validate_progress(msg: str) -> None:
    """One line per step on stderr (stdout holds the table or JSON); never a carriage return."""
    print(f"ecobench validate: {msg}", file=sys.stderr, flush=True)


def validate_kinds() -> tuple[str, ...]:
    """``validate --kind``'s choices, read when the parser is built (a light module)."""
    from ecobench.validation.kinds import kinds

    return kinds()


def cmd_validate(args: argparse.Namespace) -> int:
    from ecobench.io.rundir import refuse_existing
    from ecobench.validation.validate import MODES, as_json, of_kinds, summarize, validate

    if args.kind and args.mode and "holdout" not in args.mode:  # before the minutes of work
        raise InputError(f"--kind {args.kind[0]}: selects held-out points, which --mode "
                         f"{' --mode '.join(args.mode)} leaves out; allowed: --kind with --mode holdout, "
                         "or without --mode")
    if args.html:
        refuse_existing(Path(args.html), "--html", args.force)
    process.settled()
    modes = tuple(dict.fromkeys(args.mode)) if args.mode else ("holdout",) if args.kind else MODES
    checks = validate(modes, None if args.quiet else _validate_progress)
    if args.kind:
        checks = of_kinds(checks, tuple(args.kind))
    if args.html:
        from ecobench.io.rundir import write_new
        from ecobench.reports.html import render_validation

        write_new(Path(args.html), render_validation(as_json(checks)), "--html", args.force)
        _wrote(Path(args.html))
    if args.format == "json":
        print(json.dumps(as_json(checks), indent=2))
        return 0
    from ecobench.table import MIN_CUT_TEXT, cut_middle, terminal_width

    # a terminal: the long point names are cut (their middle) so a row fits it, where a name of
    # MIN_CUT_TEXT or more then fits; a narrower one keeps them whole (a row too wide at any name gains
    # nothing from names that no longer tell one point from another)
    columns = terminal_width()
    targets = max((len(c.target) for c in checks), default=0) + len(" MISSED")
    width = max((len(c.experiment) for c in checks), default=len("experiment"))
    if columns - VALIDATE_ROW_CHARS - targets >= MIN_CUT_TEXT:
        width = min(width, columns - VALIDATE_ROW_CHARS - targets)
    print(f"{'experiment':<{width}} {'mode':<8} {'figure':<34} {'published':>10} {'ecobench':>10} "
          f"{'90% band':>21} {'in':>3} {'error':>9}  target")
    for c in checks:
        err = f"{c.error_points:+.1f} pt" if c.error_points is not None else f"{c.error_pct:+.1f}%"
        ok = {True: "ok", False: "MISSED", None: ""}[c.within_target]
        band = f"{c.low:.4g} to {c.high:.4g}" if c.low is not None and c.high is not None else ""
        inside = {True: "yes", False: "no", None: ""}[c.in_band]
        print(f"{cut_middle(c.experiment, width):<{width}} {c.mode:<8} {c.figure:<34} {c.published:>10.4g} "
              f"{c.ecobench:>10.4g} {band:>21} {inside:>3} {err:>9}  {c.target} {ok}")
    summaries = summarize(checks)
    if summaries:
        print("\nholdout (each point predicted by a model fitted without its source; its band from the "
              "errors of the other sources):")
        kind_w = max(14, *(len(sm.kind) for sm in summaries))
        figure_w = max(20, *(len(sm.figure) for sm in summaries))
        print(f"  {'kind':<{kind_w}} {'figure':<{figure_w}} {'points':>6} {'median |error|':>15} "
              f"{'worst |error|':>14} {'in band':>8} {'band width, high/low':>20}  worst point, target")
        for sm in summaries:
            verdict = f"; {sm.target} {'ok' if sm.within_target else 'MISSED'}"
            room = columns - kind_w - figure_w - VALIDATE_SUMMARY_CHARS - len(verdict)
            room = room if room >= MIN_CUT_TEXT else len(sm.worst)  # as the rows' names
            cov = f"{sm.coverage_pct:.1f}%" if sm.coverage_pct is not None else "n/a"
            wid = f"{sm.median_band_width_pct:.0f}%" if sm.median_band_width_pct is not None else "n/a"
            wid += f" x{sm.median_band_ratio:.2f}" if sm.median_band_ratio is not None else ""
            print(f"  {sm.kind:<{kind_w}} {sm.figure:<{figure_w}} {sm.count:>6} "
                  f"{sm.median_abs_error_pct:>14.1f}% {sm.worst_abs_error_pct:>13.1f}% {cov:>8} {wid:>20}  "
                  f"{cut_middle(sm.worst, room)}{verdict}")
    return 0


VALIDATE_ROW_CHARS = 104  # a validate row but its experiment and target: mode, figure, numbers, band, error
VALIDATE_SUMMARY_CHARS = 73  # a holdout summary row but its kind, figure, worst point and target


def cmd_workload(args: argparse.Namespace) -> int:
    from ecobench.bounds import NumLabels, type_limits
    from ecobench.workloads.hf_config import load_hf_config
    from ecobench.workloads.presets import PRESETS, preset
    from ecobench.workloads.summary import format_summary, summary

    name = args.model
    head = None  # a scenario's task and labels
    if args.arch is not None or (name is not None and name.endswith((".yaml", ".yml"))):
        from ecobench.scenario.arch_file import architecture_from_file

        if args.arch is not None and name is not None:
            raise InputError(f"give a model or --arch, not both (got {name!r} and --arch {args.arch})")
        arch, head = architecture_from_file(args.arch or name)
    elif not name:
        raise InputError("give a preset, a local config.json, or --arch FILE (a scenario or an "
                         "architecture block)" + (f"; got {name!r}" if name is not None else ""))
    elif name in PRESETS:
        arch = preset(name)
    elif Path(name).is_dir():
        if not (Path(name) / "config.json").is_file():
            raise InputError(f"{name}: a directory without config.json; give a preset or a config.json")
        arch = load_hf_config(Path(name) / "config.json", name)
    elif name.endswith(".json") or Path(name).exists():
        arch = load_hf_config(Path(name), name)
    else:
        arch = preset(name)  # raises with the nearest preset names
    if args.seq_len is not None and not 1 <= args.seq_len <= arch.max_position_embeddings:
        raise InputError(f"--seq-len {args.seq_len}: must be 1 to the model's max_position_embeddings "
                         f"({arch.max_position_embeddings})")
    lo, hi = (int(x or 0) for x in type_limits(NumLabels))
    if args.num_labels is not None and not lo <= args.num_labels <= hi:
        raise InputError(f"--num-labels {args.num_labels}: out of range; allowed: {lo} to {hi:,} (a "
                         f"classifier has at least {lo} labels; as workload.training.num_labels)")
    task, num_labels = head or ("pretrain", 2)
    task, num_labels = args.task or task, args.num_labels or num_labels
    if args.num_labels is not None and task != "classification":
        raise InputError(f"--num-labels {args.num_labels}: counts only for a classification head; the task "
                         f"here is {task}; allowed: --task classification --num-labels {args.num_labels}")
    seq = args.seq_len or min(arch.max_position_embeddings, 2048)
    try:
        out = summary(arch, seq, task, num_labels)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    text = format_summary(out)
    if head is not None and (serving := _serving_of(args.arch or name)) is not None:  # a scenario's lengths
        from ecobench.reports.workload_view import format_serving, serving_lengths

        out["serving"] = serving_lengths(serving)
        text += "\n\n" + format_serving(out["serving"], seq)
    print(json.dumps(out, indent=2) if args.format == "json" else terminal(text))
    return 0


def _serving_of(path: str) -> Any:
    """The serving workload of the scenario at ``path`` (its lengths CSV read), or None."""
    from ecobench.scenario.load import load_scenario

    return load_scenario(path).workload.serving


def cmd_serve_point(args: argparse.Namespace) -> int:
    from ecobench.planning.serve_point import format_point, serve_point

    p = serve_point(args.model, args.instance_type, args.precision, args.batch, args.input_tokens,
                    args.output_tokens, args.tensor, args.stack, args.weight_precision,
                    args.kv_cache_precision, args.quantization, args.backend, args.lnc)
    print(json.dumps(p.to_dict(), indent=2) if args.format == "json" else format_point(p))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import jinja2

    from ecobench.reports.html import write_html
    from ecobench.reports.tables import null_figure, read_results

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        what = "a file, not a run directory" if run_dir.exists() else "no such run directory"
        raise InputError(f"{run_dir}: {what} (give the directory `ecobench run` wrote, which holds "
                         "results.json)")
    doc = read_results(run_dir)
    try:
        write_html(doc, run_dir / "report.html")
    except (KeyError, TypeError, ValueError, AttributeError, StopIteration, jinja2.TemplateError) as exc:
        why = null_figure(doc["rows"]) or f"({type(exc).__name__}: {exc})"
        raise InputError(f"{run_dir / 'results.json'}: not a complete results file; the report "
                         f"cannot be drawn from it: {why}") from None
    _wrote(run_dir / "report.html")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from ecobench.io.rundir import refuse_clashes, refuse_existing, write_new
    from ecobench.reports import compare as cmp
    from ecobench.table import terminal_width

    outputs = [(flag, Path(path)) for flag, path in (("--html", args.html), ("--out", args.out)) if path]
    refuse_clashes(outputs, [("run A's results", Path(args.run_a)), ("run B's results", Path(args.run_b))])
    for flag, path in outputs:  # both before either is written
        refuse_existing(path, flag, args.force)
    a, b = cmp.load(Path(args.run_a)), cmp.load(Path(args.run_b))
    a, b = cmp.with_sweep_rows(a, Path(args.run_a), b), cmp.with_sweep_rows(b, Path(args.run_b), a)
    c = cmp.compare(a, b, args.run_a, args.run_b)
    texts = {"--html": cmp.html, "--out": cmp.markdown}
    new = [path for _, path in outputs if not (path.exists() or path.is_symlink())]
    try:
        for flag, path in outputs:
            write_new(path, texts[flag](c), flag, args.force)
    except BaseException:  # one written, the other not: neither is left (a file it replaced stays replaced)
        for path in new:
            path.unlink(missing_ok=True)
        raise
    try:  # --markdown says what stdout holds, whatever --out (the markdown table's file) says
        print(cmp.markdown(c) if args.markdown else terminal(cmp.terminal(c, terminal_width())), flush=True)
    except BrokenPipeError:
        silence_stdout()
    for _, path in outputs:
        _wrote(path)
    return EXIT_OK


def cmd_catalog(args: argparse.Namespace) -> int:
    from ecobench.hardware.catalog import load_catalog

    cat = load_catalog()
    if args.instance:
        inst = cat.instance(args.instance)
        doc = {"instance": inst.model_dump(),
               "accelerator": (a.model_dump() if (a := cat.accelerator_of(inst)) else None)}
        if args.format == "json":
            print(json.dumps(doc, indent=2))
            return 0
        from ecobench.reports.catalog_view import instance_table
        from ecobench.table import terminal_width

        print(f"{args.instance} (catalog {cat.version}); `--format json` for the records as JSON")
        print(terminal(instance_table(doc, terminal_width())))
        return 0
    if args.format == "json":
        print(json.dumps({k: v.model_dump() for k, v in cat.instances.items()}, indent=2))
        return 0
    print(f"catalog {cat.version}")
    print(f"{'instance':<16} {'vCPU':>5} {'GiB':>6} {'accelerator':<22} {'Gbps':>6} {'USD/h us-east-1':>16}")
    for name, i in cat.instances.items():
        acc = f"{i.spec.accelerator_count}x {i.spec.accelerator}" if i.spec.accelerator else "none"
        price = i.price_usd_per_h.regions.get("us-east-1")
        print(f"{name:<16} {i.spec.vcpus:>5} {i.spec.memory_gib:>6g} {acc:<22} "
              f"{i.spec.network_gbps:>6g} {price if price is not None else 'n/a':>16}")
    from ecobench.table import note_lines, terminal_width

    print("\n" + "\n".join(note_lines(f"regions: {', '.join(cat.regions)}", terminal_width())))
    print("`ecobench catalog INSTANCE` shows every figure of one instance with its source.")
    return 0


EXPORT_FORMATS = {"benchmark-action": True, "benchmark-action-bigger": False}  # smaller is better?


def cmd_check(args: argparse.Namespace) -> int:
    """The gate. Whatever the outcome, --markdown, --junit and $GITHUB_STEP_SUMMARY are written: the
    verdict, or (bad input, a bug) what kept the check from gating; never over an existing file
    without --force (then the step summary alone says so)."""
    from ecobench.io.rundir import refuse_clashes, refuse_existing

    try:
        read = [("the checked run's results", Path(args.run_dir)), ("the baseline", Path(args.baseline))]
        refuse_clashes([(flag, Path(path)) for flag, path in _check_files(args)], read)
        for flag, path in _check_files(args):
            refuse_existing(Path(path), flag, args.force)
    except InputError as exc:
        _write_check_error(args, str(exc), exc.exit_code, files=False)
        raise
    try:
        return _check(args)
    except NoisyMeasurementError:  # the verdict's outputs are written; they say which rows
        raise
    except EcobenchError as exc:
        _write_check_error(args, str(exc), exc.exit_code)
        raise
    except Exception as exc:  # a bug or an I/O error: main reports it; the outputs say so too
        _write_check_error(args, f"{type(exc).__name__}: {exc}", EXIT_INTERNAL)
        raise


def _check(args: argparse.Namespace) -> int:
    from ecobench.gate import check as gate
    from ecobench.gate.files import RESULTS_KIND, read_gate_doc, with_sweep_rows
    from ecobench.power.grid import grid_warnings

    # a rule given twice (energy_kwh:+5% and energy_kwh:+5.0% parse alike) is applied once, at its first place
    rules = list(dict.fromkeys(gate.parse_rule(r) for r in (args.fail_on or [gate.DEFAULT_RULE])))
    for fmt, _ in args.export or []:
        if fmt not in EXPORT_FORMATS:
            raise InputError(f"--export {fmt!r}: unknown format; allowed: {', '.join(EXPORT_FORMATS)}"
                             f"{did_you_mean(fmt, list(EXPORT_FORMATS))}")
    current = read_gate_doc(Path(args.run_dir), "run")
    if current.kind != RESULTS_KIND:
        raise InputError(f"{current.path}: is a baseline file; give the run directory to check")
    baseline = read_gate_doc(Path(args.baseline), "baseline")
    # a sweep's results.json shows some rows: one the other side has is read from its results.csv
    current, baseline = (with_sweep_rows(current, list(baseline.rows)),
                         with_sweep_rows(baseline, list(current.rows)))
    verdicts = gate.compare(current, baseline, rules)
    changes = gate.config_changes(current, baseline, rules)
    warns = gate.provenance_warnings(current, baseline) + grid_warnings(
        {**current.meta, "rows": list(current.rows.values())},
        {**baseline.meta, "rows": list(baseline.rows.values())})
    failed = any(v.failed and (args.allow_noisy or not v.noisy) for v in verdicts)
    refused = gate.noisy_rows(verdicts) if not args.allow_noisy else []
    exports = [(path, json.dumps(gate.benchmark_action(current, rules, EXPORT_FORMATS[fmt]), indent=2) + "\n")
               for fmt, path in args.export or []]
    # Outputs first: a problem writing them is reported but never changes the verdict's exit code.
    problems = _write_check_outputs(args, gate.markdown(verdicts, warns, args.allow_noisy, changes),
                                    gate.junit(verdicts, args.allow_noisy, changes), exports)
    try:
        for w in warns:
            print(f"ecobench: warning: {terminal(w, keep_newlines=False)}", file=sys.stderr)
        rows = gate.table(verdicts, args.allow_noisy)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        for line in changes.lines():
            print(terminal(line, keep_newlines=False))  # says what is and is not gated
        print(f"\n{gate.headline(verdicts, args.allow_noisy, changes)}", flush=True)
    except BrokenPipeError:
        silence_stdout()
    for p in problems:
        _error(f"{p} (the verdict stands)", prefix="ecobench: warning: ")
    if failed:
        return EXIT_REGRESSION
    if refused:
        raise NoisyMeasurementError(
            f"configuration(s) {', '.join(refused)}: measured on a host too loaded or too noisy to "
            "tell a regression from noise (see the warnings); rerun on a quiet host, or pass "
            "--allow-noisy to gate them anyway")
    return EXIT_OK


def _check_files(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The files check writes, each with its flag: --markdown, --junit, every --export."""
    named = [("--markdown", args.markdown), ("--junit", args.junit)]
    named += [(f"--export {fmt}", path) for fmt, path in args.export or []]
    return [(flag, path) for flag, path in named if path]


def _write_check_error(args: argparse.Namespace, message: str, exit_code: int, files: bool = True) -> None:
    """The summary and JUnit file of a check that could not gate (``files`` False: the step summary
    only); a problem writing them is a warning."""
    from ecobench.gate import check as gate

    for p in _write_check_outputs(args, gate.error_markdown(message, exit_code), gate.error_junit(message),
                                  files=files):
        _error(p, prefix="ecobench: warning: ")


def _write_check_outputs(args: argparse.Namespace, md: str, xml: str,
                         exports: Sequence[tuple[str, str]] = (), files: bool = True) -> list[str]:
    """Write --markdown, --junit, --export (unless not ``files``) and the GitHub step summary; return
    what could not be written."""
    from ecobench.io.rundir import append_text, make_folder, write_text_atomic

    problems = []
    targets: list[tuple[str, str, bool]] = []
    if args.markdown and files:
        targets.append((args.markdown, md, False))
    if args.junit and files:
        targets.append((args.junit, xml, False))
    targets += [(path, text, False) for path, text in exports]
    if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
        targets.append((summary, md, True))
    for path, text, append in targets:
        try:
            make_folder(Path(path).parent, path)  # as run --out makes its own
            (append_text if append else write_text_atomic)(Path(path), text)
        except (OutputError, InputError) as exc:
            problems.append(str(exc))
        else:
            if not append:  # the files named on the command line (the step summary is CI's own)
                _wrote(Path(path))
    return problems


def cmd_baseline(args: argparse.Namespace) -> int:
    from ecobench.gate import check as gate
    from ecobench.io import rundir

    to = Path(args.to)
    rundir.refuse_clashes([("--to", to)], [(f"the results of run {r}", Path(r)) for r in args.run_dir])
    rundir.refuse_existing(to, "--to", args.force)
    rundir.check_folder(to.parent, f"--to {to}")  # before the runs are read
    doc = gate.make_baseline([Path(r) for r in args.run_dir], args.allow_noisy)
    rundir.make_folder(to.parent, f"--to {to}")
    rundir.write_text_atomic(to, json.dumps(doc, indent=2) + "\n")
    _wrote(to, f"(baseline: {len(doc['rows'])} configuration(s) from {len(args.run_dir)} run(s): "
               f"{', '.join(args.run_dir)})")
    return EXIT_OK


def cmd_emulate(args: argparse.Namespace) -> int:
    from ecobench.hardware.neuron.training_demo import run_demo
    from ecobench.io.rundir import target_dir
    from ecobench.reports.emulation import emulate_scenario, print_breakdown, write_emulation

    if args.training_demo:
        given = [what for what, v in (("a SCENARIO", args.scenario), ("--out", args.out),
                                      ("--results", args.results)) if v]
        if given:
            raise InputError(f"emulate --training-demo: {' and '.join(given)} given too, which the demo does "
                             "not read or write; allowed: a SCENARIO (with --out or --results), or "
                             "--training-demo alone")
        process.settled()
        demo = run_demo()
        if args.format == "json":
            print(json.dumps(demo))
        else:
            print("final loss (mean of the last 20 of", demo["steps"], "steps):")
            final: dict[str, float] = demo["final_loss"]  # type: ignore[assignment]
            for mode, loss in final.items():
                print(f"  {mode:<9} {loss:.4f}")
        return 0
    if not args.scenario:
        raise InputError("emulate: give a SCENARIO, or --training-demo")
    from ecobench.scenario.load import load_scenario

    _out_or_results("emulate", args)
    s = load_scenario(args.scenario)
    final = target_dir(Path(args.results or "results"), s.name, Path(args.out) if args.out else None)
    process.settled()
    try:
        report = emulate_scenario(s)
        out = write_emulation(s, report, Path(args.results or "results"),
                              Path(args.out) if args.out else None, final=final)
    except (InputError, BackendError) as exc:
        raise InputError(f"{args.scenario}: {exc}") from None
    try:  # the run directory is complete: a reader that went away (`| head`) is no failure, as run's
        if args.format == "json":
            print(json.dumps(report, indent=2), flush=True)
        else:
            print_breakdown(report)
            sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    _wrote(f"{out}/", "(emulation.json, kernels.csv)")
    return 0


def _positive_watts(text: str) -> float:
    """``--max-w``: a device's maximum power, within a scenario's bound on one
    (``overrides.accelerator_power_w.*.max_w``, ``bounds.MaxPowerW``)."""
    from ecobench.bounds import MAX_DEVICE_POWER_W

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of watts") from None
    if not 0 < v <= MAX_DEVICE_POWER_W:  # nan fails both
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: a finite number of watts above 0 and at most "
                                         f"{MAX_DEVICE_POWER_W:,.0f} (a device's maximum power)")
    return v


MAX_SAMPLE_MINUTES = 1440  # neuron-power reads for at most a day


def _minutes(text: str) -> int:
    """``--minutes``: a whole number of minutes from 0 to a day (argparse's choices listed all 1,441)."""
    allowed = f"allowed: a whole number of minutes from 0 to {MAX_SAMPLE_MINUTES:,}"
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number; {allowed}") from None
    if not 0 <= v <= MAX_SAMPLE_MINUTES:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is out of range; {allowed}")
    return v


def _integer(bound: str) -> Callable[[str], int]:
    """An integer option read as a scenario reads an integer field (``bound``: the field's type in
    ``ecobench.bounds``, e.g. Tokens): a whole number in any form, ``1e3`` too; a fraction
    (``1.5e0``), no number or one out of the type's range refused with the range."""
    def parse(text: str) -> int:
        import math

        from ecobench import bounds

        lo, hi = bounds.type_limits(getattr(bounds, bound))
        allowed = f"allowed: an integer{bounds.limits_text(lo, hi)}"
        try:
            whole = bounds.whole_number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number; {allowed}") from None
        if whole is None:
            wrong = "a whole" if math.isfinite(float(text)) else "a finite"  # 1.5e0; 1e400, nan
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not {wrong} number; {allowed}")
        if (lo is not None and whole < lo) or (hi is not None and whole > hi):
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is out of range; {allowed}")
        return whole

    parse.__name__ = "integer"  # argparse names the type in its own messages
    return parse


def _lnc(text: str) -> int:
    """``--lnc``: a logical NeuronCore setting, 1 or 2 (which instances offer it: ``hardware/lnc.py``)."""
    if text.strip() not in ("1", "2"):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: allowed: 1 or 2 (physical NeuronCores per rank; "
                                         "trn2 instances only)")
    return int(text)


def _path(text: str) -> str:
    """A file or folder argument: an empty one (an unset shell variable, ``--out "$DIR"``) is refused,
    not read as the current folder or as no option at all."""
    if not text:
        raise argparse.ArgumentTypeError(f"{text!r} is an empty path; allowed: a file or folder name")
    return text


def cmd_calibrate(args: argparse.Namespace) -> int:
    import json

    from ecobench.power.calibrate import calibrate, load_points

    result = calibrate(load_points(args.points))
    d = result.as_dict()
    if args.format == "json":
        print(json.dumps(d, indent=1))
        return 0
    for w in d["warnings"]:
        print(f"ecobench: warning: {terminal(w, keep_newlines=False)}", file=sys.stderr)
    print(f"{d['points']} points, {d['fitted']} fitted (a catalog chip and a throughput of the same run)")
    for why in d["not_fitted"]:
        print(f"  not fitted: {why}")
    print(f"{'draw (share of idle-to-max)':32s} {'packaged':>9s} {'with yours':>11s}")
    for k, v in d["draws_before"].items():
        print(f"  {k:30s} {v:9.3f} {d['draws_after'][k]:11.3f}")
    print("host (x ecobench's CPU and memory draw of a node)")
    for k, v in d["host_before"].items():
        print(f"  {k:30s} {v:9.3f} {d['host_after'][k]:11.3f}")
    if d["your_points_median_abs_error_pct_before"] is not None:
        print(f"your points, predicted by the packaged fit (out of sample): median |error| "
              f"{d['your_points_median_abs_error_pct_before']:.1f}%")
        for row in d["your_points"]:
            print(f"  {row['id']:30s} measured {row['power_w']:8.1f} W  predicted "
                  f"{row['predicted_power_w']:8.1f} W  {row['error_pct']:+6.1f}%")
    print(f"packaged corpus held out by group: median |error| "
          f"{d['corpus_holdout_median_abs_error_pct_before']:.1f}% without your points, "
          f"{d['corpus_holdout_median_abs_error_pct_after']:.1f}% with them; by kind, without -> with them:")
    for kind, v in d["corpus_holdout_by_kind"].items():
        print(f"  {kind} ({v['points']} points): median {v['median_abs_error_pct_before']:.1f}% -> "
              f"{v['median_abs_error_pct_after']:.1f}%, worst {v['worst_abs_error_pct_before']:.1f}% -> "
              f"{v['worst_abs_error_pct_after']:.1f}%")
    print("the refit is shown, not saved: `ecobench run` keeps the packaged power model "
          "(ecobench/power/data/power_model.yaml)")
    return 0


def ranged_chips() -> list[str]:
    """The catalog chips whose maximum power is an evidence range (``--chip``'s choices)."""
    from ecobench.hardware.catalog import load_catalog

    return sorted(k for k, a in load_catalog().accelerators.items() if a.power.uncertain)


def cmd_neuron_power(args: argparse.Namespace) -> int:
    from ecobench.hardware.catalog import chip_max_range
    from ecobench.measure.neuron_sysfs import MISSING, VALID, sample

    if (args.chip is None) == (args.max_w is None):
        got = "both given" if args.chip is not None else "neither given"
        raise InputError(f"neuron-power: {got}; allowed: one of --chip (inferentia, inferentia2, trainium, "
                         "trainium2: the catalog's evidence range) or --max-w W (your own device maximum)")
    if args.chip is not None and args.chip not in (chips := ranged_chips()):
        raise InputError(f"--chip {args.chip!r}: not a chip with a power range; allowed: {', '.join(chips)} "
                         f"(or give --max-w){did_you_mean(args.chip, chips)}")
    p_max = chip_max_range(args.chip) if args.chip else (args.max_w, args.max_w, args.max_w)
    acc = sample(Path(args.sysfs), args.minutes, p_max)
    lo, mid, hi = acc.energy_kwh()
    doc = {"sysfs": args.sysfs, "p_max_w": {"low": p_max[0], "central": p_max[1], "high": p_max[2]},
           "valid_minutes": acc.device_minutes(), "skipped_readings": acc.skipped,
           "energy_kwh": {"low": lo, "central": mid, "high": hi},
           "minutes": [{"device": d, "timestamp": ts, "avg_pct": avg}
                       for (d, ts), avg in sorted(acc.minutes.items())]}
    if args.format == "json":
        print(json.dumps(doc, indent=2))
        return 0
    print(f"Neuron power from {terminal(args.sysfs, keep_newlines=False)}: {len(acc.minutes)} valid "
          "device-minute(s); "
          f"P_max {p_max[1]:g} W (90% range {p_max[0]:g} to {p_max[2]:g} W)")
    for (dev, ts), avg in sorted(acc.minutes.items()):
        print(f"  {dev:<10} minute of {ts}  avg {avg:6.2f}%  {avg / 100 * p_max[1]:8.1f} W")
    for status, n in sorted(acc.skipped.items()):
        why = "no utilization file (driver older than 2.21.37)" if status == MISSING else "not counted"
        print(f"  {n} reading(s) {status}: {why}")
    print(f"energy: {mid:.6g} kWh (90% range {lo:.6g} to {hi:.6g}) = sum of avg% x P_max x 60 s over "
          f"{VALID} minutes")
    return 0


# argparse's message for a value not among an argument's choices (a command, --format, ...)
_INVALID_CHOICE = re.compile(r"invalid choice: (?P<value>'[^']*'|\S+) \(choose from (?P<choices>[^()]*)\)$")


class _Parser(argparse.ArgumentParser):
    """The CLI's parser, and its commands' (``add_subparsers`` makes them of this class): a usage error
    is one line on stderr, exit 2, not argparse's usage block; ``--help`` is argparse's."""

    def error(self, message: str) -> NoReturn:
        if m := _INVALID_CHOICE.search(message):  # a misspelt command or choice: the nearest ones
            choices = [c.strip().strip("'") for c in m["choices"].split(",")]
            hint = did_you_mean(m["value"].strip("'"), choices)
            message = message[:m.end("value")] + hint + message[m.end("value"):]
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {terminal(message, keep_newlines=False)} "
                              f"(see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """argparse's, but an option the command does not take is said by that command's parser."""
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
            parser = sub.choices.get(getattr(ns, "command", None), self) if sub else self
            parser.error(f"unrecognized arguments: {' '.join(extra)}{_option_hint(parser, extra)}")
        return ns


def _option_hint(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """'; did you mean '--out'?' for the first misspelt option among ``extra`` (``--output``,
    ``--quite``), from the options ``parser`` takes ('' when none is near)."""
    from ecobench.words import close_names

    names = {o[2:]: o for a in parser._actions for o in a.option_strings if o.startswith("--")}
    for word in extra:  # compared without the dashes every option shares (--bogus is not near --out)
        if word.startswith("--") and (close := close_names(word.split("=", 1)[0][2:], list(names))):
            return f"; did you mean {', '.join(repr(names[c]) for c in close)}?"
    return ""


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="ecobench",
        description="What an ML workload costs in instances, energy, money and CO2 on each kind "
                    "of hardware. Exit codes: 0 ok, 1 the gate found a regression, 2 bad input or "
                    "usage, 3 internal error, 4 cannot write output, 5 measurement too noisy to "
                    "gate, 130 interrupted (SIGINT), 141 stdout closed early (| head), 143 terminated "
                    "(SIGTERM).")
    p.add_argument("--version", action="version", version=f"ecobench {__version__}")
    p.add_argument("--debug", action="store_true", help="show the traceback of an internal error")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show the traceback of an internal error")

    def add(name: str, **kw: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, parents=[common], **kw)
        return parser

    from ecobench.scenario.model import describe_fields

    fields = "\n".join(f"  {path:<46} {default:<12} {desc}" for path, default, desc in describe_fields())
    r = add("run", help="evaluate a scenario and write its run directory",
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="scenario fields (path, default, meaning):\n" + fields,
            description="Evaluate every configuration of a scenario against its baseline and "
                        "write results/<scenario>/<run-id>/ (scenario.yaml, results.csv, "
                        "results.json, report.html). Scenario fields: see README.")
    r.add_argument("scenario", type=_path, help="scenario YAML file")
    r.add_argument("--out", type=_path, help="write exactly this directory (must not exist)")
    r.add_argument("--results", type=_path, help="results root (default: results; not with --out)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    r.add_argument("--format", choices=["csv", "parquet"], default="csv",
                   help="every row as results.csv (default) or results.parquet, for large sweeps "
                        "(needs pyarrow: pip install 'ecobench-ml[parquet]', or -e '.[parquet]' in a "
                        "checkout)")
    r.set_defaults(func=cmd_run)

    ex = add("examples", help="list the example scenarios, print one, or write one into a folder",
             description="List the example scenarios shipped with ecobench (the checkout's scenarios/), "
                         "print one's YAML (`ecobench examples layoutlm_realtime > my.yaml`), or write "
                         "one, with every file it reads (a local config.json, ...), into a folder to run "
                         "it: `ecobench examples layoutlm_realtime --to . && ecobench run "
                         "layoutlm_realtime.yaml`. An existing file is never overwritten (exit 2).")
    ex.add_argument("name", nargs="?", help="the example to print (its YAML on stdout) or, with --to, to "
                                            "write (default: list them)")
    ex.add_argument("--to", type=_path, metavar="DIR", help="folder to write it and the files it reads "
                                                            "into (created if need be)")
    ex.set_defaults(func=cmd_examples)

    v = add("validate", help="reproduce the published AWS figures and report errors",
            description="Replay and predict AWS's published seed experiments, and predict every "
                        "published point out of sample (holdout: a model fitted without the point's "
                        "source): one row per figure with the published value, ecobench's, its 90% "
                        "band and the error, then the holdout summary by kind (median, worst, "
                        "coverage).")
    v.add_argument("--format", choices=["table", "json"], default="table",
                   help="a table (default) or JSON rows (kind, figure, error_pct, low, high, in_band, "
                        "source, ...)")
    v.add_argument("--mode", action="append", choices=["replay", "predict", "holdout"],
                   help="only this mode (repeatable; default all): replay and predict the seed experiments, "
                        "holdout every published point with a model fitted without its source")
    v.add_argument("--html", type=_path,
                   help="also write the validation page (table and charts) to this file (must not exist)")
    v.add_argument("--force", action="store_true",
                   help="replace an existing --html file (never a file of a run directory)")
    v.add_argument("--kind", action="append", choices=validate_kinds(),
                   help="only the held-out points of this kind, and their summary (repeatable; implies "
                        "--mode holdout): llm_train, llm_serve, ..., neuron_emulated (the emulated "
                        "NeuronCore's throughput), emulated_serve (its serving figures)")
    v.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines on stderr (the table and summary are printed in full)")
    v.set_defaults(func=cmd_validate)

    rp = add("report", help="regenerate a run's report.html from its results.json",
             description="Write a run directory's report.html again from its saved results.json, "
                         "without recomputing anything (e.g. after an ecobench upgrade changed the "
                         "report).")
    rp.add_argument("run_dir", type=_path, help="run directory")
    rp.set_defaults(func=cmd_report)

    k = add("check", help="fail (exit 1) when a run regresses against a baseline",
            description="Compare a run with a baseline, configuration by configuration. "
                        "Modelled metrics are compared exactly; measured and projected rows "
                        "are tested on their per-repetition samples (computed through the "
                        "planner, inference at fractional instances) with Welch's t-test "
                        "(one-sided, alpha 0.05) and the threshold as the minimum effect. "
                        "Configurations in one run only are listed as added or removed, not "
                        "gated, but for an added one the absolute limits (METRIC<VALUE). A rule "
                        "scoped with @ID,... gates those configurations only. "
                        "--markdown, --junit and $GITHUB_STEP_SUMMARY are written on "
                        "every outcome (bad input: what was wrong, one JUnit error case); "
                        "an existing --markdown, --junit or --export file is not replaced "
                        "without --force. "
                        "Exit 0 pass, 1 regression, 2 bad input (incl. a baseline of "
                        "another scenario, no configuration in common, duplicate ids, "
                        "non-finite or negative figures, an unknown metric, operator or scoped "
                        "configuration), "
                        "4 an output could not be written, 5 measured rows too noisy to "
                        "gate (see --allow-noisy).")
    k.add_argument("run_dir", type=_path, help="run directory (holding results.json)")
    k.add_argument("--baseline", type=_path, required=True,
                   help="baseline run directory or baseline JSON file")
    k.add_argument("--fail-on", action="append", metavar="RULE",
                   help="rule, repeatable (default energy_kwh:+5%%): METRIC:+PCT%% (a rise beyond PCT "
                        "fails), METRIC:-PCT%% (a fall), METRIC<VALUE or METRIC>VALUE (an absolute "
                        "limit the run must keep); METRIC is any numeric result column but a "
                        "*_change_pct, e.g. cost_usd:+2%%, "
                        "throughput_per_instance_per_s:-5%%, and for serving ttft_ms_p99<1000 or "
                        "cost_usd_per_million_output_tokens:+2%%. RULE@ID[,ID...] holds for those "
                        "configurations only, e.g. pareto_rank<3@inf2 or energy_kwh:+5%%@inf2,trn1 (an id "
                        "in neither run nor baseline is bad input; one in only one of them is listed as "
                        "added or removed)")
    k.add_argument("--markdown", type=_path,
                   help="also write the verdict as markdown to this file (must not exist)")
    k.add_argument("--junit", type=_path,
                   help="also write the verdict as JUnit XML to this file (must not exist)")
    k.add_argument("--export", nargs=2, action="append", metavar=("FORMAT", "FILE"),
                   help="also write the run's gated metrics per configuration for a history chart: "
                        "benchmark-action (github-action-benchmark's customSmallerIsBetter JSON: the "
                        "metrics whose rise fails) or benchmark-action-bigger (customBiggerIsBetter: "
                        "those whose fall fails), for the configurations each rule's scope names, each "
                        "entry's extra naming its rules; repeatable; FILE must not exist")
    k.add_argument("--force", action="store_true",
                   help="replace existing --markdown, --junit and --export files")
    k.add_argument("--allow-noisy", action="store_true",
                   help="gate measured rows even when they were flagged as not reproducible "
                        "(loaded host, CV over the threshold); without it such rows exit 5")
    k.set_defaults(func=cmd_check)

    b = add("baseline", help="write a run's results as a baseline file to commit",
            description="Write a baseline from one run, or from several runs of the same scenario: "
                        "with several, measured figures are gated against the spread between the "
                        "baseline runs (run-to-run drift), not only the noise within one run.")
    b.add_argument("run_dir", type=_path, nargs="+",
                   help="run directory (several: the spread between runs is kept)")
    b.add_argument("--to", type=_path, required=True,
                   help="baseline file, e.g. results/baselines/NAME.json (must not exist)")
    b.add_argument("--force", action="store_true", help="replace an existing baseline file")
    b.add_argument("--allow-noisy", action="store_true",
                   help="accept measured rows flagged as not reproducible (exit 5 without it)")
    b.set_defaults(func=cmd_baseline)

    e = add("emulate", help="per-kernel NeuronCore timing of a scenario, or the training demo",
            description="Run a scenario's Inf1/Inf2/Trn1/Trn2 configurations through the emulated "
                        "NeuronCore (training: at the configuration's layout, one micro-batch on "
                        "the busiest pipeline stage): per-kernel engine, time, utilisation and "
                        "bound, each engine's utilisation, and the numeric error of one layer in "
                        "the configuration's data type. --training-demo trains a small MLP "
                        "with weights in FP32, BF16-RNE and BF16-SR.")
    e.add_argument("scenario", type=_path, nargs="?", help="scenario YAML file")
    e.add_argument("--training-demo", action="store_true", help="FP32 / BF16-RNE / BF16-SR loss curves")
    e.add_argument("--format", choices=["table", "json"], default="table",
                   help="a table (default) or JSON")
    e.add_argument("--out", type=_path, help="write exactly this directory (must not exist)")
    e.add_argument("--results", type=_path, help="results root (default: results; not with --out)")
    e.set_defaults(func=cmd_emulate)

    wl = add("workload", help="parameters, FLOPs per token and training-state bytes of a model",
             description="The numbers to check first about a model: parameters, FLOPs per token "
                         "(forward; training = forward + backward) and the bytes of weights, "
                         "gradients and optimizer state per precision.")
    wl.add_argument("model", nargs="?",
                    help="a preset (bert-base, llama3-8b, gpt3-175b, ...), a local config.json, or a "
                         "scenario YAML (its workload's model)")
    wl.add_argument("--arch", type=_path, metavar="FILE",
                    help="a YAML file with an architecture block (layers, hidden_size, heads, ...), the "
                         "block's fields alone, or a scenario")
    wl.add_argument("--seq-len", type=_integer("Tokens"),
                    help="sequence length (default: the model's longest, at most 2048)")
    wl.add_argument("--task", choices=["pretrain", "classification"],
                    help="pretrain (MLM+NSP heads for encoders, LM head for decoders) or "
                         "classification (a sequence-classification head); default: a scenario's "
                         "workload.training.task, else pretrain")
    wl.add_argument("--num-labels", type=int,
                    help="classification labels (default: a scenario's workload.training.num_labels, "
                         "else 2)")
    wl.add_argument("--format", choices=["table", "json"], default="table",
                    help="a table (default) or JSON")
    wl.set_defaults(func=cmd_workload)

    sp = add("serve-point", help="TTFT, TPOT and tokens/s of one static batch, with 90%% bands",
             description="What published serving sweeps report: a static batch of --batch prompts prefilled "
                         "together (TTFT), then decoded together (TPOT per step), and output tokens per "
                         "second, from the analytic serving model (or, --backend emulated on inf2, trn1 and "
                         "trn2, the emulated NeuronCore) with the held-out error as 90% bands.")
    sp.add_argument("model", help="a decoder preset (llama3-8b, llama2-70b, ...)")
    sp.add_argument("--instance-type", required=True, help="catalog instance type (see `ecobench catalog`)")
    sp.add_argument("--precision", default="bf16", help="compute data type (default bf16)")
    # integers as a scenario reads them: 1e3 is 1000 (bounds: the scenario fields' ranges)
    sp.add_argument("--batch", type=_integer("BatchSize"), default=1,
                    help="sequences in the batch (default 1)")
    sp.add_argument("--input-tokens", type=_integer("Tokens"), default=128,
                    help="prompt tokens (default 128)")
    sp.add_argument("--output-tokens", type=_integer("Tokens"), default=128,
                    help="generated tokens (default 128)")
    sp.add_argument("--tensor", type=_integer("Degree"), help="tensor-parallel degree, in ranks: GPUs, or "
                    "NeuronCores on Inferentia and Trainium (default: the smallest that fits)")
    sp.add_argument("--stack", help="software stack whose fitted efficiency applies (default: the vendor's; "
                    "vllm is priced as its V0-era published runs of 2024, with a host cost per sequence "
                    "of every step; vllm-v1 as vLLM 0.8 and later, whose V1 engine overlaps that host work)")
    sp.add_argument("--weight-precision", help="weight storage type when it differs (e.g. int8)")
    sp.add_argument("--quantization", choices=["fp8", "int8", "int4"],
                    help="as a configuration's quantization: fp8 or int8 (W8A8: weights in 1 byte, weight "
                         "matmuls at the chip's 8-bit peak) or int4 (W4A16: 4-bit weights, compute at "
                         "--precision); default none")
    sp.add_argument("--kv-cache-precision", help="key/value cache data type (default: --precision)")
    sp.add_argument("--backend", choices=["analytic", "emulated"], default="analytic",
                    help="the serving model: analytic (default; every instance), or emulated: the emulated "
                         "NeuronCore's kernels with its fitted serving correction (inf2, trn1, trn2; dense "
                         "models), banded by its own held-out errors")
    sp.add_argument("--lnc", type=_lnc, help="trn2 only: logical NeuronCore setting "
                    "(NEURON_LOGICAL_NC_CONFIG), physical NeuronCores per rank: 2 (default, 4 ranks a chip) "
                    "or 1 (8 ranks a chip); --tensor counts these ranks")
    sp.add_argument("--format", choices=["table", "json"], default="table",
                    help="a table (default) or JSON, with each figure's _low and _high band")
    sp.set_defaults(func=cmd_serve_point)

    cal = add("calibrate", help="refit the power model with your own measured watts",
              description="Read measured-power points in the corpus format (sources and points, as "
                          "ecobench/power/data/measured/*.yaml), check them against the catalog (a device "
                          "draw below idle or above 1.2x the chip maximum is refused, and a node's beyond "
                          "its devices' range and the fit's largest host draw, as is a layout whose "
                          "ways are not the device count; a throughput implausible against the chip's "
                          "roofline is kept with a warning), predict them with "
                          "the packaged fit (out of sample) and refit the draw model with them; prints "
                          "the draws before and after and the held-out error with and without them. The "
                          "refit is not saved: `ecobench run` keeps the packaged power model.")
    cal.add_argument("points", type=_path, help="YAML file of measured points")
    cal.add_argument("--format", choices=["table", "json"], default="table",
                     help="a table (default) or JSON")
    cal.set_defaults(func=cmd_calibrate)

    npw = add(
        "neuron-power", help="energy of Neuron devices from the driver's sysfs power utilisation",
        description="Read /sys/devices/virtual/neuron_device/neuronN/stats/power/utilization (status, "
                    "timestamp, min/max/avg % of the device's maximum power, updated each minute) now and "
                    "once a minute for --minutes, and report the energy of the VALID minutes: avg% x P_max "
                    "x 60 s, with P_max the catalog's evidence range for --chip, or --max-w.")
    npw.add_argument("--sysfs", type=_path, default="/sys/devices/virtual/neuron_device",
                     help="the folder holding the neuronN device folders (default: "
                          "/sys/devices/virtual/neuron_device)")
    npw.add_argument("--chip", help="catalog chip whose maximum-power range to use (e.g. trainium)")
    npw.add_argument("--max-w", type=_positive_watts, help="your own device maximum power, W")
    npw.add_argument("--minutes", type=_minutes, default=0, metavar="0..1440",
                     help="keep reading once a minute this long (default 0: one read)")
    npw.add_argument("--format", choices=["table", "json"], default="table",
                     help="a table (default) or JSON")
    npw.set_defaults(func=cmd_neuron_power)

    cp = add("compare", help="two runs side by side, configuration by configuration",
             description="Match the rows of two runs' results.json (for a sweep, the rows it shows "
                         "there; every row is in its results.csv) on config_id and show each headline "
                         "figure "
                         "(instances, time, throughput, energy, cost, CO2, per-million and per-token "
                         "figures, TTFT/TPOT) in A and B and its change in % of A; configurations in "
                         "one run only are listed as added or removed; then what differs between the "
                         "runs (versions, data snapshots, git commit, scenario fields).")
    cp.add_argument("run_a", type=_path, help="run directory or results.json (A, the reference)")
    cp.add_argument("run_b", type=_path, help="run directory or results.json (B, compared with A)")
    cp.add_argument("--markdown", action="store_true", help="print a GitHub markdown table instead")
    cp.add_argument("--out", type=_path, help="write the markdown table to this file (must not exist)")
    cp.add_argument("--html", type=_path,
                    help="also write a self-contained HTML page to this file (must not exist)")
    cp.add_argument("--force", action="store_true", help="replace existing --out and --html files")
    cp.set_defaults(func=cmd_compare)

    c = add("catalog", help="list the hardware catalog, or one instance with sources",
            description="List every instance type of the hardware catalog (vCPUs, memory, "
                        "accelerators, network, us-east-1 price) and the regions, or show one "
                        "instance type and its accelerator in full with every figure's source.")
    c.add_argument("instance", nargs="?", help="show one instance type in full")
    c.add_argument("--format", choices=["table", "json"], default="table",
                   help="table (default): the list, one row per instance type, or one instance's "
                        "figures, one a line with a numbered source, the sources below; json: every "
                        "instance type's catalog record, or the instance's and its accelerator's")
    c.set_defaults(func=cmd_catalog)
    return p


def entry() -> NoReturn:
    """The ``ecobench`` command and ``python -m ecobench``: :func:`main`, then exit. First, one line
    on stderr if another distribution is installed under the ``ecobench`` import name.

    Signals are honoured at every point: before :func:`main` takes over and after it returns, SIGINT
    and SIGTERM end the process at once with one line (``process.exit_on_signal``); inside it they
    raise, the command cleans up, and the message says what was written."""
    process.exit_on_signal("while starting")
    _encodable_stdout()
    from ecobench.io.distribution import foreign_install

    if clash := foreign_install():
        _error(clash, prefix="ecobench: warning: ")
    try:
        code = main(exiting=True)
    except KeyboardInterrupt:  # between main's handlers (argument parsing, the last lines)
        code = _signalled("interrupted (SIGINT)", EXIT_INTERRUPTED)
    except Terminated:
        code = _signalled("terminated (SIGTERM)", EXIT_TERMINATED)
    process.exit_on_signal("after the command ended")
    raise SystemExit(code)


def _encodable_stdout() -> None:
    """A stdout whose encoding is not UTF-8 (PYTHONIOENCODING=ascii, a latin-1 locale, a Windows
    console) cannot encode the tables' Δ, ± or ≤: it writes them as backslash escapes (as stderr
    does) instead of failing with exit 3 after the run directory was written."""
    stdout = sys.stdout
    encoding = (getattr(stdout, "encoding", None) or "utf-8").lower().replace("_", "-")
    if encoding in ("utf-8", "utf8", "utf-8-sig") or not hasattr(stdout, "reconfigure"):
        return
    with contextlib.suppress(AttributeError, ValueError, OSError):
        stdout.reconfigure(errors="backslashreplace")


def _signalled(what: str, code: int) -> int:
    _error(f"{what}; {process.written()}", prefix="ecobench: ")
    return code


def main(argv: Sequence[str] | None = None, exiting: bool = False) -> int:
    """Runs one command; returns the exit code (see ``ecobench.errors``). Never lets a traceback out
    unless ``--debug`` is given, and never returns 1 except for a regression the gate found.
    ``exiting``: the process ends when this returns (``ecobench.process.paused``); only then is
    SIGTERM turned into a clean exit 143 (a caller's process keeps its own signal handling)."""

    process.reset_outputs()
    with sigterm_raises() if exiting else contextlib.nullcontext(), process.paused(exiting):
        if exiting:  # entry() held SIGINT until now; from here it raises KeyboardInterrupt
            process.sigint_raises()
        debug = argv is not None and "--debug" in argv or argv is None and "--debug" in sys.argv[1:]
        try:
            args = build_parser().parse_args(argv)
            debug = args.debug
            code: int = args.func(args)
            sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
            return code
        except MemoryError:  # before anything that allocates: one prebuilt line, then exit
            process.out_of_memory(exiting)
            return EXIT_INTERNAL
        except EcobenchError as exc:
            _error(str(exc))
            return exc.exit_code
        except KeyboardInterrupt:
            return _signalled("interrupted (SIGINT)", EXIT_INTERRUPTED)
        except Terminated:
            return _signalled("terminated (SIGTERM)", EXIT_TERMINATED)
        except BrokenPipeError:
            silence_stdout()
            return EXIT_BROKEN_PIPE
        except OSError as exc:  # I/O outside the writers that translate it themselves
            if debug:
                traceback.print_exc()
            where = f"{exc.filename}: " if exc.filename else ""
            _error(f"{where}{exc.strerror or exc}")
            return EXIT_OUTPUT
        except Exception as exc:  # a bug: one line, not a traceback, and never exit code 1
            if exiting and process.terminated():  # SIGTERM, made this exception by a library on its way
                return _signalled("terminated (SIGTERM)", EXIT_TERMINATED)
            if exiting and process.interrupted():  # Ctrl-C, the same way (pydantic's SchemaError)
                return _signalled("interrupted (SIGINT)", EXIT_INTERRUPTED)
            if debug:
                traceback.print_exc()
            _error(f"internal error: {type(exc).__name__}: {str(exc)[:300]} (this is a bug in ecobench; "
                   "rerun with --debug for the traceback)")
            return EXIT_INTERNAL
        finally:
            if exiting:  # a signal from here on ends the process at once (see entry)
                process.exit_on_signal("after the command ended")


def _error(msg: str, prefix: str = "ecobench: error: ") -> None:
    with contextlib.suppress(OSError, ValueError):
        print(prefix + terminal(msg), file=sys.stderr, flush=True)

"""False failures of `ecobench check` on real, repeated runs of one measured scenario.

Runs the scenario N times back to back (nothing changes between runs, so every failure is a false
one), recording the host's load average around each run; each run also records the other
processes' CPU share before and during measuring, its CV and its warnings. Then every ordered pair
of runs (run j checked against run i as the baseline, i != j) is gated with the rules given, and
the false-failure rate is printed: overall with --allow-noisy, and as CI sees it (rows flagged
noisy are refused, exit 5, instead of gated), and among the pairs where neither run was flagged.
The same again with baselines of three runs (every combination of three other runs), which let
the gate see run-to-run drift.

    python benchmarks/gate_false_positives.py                     # 10 runs of local_measure.yaml
    python benchmarks/gate_false_positives.py --wait-quiet 900       # start each run on a quiet host
    python benchmarks/gate_false_positives.py --reuse benchmarks/out/gate_fp/<stamp>  # re-gate only

Writes benchmarks/out/gate_fp/<stamp>/ (the runs and summary.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from itertools import combinations, permutations
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the benchmarks' shared helpers
from timing import at_least, whole  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RULES = ["energy_kwh:+5%", "cost_usd:+5%", "co2_kg:+5%", "throughput_per_instance_per_s:-5%"]
BASELINE_RUNS = 3  # runs in a several-run baseline (ecobench baseline RUN RUN RUN)


def _wait_quiet(max_wait_s: float) -> float:
    """Wait (up to ``max_wait_s``) until other processes use under the measurement threshold of
    the host's CPU over 3 s; return the share last seen."""
    from ecobench.measure.hostload import probe_other_cpu_pct
    from ecobench.units import MAX_OTHER_CPU_PCT

    t_end = time.monotonic() + max_wait_s
    while (seen := probe_other_cpu_pct(3.0)) > MAX_OTHER_CPU_PCT and time.monotonic() < t_end:
        time.sleep(10)
    return seen


def _runs(out: Path, scenario: Path, n: int, wait_quiet_s: float) -> list[dict[str, object]]:
    log = []
    for i in range(n):
        run_dir = out / f"run-{i:02d}"
        other_pct = _wait_quiet(wait_quiet_s) if wait_quiet_s else None
        load_before = os.getloadavg()[0]
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "ecobench", "run", str(scenario), "-q", "--out",
                               str(run_dir)], capture_output=True, text=True, cwd=ROOT)
        entry = {"run": run_dir.name, "exit": proc.returncode, "wall_s": round(time.monotonic() - t0, 1),
                 "other_cpu_pct_when_started": other_pct,
                 "loadavg_1min_before": load_before, "loadavg_1min_after": os.getloadavg()[0]}
        log.append(entry)
        print(json.dumps(entry), flush=True)
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
    return log


def _pairs(out: Path, rules: list[str]) -> dict[str, object]:
    from ecobench.gate import check as gate
    from ecobench.gate.files import read_gate_doc

    docs = {p.name: read_gate_doc(p, "run") for p in sorted(out.glob("run-*"))
            if (p / "results.json").exists()}
    parsed = [gate.parse_rule(r) for r in rules]
    per_run = {name: {cid: {k: row.get(k) for k in ("throughput_per_instance_per_s", "instances",
                                                     "energy_kwh", "throughput_cv_pct",
                                                     "host_other_cpu_pct_before", "host_other_cpu_pct_during",
                                                     "measurement_warnings")}
                      for cid, row in d.rows.items() if row.get("provenance") in ("measured", "projected")}
               for name, d in docs.items()}
    pairs = list(permutations(docs, 2))
    any_fail = ci_fail = ci_refused = quiet_pairs = quiet_fail = 0
    per_rule = {r: 0 for r in rules}
    per_rule_default = 0
    for base, cur in pairs:
        verdicts = gate.compare(docs[cur], docs[base], parsed)
        failed = [v for v in verdicts if v.failed]
        noisy = any(v.noisy for v in verdicts)
        any_fail += bool(failed)
        per_rule_default += any(v.failed and str(v.rule) == gate.DEFAULT_RULE for v in verdicts)
        for r in rules:
            per_rule[r] += any(v.failed and str(v.rule) == str(gate.parse_rule(r)) for v in verdicts)
        if any(v.failed and not v.noisy for v in verdicts):
            ci_fail += 1
        elif noisy:
            ci_refused += 1
        if not noisy:
            quiet_pairs += 1
            quiet_fail += bool(failed)
    n = len(pairs)

    def pct(k: int, d: int) -> str:
        return f"{k}/{d} = {100.0 * k / d:.1f}%" if d else "n/a (no such pairs)"

    return {"rules": rules, "runs": list(docs), "ordered_pairs": n,
            "several_run_baselines": _several(out, docs, parsed, BASELINE_RUNS),
            "false_failure_any_rule_allow_noisy": pct(any_fail, n),
            "false_failure_default_rule_allow_noisy": pct(per_rule_default, n),
            "false_failure_per_rule_allow_noisy": {r: pct(k, n) for r, k in per_rule.items()},
            "as_ci_sees_it": {"exit_1_regression": pct(ci_fail, n),
                              "exit_5_refused_noisy": pct(ci_refused, n),
                              "exit_0": pct(n - ci_fail - ci_refused, n)},
            "pairs_with_no_noisy_run": quiet_pairs,
            "false_failure_among_quiet_pairs": pct(quiet_fail, quiet_pairs),
            "per_run": per_run}


def _several(out: Path, docs: dict[str, object], rules: list[object], k: int) -> dict[str, object]:
    """Each run checked against baselines of k other runs (every combination)."""
    import tempfile

    from ecobench.gate import check as gate
    from ecobench.gate.files import read_gate_doc

    names = list(docs)
    checks = fails = ci_fail = ci_refused = quiet = quiet_fail = 0
    with tempfile.TemporaryDirectory() as tmp:
        for cur in names:
            for combo in combinations([n for n in names if n != cur], k):
                f = Path(tmp) / "b.json"
                f.write_text(json.dumps(gate.make_baseline([out / n for n in combo], allow_noisy=True)))
                verdicts = gate.compare(docs[cur], read_gate_doc(f, "baseline"), rules)  # type: ignore[arg-type]
                checks += 1
                fails += any(v.failed for v in verdicts)
                noisy = any(v.noisy for v in verdicts)
                if any(v.failed and not v.noisy for v in verdicts):
                    ci_fail += 1
                elif noisy:
                    ci_refused += 1
                if not noisy:
                    quiet += 1
                    quiet_fail += any(v.failed for v in verdicts)

    def pct(a: int, b: int) -> str:
        return f"{a}/{b} = {100.0 * a / b:.1f}%" if b else "n/a (no such checks)"

    return {"baseline_runs": k, "checks": checks, "false_failure_allow_noisy": pct(fails, checks),
            "as_ci_sees_it": {"exit_1_regression": pct(ci_fail, checks),
                              "exit_5_refused_noisy": pct(ci_refused, checks),
                              "exit_0": pct(checks - ci_fail - ci_refused, checks)},
            "checks_with_no_noisy_run": quiet, "false_failure_among_quiet_checks": pct(quiet_fail, quiet)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=whole(2, 1000), default=10, help="runs, 2-1,000 (default 10)")
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "local_measure.yaml"))
    ap.add_argument("--reuse", help="a directory of earlier runs: only gate its pairs")
    ap.add_argument("--rule", action="append", help=f"gate rule (repeatable; default {' '.join(RULES)})")
    ap.add_argument("--wait-quiet", type=at_least(0.0), default=0.0, metavar="S",
                    help="before each run, wait up to S seconds for other processes to go quiet")
    args = ap.parse_args()
    rules = args.rule or RULES
    from ecobench.errors import EcobenchError
    from ecobench.gate.check import parse_rule

    for r in rules:  # bad input before the runs, not after them
        try:
            parse_rule(r)
        except EcobenchError as exc:
            ap.error(f"--rule: {str(exc).replace('--fail-on ', '', 1)}")
    if args.reuse and not any((p / "results.json").is_file() for p in Path(args.reuse).glob("run-*")):
        ap.error(f"--reuse {args.reuse}: no run-*/results.json there; allowed: a directory this benchmark "
                 "wrote (benchmarks/out/gate_fp/<stamp>)")
    if not args.reuse and not Path(args.scenario).is_file():
        ap.error(f"--scenario {args.scenario}: no such file; allowed: a scenario YAML file")
    if args.reuse:
        out, log = Path(args.reuse), []
    else:
        out = ROOT / "benchmarks" / "out" / "gate_fp" / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        out.mkdir(parents=True)
        log = _runs(out, Path(args.scenario), args.runs, args.wait_quiet)
    summary = {"when_utc": datetime.now(UTC).isoformat(timespec="seconds"), "host_cpus": os.cpu_count(),
               "scenario": args.scenario, "run_log": log, **_pairs(out, rules)}
    (out / ("summary.json" if not args.reuse else "summary-regated.json")).write_text(
        json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k not in ("per_run", "run_log")}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

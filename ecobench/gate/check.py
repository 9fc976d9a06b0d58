"""`ecobench check`: fail a build when energy, cost or CO2 regresses against a baseline.

A rule ``METRIC:+PCT%`` fails when METRIC rises by more than PCT percent (``-PCT%``: when it falls,
for higher-is-better metrics such as throughput). An absolute threshold ``METRIC<VALUE`` fails when
the run's figure is VALUE or more (``METRIC>VALUE``: VALUE or less), e.g. ``ttft_ms_p99<1000``.
Either form may be scoped to some configurations, ``RULE@ID[,ID...]`` (``pareto_rank<3@inf2``): it
then holds for those only (``@`` and ``,`` are in no metric, value or configuration id).

- Modelled figures are deterministic and compared exactly.
- Measured and projected rows carry per-repetition ``samples`` computed through the planner
  (``ecobench.planning.samples``); inference samples are planned with fractional instances, so the integer
  instance count cannot turn a 3% throughput change into a 20% energy change. For those the
  change is tested with Welch's t-test on log values (the ratio of geometric means), and the rule
  fails only when the change is both significant (one-sided, alpha) and beyond the threshold.
- Rows flagged as not reproducible when measured (``measurement_warnings``: a loaded host, a
  CV over the threshold) cannot be gated: the verdict is "noisy" and ``ecobench check`` exits 5
  unless ``--allow-noisy``.

The two documents must be of the same scenario, mode and schema version; the configurations both
have are gated, those in one only are listed as added or removed and not gated (at least one must be
in both), except that an absolute limit holds for a configuration the run adds too (it needs no
baseline). A gated figure must be a finite number, 0 or more (``ecobench.gate.files``), except
``pareto_rank``: a configuration off the Pareto front (null) ranks after every rank, so it fails
``pareto_rank<N``, and leaving the front fails ``pareto_rank:+PCT%``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import statistics
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from ecobench.bounds import NAME_PATTERN
from ecobench.errors import InputError, NoisyMeasurementError
from ecobench.gate.files import BASELINE_KIND, FROM_CSV, PARETO_RANK, GateDoc, gated_value, read_gate_doc
from ecobench.io import textsafe

DEFAULT_RULE = "energy_kwh:+5%"
ALPHA = 0.05
# re.ASCII: \d is 0-9 only (a full-width "５" is no digit here)
# a number as float() reads it, digits first: '5', '5.', '5.5', '5e-1' (one definition for every form)
_NUMBER = r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?"
_RULE = re.compile(rf"^(?P<metric>[a-z0-9_]+):(?P<sign>[+-])(?P<pct>{_NUMBER})(?P<unit>%?)$", re.ASCII)
_RULE_VALUE = re.compile(r"^[a-z0-9_]+:[+-](?P<value>.*?)%?$", re.ASCII)  # a relative change, any value
_THRESHOLD_VALUE = re.compile(r"^[a-z0-9_]+\s*[<>](?![<>=])\s*(?P<value>.*)$", re.ASCII)  # a limit, any value
FIGURE_FLOOR = "the gated figures are 0 or more (pareto_rank 1 or more)"
_THRESHOLD = re.compile(rf"^(?P<metric>[a-z0-9_]+)\s*(?P<op>[<>])\s*(?P<value>[+-]?{_NUMBER})$", re.ASCII)
_METRIC = re.compile(r"^[a-z0-9_]+", re.ASCII)
_CONFIG_ID = re.compile(NAME_PATTERN, re.ASCII)  # a configuration id: no '@', no ',', no space
SCOPE_FORM = "RULE@ID[,ID...] (the rule holds for those configurations only), e.g. pareto_rank<3@inf2"
ALLOWED_FORMS = ("METRIC:+PCT% (rise fails), METRIC:-PCT% (fall fails), METRIC<VALUE (VALUE or more "
                 "fails), METRIC>VALUE (VALUE or less fails), e.g. energy_kwh:+5%, "
                 "throughput_per_instance_per_s:-5%, ttft_ms_p99<1000; any of them as " + SCOPE_FORM)


def _scope_text(scope: tuple[str, ...]) -> str:
    return "@" + ",".join(scope) if scope else ""


class _Scoped:
    """A rule's scope: the configuration ids it holds for (empty: every configuration)."""

    scope: tuple[str, ...]

    def applies(self, config_id: str) -> bool:
        return not self.scope or config_id in self.scope


@dataclass(frozen=True)
class Rule(_Scoped):
    metric: str
    pct: float
    worse_if_higher: bool
    scope: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.metric}:{'+' if self.worse_if_higher else '-'}{self.pct:g}%{_scope_text(self.scope)}"


@dataclass(frozen=True)
class Threshold(_Scoped):
    """An absolute limit: the run's figure must stay below (``<``) or above (``>``) ``value``."""

    metric: str
    op: str  # "<" or ">"
    value: float
    scope: tuple[str, ...] = ()

    @property
    def worse_if_higher(self) -> bool:
        return self.op == "<"

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}{_scope_text(self.scope)}"

    def fails(self, current: float) -> bool:
        return not (current < self.value if self.op == "<" else current > self.value)


def parse_rule(text: str) -> Rule | Threshold:
    """Parse ``METRIC:+PCT%`` (rise fails), ``METRIC:-PCT%`` (fall fails), ``METRIC<VALUE`` or
    ``METRIC>VALUE`` (an absolute limit), each optionally scoped, ``RULE@ID[,ID...]``; anything else
    is bad input listing the allowed forms. Whether a scope's ids are in the run is checked against
    the documents (:func:`check_scopes`)."""
    if len(parts := text.split()) > 1 and all(_is_rule(p) for p in parts):  # the Action's fail-on, whole
        raise InputError(f"--fail-on {text!r}: {len(parts)} rules in one; allowed: one rule per --fail-on: "
                         + " ".join(f"--fail-on '{p}'" for p in parts))
    body, at, scope = text.strip().partition("@")
    if at and not body.strip():
        raise InputError(f"--fail-on {text!r}: a scope without its rule; the scope follows the rule with "
                         "no space (in the Action's fail-on a space separates rules); allowed: " + SCOPE_FORM)
    ids = _parse_scope(text, scope) if at else ()
    return dataclasses.replace(_parse_unscoped(text, body.strip(), _scope_text(ids)), scope=ids)


def _is_rule(text: str) -> bool:
    try:
        parse_rule(text)
    except InputError:
        return False
    return True


def _misplaced_sign(t: str, scope: str) -> str | None:
    """What is wrong with a rule (``t``, unscoped) whose number is right but a sign is not: two signs
    (``:+-5%``) or a limit in % (``<5%``); None otherwise."""
    if m := re.match(r"^(?P<metric>[a-z0-9_]+):[+-](?P<value>[+-]" + _NUMBER + ")%?$", t, re.ASCII):
        return (f"the percentage {m['value']!r} has a sign of its own; allowed: one sign, + (a rise fails) "
                f"or - (a fall fails), then the percentage, e.g. {m['metric']}:{m['value']}%{scope}")
    if t.endswith("%") and (m := _THRESHOLD.match(t.removesuffix("%"))):
        value = m["value"].lstrip("+-")
        return (f"the limit {m['value'] + '%'!r} is a percentage; allowed: a limit in the metric's own "
                f"unit, e.g. {m['metric']}{m['op']}{value}{scope} (a change in % is METRIC:+PCT%, e.g. "
                f"{m['metric']}:+{value}%{scope})")
    return None


def _parse_scope(text: str, scope: str) -> tuple[str, ...]:
    """The configuration ids after a rule's ``@``, once each, in order."""
    ids = [i.strip() for i in scope.split(",")]
    for i in ids:
        if not _CONFIG_ID.fullmatch(i):
            what = ("an empty configuration id" if not i else
                    f"{i[:40]!r} is not a configuration id (letters, digits, _ . -; the scope follows the "
                    "whole rule)")
            raise InputError(f"--fail-on {text!r}: {what} in the scope {scope[:60]!r}; allowed: {SCOPE_FORM}")
    return tuple(dict.fromkeys(ids))


def _parse_unscoped(text: str, t: str, scope: str = "") -> Rule | Threshold:
    """A rule without its scope (``t``); errors name the whole ``text``, and the nearest valid rule
    keeps its ``scope`` (``@ID,...``)."""
    if m := _RULE.match(t):
        if not m["unit"]:
            raise InputError(f"--fail-on {text!r}: a relative change needs its % sign (nearest valid: "
                             f"{t}%{scope}); allowed: {ALLOWED_FORMS}")
        pct = float(m["pct"])
        if not math.isfinite(pct):
            raise InputError(f"--fail-on {text!r}: the percentage {m['pct'][:20]!r} is not a finite number; "
                             f"allowed: {ALLOWED_FORMS}")
        if m["sign"] == "-" and pct >= 100:
            raise InputError(f"--fail-on {text!r}: can never fail: {FIGURE_FLOOR}, so none falls by more "
                             f"than 100% (to 0); allowed: a fall under 100%, e.g. {m['metric']}:-50%{scope}")
        return Rule(m["metric"], pct, m["sign"] == "+")
    if m := _THRESHOLD.match(t):
        value = float(m["value"])
        if not math.isfinite(value):
            raise InputError(f"--fail-on {text!r}: the limit {m['value'][:20]!r} is not a finite number; "
                             f"allowed: {ALLOWED_FORMS}")
        if m["op"] == ">" and value < 0:
            raise InputError(f"--fail-on {text!r}: can never fail: {FIGURE_FLOOR}, so every one is above "
                             f"{value:g}; allowed: a lower limit of 0 or more, e.g. {m['metric']}>0{scope}")
        return Threshold(m["metric"], m["op"], value)
    if why := _misplaced_sign(t, scope):
        raise InputError(f"--fail-on {text!r}: {why}")
    for form, what in ((_RULE_VALUE, "percentage"), (_THRESHOLD_VALUE, "limit")):
        if m := form.match(t):
            wrong = f"{m['value'][:20]!r} is not a finite number" if m["value"] else "is missing"
            raise InputError(f"--fail-on {text!r}: the {what} {wrong}; allowed: {ALLOWED_FORMS}")
    if m := re.match(rf"^([a-z0-9_]+):({_NUMBER})%?$", t, re.ASCII):
        raise InputError(f"--fail-on {text!r}: a relative change needs its sign, + (a rise fails) or - "
                         f"(a fall fails) (nearest valid: {m[1]}:+{m[2]}%{scope}); allowed: {ALLOWED_FORMS}")
    metric = _METRIC.match(t)
    what = (f"unknown operator {t[metric.end():][:10]!r}" if metric and t[metric.end():]
            else "not a rule")
    raise InputError(f"--fail-on {text!r}: {what}; allowed: {ALLOWED_FORMS}")


@dataclass(frozen=True)
class Verdict:
    config_id: str
    rule: Rule | Threshold
    baseline: float  # NaN: no baseline (an added configuration); inf: off the Pareto front (pareto_rank)
    current: float
    change_pct: float
    method: str  # "exact" or "welch t-test on log ..."
    failed: bool
    noisy: bool = False  # a measured row flagged as not reproducible (either side)
    note: str = ""  # e.g. the integer instance count stepped

    @property
    def status(self) -> str:
        if self.noisy:
            return ("FAIL" if self.failed else "pass") + " (noisy)"
        return "FAIL" if self.failed else "pass"


# A change this close to the rule's threshold is at it, not beyond it: floating-point rounding
# (b x 1.05 against b computes +5.000000000000004%; one figure computed two ways differs by an ulp).
AT_THRESHOLD_PCT = 1e-9  # percentage points
AT_THRESHOLD_REL = 1e-12


def beyond(change_pct: float, pct: float) -> bool:
    """The change (signed so that worse is positive) is more than the rule's PCT; exactly PCT, as
    floating point computes it, is not."""
    return change_pct > pct and not math.isclose(change_pct, pct, rel_tol=AT_THRESHOLD_REL,
                                                 abs_tol=AT_THRESHOLD_PCT)


def welch_regression(base: list[float], cur: list[float], rule: Rule) -> tuple[float, float, bool]:
    """(change %, one-sided p, failed) for repetitions of a noisy metric (all values > 0)."""
    from scipy import stats

    lb = [math.log(v) for v in base]
    lc = [math.log(v) for v in cur]
    sign = 1.0 if rule.worse_if_higher else -1.0
    diff = statistics.fmean(lc) - statistics.fmean(lb)
    change_pct = math.expm1(diff) * 100.0
    if statistics.pvariance(lb) == 0.0 and statistics.pvariance(lc) == 0.0:
        p = 0.0 if sign * diff > 0 else 1.0  # no noise at all: the change is what it is
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # precision loss on near-equal data
            test = stats.ttest_ind(lc, lb, equal_var=False,
                                   alternative="greater" if rule.worse_if_higher else "less")
        p = float(test.pvalue)
        if not math.isfinite(p):
            p = 1.0
    failed = p < ALPHA and beyond(sign * change_pct, rule.pct)
    return change_pct, p, failed


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def run_level_regression(run_means: list[float], cur: list[float], rule: Rule) -> tuple[float, float, bool]:
    """(change %, one-sided p, failed) of a run against a baseline of several runs: the run's
    geometric mean against the baseline runs' geometric means, with the spread between the
    baseline runs as the noise (a prediction interval for one more run, Student's t, k-1 df)."""
    from scipy import stats

    logs = [math.log(v) for v in run_means]
    k, centre, spread = len(logs), statistics.fmean(logs), statistics.stdev(logs)
    diff = statistics.fmean(math.log(v) for v in cur) - centre
    change_pct = math.expm1(diff) * 100.0
    sign = 1.0 if rule.worse_if_higher else -1.0
    if spread == 0.0:
        p = 0.0 if sign * diff > 0 else 1.0
    else:
        p = float(stats.t.sf(sign * diff / (spread * math.sqrt(1.0 + 1.0 / k)), k - 1))
    return change_pct, p, p < ALPHA and beyond(sign * change_pct, rule.pct)


def check_comparable(current: GateDoc, baseline: GateDoc, same_configs: bool = True) -> None:
    """Same scenario, mode, schema version and (``same_configs``) configurations; otherwise bad
    input. Without ``same_configs`` at least one configuration must be in both."""
    def differs(what: str, b: object, c: object, hint: str = "") -> InputError:
        return InputError(f"baseline {baseline.path} {what} {b!r} but run {current.path} has {c!r}{hint}")

    if baseline.scenario_name != current.scenario_name:
        raise differs("is of scenario", baseline.scenario_name, current.scenario_name,
                      "; compare runs of one scenario (write its baseline with `ecobench baseline`)")
    if baseline.mode != current.mode:
        raise differs("has mode", baseline.mode, current.mode)
    if baseline.schema_version != current.schema_version:
        raise differs("has schema_version", baseline.schema_version, current.schema_version,
                      "; write the baseline again with this ecobench")
    if not set(current.rows) & set(baseline.rows):
        to = f"{baseline.path} --force" if baseline.kind == BASELINE_KIND else "FILE"
        raise InputError(f"no configuration in both, nothing to gate: run {current.path} has "
                         + ", ".join(sorted(current.rows)) + f"; baseline {baseline.path} has "
                         + ", ".join(sorted(baseline.rows)) + "; configurations are matched by id: "
                         "after renaming them, write the baseline again "
                         f"(`ecobench baseline RUN_DIR --to {to}`)")
    if same_configs and set(current.rows) != set(baseline.rows):
        raise InputError("configurations do not match: run has " + ", ".join(sorted(current.rows)) +
                         "; baseline has " + ", ".join(sorted(baseline.rows)))


def _samples(row: dict[str, Any], metric: str) -> list[float] | None:
    s = (row.get("samples") or {}).get(metric)
    return s if s and len(s) >= 2 else None


# A row's own configuration (a row without one of them, as an older file's without lnc, says nothing of it)
_CONFIG_FIELDS = ("instance_type", "region", "precision", "backend", "weight_precision", "kv_cache_precision",
                  "scheduler", "lnc")


def _setting(value: Any) -> str | None:
    """A configuration field's value as compared and shown (None: the row does not hold it)."""
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None


def _note(base: dict[str, Any], cur: dict[str, Any]) -> str:
    """What changed between the two rows besides the figures: the configuration under the same id
    (instance type, region, precision, backend, storage formats, scheduler, logical NeuronCores), the
    power basis (the accounting convention, not the workload), the integer instance count (a step): say
    so."""
    notes = []
    pairs = {k: (_setting(base.get(k)), _setting(cur.get(k))) for k in _CONFIG_FIELDS}
    changed = [f"{k} {b[:30]} -> {c[:30]}" for k, (b, c) in pairs.items() if b is not None and c is not None
               and b != c]
    if changed:  # the same id, another configuration: the change is the configuration's, not the code's
        notes.append(f"configuration changed: {', '.join(changed)}")
    pb, pc = base.get("power_basis"), cur.get("power_basis")
    if isinstance(pb, str) and isinstance(pc, str) and pb != pc:
        notes.append(f"power_basis {pb[:20]} -> {pc[:20]} (the accounting convention changed: energy and "
                     "CO2 are not like for like)")  # made safe where shown, as every cell
    b, c = base.get("instances"), cur.get("instances")
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (b, c)) or b == c:
        return "; ".join(notes)
    try:
        shown = f"{float(b):g} -> {float(c):g}"  # type: ignore[arg-type]
    except OverflowError:
        return "; ".join(notes)
    notes.append(f"instances {shown} (an integer step; measured rows are tested at fractional instances)")
    return "; ".join(notes)


def _csv_side(base: dict[str, Any], cur: dict[str, Any]) -> str:
    """Which side's row a sweep's results.csv gave (``gate.files.with_sweep_rows``), said in the note."""
    side = {(True, False): "baseline", (False, True): "run", (True, True): "baseline and run"}.get(
        (bool(base.get(FROM_CSV)), bool(cur.get(FROM_CSV))))
    return (f"{side} row from results.csv (not among the rows the sweep's results.json shows)" if side
            else "")


@dataclass(frozen=True)
class ConfigChanges:
    """Configurations in one document only: not gated (an added one by the absolute limits only),
    listed; and those no rule's scope names."""

    added: list[str]  # in the run, not in the baseline
    removed: list[str]  # in the baseline, not in the run
    limits: tuple[str, ...] = ()  # the absolute limits that hold for an added configuration
    scoped: tuple[tuple[str, str, str], ...] = ()  # (rule, configuration, why): a scoped one not gated
    outside: tuple[str, ...] = ()  # in both documents, in no rule's scope: not gated

    def lines(self) -> list[str]:
        out = []
        if self.added:
            gated = (f"gated by the absolute limit(s) {', '.join(self.limits)} only" if self.limits
                     else "not gated")
            out.append(f"{len(self.added)} configuration(s) added, {gated} (no baseline; write the "
                       f"baseline again to gate them): {', '.join(self.added)}")
        if self.removed:
            out.append(f"{len(self.removed)} configuration(s) removed since the baseline, not gated: "
                       f"{', '.join(self.removed)}")
        out += [f"rule {rule} does not gate {cid}: {why}" for rule, cid, why in self.scoped]
        if self.outside:
            out.append(f"{len(self.outside)} configuration(s) in no rule's scope, not gated: "
                       f"{', '.join(self.outside)}")
        return out


def config_changes(current: GateDoc, baseline: GateDoc, rules: list[Rule | Threshold] | None = None
                   ) -> ConfigChanges:
    rules = rules or []
    added = [c for c in current.rows if c not in baseline.rows]
    removed = [c for c in baseline.rows if c not in current.rows]
    limits = tuple(str(r) for r in rules if isinstance(r, Threshold) and any(map(r.applies, added)))
    scoped = tuple((str(r), c, "removed since the baseline" if c in removed else
                    "added since the baseline, no baseline to compare with")
                   for r in rules for c in r.scope
                   if c in removed or (c in added and not isinstance(r, Threshold)))
    outside = tuple(c for c in current.rows if c in baseline.rows and not any(r.applies(c) for r in rules))
    return ConfigChanges(added, removed, limits, scoped, outside)


def numeric_metrics(*docs: GateDoc) -> list[str]:
    """The numeric columns of the documents' rows, and ``pareto_rank`` (null in every row where no
    configuration is on the front): what a rule can gate."""
    return sorted({k for d in docs for row in d.rows.values() for k, v in row.items()
                   if (isinstance(v, int | float) and not isinstance(v, bool)) or k == PARETO_RANK})


def _off_front(baseline: float, current: float) -> str:
    """Which side is off the Pareto front (``gated_value``: infinity), said in a verdict's note."""
    side = {(True, True): "baseline and run", (True, False): "baseline", (False, True): "run"}.get(
        (math.isinf(baseline), math.isinf(current)))
    return f"{side} off the Pareto front (pareto_rank null: dominated, or not eligible)" if side else ""


# the front's objectives where a results.json does not name them (written before its `pareto`)
_OBJECTIVES = ("cost_usd", "co2_kg", "duration_h", "tpot_ms_p50", "latency_p99_ms")


def _behind_added(current: GateDoc, baseline: GateDoc, cid: str, b: float, c: float) -> str:
    """Where a configuration's pareto_rank worsened while its own objective figures did not, the
    configurations added since the baseline that rank ahead of it, said in the verdict's note: the run
    has more options (a value added to a sweep), this one did not get worse."""
    if not c > b:
        return ""
    ahead = [a for a in current.rows if a not in baseline.rows and gated_value(current, a, PARETO_RANK) < c]
    basis = current.meta.get("pareto")
    named = basis.get("objectives") if isinstance(basis, dict) else None
    base, cur = baseline.rows[cid], current.rows[cid]
    cols = [k for k in (named if isinstance(named, list) else _OBJECTIVES) if k in cur]
    if not ahead or not cols or any(base.get(k) != cur.get(k) for k in cols):
        return ""
    shown = ", ".join(ahead[:3]) + (f" and {len(ahead) - 3} more" if len(ahead) > 3 else "")
    return (f"its own {', '.join(cols)} unchanged: behind {len(ahead)} configuration(s) added since the "
            f"baseline ({shown})")


def _figure(x: float) -> str:
    """A gated figure as shown: infinity is a configuration off the Pareto front."""
    return "-" if math.isnan(x) else "off the front" if math.isinf(x) else f"{x:.6g}"


def _signed(metric: str) -> bool:
    """A change against the scenario's own baseline configuration (``energy_change_pct``, its band):
    negative for every configuration better than that baseline, so not a figure the gate can hold."""
    return metric.removesuffix("_low").removesuffix("_high").endswith("_change_pct")


def check_metrics(rules: list[Rule | Threshold], current: GateDoc) -> None:
    """Every rule names a numeric column of the run that is not a signed change; otherwise one line
    listing them (a change column was refused later as bad data in the baseline file)."""
    known = numeric_metrics(current)
    for rule in rules:
        if _signed(rule.metric) and rule.metric in known:
            stem = rule.metric.partition("_change_pct")[0]
            figure = min((m for m in known if m == stem or (m.startswith(f"{stem}_") and not _signed(m)
                                                            and not m.endswith(("_low", "_high")))),
                         key=len, default=stem)  # energy_kwh, not energy_accelerator_kwh
            raise InputError(f"--fail-on {str(rule)!r}: {rule.metric} is the change against the scenario's "
                             "baseline configuration, negative where a configuration is better, and is not "
                             f"gated; allowed: the figure itself, e.g. {figure}:+5% (each run against the "
                             "baseline file)")
        if rule.metric not in known:
            gateable = [m for m in known if not _signed(m)]  # a change column is refused above
            close = difflib.get_close_matches(rule.metric, gateable, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            shown = [m for m in gateable if not (m.endswith(("_low", "_high"))
                                                 and m.rpartition("_")[0] in gateable)]
            band = "; each with _low and _high, its 90% band" if len(shown) < len(gateable) else ""
            raise InputError(f"--fail-on {str(rule)!r}: unknown metric {rule.metric!r}{hint}; allowed (the "
                             f"numeric columns of {current.path} but the *_change_pct ones{band}): "
                             + ", ".join(shown))


def check_scopes(rules: list[Rule | Threshold], current: GateDoc, baseline: GateDoc) -> None:
    """Every id in a rule's scope is a configuration of the run or of the baseline (one only: listed
    as added or removed, :func:`config_changes`); otherwise bad input naming the rule, the id and the
    run's ids."""
    for rule in rules:
        for cid in rule.scope:
            if cid in current.rows or cid in baseline.rows:
                continue
            close = difflib.get_close_matches(cid, [*current.rows, *baseline.rows], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            gone = [c for c in baseline.rows if c not in current.rows]
            also = f"; the baseline also has {', '.join(gone)}" if gone else ""
            raise InputError(f"--fail-on {str(rule)!r}: unknown configuration {cid!r} in its scope{hint}; "
                             f"the run {current.path} has {', '.join(current.rows)}{also}")


def compare(current: GateDoc, baseline: GateDoc, rules: list[Rule | Threshold]) -> list[Verdict]:
    """Match rows by configuration and apply every rule to the configurations both documents have,
    and the absolute limits to those the run adds too (:func:`config_changes` lists the added and
    removed), each rule to the configurations of its scope only."""
    check_comparable(current, baseline, same_configs=False)
    check_metrics(rules, current)
    check_scopes(rules, current, baseline)
    verdicts = []
    for cid in (c for c in current.rows if c in baseline.rows):
        cur, base = current.rows[cid], baseline.rows[cid]
        noisy = bool(cur.get("measurement_warnings") or base.get("measurement_warnings"))
        for rule in (r for r in rules if r.applies(cid)):
            if rule.metric not in base and rule.metric in cur:  # a baseline older than the column
                to = f"{baseline.path} --force" if baseline.kind == BASELINE_KIND else "FILE"
                raise InputError(
                    f"{baseline.path}: configuration {cid!r} has no {rule.metric}, which the run has: a "
                    f"baseline written by an ecobench ({baseline.meta.get('ecobench_version') or 'unknown'}) "
                    "without that figure; write the baseline again with this one (`ecobench baseline RUN_DIR "
                    f"--to {to}`)")
            b, c = gated_value(baseline, cid, rule.metric), gated_value(current, cid, rule.metric)
            behind = _behind_added(current, baseline, cid, b, c) if rule.metric == PARETO_RANK else ""
            note = "; ".join(filter(None, [_note(base, cur), _off_front(b, c), behind, _csv_side(base, cur)]))
            if isinstance(rule, Threshold):
                change = (c / b - 1.0) * 100.0 if b else (0.0 if c == 0 else math.inf)
                verdicts.append(Verdict(cid, rule, b, c, change, f"absolute limit ({rule.op} {rule.value:g})",
                                        rule.fails(c), noisy, note))
                continue
            bs, cs = _samples(base, rule.metric), _samples(cur, rule.metric)
            means = (base.get("run_means") or {}).get(rule.metric)
            # Tested on samples: the table shows the statistic tested, the samples' geometric means
            # (a central value can lie outside its own samples), and says so.
            if means and cs:
                change, p, failed = run_level_regression(means, cs, rule)
                b, c = _geomean(means), _geomean(cs)
                method = (f"t-test against the spread of {len(means)} baseline runs, on log geometric "
                          f"means (p={p:.3g}); baseline and current: geometric means")
            elif bs and cs:
                change, p, failed = welch_regression(bs, cs, rule)
                b, c = _geomean(bs), _geomean(cs)
                basis = cur.get("samples_basis") or "per repetition"
                method = (f"welch t-test on log, {basis} (n={len(bs)}/{len(cs)}, p={p:.3g}; a one-run "
                          "baseline cannot see run-to-run drift); baseline and current: geometric means "
                          "of the samples")
            else:
                change = (c / b - 1.0) * 100.0 if b else (0.0 if c == 0 else math.inf)
                sign = 1.0 if rule.worse_if_higher else -1.0
                failed = beyond(sign * change, rule.pct)  # both off the front: inf/inf, NaN, no change
                method = "exact" if not (bs or cs) else "exact (samples on one side only)"
            verdicts.append(Verdict(cid, rule, b, c, change, method, failed, noisy, note))
    for cid in (c for c in current.rows if c not in baseline.rows):  # added: the absolute limits hold
        noisy = bool(current.rows[cid].get("measurement_warnings"))
        for rule in rules:
            if isinstance(rule, Threshold) and rule.applies(cid):
                c = gated_value(current, cid, rule.metric)
                verdicts.append(Verdict(cid, rule, math.nan, c, math.nan, f"absolute limit ({rule.op} "
                                        f"{rule.value:g}); added since the baseline", rule.fails(c), noisy,
                                        _off_front(math.nan, c)))
    return verdicts


def noisy_rows(verdicts: list[Verdict]) -> list[str]:
    """Configurations whose verdicts rest on measurements flagged as not reproducible."""
    return list(dict.fromkeys(v.config_id for v in verdicts if v.noisy))


def provenance_warnings(current: GateDoc, baseline: GateDoc) -> list[str]:
    """Differences that make the comparison less like-for-like, and measurement warnings."""
    out = []
    cm, bm = current.meta, baseline.meta
    for key, label in (("ecobench_version", "ecobench version"), ("catalog_version", "catalog version")):
        if cm.get(key) != bm.get(key):
            out.append(f"{label} differs: baseline {bm.get(key)}, run {cm.get(key)}")
    cmach: dict[str, Any] = cm["machine"] if isinstance(cm.get("machine"), dict) else {}
    bmach: dict[str, Any] = bm["machine"] if isinstance(bm.get("machine"), dict) else {}
    if (cmach.get("node"), cmach.get("machine")) != (bmach.get("node"), bmach.get("machine")):
        out.append(f"machine differs: baseline {bmach.get('node')} ({bmach.get('machine')}), "
                   f"run {cmach.get('node')} ({cmach.get('machine')})")
    if diff := workload_changes(baseline, current):
        out.append(f"the workload differs from the baseline's: {diff}; the figures answer another question "
                   "(if the change is meant, write the baseline again: `ecobench baseline RUN_DIR --to "
                   "FILE --force`)")
    for label, doc in (("baseline", baseline), ("run", current)):
        for cid, row in doc.rows.items():
            if row.get("measurement_warnings"):
                out.append(f"{label} {cid}: not reproducible when measured: {row['measurement_warnings']}")
    out += _sweep_rows_not_gated(current)
    return [str(w) for w in out]


def _workload(doc: GateDoc) -> dict[str, Any] | None:
    """The resolved scenario's workload: a baseline's ``workload`` (written since 2026-11-29), a run's
    ``scenario.workload``; None where the file has none."""
    w = doc.meta.get("workload") if doc.kind == BASELINE_KIND else (doc.meta.get("scenario") or {}).get(
        "workload")
    return w if isinstance(w, dict) else None


def workload_changes(baseline: GateDoc, current: GateDoc, shown: int = 4) -> str:
    """The workload fields that differ between the baseline's scenario and the run's ('serving.
    requests_per_h 36000 -> 40000'), '' where they agree or either file does not say (a baseline
    written before 2026-11-29 holds only the scenario's name)."""
    from ecobench.reports.compare import field_differences  # the fields `compare` lists, one walk

    b, c = _workload(baseline), _workload(current)
    if b is None or c is None or b == c:
        return ""
    diffs = field_differences(b, c, "workload")
    parts = [f"{path} {was} -> {now}" for path, was, now in diffs[:shown]]
    return "; ".join(parts) + (f" and {len(diffs) - shown} more" if len(diffs) > shown else "")


def _sweep_rows_not_gated(current: GateDoc) -> list[str]:
    """A sweep's results.json holds the rows it shows (the configurations, the front, the best by each
    objective, the picks); the rest are in results.csv only, and the gate does not see them."""
    sweep = current.meta.get("sweep")
    in_csv = sweep.get("rows_in_csv") if isinstance(sweep, dict) else None
    shown = sum(not r.get(FROM_CSV) for r in current.rows.values())
    if not isinstance(in_csv, int) or isinstance(in_csv, bool) or in_csv <= len(current.rows):
        return []
    also = len(current.rows) - shown
    read = f" and {also:,} the baseline has from its results.csv" if also else ""
    return [f"run: a sweep of {in_csv:,} rows; the gate reads the {shown:,} in its results.json "
            f"(the configurations, the Pareto front, the best by each objective and the picks){read}; the "
            f"other {in_csv - len(current.rows):,}, in results.csv only, are not gated"]


def table(verdicts: list[Verdict], allow_noisy: bool = True) -> list[list[str]]:
    """Rows of the verdict table (header first); strings from files made safe for a terminal."""
    rows = [["configuration", "rule", "baseline", "current", "change", "method", "verdict"]]
    for v in verdicts:
        status = "NOISY: not gated" if v.noisy and not allow_noisy else v.status
        method = v.method + (f"; {v.note}" if v.note else "")
        cells = [v.config_id, str(v.rule), _figure(v.baseline), _figure(v.current),
                 "-" if math.isnan(v.change_pct) else f"{v.change_pct:+.2f}%", method, status]
        rows.append([textsafe.terminal(c, keep_newlines=False) for c in cells])
    return rows


def headline(verdicts: list[Verdict], allow_noisy: bool, changes: ConfigChanges | None = None) -> str:
    failed = sum(v.failed for v in verdicts if allow_noisy or not v.noisy)
    noisy = noisy_rows(verdicts) if not allow_noisy else []
    head = f"{f'{failed} regression(s)' if failed else 'no regression'} in {len(verdicts)} check(s)"
    if changes and (changes.added or changes.removed):
        both = dict.fromkeys(v.config_id for v in verdicts if v.config_id not in changes.added)
        added = f"{len(changes.added)} added" + (" (absolute limits only)" if changes.limits else "")
        head += (f" of {len(both) + len(changes.outside)} configuration(s) in both runs; {added}, "
                 f"{len(changes.removed)} removed (not gated)")
    if changes and changes.outside:
        head += f"; {len(changes.outside)} in no rule's scope (not gated)"
    if noisy:  # after the counts: 'not gated: host, c6i in 3 check(s)' read as if the ids were checks
        head += f"; {len(noisy)} noisy configuration(s) not gated: {', '.join(noisy)}"
    return head


def markdown(verdicts: list[Verdict], warns: list[str], allow_noisy: bool = True,
             changes: ConfigChanges | None = None) -> str:
    """The verdict as a GitHub-flavoured markdown summary; nothing from a file is markup."""
    rows = table(verdicts, allow_noisy)
    failed = any(v.failed and (allow_noisy or not v.noisy) for v in verdicts)
    refused = not allow_noisy and any(v.noisy for v in verdicts)
    icon = "❌" if failed else ("⚠️" if refused else "✅")
    head = f"### ecobench check: {icon} {textsafe.markdown(headline(verdicts, allow_noisy, changes))}\n\n"
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(textsafe.markdown(c) for c in r) + " |" for r in rows[1:]]
    not_gated = "".join(f"\n- {textsafe.markdown(line)}" for line in (changes.lines() if changes else []))
    warn = "".join(f"\n> ⚠️ {textsafe.markdown(w)}" for w in warns)
    return (head + "\n".join(lines) + "\n" + (not_gated + "\n" if not_gated else "")
            + (warn + "\n" if warn else ""))


def junit(verdicts: list[Verdict], allow_noisy: bool = True, changes: ConfigChanges | None = None) -> str:
    """The verdict as a JUnit XML test suite: one test case per (configuration, rule); a noisy
    verdict that is not gated, and a configuration added or removed, is a skipped test case."""
    x = textsafe.xml
    gated = [v for v in verdicts if allow_noisy or not v.noisy]
    added = ("added in this run: no baseline to compare with; "
             + ("gated by the absolute limits only" if changes and changes.limits else "not gated"))
    extra = [(c, "not gated", added) for c in changes.added] if changes else []
    if changes:
        extra += ([(c, "not gated", "removed since the baseline; not gated") for c in changes.removed]
                  + [(c, rule, f"{why}; not gated") for rule, c, why in changes.scoped]
                  + [(c, "not gated", "in no rule's scope; not gated") for c in changes.outside])
    suite = ET.Element("testsuite", name="ecobench.check", tests=str(len(verdicts) + len(extra)),
                       failures=str(sum(v.failed for v in gated)), errors="0",
                       skipped=str(len(verdicts) - len(gated) + len(extra)))
    for v in verdicts:
        case = ET.SubElement(suite, "testcase", classname=x(f"ecobench.{v.config_id}"), name=str(v.rule))
        if v.noisy and not allow_noisy:
            ET.SubElement(case, "skipped", message="measurement not reproducible (see warnings); "
                          "not gated without --allow-noisy")
        elif v.failed:
            what = (f"{v.rule.metric} is {_figure(v.current)}, outside the limit {v.rule}"
                    if isinstance(v.rule, Threshold) else
                    f"{v.rule.metric} changed {v.change_pct:+.2f}% ({_figure(v.baseline)} -> "
                    f"{_figure(v.current)}; {v.method})")
            ET.SubElement(case, "failure", message=x(what))
    for cid, name, why in extra:
        case = ET.SubElement(suite, "testcase", classname=x(f"ecobench.{cid}"), name=name)
        ET.SubElement(case, "skipped", message=why)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def error_markdown(message: str, exit_code: int) -> str:
    """The summary of a check that could not gate (bad input, an internal error): what was wrong."""
    return (f"### ecobench check: ⛔ not gated (exit {exit_code})\n\n"
            + "".join(f"> {textsafe.markdown(line)}\n" for line in message.splitlines() or [""]))


def error_junit(message: str) -> str:
    """A JUnit suite of one test case in error, for a check that could not gate."""
    suite = ET.Element("testsuite", name="ecobench.check", tests="1", failures="0", errors="1", skipped="0")
    case = ET.SubElement(suite, "testcase", classname="ecobench.check", name="inputs")
    err = ET.SubElement(case, "error", message=textsafe.xml(message.splitlines()[0] if message else ""))
    err.text = textsafe.xml(message)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


_UNIT_TOKENS = {"kwh": "kWh", "usd": "USD", "kg": "kg", "g": "g", "j": "J", "ms": "ms", "s": "s", "h": "h",
                "w": "W", "pct": "%", "gib": "GiB", "instances": "instances"}


def metric_unit(metric: str) -> str:
    """The unit a column's name carries: ``energy_kwh`` kWh, ``co2_g_per_million_output_tokens``
    g CO2e per million output tokens, ``throughput_per_instance_per_s`` per instance per s."""
    head, _, per = metric.partition("_per_")
    head = re.sub(r"_(mean|p\d+)$", "", head)  # a statistic of the figure: ttft_ms_p99
    unit = _UNIT_TOKENS.get(head.rsplit("_", 1)[-1], "")
    if head.startswith("co2") and unit in ("kg", "g"):
        unit += " CO2e"
    if per:
        return " ".join(filter(None, [unit, "per", per.replace("_", " ")]))
    return unit


def benchmark_action(current: GateDoc, rules: list[Rule | Threshold], smaller_is_better: bool = True
                     ) -> list[dict[str, Any]]:
    """github-action-benchmark's custom format (``customSmallerIsBetter``; ``customBiggerIsBetter``
    when not ``smaller_is_better``): one ``{name, unit, value, extra}`` per configuration of the run
    and metric that a rule of the matching direction gates there (its scope), in file order; ``extra``
    names those rules. A metric gated both ways is in both."""
    chosen = [r for r in rules if r.worse_if_higher == smaller_is_better]
    metrics = list(dict.fromkeys(r.metric for r in chosen))
    out = []
    for cid, row in current.rows.items():
        for m in metrics:
            gating = list(dict.fromkeys(str(r) for r in chosen if r.metric == m and r.applies(cid)))
            if not gating:
                continue
            v = row.get(m)
            try:
                ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            except OverflowError:  # an integer beyond any float
                ok = False
            if ok:
                out.append({"name": f"{cid} {m}", "unit": metric_unit(m), "value": v,
                            "extra": f"scenario {current.scenario_name}; gated by {', '.join(gating)}"})
    return out


# a file's path (made absolute when the scenario is read): differs between checkouts
_LOCAL_PATHS = (".from_hf_config", ".lengths_csv", ".measured_serving", ".power_points")


def check_same_scenario(first: GateDoc, other: GateDoc) -> None:
    """``other`` was run from the same scenario as ``first`` (its recorded fields, but for the
    description and local file paths); otherwise bad input naming the fields that differ: the
    baseline's rows are the first run's, so a run of another scenario would silently go unused."""
    from ecobench.reports.compare import meta_differences

    diffs = [(k, a, b) for k, a, b in meta_differences(first.meta, other.meta)
             if k.startswith("scenario") and k != "scenario.description" and not k.endswith(_LOCAL_PATHS)]
    if diffs:
        shown = "; ".join(f"{k}: {a} -> {b}" for k, a, b in diffs[:5])
        more = f" (and {len(diffs) - 5} more)" if len(diffs) > 5 else ""
        raise InputError(f"{other.path}: not a run of the scenario of {first.path}: {shown}{more}; a "
                         "baseline of several runs is repeated runs of one scenario (its rows are the "
                         "first run's): run the same scenario again, or write one baseline per scenario")


def make_baseline(run_dirs: list[Path], allow_noisy: bool = False) -> dict[str, Any]:
    """A committed-baseline document from one or more runs of a scenario: the first run's rows and
    provenance and, from two runs on, each sampled figure's geometric mean in every run
    (``run_means``), so that the gate sees how much the figure moves between runs. Runs with
    measured rows flagged as not reproducible are refused unless ``allow_noisy``."""
    docs = [read_gate_doc(p, "run") for p in run_dirs]
    first = docs[0]
    seen: dict[object, Path] = {}
    for d in docs:
        check_same_scenario(first, d)  # first: its message speaks of a baseline of several runs
        check_comparable(d, first)
        run_id = d.meta.get("run_id")
        if run_id in seen:
            raise InputError(f"{d.path}: the same run as {seen[run_id]} (run_id {run_id!r}); a baseline "
                             "of several runs needs different runs")
        seen[run_id] = d.path
        noisy = [cid for cid, r in d.rows.items() if r.get("measurement_warnings")]
        if noisy and not allow_noisy:
            raise NoisyMeasurementError(
                f"{d.path}: measured configuration(s) {', '.join(noisy)} were flagged as not "
                "reproducible; a baseline from them would make later checks meaningless "
                "(measure on a quiet host, or pass --allow-noisy)")
    rows = []
    for cid, row in first.rows.items():
        row = dict(row)
        warns = list(dict.fromkeys(d.rows[cid]["measurement_warnings"] for d in docs
                                   if d.rows[cid].get("measurement_warnings")))
        row["measurement_warnings"] = "; ".join(warns) if warns else None  # any run's, kept (allow_noisy)
        per_run = [d.rows[cid].get("samples") or {} for d in docs]
        metrics = set.intersection(*(set(s) for s in per_run)) if len(docs) > 1 else set()
        if metrics:
            row["run_means"] = {m: [math.exp(statistics.fmean(math.log(v) for v in s[m])) for s in per_run]
                                for m in sorted(metrics)}
        rows.append(row)
    keep = ("schema_version", "ecobench_version", "catalog_version", "grid_data_version", "run_id",
            "created_utc", "machine", "git", "mode")
    workload = _workload(first)  # so that `check` can tell a run of another workload
    return {"kind": BASELINE_KIND, **{k: first.meta.get(k) for k in keep},
            "scenario_name": first.scenario_name, **({"workload": workload} if workload else {}),
            "runs": [d.meta.get("run_id") for d in docs], "rows": rows}

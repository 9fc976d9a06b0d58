"""The two documents the gate compares: a run's results.json and a committed baseline.

Read strictly (regular file, size cap, no NaN or Infinity literals; every energy, cost and CO2 figure a
finite number, 0 or more: ``ecobench.reports.tables.read_results``) and checked before any
comparison: the document's kind and schema version, a scenario name and mode, configuration ids that
are well-formed and unique, and per-repetition samples that are positive numbers. The figures a rule
gates are checked when the rule asks for them (:func:`gated_value`): a finite number, not negative;
``pareto_rank`` may be null, a configuration off the Pareto front (dominated, or not eligible), which
ranks after every rank (infinity).
"""


import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from ecobench.bounds import Name
from ecobench.errors import InputError
from ecobench.io.rundir import results_file
from ecobench.reports.tables import FROM_CSV, RESULTS_SCHEMA_VERSION, read_results, sweep_csv_rows
from ecobench.scenario.base import SchemaModel
from ecobench.scenario.messages import Schema, describe_model, error_lines
from ecobench.version import BASELINE_KIND, RESULTS_KIND

__all__ = ["BASELINE_KIND", "FROM_CSV", "PARETO_RANK", "RESULTS_KIND", "SUPPORTED_SCHEMA_VERSIONS",
           "GateDoc", "gated_value", "read_gate_doc", "sweep_csv_rows", "with_sweep_rows"]

SUPPORTED_SCHEMA_VERSIONS = tuple(range(1, RESULTS_SCHEMA_VERSION + 1))
MAX_ROWS = 10_000
MAX_SAMPLES = 100_000
# null off the Pareto front (ecobench.planning.pareto.pareto_columns): gated as ranked after every rank
PARETO_RANK = "pareto_rank"

Sample = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]


class _Open(SchemaModel):
    """A level of the document: numbers checked as a scenario's are; other keys kept (a row's result
    columns, a results.json's versions, machine, git...)."""

    model_config = ConfigDict(extra="allow", frozen=True)


class _Row(_Open):
    config_id: Name = Field(description="the configuration's id")
    samples: dict[str, Annotated[list[Sample], Field(min_length=1, max_length=MAX_SAMPLES)]] | None = None
    run_means: dict[str, Annotated[list[Sample], Field(min_length=2, max_length=MAX_SAMPLES)]] | None = None
    measurement_warnings: str | None = None


class _Scenario(_Open):
    name: Name = Field(description="the scenario's name")


class _Doc(_Open):
    kind: Literal["ecobench-results", "ecobench-baseline"] | None = None  # RESULTS_KIND, BASELINE_KIND
    schema_version: Annotated[int, Field(strict=True)] = Field(description="the results format's version")
    mode: Literal["inference", "training", "serving"] = Field(description="the scenario's workload mode")
    scenario_name: Name | None = None
    scenario: _Scenario | None = None
    rows: list[_Row] = Field(min_length=1, max_length=MAX_ROWS, description="one per configuration")


# What the scenario's messages (error_lines) read of a gate document.
_SCHEMA = Schema(lambda: describe_model(_Doc) + describe_model(_Scenario, "scenario.")
                 + describe_model(_Row, "rows[]."), globals())


@dataclass(frozen=True)
class GateDoc:
    """A validated results or baseline document."""

    path: Path  # the file read
    kind: str  # RESULTS_KIND or BASELINE_KIND
    schema_version: int
    scenario_name: str
    mode: str
    rows: dict[str, dict[str, Any]]  # by configuration id, in file order
    meta: dict[str, Any]  # everything else at the top level (versions, machine, git...)


def read_gate_doc(path: Path, role: str) -> GateDoc:
    """Read and check a run directory's results.json or a baseline file; ``role`` ("run" or
    "baseline") names it in errors."""
    f = results_file(path)
    raw = read_results(f, f"{role} results")  # its energy, cost and CO2 figures checked there
    try:
        doc = _Doc.model_validate(raw)
    except ValidationError as exc:
        lines = error_lines(exc.errors()[:10], _SCHEMA)  # type: ignore[arg-type]
        raise InputError(f"{f}: not a valid {role} document\n  " + "\n  ".join(lines)) from None
    if doc.kind is None and doc.scenario is None:
        raise InputError(f"{f}: neither a run's results.json nor a baseline (no 'kind', no 'scenario')")
    kind = doc.kind or RESULTS_KIND  # results.json written before 'kind' existed
    if doc.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
        raise InputError(f"{f}: schema_version {doc.schema_version}; this ecobench reads "
                         f"{', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))}")
    name = doc.scenario_name if kind == BASELINE_KIND else (doc.scenario.name if doc.scenario else None)
    if name is None:
        field = "scenario_name" if kind == BASELINE_KIND else "scenario.name"
        raise InputError(f"{f}: no scenario name ({field})")
    rows: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(raw["rows"]):
        cid = row["config_id"]
        if cid in rows:
            raise InputError(f"{f}: rows[{i}]: configuration id {cid!r} appears twice; each "
                             "configuration must have exactly one row")
        rows[cid] = row
    meta = {k: v for k, v in raw.items() if k != "rows"}
    return GateDoc(f, kind, doc.schema_version, name, doc.mode, rows, meta)


def gated_value(doc: GateDoc, config_id: str, metric: str) -> float:
    """A row's figure for a rule: a finite number, 0 or more, or infinity for a configuration off the
    Pareto front (``pareto_rank`` null); otherwise bad input naming the file, row and column."""
    row = doc.rows[config_id]
    if metric not in row:
        numeric = sorted(k for k, v in row.items() if isinstance(v, int | float) and not isinstance(v, bool))
        raise InputError(f"--fail-on: unknown metric {metric!r} for configuration {config_id!r} in "
                         f"{doc.path} (numeric columns: {', '.join(numeric)})")
    v = row[metric]
    if metric == PARETO_RANK and v is None:
        return math.inf
    try:
        x = float(v) if isinstance(v, int | float) and not isinstance(v, bool) else math.nan
    except OverflowError:  # an integer beyond any float
        x = math.inf
    if v is None:  # a figure the configuration does not have (the cost of a host with no price, ...)
        having = [c for c, r in doc.rows.items()
                  if isinstance(r.get(metric), int | float) and not isinstance(r.get(metric), bool)]
        scope = (f"scope the rule to the configurations that have it (RULE@ID[,ID...]: "
                 f"@{','.join(having)})" if having else "gate another figure")
        raise InputError(f"{doc.path}: configuration {config_id!r}: {metric} is null: this configuration "
                         f"has no such figure (as a host with no price has no cost); allowed: {scope}")
    if not math.isfinite(x) or x < 0:
        shown = repr(v)[:40]
        raise InputError(f"{doc.path}: configuration {config_id!r}: {metric} is {shown}; a gated "
                         "figure must be a finite number, 0 or more")
    return x


def with_sweep_rows(doc: GateDoc, ids: list[str]) -> GateDoc:
    """``doc`` with the rows of ``ids`` it lacks added from its results.csv (:func:`sweep_csv_rows`):
    a configuration that left a sweep's shown rows (off the front, say, after a regression) is gated,
    not listed as removed."""
    rows = sweep_csv_rows(doc.path, doc.meta, doc.rows, ids) if doc.kind == RESULTS_KIND else []
    if not rows:
        return doc
    return dataclasses.replace(doc, rows={**doc.rows, **{r["config_id"]: r for r in rows}})

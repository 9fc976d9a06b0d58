"""`ecobench run`: evaluate a scenario and write its run directory atomically."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ecobench import __version__
from ecobench.evaluate import evaluate
from ecobench.hardware.catalog import load_catalog
from ecobench.reports.html import write_html
from ecobench.reports.metadata import git_info, machine_info, now_utc
from ecobench.reports.tables import RESULTS_SCHEMA_VERSION, records, write_csv, write_json
from ecobench.rundir import atomic_dir, target_dir
from ecobench.scenario import Scenario


def results_document(s: Scenario, rows: list[dict[str, Any]], run_id: str) -> dict[str, Any]:
    """The content of results.json."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "ecobench_version": __version__,
        "catalog_version": load_catalog().version,
        "run_id": run_id,
        "created_utc": now_utc(),
        "machine": machine_info(),
        "git": git_info(),
        "mode": s.workload.mode,
        "scenario": s.model_dump(mode="json"),
        "rows": rows,
    }


def run(s: Scenario, results_root: Path, out: Path | None = None,
        progress: Callable[[str], None] | None = None) -> tuple[Path, Any]:
    """Evaluate ``s`` and write resolved scenario, results.csv/json and report.html.

    Nothing is written if evaluation fails; the directory appears only when complete.
    """
    final = target_dir(results_root, s.name, out)
    df = evaluate(s, progress=progress)
    doc = results_document(s, records(df), final.name)
    with atomic_dir(final) as tmp:
        (tmp / "scenario.yaml").write_text(
            yaml.safe_dump(s.model_dump(mode="json"), sort_keys=False), encoding="utf-8")
        write_csv(df, tmp / "results.csv")
        write_json(doc, tmp / "results.json")
        write_html(doc, tmp / "report.html")
    return final, df

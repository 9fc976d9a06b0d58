"""`ecobench run` and ``ecobench.run()``: evaluate a scenario and write its run directory atomically.

(Named ``runner`` so that the package attribute ``ecobench.run`` stays the public function.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.prices import regional_prices
from ecobench.io.rundir import atomic_dir, target_dir
from ecobench.io.yamlio import dump_yaml
from ecobench.planning.evaluate import Evaluation, evaluate_all
from ecobench.planning.sweep_table import SweepTable
from ecobench.power.grid import grid_data_version
from ecobench.reports.emissions import write_emissions
from ecobench.reports.html import write_html
from ecobench.reports.metadata import ecobench_git_info, machine_info, now_utc
from ecobench.reports.tables import (
    CSV_SOURCES,
    RESULTS_SCHEMA_VERSION,
    csv_columns,
    csv_integers,
    key_texts,
    parquet_type,
    write_json,
    write_parquet,
    write_parquet_parts,
)
from ecobench.scenario.model import Scenario
from ecobench.version import RESULTS_KIND, __version__

if TYPE_CHECKING:
    from ecobench.table import Columns


def context(s: Scenario, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the report shows besides the rows: every region's grid intensity, the catalog sources
    of the instances used, the assumptions, and the training demonstration for emulated training."""
    from ecobench.power.carbon import grid_intensity
    from ecobench.power.scopes import describe
    from ecobench.power.uncertainty import PERCENTILES, describe_inputs
    from ecobench.units import CCF_MEMORY_KWH_PER_GB_H, CCF_NETWORK_KWH_PER_GB, CCF_SERVER_LIFESPAN_YEARS

    cat = load_catalog()
    regions = {r: grid_intensity(cat, r, s.overrides.grid_g_per_kwh).g_per_kwh for r in cat.regions}
    sources = []
    for name in dict.fromkeys(r["instance_type"] for r in rows):
        if name not in cat.instances:
            continue
        inst = cat.instances[name]
        for what, block in (("spec", inst.spec), ("price", inst.price_usd_per_h),
                            ("embodied", inst.embodied)):
            sources.append({"item": f"{name} {what}", "source": block.source, "as_of": block.as_of,
                            "inferred_from": block.inferred_from})
        if (mem := inst.spec.accelerator_memory) is not None:
            sources.append({"item": f"{name} accelerator memory", "source": mem.source,
                            "as_of": mem.as_of, "inferred_from": mem.inferred_from})
        acc = cat.accelerator_of(inst)
        if acc is not None:
            sources.append({"item": f"{acc.name} peaks", "source": acc.spec_source,
                            "as_of": acc.spec_as_of, "inferred_from": acc.spec_inferred_from})
            sources.append({"item": f"{acc.name} power", "source": acc.power.source,
                            "as_of": acc.power.as_of, "inferred_from": acc.power.inferred_from})
    assumptions = {
        "PUE": s.pue, "server lifespan (years)": CCF_SERVER_LIFESPAN_YEARS,
        "memory power (W per GB, central)": CCF_MEMORY_KWH_PER_GB_H * 1000,
        "network energy (kWh per GB leaving the instance)": CCF_NETWORK_KWH_PER_GB,
        "host CPU load at full throughput": (
            "busy vCPUs per accelerator rank / vCPUs (1 without accelerators), unless a configuration "
            "sets host_cpu_utilization"),
        "headline scope": describe(s.headline_scope, s.pue),
        "pricing": s.pricing.model + (f", {s.pricing.spot_discount_pct}% off" if s.pricing.spot_discount_pct
                                      else ""),
    }
    demo = None
    if s.workload.training and any(r["provenance"] == "emulated" for r in rows):
        from ecobench.hardware.neuron.training_demo import run_demo

        demo = run_demo()
    uncertainty = {"draws": s.uncertainty.draws, "seed": s.uncertainty.seed, "percentiles": list(PERCENTILES),
                   "inputs": describe_inputs()} if s.uncertainty.draws else None
    return {"regions_g_per_kwh": regions, "sources": sources, "assumptions": assumptions,
            "training_demo": demo, "uncertainty": uncertainty}


def price_snapshot(rows: list[dict[str, Any]]) -> str:
    """Source and date of the price snapshots the rows are priced from: the regional on-demand one,
    and the spot one where a row is priced from it (``ecobench compare`` warns when they differ)."""
    from ecobench.hardware.spot import spot_label

    out = f"{regional_prices().source} ({regional_prices().as_of})"
    spot = spot_label()
    if any(str(r.get("price_source") or "").startswith(spot) for r in rows):
        out += f"; {spot}"
    return out


def results_document(s: Scenario, rows: list[dict[str, Any]], run_id: str,
                     ev: Evaluation | None = None) -> dict[str, Any]:
    """The content of results.json: ``rows`` (every configuration; of a sweep, the rows shown),
    the recommendations and the sweep's counts."""
    from ecobench.reports.columns import json_cell
    from ecobench.reports.summary import nothing_meets
    from ecobench.table import clean

    rows = [{k: json_cell(k, clean(v)) for k, v in r.items()} for r in rows]
    decisions: dict[str, Any] = {"recommendations": ev.recommendations if ev else []}
    if ev is not None and not ev.recommendations and (missed := nothing_meets(ev, s)) is not None:
        decisions["no_recommendation"] = missed.strip()  # the terminal's line, for the report
    if ev is not None:
        from ecobench.planning.pareto import basis

        decisions["pareto"] = basis(s, ev.table)
    if ev is not None and ev.sweep is not None:
        decisions["sweep"] = ev.sweep | {"rows_in_csv": len(ev.table["config_id"])}
    return {
        "kind": RESULTS_KIND,
        "schema_version": RESULTS_SCHEMA_VERSION,
        "ecobench_version": __version__,
        "catalog_version": load_catalog().version,
        "grid_data_version": grid_data_version(),
        "price_snapshot": price_snapshot(rows),
        "run_id": run_id,
        "created_utc": now_utc(),
        "machine": machine_info(),
        "git": ecobench_git_info(),
        "mode": s.workload.mode,
        "scenario": s.model_dump(mode="json"),
        "rows": rows,
        **decisions,
        **context(s, rows),
    }


def write_run(doc: dict[str, Any], final: Path, table: Columns | None = None,
              csv_from: Path | None = None, table_format: str = "csv",
              progress: Callable[[str], None] | None = None) -> None:
    """Write the run directory ``final``: scenario.yaml (the document's resolved scenario),
    results.csv (``table``, its long texts as keys, or a copy of ``csv_from``), results.json (``doc``,
    given the keys' texts as ``csv_sources`` when ``table`` is written), emissions.csv (codecarbon's
    layout, when a configuration was measured on this host) and report.html, atomically:
    filled under a temporary name and renamed into place when complete, removed on any failure or
    interrupt. ``table_format`` ``parquet``: results.parquet instead of results.csv, the texts
    themselves in it (dictionary-encoded). ``progress`` hears how far a large sweep's table is written."""
    import shutil

    from ecobench.table import write_csv

    with atomic_dir(final) as tmp:
        (tmp / "scenario.yaml").write_text(dump_yaml(doc["scenario"]), encoding="utf-8")
        if isinstance(table, SweepTable):
            write_sweep_table(table, tmp, table_format, doc, progress)
        elif table is not None and table_format == "parquet":
            write_parquet(table, csv_columns(list(table)), tmp / "results.parquet")
        elif table is not None:
            keyed, doc[CSV_SOURCES] = key_texts(table)
            names = csv_columns(list(keyed))
            write_csv(keyed, names, tmp / "results.csv", integers=csv_integers(names))
        elif csv_from is not None:
            shutil.copyfile(csv_from, tmp / csv_from.name)
        write_json(doc, tmp / "results.json")
        write_emissions(doc, tmp / "emissions.csv")  # measured on this host only
        write_html(doc, tmp / "report.html")


def write_sweep_table(table: SweepTable, directory: Path, table_format: str, doc: dict[str, Any],
                      progress: Callable[[str], None] | None = None) -> None:
    """A sweep's table, streamed from its spill file in chunks of rows, as results.parquet or
    results.csv (its long texts as keys, their texts in ``doc``'s ``csv_sources``); ``progress`` hears
    each chunk written of a table of more than one (a million rows take about 15 s)."""
    from ecobench.planning.sweep_table import CHUNK_ROWS
    from ecobench.table import write_csv_parts

    names = csv_columns(table.names)
    name = f"results.{table_format}"

    def chunks() -> Any:
        done = 0
        for part in table.chunks(names):
            yield part
            done += len(part["config_id"])  # written once the next part is asked for
            if progress is not None and table.rows > CHUNK_ROWS and done >= CHUNK_ROWS and done < table.rows:
                progress(f"writing {name}: {done:,}/{table.rows:,} rows")

    if table_format == "parquet":
        hows = {n: parquet_type(n, table.kind(n), table.column_types(n), table.whole(n)) for n in names}
        write_parquet_parts(chunks(), names, directory / name, hows)
        return
    keys: dict[str, dict[str, str]] = {}

    def keyed() -> Any:
        for part in chunks():
            yield key_texts(part, keys)[0]

    whole = {n: table.whole(n) for n in names if table.kind(n) == "f"}
    write_csv_parts(keyed(), names, directory / "results.csv", integers=csv_integers(names), whole=whole)
    doc[CSV_SOURCES] = {k: v for mine in keys.values() for v, k in mine.items()}


def run(s: Scenario, results_root: Path, out: Path | None = None,
        progress: Callable[[str], None] | None = None, table_format: str = "csv",
        final: Path | None = None) -> tuple[Path, Evaluation]:
    """Evaluate ``s`` and write resolved scenario, results.csv (or results.parquet)/json and
    report.html.

    Nothing is written if evaluation fails; the directory appears only when complete. ``final`` is
    the run directory where the caller has already asked :func:`target_dir` for it (the CLI does, to
    refuse a bad ``--out`` before the work); else it is asked here.
    """
    if final is None:
        final = target_dir(results_root, s.name, out)
    ev = evaluate_all(s, progress=progress)
    write_run(results_document(s, ev.rows, final.name, ev), final, ev.table, table_format=table_format,
              progress=progress)
    return final, ev

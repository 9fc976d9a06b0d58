"""Maintenance: build the regional spot price snapshot ``hardware/data/spot.yaml``.

Run ``python tools/spot_build.py VMS_CSV --source TEXT --as-of DATE`` with VMS_CSV the AWS
catalog of github.com/skypilot-org/skypilot-catalog (``catalogs/v8/aws/vms.csv``: one row per instance
type and availability zone, with ``Price`` on-demand and ``SpotPrice``, USD per hour, Linux) or an
extract of its rows with the columns InstanceType, Price, SpotPrice, Region, AvailabilityZone.

A region's spot price is the median over its availability zones (the mean of the middle two for an
even count). Left out: rows with no SpotPrice, Local Zones (zone ids with a location part, such as
``use1-atl2-az1``), regions outside the catalog and instance types outside ``prices.yaml``. A zone whose
spot price equals its on-demand price (capacity short there) is kept: that is the price it showed.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from collections import defaultdict
from pathlib import Path

import yaml

from ecobench.hardware.catalog import load_catalog
from ecobench.hardware.prices import regional_prices


def is_local_zone(zone_id: str) -> bool:
    """A Local Zone or Wavelength zone id has a location part: ``usw2-lax1-az1``, not ``usw2-az1``."""
    return zone_id.count("-") > 1


def spot_prices(vms_csv: Path) -> dict[str, dict[str, float]]:
    """instance type -> region -> median spot USD/h over the region's zones."""
    wanted = set(regional_prices().prices_usd_per_h)
    regions = set(load_catalog().regions)
    zones: dict[tuple[str, str], list[float]] = defaultdict(list)
    with vms_csv.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            name, region, spot = row["InstanceType"], row["Region"], row["SpotPrice"].strip()
            if name in wanted and region in regions and spot and not is_local_zone(row["AvailabilityZone"]):
                zones[(name, region)].append(float(spot))
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, region), found in sorted(zones.items()):
        out[name][region] = round(statistics.median(found), 6)
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vms_csv", type=Path)
    ap.add_argument("--source", required=True)
    ap.add_argument("--as-of", required=True)
    args = ap.parse_args()
    found = spot_prices(args.vms_csv)
    doc = {"source": args.source, "as_of": args.as_of, "instance_types": sorted(found),
           "spot_usd_per_h": found}
    target = Path(__file__).resolve().parent / "data" / "spot.yaml"
    head = ("# Regional Linux spot prices (USD per instance-hour), a dated snapshot: written by\n"
            "# python tools/spot_build.py. A region's price is the median over its availability\n"
            "# zones (Local Zones left out); an instance type or region missing here has no spot price in\n"
            "# the snapshot. instance_types: the types the snapshot covers.\n")
    target.write_text(head + yaml.safe_dump(doc, sort_keys=False, width=110), encoding="utf-8")
    print(f"wrote {target}: {len(found)} instance types, "
          f"{sum(len(v) for v in found.values())} instance-region prices")


if __name__ == "__main__":
    main()

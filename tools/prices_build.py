"""Maintenance: build the regional on-demand price snapshot ``hardware/data/prices.yaml``.

Run ``python tools/prices_build.py DIR --source TEXT --as-of DATE`` with DIR a folder of
``<family>_instances.js`` files of the github.com/tsaol/aws-gpu data set (generated from
instances.vantage.sh, which reads the AWS Price List API; Linux on-demand, USD per hour). Only the
catalog's instance types are kept.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from ecobench.hardware.catalog import load_catalog


def read_family(path: Path) -> list[dict[str, Any]]:
    """The instance objects of one ``var instanceData = [...]`` file."""
    text = path.read_text(encoding="utf-8")
    data: list[dict[str, Any]] = json.loads(text[text.index("["):text.rindex("]") + 1])
    return data


def prices(folder: Path) -> dict[str, dict[str, float]]:
    """instance type -> region -> on-demand USD/h, for the catalog's instance types and commercial
    regions (Local Zones, GovCloud and China are left out)."""
    cat = load_catalog()
    wanted, regions = set(cat.instances), set(cat.regions)
    out: dict[str, dict[str, float]] = {}
    for f in sorted(folder.glob("*_instances.js")):
        if f.stem.endswith("_cn"):
            continue  # China regions are a separate partition
        for inst in read_family(f):
            got = {r: float(p["onDemand"]) for r, p in sorted(inst["pricing"].items())
                   if p.get("onDemand") and r in regions}
            if inst["name"] in wanted and got:
                out[inst["name"]] = got
    return dict(sorted(out.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--source", required=True)
    ap.add_argument("--as-of", required=True)
    args = ap.parse_args()
    doc = {"source": args.source, "as_of": args.as_of, "prices_usd_per_h": prices(args.folder)}
    target = Path(__file__).resolve().parent / "data" / "prices.yaml"
    head = ("# Regional Linux on-demand prices (USD per instance-hour), a dated snapshot: written by\n"
            "# python tools/prices_build.py. A region's price in instances.yaml, where present,\n"
            "# takes precedence (the seed scenarios were published with those).\n")
    target.write_text(head + yaml.safe_dump(doc, sort_keys=False, width=110), encoding="utf-8")
    print(f"wrote {target}: {len(doc['prices_usd_per_h'])} instance types")


if __name__ == "__main__":
    main()

"""Reports: results.csv, results.json and report.html for a run."""

from ecobench.reports.html import render, write_html
from ecobench.reports.tables import CORE_COLUMNS, RESULTS_SCHEMA_VERSION, read_results, records

__all__ = ["CORE_COLUMNS", "RESULTS_SCHEMA_VERSION", "read_results", "records", "render", "write_html"]

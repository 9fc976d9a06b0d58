"""The scenario's 24-hour load profile (``workload.inference.profile``, ``workload.serving.profile``).

Exactly one of:

* ``rates_per_h``: 24 hourly rates (inferences or requests per hour), hour 0 first;
* ``multipliers``: 24 multiples of the workload's own rate (``rate_per_h`` or ``requests_per_h``):
  hour h runs at ``rate x multipliers[h]``; they are not normalised, so write 1 at the peak to make
  the workload's rate the peak, or make them average 1 to make it the mean;
* ``csv``: a local CSV file (relative to the scenario file) with an ``hour`` column (0-23, each
  once) and a ``rate_per_h`` or ``requests_per_h`` column; read once, when the scenario is loaded.

``autoscale`` says how the autoscaled fleet follows the profile (defaults: ``lag_h: 1``,
``min_instances: 1``). Each hour's load is taken as even within the hour.
"""

import csv
import io
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Self

from pydantic import Field, field_validator, model_validator

from ecobench import bounds as b
from ecobench.errors import InputError
from ecobench.scenario.base import SchemaModel

HOURS = 24
RATE_COLUMNS = ("rate_per_h", "requests_per_h")
MAX_CSV_BYTES = 1 << 20  # 24 rows: anything near a megabyte is not a profile
MAX_CSV_ROWS = 1_000  # 24 rows and comments: a thousand is no profile
MIN_HOURLY_RATE_PER_H = 1e-3  # the workload rate's own floor (bounds.RatePerH); an hour may also be 0
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ .()/%-]{0,39}")  # what a column name is shown as


_Model = SchemaModel  # unknown fields refused, frozen, no boolean where a number goes


class AutoscaleSpec(_Model):
    """How the autoscaled fleet follows the profile."""

    lag_h: b.LagH = Field(
        1, description="hours a scale-up takes: the fleet of hour h is sized for the busiest of hours "
                       "h to h + lag_h (the day repeats), so capacity is there before the load")
    min_instances: b.MinInstances = Field(
        1, description="fewest instances the autoscaled fleet keeps (0: scale to zero in idle hours)")


class ProfileSpec(_Model):
    """A 24-hour rate profile: rates, multiples of the workload's rate, or a CSV file."""

    rates_per_h: list[b.HourlyRatePerH] | None = Field(
        None, min_length=HOURS, max_length=HOURS, description="24 hourly rates (per hour), hour 0 first")
    multipliers: list[b.RateMultiplier] | None = Field(
        None, min_length=HOURS, max_length=HOURS,
        description="24 multiples of the workload's rate: hour h runs at rate x multipliers[h] "
                    "(not normalised: 1 at the peak makes the rate the peak)")
    csv: str | None = Field(
        None, description="local CSV (relative to the scenario file): columns hour (0-23) and rate_per_h "
                          "or requests_per_h")
    autoscale: AutoscaleSpec = Field(AutoscaleSpec(), description="scale-up lag and fleet floor")

    @field_validator("rates_per_h", "multipliers", mode="before")
    @classmethod
    def _one_per_hour(cls, values: object) -> object:
        """A list of other than 24 values, said as 'exactly 24' (the length bound alone says 'at least
        24' of 23 values, 'at most 24' of 25)."""
        if isinstance(values, list) and len(values) != HOURS:
            raise ValueError(f"has {len(values)} items; allowed: exactly {HOURS}, one per hour, hour 0 first")
        return values

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        given = [f for f in ("rates_per_h", "multipliers", "csv") if getattr(self, f) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of rates_per_h (24 rates), multipliers (24 multiples of the "
                             f"workload's rate) or csv (a file); got {', '.join(given) or 'none'}")
        values = self.rates_per_h or self.multipliers
        if values is not None and not any(v > 0 for v in values):
            raise ValueError(f"{given[0]}: every hour is 0; at least one hour must carry load")
        return self

    def hourly(self, rate_per_h: float) -> list[float]:
        """The 24 hourly rates (``rate_per_h``: the workload's own rate, for ``multipliers``)."""
        if self.multipliers is not None:
            return [rate_per_h * m for m in self.multipliers]
        assert self.rates_per_h is not None, "a csv profile is read when the scenario is loaded"
        return list(self.rates_per_h)


def rates_line(row: dict[str, str], rate_col: str, line: int, at: str, rates: dict[int, float],
               snippet: Callable[[str], str]) -> None:
    """Check one CSV row and add its hour's rate to ``rates``; values are echoed at most 40
    characters long."""
    try:
        hour_f, rate = float(row["hour"]), float(row[rate_col])
    except ValueError:
        raise InputError(f"{at}: line {line}: hour {snippet(row['hour'])} and {rate_col} "
                         f"{snippet(row[rate_col])} must be numbers") from None
    if not hour_f.is_integer() or not 0 <= hour_f < HOURS:
        raise InputError(f"{at}: line {line}: hour {snippet(row['hour'])} must be a whole hour 0 to 23")
    hour = int(hour_f)
    if hour in rates:
        raise InputError(f"{at}: line {line}: hour {hour} appears twice (each hour 0-23 once)")
    if not math.isfinite(rate) or not (rate == 0 or MIN_HOURLY_RATE_PER_H <= rate <= 1e12):
        raise InputError(f"{at}: line {line}: {rate_col} {snippet(row[rate_col])} must be 0 (a quiet hour) "
                         "or 0.001 to 10^12 per hour")
    rates[hour] = rate


def read_profile_csv(path: Path, where: str) -> list[float]:
    """The 24 hourly rates of a profile CSV; :class:`InputError` naming ``where``, the file and what
    is wrong otherwise."""
    from ecobench.io.bounded import read_text, snippet

    at = f"{where}: {path}"
    try:
        text = read_text(path, MAX_CSV_BYTES, "load-profile CSV")
    except InputError as exc:
        raise InputError(f"{where}: {exc} (a CSV with columns hour and {' or '.join(RATE_COLUMNS)}, "
                         "relative to the scenario file)") from None
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise InputError(f"{at}: not a CSV file ({exc})") from None
    columns = [c.strip() for c in header]
    rate_col = next((c for c in RATE_COLUMNS if c in columns), None)
    if "hour" not in columns or rate_col is None:
        missing = "hour" if "hour" not in columns else " or ".join(RATE_COLUMNS)
        names = [c for c in columns if _NAME.fullmatch(c)][:10]
        found = (f"columns found: {', '.join(names)}" if names and len(names) == len(columns)
                 else "its first line is not a CSV header of column names")
        raise InputError(f"{at}: missing column {missing} ({found}; "
                         f"needed: hour and {' or '.join(RATE_COLUMNS)})")
    if all(c in columns for c in RATE_COLUMNS):  # which one the file means cannot be told
        raise InputError(f"{at}: both {' and '.join(RATE_COLUMNS)} columns; allowed: one of them (the "
                         "rate of each hour, per hour)")
    rates: dict[int, float] = {}
    try:
        for line, raw in enumerate(reader, 2):
            if line > MAX_CSV_ROWS:
                raise InputError(f"{at}: more than {MAX_CSV_ROWS:,} lines; a profile has 24 rows")
            if None in raw:
                raise InputError(f"{at}: line {line}: more fields than the header's {len(header)} columns")
            if any(v is None for v in raw.values()):
                raise InputError(f"{at}: line {line}: fewer fields than the header's {len(header)} columns")
            row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
            rates_line(row, rate_col, line, at, rates, snippet)
    except csv.Error as exc:
        raise InputError(f"{at}: not a CSV file ({exc})") from None
    missing_hours = [h for h in range(HOURS) if h not in rates]
    if missing_hours:
        raise InputError(f"{at}: no row for hour {', '.join(map(str, missing_hours))} (each hour 0-23 once)")
    if not any(rates.values()):
        raise InputError(f"{at}: every hour is 0; at least one hour must carry load")
    return [rates[h] for h in range(HOURS)]


def resolve_profile(p: ProfileSpec, rate_per_h: float, base_dir: Path | None, where: str) -> ProfileSpec:
    """The profile with its CSV read (path made absolute, rates kept in ``rates_per_h``), and its
    hourly rates checked against the rate bound."""
    if p.csv is not None:
        from ecobench.io.bounded import check_path

        check_path(p.csv, f"{where}.csv")
        path = Path(p.csv) if Path(p.csv).is_absolute() or base_dir is None else base_dir / p.csv
        from ecobench.io.bounded import resolve_path

        p = p.model_copy(update={"csv": str(resolve_path(path, f"{where}.csv")),
                                 "rates_per_h": read_profile_csv(path, f"{where}.csv")})
    hourly = p.hourly(rate_per_h)
    peak = max(hourly)
    if tiny := [h for h, r in enumerate(hourly) if 0 < r < MIN_HOURLY_RATE_PER_H]:
        raise InputError(f"{where}: hour {tiny[0]}'s rate {hourly[tiny[0]]:.3g} per hour is above 0 but "
                         f"below {MIN_HOURLY_RATE_PER_H:g}; allowed: 0 (a quiet hour) or "
                         f"{MIN_HOURLY_RATE_PER_H:g} to 10^12 per hour")
    if peak > 1e12:
        raise InputError(f"{where}: the busiest hour's rate {peak:.3g} per hour exceeds 10^12 (lower the "
                         "multipliers or the workload's rate)")
    return p

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
from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ecobench.errors import InputError
from ecobench.scenario import bounds as b

HOURS = 24
RATE_COLUMNS = ("rate_per_h", "requests_per_h")
MAX_CSV_BYTES = 1 << 20  # 24 rows: anything near a megabyte is not a profile


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


def read_profile_csv(path: Path, where: str) -> list[float]:
    """The 24 hourly rates of a profile CSV; :class:`InputError` naming ``where``, the file and what
    is wrong otherwise."""
    at = f"{where}: {path}"
    if not path.is_file():
        raise InputError(f"{at}: no such file (a CSV with columns hour and "
                         f"{' or '.join(RATE_COLUMNS)}, relative to the scenario file)")
    if path.stat().st_size > MAX_CSV_BYTES:
        raise InputError(f"{at}: larger than {MAX_CSV_BYTES} bytes; a profile has 24 rows")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{at}: cannot be read as UTF-8 text ({exc.__class__.__name__})") from None
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip() for c in reader.fieldnames or []]
    rate_col = next((c for c in RATE_COLUMNS if c in columns), None)
    if "hour" not in columns or rate_col is None:
        missing = "hour" if "hour" not in columns else " or ".join(RATE_COLUMNS)
        raise InputError(f"{at}: missing column {missing} (columns found: {', '.join(columns) or 'none'}; "
                         f"needed: hour and {' or '.join(RATE_COLUMNS)})")
    rates: dict[int, float] = {}
    for line, raw in enumerate(reader, 2):
        row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
        try:
            hour_f, rate = float(row["hour"]), float(row[rate_col])
        except ValueError:
            raise InputError(f"{at}: line {line}: hour {row['hour']!r} and {rate_col} {row[rate_col]!r} must "
                             "be numbers") from None
        if not hour_f.is_integer() or not 0 <= hour_f < HOURS:
            raise InputError(f"{at}: line {line}: hour {row['hour']} must be a whole hour 0 to 23")
        hour = int(hour_f)
        if hour in rates:
            raise InputError(f"{at}: line {line}: hour {hour} appears twice (each hour 0-23 once)")
        if not math.isfinite(rate) or not 0 <= rate <= 1e12:
            raise InputError(f"{at}: line {line}: {rate_col} {row[rate_col]} must be 0 to 10^12 per hour")
        rates[hour] = rate
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
        path = Path(p.csv) if Path(p.csv).is_absolute() or base_dir is None else base_dir / p.csv
        p = p.model_copy(update={"csv": str(path.resolve()),
                                 "rates_per_h": read_profile_csv(path, f"{where}.csv")})
    peak = max(p.hourly(rate_per_h))
    if peak > 1e12:
        raise InputError(f"{where}: the busiest hour's rate {peak:.3g} per hour exceeds 10^12 (lower the "
                         "multipliers or the workload's rate)")
    return p

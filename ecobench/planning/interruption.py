"""Re-run overhead of spot interruptions: how many more instance-hours a spot plan needs.

Frequency: the AWS Spot Instance Advisor (https://aws.amazon.com/ec2/spot/instance-advisor/) gives, per
instance type and region, the share of spot instances interrupted in the trailing month, in bands <5%,
5-10%, 10-15%, 15-20% and >20%, and says the average over all regions and instance types "has
historically been <5%". No dated per-instance copy of those bands is packaged, so the default is that
average at its upper edge (5% a month); ``pricing.spot_interruption_pct_per_month`` takes the Advisor's
band for the instance instead. A month is 730.5 h (8,766 h a year / 12), so an instance is interrupted
``pct / 100 / 730.5`` times an hour.

- Training (one synchronous job): any instance's interruption stops the whole cluster, which loses the
  work since the last checkpoint (half an interval on average) and waits ``restart_h`` for a replacement
  and the checkpoint reload. Overhead = ``n * rate_per_h * (checkpoint_interval_h / 2 + restart_h)`` of
  the run time (first order in the interruptions; checkpoint writing itself is not counted).
- Inference and serving (a fleet): capacity is reclaimed in bursts (an instance type in a zone at
  once), so the fleet keeps headroom equal to the interrupted share, ``pct / 100`` of its instance-hours,
  as extra spot instances or on-demand capacity; they are counted at the fleet's draw (an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecobench.units import (  # noqa: F401 - the defaults are this module's too
    DEFAULT_CHECKPOINT_INTERVAL_H,
    DEFAULT_INTERRUPTION_PCT_PER_MONTH,
    DEFAULT_RESTART_H,
    HOURS_PER_YEAR,
)

HOURS_PER_MONTH = HOURS_PER_YEAR / 12


@dataclass(frozen=True)
class SpotTerms:
    """What the overhead needs: how often instances are reclaimed and what an interruption costs."""

    interruption_pct_per_month: float
    checkpoint_interval_h: float
    restart_h: float

    @property
    def rate_per_instance_h(self) -> float:
        """Interruptions per instance-hour."""
        return self.interruption_pct_per_month / 100.0 / HOURS_PER_MONTH


def training_overhead(terms: SpotTerms, instances: float) -> float:
    """Extra run time of a training job on ``instances`` spot instances, as a fraction."""
    return instances * terms.rate_per_instance_h * (terms.checkpoint_interval_h / 2 + terms.restart_h)


def fleet_overhead(terms: SpotTerms) -> float:
    """Extra instance-hours of an inference or serving fleet on spot, as a fraction (its headroom)."""
    return terms.interruption_pct_per_month / 100.0

"""Re-run overhead of spot interruptions: how many more instance-hours a spot plan needs.

Frequency: the AWS Spot Instance Advisor (https://aws.amazon.com/ec2/spot/instance-advisor/) gives, per
instance type and region, the share of spot instances interrupted in the trailing month, in bands <5%,
5-10%, 10-15%, 15-20% and >20%, and says the average over all regions and instance types "has
historically been <5%". No dated per-instance copy of those bands is packaged, so the default is that
average at its upper edge (5% a month); ``pricing.spot_interruption_pct_per_month`` takes the Advisor's
band for the instance instead. A month is 730.5 h (8,766 h a year / 12), so an instance is interrupted
``pct / 100 / 730.5`` times an hour.

- Training (one synchronous job): any instance's interruption stops the whole cluster, which loses the
  work since the last checkpoint and waits ``restart_h`` for a replacement and the checkpoint reload.
  The cluster is interrupted at ``lam = n * rate_per_h`` (a Poisson stream); a checkpoint interval of
  work ``tau`` then takes ``(1 / lam + restart_h) * (exp(lam * tau) - 1)`` hours on average (the
  renewal result: each attempt fails before ``tau`` with probability ``1 - exp(-lam * tau)``), so the
  overhead is that over ``tau``, less 1. To first order, ``lam * (tau / 2 + restart_h)``: half an
  interval lost per interruption; beyond it (a large cluster, a long interval, a high rate) an
  interruption also strikes the interval's re-run, which the first-order form left out (1,000 instances
  at 20% a month, hourly checkpoints: 22.9% against 20.5%; at 100% a month, 187% against 103%).
  Checkpoint writing itself is not counted.
- Inference and serving (a fleet): capacity is reclaimed in bursts (an instance type in a zone at
  once), so the fleet keeps headroom equal to the interrupted share, ``pct / 100`` of its instance-hours,
  as extra spot instances or on-demand capacity; they are counted at the fleet's draw (an upper bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ecobench.units import (  # noqa: F401 - the defaults are this module's too
    DEFAULT_CHECKPOINT_INTERVAL_H,
    DEFAULT_INTERRUPTION_PCT_PER_MONTH,
    DEFAULT_RESTART_H,
    HOURS_PER_YEAR,
)

HOURS_PER_MONTH = HOURS_PER_YEAR / 12
MAX_EXPONENT = 700.0  # exp(700) is near the largest float (exp(709.8))
# A spot training run expected to take more than 101 times its on-demand time is no plan (bad input):
# the cluster is interrupted many times in each checkpoint interval.
MAX_TRAINING_OVERHEAD = 100.0


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
    """Extra run time of a training job on ``instances`` spot instances, as a fraction: the expected
    time to finish a checkpoint interval's work over the interval, less 1 (the module's docstring)."""
    lam = instances * terms.rate_per_instance_h
    tau = terms.checkpoint_interval_h
    x = lam * tau
    if x == 0:
        return 0.0
    if x > MAX_EXPONENT:  # exp(x) overflows a float: the run never ends
        return math.inf
    # (1/lam + restart) * expm1(x) / tau - 1 = (expm1(x) - x) / x + restart * expm1(x) / tau, the first
    # term by its series where the subtraction would lose digits
    lost = (math.expm1(x) - x) / x if x > 1e-4 else x / 2 + x * x / 6 + x**3 / 24
    return lost + terms.restart_h * math.expm1(x) / tau


def fleet_overhead(terms: SpotTerms) -> float:
    """Extra instance-hours of an inference or serving fleet on spot, as a fraction (its headroom)."""
    return terms.interruption_pct_per_month / 100.0

"""Constants and unit conversions, in one place. Sources are given beside each assumption."""

from __future__ import annotations

from typing import Any

SECONDS_PER_HOUR = 3600.0
HOURS_PER_YEAR = 8766.0  # 365.25 days
W_PER_KW = 1000.0
GB_PER_GIB = 1.073741824
GIB = 2**30  # bytes
BYTES_PER_GB = 1e9
BITS_PER_BYTE = 8
LB_PER_KG = 2.20462262185
MILLION = 1_000_000

# int4 is a storage type only (weight-only quantization, W4A16): no chip computes in it here.
BYTES_PER_DTYPE: dict[str, float] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1,
                                     "int4": 0.5}
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")  # compute types

# Cloud Carbon Footprint methodology (https://www.cloudcarbonfootprint.org/docs/methodology/, 2021-12).
CCF_MEMORY_KWH_PER_GB_H = 0.000392
CCF_AWS_PUE = 1.135
CCF_NETWORK_KWH_PER_GB = 0.001
CCF_SERVER_LIFESPAN_YEARS = 4.0

# Host CPU load the backends report in Utilization.cpu when a configuration sets none. The power
# model does not use it: the draw model derives host load from the ranks the host feeds
# (power/draw.py, power/data/power_model.yaml); only the earlier full-draw path (a Context without a
# PowerSetup) still reads it.
DEFAULT_HOST_CPU_UTILIZATION = 1.0

# Bytes a request and its response carry over the network (one document page of tokens + boxes,
# int64 ids, and the pooled output); small next to compute, kept explicit rather than zero.
DEFAULT_REQUEST_BYTES_PER_TOKEN = 8 * 5
FLOAT_EPS = 1e-9


def gib_to_gb(gib: float) -> float:
    """Convert GiB to GB (10^9 bytes)."""
    return gib * GB_PER_GIB


def lb_per_mwh_to_g_per_kwh(lb_per_mwh: float) -> float:
    """Convert an emission rate in lb/MWh (eGRID) to g/kWh."""
    return lb_per_mwh / LB_PER_KG  # lb/MWh -> kg/MWh == g/kWh

# Latency of one step of a ring collective across instances, over EFA: the Neuron runtime docs give
# "the per-hop or point-to-point latency is ~15us" (aws-neuron-sdk, neuron-runtime/explore/
# internode-collective-comm.rst, 2026-08); taken for every instance network. It matters only for
# small collectives, which the bandwidth term dominates in training.
NETWORK_STEP_LATENCY_US = 15.0
# Measurement quality (ecobench/measure/hostload.py). A measured row is flagged as not reproducible
# when other processes use more than MAX_OTHER_CPU_PCT of the host's CPU capacity before or while
# measuring, or its per-window throughput varies more than MAX_THROUGHPUT_CV_PCT. 5% CV is the
# noise the gate is sized for: at 10 repetitions it keeps false failures under 5% and catches a
# 10% regression over 90% of the time (tests/integration/test_gate.py). 10% of the CPU is one busy core on a
# 10-core host and a fifth of a core on a 2-core one; an idle host's daemons stay well under it.
MAX_OTHER_CPU_PCT = 10.0
MAX_THROUGHPUT_CV_PCT = 5.0
LOAD_PROBE_S = 1.0  # reading the host's load before warming up

# The emulated backend runs one encoder layer in the configuration's number format to report its
# numeric error; above this much memory it reports no error instead of exhausting the host.
EMULATED_NUMERICS_MAX_BYTES = 1 << 30


# Spot interruptions (planning/interruption.py): AWS Spot Instance Advisor, the scenario's defaults.
DEFAULT_INTERRUPTION_PCT_PER_MONTH = 5.0  # the Advisor's all-region average, "<5%", at its upper edge
DEFAULT_CHECKPOINT_INTERVAL_H = 1.0  # assumed: an hourly checkpoint
DEFAULT_RESTART_H = 0.25  # assumed: a replacement instance, start-up and checkpoint reload in 15 minutes


def per_output_token(figures: dict[str, Any], tokens: float) -> dict[str, Any]:
    """Per output token, from a plan's figures (floats, or arrays of draws): energy in J at the
    facility, accelerator and IT scopes, cost in USD and CO2 in g per million tokens."""
    j_per_kwh = SECONDS_PER_HOUR * W_PER_KW
    return {"energy_j_per_output_token": figures["energy_kwh"] * j_per_kwh / tokens,
            "cost_usd_per_million_output_tokens": figures["cost_usd"] / tokens * MILLION,
            "co2_g_per_million_output_tokens": figures["co2_kg"] * 1000 / tokens * MILLION,
            "energy_accelerator_j_per_output_token": figures["energy_accelerator_kwh"] * j_per_kwh / tokens,
            "energy_it_j_per_output_token": figures["energy_it_kwh"] * j_per_kwh / tokens}


def whole(need: Any) -> Any:
    """Fewest whole instances covering ``need`` (at least one), elementwise; a float for a scalar."""
    import numpy as np

    n = np.maximum(1.0, np.ceil(need - FLOAT_EPS * np.maximum(1.0, need)))
    return float(n) if np.ndim(n) == 0 else n

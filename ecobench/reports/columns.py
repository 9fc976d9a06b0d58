"""The results data dictionary: every column a results row can hold, with its unit and meaning.

``COLUMNS`` names each column once; ``PATTERNS`` describes the families of columns made from others
(90% bands ``<column>_low`` / ``<column>_high``, sweep coordinates ``sweep_<field>``). ``docs/results.md``
and ``docs/schemas/results.schema.json`` are generated from this module (``tools/results_docs.py``) and
the tests check that every column ecobench writes is named here.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ecobench.table import CHANGE_METRICS

__all__ = ["CHANGES", "COLUMNS", "FOOTPRINT", "JSON_TYPES", "PATTERNS", "Pattern", "TOP_LEVEL", "describe",
           "is_footprint", "json_type"]

# <metric>_change_pct: against the baseline row, (this / baseline - 1) x 100: the inverse of the one
# change map (ecobench.table.CHANGE_METRICS), short name -> figure.
CHANGES = {short: col for col, short in CHANGE_METRICS.items()}
STATS = (("mean", "mean"), ("p50", "median"), ("p90", "90th percentile"), ("p95", "95th percentile"),
         ("p99", "99th percentile"))

_COLUMNS: dict[str, tuple[str, str]] = {
    # identity and provenance
    "config_id": ("", "the configuration's id in the scenario (`configs[].id`, or made from the sweep)"),
    "instance_type": ("", "EC2 instance type, or `local` for the measured host"),
    "accelerator": ("", "accelerator chip of the instance (`none` without one)"),
    "accelerator_count": ("count", "accelerator chips per instance"),
    "lnc": ("NeuronCores", "Trainium2 (trn2) only: the logical NeuronCore setting planned at, physical "
                           "NeuronCores per rank (`configs[].lnc`, else the chip's default, 2); absent on "
                           "chips without the setting"),
    "backend": ("", "what gave the throughput: analytic, emulated, reference (measured) or supplied"),
    "precision": ("", "numeric format of weights and activations (fp32, bf16, fp16, fp8, ...)"),
    "provenance": ("", "how the throughput is known: estimated, emulated, measured, projected or supplied"),
    "method": ("", "the backend's own account of how the throughput was obtained"),
    "region": ("", "AWS region whose price and grid intensity are used"),
    "grid_source": ("", "source of the region's grid carbon intensity"),
    "grid_year": ("year", "year of the grid carbon intensity figure"),
    "price_source": ("", "source and date of the instance price (or why cost is empty)"),
    "numeric_error": ("relative", "emulated: relative error of one layer in this precision against FP32"),
    "is_baseline": ("", "true for the scenario's baseline configuration"),
    "headline_scope": ("", "energy scope the terminal and report lead with: accelerator, it or facility"),
    "draw_basis": ("", "what the accelerator's activity (and so its power draw) is taken from"),
    "power_model": ("", "where the scenario gives power_points: the power model refitted with them (its "
                        "draws before and after, the held-out error with and without them); absent: the "
                        "packaged model"),
    "power_basis": ("", "how draw becomes energy in this row's power and energy figures: modelled (the draw "
                        "model at the work done), tdp (the footprint convention: accelerator device-hours "
                        "x datasheet TDP x PUE, no host share) or measured (a supplied measured_power_w, or "
                        "the measuring backend's own meters)"),
    # plan
    "instances": ("count", "instances in the fleet or cluster"),
    "instances_needed": ("count", "inference: fractional instances the rate needs at the utilisation cap"),
    "load": ("fraction", "share of each instance's capacity in use (1 while training)"),
    "throughput_per_instance_per_s": ("per s", "samples (sequences, inferences or requests) per "
                                               "instance-second"),
    "throughput_ratio": ("ratio", "throughput per instance over the baseline's"),
    "duration_h": ("h", "wall time of the job (training) or the horizon (inference, serving)"),
    "deadline_h": ("h", "training: the scenario's deadline"),
    "meets_deadline": ("", "training: true when duration_h is within deadline_h"),
    "instance_hours": ("h", "instances x duration_h"),
    "inferences": ("count", "inference: requests over the horizon (rate_per_h x horizon_h)"),
    "sequences": ("count", "training: sequences processed over all phases"),
    "sequences_per_h": ("per h", "training: sequences per hour of the whole cluster"),
    "tokens": ("count", "training: tokens processed over all phases"),
    "global_batch_size": ("sequences", "training: sequences per optimizer step"),
    "latency_p99_ms": ("ms", "inference with a latency target: 99th-percentile request latency"),
    # power, energy, cost, CO2
    "power_w": ("W", "draw per instance at the facility (IT x PUE) at the planned load"),
    "power_accelerator_w": ("W", "accelerators' draw per instance"),
    "power_cpu_w": ("W", "host CPU draw per instance"),
    "power_memory_w": ("W", "host memory draw per instance"),
    "power_network_w": ("W", "network draw per instance"),
    "power_overhead_w": ("W", "facility overhead per instance: (PUE - 1) x IT draw"),
    "energy_kwh": ("kWh", "energy at the facility (instances and PUE overhead) over duration_h"),
    "energy_it_kwh": ("kWh", "energy of the instances, without the facility overhead"),
    "energy_accelerator_kwh": ("kWh", "energy of the accelerators alone"),
    "price_usd_per_h": ("USD/h", "price of one instance-hour (on-demand or spot); null without a "
                                          "sourced price"),
    "cost_usd": ("USD", "instance_hours x price_usd_per_h; null without a sourced price"),
    "grid_g_per_kwh": ("gCO2e/kWh", "grid carbon intensity of the region"),
    "co2_operational_kg": ("kgCO2e", "energy_kwh x grid intensity"),
    "co2_embodied_kg": ("kgCO2e", "manufacturing emissions of the hardware, amortised over instance_hours"),
    "co2_kg": ("kgCO2e", "operational + embodied, facility scope"),
    "co2_it_kg": ("kgCO2e", "operational at the IT scope + embodied"),
    "co2_accelerator_kg": ("kgCO2e", "operational at the accelerator scope + embodied"),
    "energy_kwh_per_million": ("kWh per million", "inference: energy per million inferences"),
    "cost_usd_per_million": ("USD per million", "inference: cost per million inferences"),
    "co2_kg_per_million": ("kgCO2e per million", "inference: CO2 per million inferences"),
    # training layout
    "tensor_parallel": ("ranks", "training: tensor-parallel degree"),
    "pipeline_parallel": ("stages", "training: pipeline-parallel stages"),
    "data_parallel": ("replicas", "training: data-parallel replicas"),
    "zero_stage": ("", "training: ZeRO stage (0 to 3)"),
    "context_parallel": ("ranks", "training: context-parallel degree (ranks that split each sequence)"),
    "offload": ("", "training: where the optimizer state lives (none: the device, cpu: host memory, nvme)"),
    "recompute": ("", "training: activation recomputation (none, selective, full)"),
    "microbatch": ("sequences", "training: micro-batch per rank"),
    "memory_per_device_gib": ("GiB", "memory per accelerator rank (weights, state, activations)"),
    "mfu": ("fraction", "model FLOPs utilisation: model FLOPs over the cluster's peak, time-weighted"),
    "comm_overhead_pct": ("%", "training: share of the step spent in exposed communication"),
    "layout_choice": ("", "why this layout (or serving plan) was chosen"),
    "pipeline_schedule": ("", "training: pipeline schedule (1f1b, interleaved, zero-bubble)"),
    "virtual_stages": ("stages", "training: model chunks per pipeline rank (interleaved; 1 otherwise)"),
    "expert_parallel": ("ranks", "training: expert-parallel degree (mixture-of-experts; 1 for dense models)"),
    "idle_devices": ("ranks", "training: ranks (GPUs or NeuronCores) the layout leaves idle; they draw idle "
                              "power"),
    # serving
    "requests": ("count", "serving: requests over the horizon"),
    "output_tokens": ("count", "serving: output tokens over the horizon"),
    "output_tokens_per_s_per_instance": ("tokens/s", "serving: output tokens per instance-second at "
                                                     "the rate"),
    "energy_j_per_output_token": ("J/token", "serving: energy per output token at the facility scope "
                                             "(energy_kwh over output_tokens), whatever headline_scope says"),
    "energy_it_j_per_output_token": ("J/token", "serving: energy per output token at the IT scope "
                                                "(energy_it_kwh over output_tokens: no PUE overhead)"),
    "energy_accelerator_j_per_output_token": ("J/token", "serving: energy per output token of the "
                                                         "accelerators alone (energy_accelerator_kwh over "
                                                         "output_tokens)"),
    "cost_usd_per_million_output_tokens": ("USD per million tokens", "serving: cost per million output "
                                                                     "tokens; null without a sourced price"),
    "co2_g_per_million_output_tokens": ("gCO2e per million tokens", "serving: CO2 per million output tokens "
                                        "at the facility scope (co2_kg over output_tokens: operational and "
                                        "embodied), whatever headline_scope says"),
    "co2_it_g_per_million_output_tokens": ("gCO2e per million tokens", "serving: CO2 per million output "
                                           "tokens at the IT scope (co2_it_kg over output_tokens: no PUE "
                                           "overhead; embodied included)"),
    "co2_accelerator_g_per_million_output_tokens": ("gCO2e per million tokens", "serving: CO2 per million "
                                                    "output tokens of the accelerators alone "
                                                    "(co2_accelerator_kg over output_tokens; embodied "
                                                    "included)"),
    "replicas": ("count", "serving: model replicas in the fleet"),
    "replicas_per_instance": ("count", "serving: replicas on one instance"),
    "batch": ("requests", "serving: mean requests in flight per replica"),
    "max_batch": ("requests", "serving: most requests in flight per replica (memory for the KV cache)"),
    **{f"ttft_ms_{s}": ("ms", f"serving: time to first token, {what}") for s, what in STATS},
    **{f"tpot_ms_{s}": ("ms", f"serving: time per output token after the first (per request: (end - first "
                              f"token) / (output tokens - 1), as vLLM's benchmark computes it), {what}")
       for s, what in STATS},
    "scheduler": ("", "serving: continuous (chunked prefill), static or disaggregated"),
    "weight_precision": ("", "serving: how the weights are stored (the quantization's type, "
                             "weight_precision, else precision)"),
    "kv_cache_precision": ("", "serving: the key/value cache's data type (kv_cache_precision, else "
                               "precision)"),
    "prefill_replicas": ("count", "serving, disaggregated: replicas in the prefill pool"),
    "decode_replicas": ("count", "serving, disaggregated: replicas in the decode pool"),
    "slo": ("", "serving, and inference with a latency target: each target, planned value, meets / misses"),
    "accelerator_activity": ("fraction", "serving: share of the time the accelerators work"),
    # backends
    "measurement_method": ("", "measured: how throughput was measured (null when not measured)"),
    "power_method": ("", "measured: how power was measured"),
    "energy_provenance": ("", "measured: where the energy figure comes from"),
    "cpu_power_fallback": ("", "measured: true when codecarbon found no CPU energy counter (no RAPL) and "
                               "modelled the CPU's power from its TDP (x load); null when energy was not "
                               "tracked"),
    "throughput_ci95_low": ("per s", "measured: 95% confidence interval of the throughput, low end"),
    "throughput_ci95_high": ("per s", "measured: 95% confidence interval of the throughput, high end"),
    "throughput_cv_pct": ("%", "measured: coefficient of variation of the repetitions"),
    "host_other_cpu_pct_before": ("%", "measured: CPU used by other processes before the measurement"),
    "host_other_cpu_pct_during": ("%", "measured: CPU used by other processes during the measurement"),
    "measurement_warnings": ("", "measured: why the measurement may not be reproducible (`; `-separated)"),
    "repetitions": ("count", "measured: timed repetitions"),
    "window_start_utc": ("ISO 8601", "measured: start of the measurement window"),
    "window_end_utc": ("ISO 8601", "measured: end of the measurement window"),
    "host_gemm_tflops": ("TFLOP/s", "measured: the host's matrix-multiply throughput (MFU denominator)"),
    "samples_basis": ("", "measured: how per-repetition samples were planned (fractional or planned "
                          "instances)"),
    "samples": ("", "measured: per-repetition figures the regression gate tests (results.json only)"),
    "energy_windows": ("", "measured: each energy window's duration_s and mean accelerator_w, cpu_w and "
                           "memory_w as codecarbon read them; emissions.csv's rows (results.json only)"),
    "kernels": ("", "emulated: time, engine and utilisation per kernel (results.json only)"),
    "engine_utilization": ("fraction", "emulated: utilisation of each NeuronCore engine (results.json only)"),
    "backend_disagreement": ("", "how far the emulated throughput is from the analytic model's, when "
                                 "beyond their combined errors"),
    # decisions (sweeps, Pareto front)
    "pareto": ("", "on the Pareto front: no eligible row is as low in every objective and lower in one; "
                   "objectives cost_usd, CO2 at the headline scope, and duration_h (training), tpot_ms_p50 "
                   "(serving) or latency_p99_ms (inference with latency_ms_p99); eligible: priced, meeting "
                   "the deadline and the latency targets (results.json: pareto)"),
    "pareto_rank": ("rank", "position in the Pareto front ordered by its objectives, cost first (1 first); "
                            "rows equal in every objective share a rank (1, 1, 3); null off the front"),
    "sweep_index": ("", "index of the configuration in the sweep's cartesian product; null for `configs`"),
    # spot pricing
    "spot_interruption_pct_per_month": ("% per month", "spot: share of instances interrupted per month "
                                                       "(pricing.spot_interruption_pct_per_month); null on "
                                                       "demand"),
    "spot_overhead_pct": ("%", "spot: extra instance-hours for re-run work (training) or interrupted "
                               "headroom (inference, serving); 0 on demand"),
    # load profile (per day)
    "profile": ("", "load profile: each strategy's day (totals) and the hourly plan: rates, instances and "
                    "the static and autoscaled fleets' instance-hours, energy, cost and CO2 per hour, which "
                    "sum to the totals (results.json only)"),
    **{f"profile_{s}_{k}": (unit, f"load profile, {s} fleet: {what} per day")
       for s in ("static", "autoscaled", "batch")
       for k, unit, what in (("energy_kwh", "kWh", "facility energy"), ("cost_usd", "USD", "cost"),
                             ("co2_kg", "kgCO2e", "CO2, embodied included"))},
    "profile_idle_avoided_pct": ("%", "load profile: static instance-hours the autoscaled fleet avoids, "
                                      "as a share of the static fleet's (negative where the autoscaled "
                                      "floor, min_instances, is above the static fleet)"),
}
_CHANGE_COLUMNS = {f"{short}_change_pct": ("%", f"{col} against the baseline row: (this / baseline - 1) "
                                                 "x 100") for short, col in CHANGES.items()}
COLUMNS: dict[str, tuple[str, str]] = _COLUMNS | _CHANGE_COLUMNS

_STRING = ("config_id instance_type accelerator backend precision weight_precision kv_cache_precision "
           "provenance method region grid_source "
           "price_source headline_scope draw_basis power_basis power_model recompute offload layout_choice "
           "pipeline_schedule "
           "measurement_method "
           "power_method "
           "energy_provenance measurement_warnings window_start_utc window_end_utc samples_basis "
           "backend_disagreement scheduler slo").split()
_INTEGER = ("accelerator_count lnc grid_year instances tensor_parallel pipeline_parallel data_parallel "
            "context_parallel virtual_stages expert_parallel "
            "zero_stage idle_devices microbatch global_batch_size "
            "replicas replicas_per_instance max_batch pareto_rank "
            "prefill_replicas decode_replicas "
            "sweep_index").split()
# JSON Schema type of each column that is not a number; every column may also be null (no figure).
JSON_TYPES: dict[str, str] = ({c: "string" for c in _STRING} | {c: "integer" for c in _INTEGER}
                              | {"is_baseline": "boolean", "meets_deadline": "boolean", "pareto": "boolean",
                                 "cpu_power_fallback": "boolean",
                                 "samples": "object", "energy_windows": "array",
                                 "engine_utilization": "object", "kernels": "array",
                                 "profile": "object"})


class Pattern(NamedTuple):
    """A family of columns: names matching ``regex``, described in words."""

    name: str
    regex: str
    unit: str
    meaning: str
    json_type: str | list[str]


PATTERNS = [
    Pattern("<column>_low", r"^.+_low$", "that of <column>",
            "5th percentile of <column> over the scenario's uncertainty draws (90% band, low end)", "number"),
    Pattern("<column>_high", r"^.+_high$", "that of <column>",
            "95th percentile of <column> over the scenario's uncertainty draws (90% band, high end)",
            "number"),
    Pattern("sweep_<field>", r"^sweep_(?!index$)[a-z_0-9]+$", "that of the field",
            "the configuration's value of the swept configuration field (its sweep coordinate)",
            ["string", "number", "integer", "boolean"]),
]


def describe(name: str) -> tuple[str, str] | None:
    """(unit, meaning) of a column, from its own entry or its pattern; None if unknown."""
    if name in COLUMNS:
        return COLUMNS[name]
    for p in PATTERNS:
        if re.match(p.regex, name):
            base = name.rsplit("_", 1)[0] if p.name.startswith("<column>") else ""
            if base and base not in COLUMNS:
                continue
            unit = COLUMNS[base][0] if base else p.unit
            return unit, p.meaning.replace("<column>", base or "<column>")
    return None


def json_type(name: str) -> str:
    """The JSON Schema type of a named column (number unless listed in ``JSON_TYPES``)."""
    return JSON_TYPES.get(name, "number")


def json_cell(name: str, v: object) -> object:
    """A results.json cell as the data dictionary types it: a whole number of an integer column (a
    count, a rank) as an int, ``3`` not ``3.0``. A fraction stays a number where the column means one:
    ``instances_needed`` (fractional instances the rate needs) and the ``_low`` / ``_high`` bands (a
    percentile of whole counts may fall between two)."""
    if isinstance(v, float) and v.is_integer() and JSON_TYPES.get(name) == "integer":
        return int(v)
    return v


# The energy, cost and CO2 figures (totals, per unit of work, per profile fleet; not their changes against
# the baseline): a finite number, 0 or more, or null where unknown (cost without a price).
FOOTPRINT = frozenset(k for k, (unit, _) in COLUMNS.items() if re.search(r"(^|_)(energy|cost|co2)_", k)
                      and unit != "%" and json_type(k) == "number")


def is_footprint(name: str) -> bool:
    """An energy, cost or CO2 figure (:data:`FOOTPRINT`) or the low or high end of its 90% band."""
    return name in FOOTPRINT or (name.endswith(("_low", "_high")) and name.rsplit("_", 1)[0] in FOOTPRINT)


# results.json's top-level keys: key -> (JSON type, required, meaning).
TOP_LEVEL: dict[str, tuple[str, bool, str]] = {
    "kind": ("string", True, "`ecobench-results`"),
    "schema_version": ("integer", True, "version of this file's layout"),
    "ecobench_version": ("string", True, "ecobench version that wrote the run"),
    "catalog_version": ("string", True, "version of the hardware catalog (specs, prices, power)"),
    "grid_data_version": ("string", True, "version of the grid carbon-intensity data"),
    "price_snapshot": ("string", True, "source and date of the regional price snapshot, and of the spot "
                                       "snapshot where a row is priced from it"),
    "run_id": ("string", True, "the run directory's name: UTC time and a random suffix"),
    "created_utc": ("string", True, "when the run was written (ISO 8601, UTC)"),
    "machine": ("object", True, "host the run was made on: node, system, release, machine, python"),
    "git": ("object", True, "commit, branch and dirtiness of ecobench's own source checkout, the code "
                            "that ran (empty for an installed ecobench: see ecobench_version); never "
                            "the repository of the directory the run was made from"),
    "mode": ("string", True, "inference, training or serving"),
    "scenario": ("object", True, "the resolved scenario (see scenario.schema.json)"),
    "rows": ("array", True, "one object per configuration; its columns are listed above"),
    "regions_g_per_kwh": ("object", True, "grid intensity of every catalog region, gCO2e/kWh"),
    "sources": ("array", True, "catalog sources of the instances used: item, source, as_of, inferred_from"),
    "assumptions": ("object", True, "assumptions shown in the report (PUE, lifespan, ...)"),
    "training_demo": ("object", True, "emulated training: FP32/BF16 loss curves of the demo (else null)"),
    "uncertainty": ("object", True, "draws, seed, percentiles (the band's ends: 5 and 95) and input ranges "
                                    "of the 90% bands (null without draws)"),
    "pareto": ("object", False, "what the Pareto front is over: objectives (the columns, each minimised; "
                                "pareto_rank orders the front by them in turn), statistic (central values, "
                                "not the bands), latency_targets (column -> target, ms) and eligible (which "
                                "rows count)"),
    "recommendations": ("array", False, "picks among the eligible rows: {objective, config_id, reason}; "
                        "objective `all` alone when the baseline is the pick of every objective"),
    "no_recommendation": ("string", False, "why a run with rows has no recommendation: no configuration "
                          "meets the training deadline or the latency targets, and the closest, as `ecobench "
                          "run` prints it (absent where there are recommendations or no such miss)"),
    "sweep": ("object", False, "the scenario's sweep: its axes and the combinations skipped"),
    "csv_sources": ("object", False, "key -> text of the long repeated texts results.csv holds as keys "
                                     "(see Keyed columns); absent in runs written before the keys"),
}

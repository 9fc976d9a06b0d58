"""`ecobench validate`: reproduce the published AWS figures and report the error of each.

replay  -- each configuration is given the throughput implied by the published instance counts
           (inference) or durations (training): checks the power, carbon and cost models.
predict -- throughput from the backend alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

import yaml

from ecobench.evaluate import evaluate
from ecobench.scenario import Scenario, scenario_from_dict
from ecobench.units import SECONDS_PER_HOUR

MODES = ("replay", "predict")


@dataclass(frozen=True)
class Check:
    experiment: str
    figure: str
    mode: str
    published: float
    ecobench: float
    error_pct: float
    error_points: float | None
    target: str
    within_target: bool | None


def _data(name: str) -> Any:
    return yaml.safe_load(resources.files("ecobench.validation").joinpath(name).read_text("utf-8"))


def seed_scenario(experiment: str) -> Scenario:
    """The packaged seed scenario of an experiment."""
    exp = _data("published.yaml")["experiments"][experiment]
    return scenario_from_dict(_data(exp["scenario"]), f"ecobench/validation/{exp['scenario']}")


def _replayed(s: Scenario, exp: dict[str, Any]) -> Scenario:
    """The scenario with each configuration's throughput implied by the published results."""
    data = s.model_dump(mode="json")
    for cfg in data["configs"]:
        if s.workload.inference:
            rate_s = s.workload.inference.rate_per_h / SECONDS_PER_HOUR
            cfg["measured_throughput_per_s"] = rate_s / exp["published_instances"][cfg["id"]]
        else:
            assert s.workload.training is not None
            seconds = exp["published_duration_h"][cfg["id"]] * SECONDS_PER_HOUR
            total = s.workload.training.total_sequences
            cfg["measured_throughput_per_s"] = total / seconds / cfg["instances"]
    return scenario_from_dict(data, f"{s.name} (replay)")


def _figures(df: Any, acc: str, base: str, mode: str) -> dict[str, float]:
    a = df.set_index("config_id").loc[acc]
    b = df.set_index("config_id").loc[base]
    out = {"throughput_ratio": a.throughput_ratio, "energy_change_pct": a.energy_change_pct,
           "cost_change_pct": a.cost_change_pct}
    if mode == "inference":
        out |= {"instances_accelerated": a.instances, "instances_baseline": b.instances,
                "cost_per_million_usd_accelerated": a.cost_usd_per_million,
                "cost_per_million_usd_baseline": b.cost_usd_per_million}
    else:
        out |= {"duration_h_accelerated": a.duration_h, "duration_h_baseline": b.duration_h,
                "cost_usd_accelerated": a.cost_usd, "cost_usd_baseline": b.cost_usd}
    return {k: float(v) for k, v in out.items()}


def validate(modes: tuple[str, ...] = MODES) -> list[Check]:
    """Every published figure in every mode, with ecobench's value and the error."""
    pub = _data("published.yaml")
    checks: list[Check] = []
    for name, exp in pub["experiments"].items():
        base_s = seed_scenario(name)
        for mode in modes:
            s = _replayed(base_s, exp) if mode == "replay" else base_s
            got = _figures(evaluate(s), exp["accelerated"], exp["baseline"], s.workload.mode)
            for fig, published in exp["figures"].items():
                value = got[fig]
                err = (value - published) / abs(published) * 100.0
                points = value - published if fig.endswith("_change_pct") else None
                tgt = pub["targets"][mode].get(fig)
                if tgt is None:
                    target, ok = "reported", None
                elif "points" in tgt:
                    target, ok = f"±{tgt['points']} points", abs(value - published) <= tgt["points"]
                else:
                    target, ok = f"±{tgt['pct']}%", abs(err) <= tgt["pct"]
                checks.append(Check(name, fig, mode, float(published), value, err, points, target, ok))
    if "predict" in modes:
        checks += neuron_checks()
    return checks


NEURON_TARGET_PCT = 25.0


def neuron_checks() -> list[Check]:
    """The published Neuron throughput points, predicted by the emulated backend alone."""
    from ecobench.hardware.backends import BACKENDS, Job
    from ecobench.hardware.catalog import load_catalog
    from ecobench.workloads.presets import preset

    cat = load_catalog()
    emulated = BACKENDS["emulated"]
    points = [(p.model, p.mode, p.instance_type, 1, p.dtype, p.seq_len, p.batch_size,
               p.global_batch_size, p.throughput_per_s) for p in cat.calibration if p.instance_type]
    points += [(s.model, "training", s.instance_type, s.instances, s.dtype, s.seq_len, 16,
                s.global_batch_size, s.throughput_per_s) for s in cat.scale_out]
    out = []
    for model, mode, inst, n, dtype, seq, batch, gbs, published in points:
        job = Job(preset(model), mode, seq, batch, dtype, n, gbs)  # type: ignore[arg-type]
        got = emulated.evaluate(job, cat.instance(inst), cat).throughput_per_instance_per_s * n
        err = (got - published) / published * 100
        name = f"neuron_{model.replace('-', '_')}_{mode}_{n}x_{inst}"
        out.append(Check(name, "throughput_per_s", "predict", published, got, err, None,
                         f"±{NEURON_TARGET_PCT:g}%", abs(err) <= NEURON_TARGET_PCT))
    return out


def as_json(checks: list[Check]) -> list[dict[str, Any]]:
    """JSON-ready objects: experiment, figure, mode, published, ecobench, error_pct (+ extras)."""
    return [asdict(c) for c in checks]

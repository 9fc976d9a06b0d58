"""Energy and CO2 by scope: the accelerators alone, the instance (IT: accelerators, CPU, memory,
network) and the facility (IT x PUE). Published footprints count different scopes; every result row
carries all three, and a scenario chooses which one its headline uses."""

from __future__ import annotations

from typing import Any, Literal

from ecobench.units import MILLION, W_PER_KW

Scope = Literal["accelerator", "it", "facility"]
SCOPES: tuple[Scope, ...] = ("accelerator", "it", "facility")
SCOPE_TEXT = {"accelerator": "accelerators only",
              "it": "the instance: accelerators, CPU, memory, network (no facility overhead)",
              "facility": "the instance and the facility's overhead (x PUE)"}


def energy_column(scope: Scope) -> str:
    """The result column holding a scope's energy."""
    return {"accelerator": "energy_accelerator_kwh", "it": "energy_it_kwh", "facility": "energy_kwh"}[scope]


def co2_column(scope: Scope) -> str:
    """The result column holding a scope's CO2 (operational at that scope, plus embodied)."""
    return {"accelerator": "co2_accelerator_kg", "it": "co2_it_kg", "facility": "co2_kg"}[scope]


def token_column(scope: Scope) -> str:
    """The serving column holding a scope's energy per output token."""
    return {"accelerator": "energy_accelerator_j_per_output_token", "it": "energy_it_j_per_output_token",
            "facility": "energy_j_per_output_token"}[scope]


def co2_token_column(scope: Scope) -> str:
    """The serving column holding a scope's CO2 per million output tokens (its operational CO2 and the
    embodied, as :func:`co2_column`)."""
    return {"accelerator": "co2_accelerator_g_per_million_output_tokens",
            "it": "co2_it_g_per_million_output_tokens", "facility": "co2_g_per_million_output_tokens"}[scope]


def co2_per_output_token(figures: dict[str, Any], tokens: Any) -> dict[str, Any]:
    """CO2 per million output tokens (g) at the accelerator and IT scopes, from a plan's figures
    (floats, or arrays of draws); the facility's is ``units.per_output_token``'s."""
    return {co2_token_column(scope): figures[co2_column(scope)] * 1000.0 / tokens * MILLION
            for scope in ("accelerator", "it")}


def describe(scope: Scope, pue: float) -> str:
    """One line for summaries and reports."""
    return f"{scope} scope: {SCOPE_TEXT[scope]}" + (f", PUE {pue:g}" if scope == "facility" else "")


def scope_figures(instance_hours: Any, accelerator_w: Any, it_w: Any, total_w: Any, g_per_kwh: Any,
                  embodied_kg: Any) -> dict[str, Any]:
    """Energy (kWh) and CO2 (kg, embodied included) of the accelerator and IT scopes; the facility's
    are the rows' existing ``energy_kwh`` and ``co2_kg``."""
    e_acc = instance_hours * accelerator_w / W_PER_KW
    e_it = instance_hours * it_w / W_PER_KW
    return {"energy_accelerator_kwh": e_acc, "energy_it_kwh": e_it,
            "co2_accelerator_kg": e_acc * g_per_kwh / 1000.0 + embodied_kg,
            "co2_it_kg": e_it * g_per_kwh / 1000.0 + embodied_kg}


def change_column(metric: str, scope: Scope) -> str:
    """The change-against-baseline column of ``energy`` or ``co2`` at a scope."""
    return f"{metric}_change_pct" if scope == "facility" else f"{metric}_{scope}_change_pct"


def fleet_figures(instance_hours: Any, accelerator_w: Any, it_w: Any, total_w: Any, price_usd_per_h: Any,
                  g_per_kwh: Any, embodied_kg: Any) -> dict[str, Any]:
    """Energy by scope (kWh), cost (USD) and CO2 by scope (kg, embodied included) of a fleet's
    instance-hours at these draws: the one arithmetic the plan and the Monte Carlo share (floats, or
    arrays of draws, headrooms or regions)."""
    energy_kwh = instance_hours * total_w / W_PER_KW
    co2_op = energy_kwh * g_per_kwh / 1000.0
    return scope_figures(instance_hours, accelerator_w, it_w, total_w, g_per_kwh, embodied_kg) | {
        "energy_kwh": energy_kwh, "cost_usd": instance_hours * price_usd_per_h,
        "co2_operational_kg": co2_op, "co2_embodied_kg": embodied_kg, "co2_kg": co2_op + embodied_kg}

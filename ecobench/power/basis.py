"""Accounting conventions: which draw a configuration's energy is counted from (``power_basis``).

- ``modelled`` (the default): the draw model at the work done (``draw.py``); a configuration's
  ``measured_power_w`` replays where given and no basis is set, so such a row is labelled ``measured``.
- ``tdp``: the footprint convention of model cards and papers: every accelerator device-hour at the
  chip's datasheet TDP (``ChipPower.tdp_w``, or the scenario's ``overrides.accelerator_power_w``
  maximum: a stated draw), times PUE and the grid, with no host share (CPU, memory and network 0).
  A chip whose maximum is an evidence range or inferred has no TDP to count and is refused.
- ``measured``: the configuration's ``measured_power_w`` (required).

An explicit ``modelled`` with ``measured_power_w`` counts the model's draw (the supplied power is not
used), so a scenario can put the model and a published figure side by side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ecobench.errors import InputError

if TYPE_CHECKING:
    from ecobench.hardware.catalog import Accelerator
    from ecobench.scenario.model import HardwareConfig, Scenario

BASES = ("modelled", "tdp", "measured")
ALLOWED = "allowed: modelled, tdp (a chip with a datasheet TDP), measured (with measured_power_w)"


def resolve_basis(scenario_basis: str, scenario_set: bool, config_basis: str | None,
                  measured_power_w: float | None) -> str:
    """The configuration's basis: its own, else the scenario's where set, else ``measured`` where it
    supplies ``measured_power_w`` (today's replay) and ``modelled`` otherwise. Refuses ``measured``
    without a measured power (the error is about the configuration's ``power_basis``)."""
    if config_basis is not None:
        basis = config_basis
    elif scenario_set:
        basis = scenario_basis
    else:
        basis = "measured" if measured_power_w is not None else "modelled"
    if basis not in BASES:
        raise InputError(f"power_basis {basis!r} is not known; {ALLOWED}").in_config("power_basis")
    if basis == "measured" and measured_power_w is None:
        raise InputError("power_basis measured needs measured_power_w (with measured_power_scope: "
                         f"accelerator or instance); {ALLOWED}").in_config("power_basis")
    return basis


def config_basis(s: Scenario, cfg: HardwareConfig) -> str:
    """:func:`resolve_basis` for one configuration of a scenario."""
    try:
        return resolve_basis(s.power_basis, "power_basis" in s.model_fields_set, cfg.power_basis,
                             cfg.measured_power_w)
    except InputError as exc:
        raise from_scenario(exc, s, cfg) from None


def from_scenario(exc: InputError, s: Scenario, cfg: HardwareConfig) -> InputError:
    """An error about a configuration's basis that the scenario-wide ``power_basis`` set (the
    configuration sets none): about the configuration, not its ``power_basis`` field, saying where the
    basis came from and how to override it."""
    if exc.config_field != "power_basis" or cfg.power_basis is not None \
            or "power_basis" not in s.model_fields_set:
        return exc
    exc.args = (f"the scenario's power_basis {s.power_basis} applies here (this configuration sets none): "
                f"{exc}; or give this configuration its own power_basis",)
    exc.config_field = ""
    return exc


def tdp_w(chip: str | None, acc: Accelerator | None, override_max_w: float | None) -> float:
    """The draw per accelerator that ``power_basis: tdp`` counts: the scenario's stated maximum for
    the chip (``overrides.accelerator_power_w``), else its datasheet TDP; refused for an instance
    without accelerators and for a chip without a datasheet TDP."""
    if acc is None or chip is None:
        raise InputError(f"power_basis tdp counts accelerator device-hours and the instance has no "
                         f"accelerator; {ALLOWED}").in_config("power_basis")
    if override_max_w is not None:
        return override_max_w
    if acc.power.tdp_w is None:
        why = ("its maximum draw is an evidence range (AWS publishes no watts for it)" if acc.power.uncertain
               else "its maximum draw is not a datasheet TDP")
        raise InputError(f"power_basis tdp needs a datasheet TDP and {chip} has none: {why}; {ALLOWED}, "
                         f"or state the draw to count as overrides.accelerator_power_w.{chip}: "
                         "{idle_w: W, max_w: W} (max_w is counted)") \
            .in_config("power_basis")
    return acc.power.tdp_w

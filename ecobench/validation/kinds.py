"""The kinds of held-out point ``ecobench validate`` reports, and their targets: read without the
validation itself, so the command line can offer them (``validate --kind``) at no import cost."""

from __future__ import annotations

# Out-of-sample targets per kind of point and figure (median and worst |error|, percent).
HOLDOUT_TARGETS = {
    ("llm_train", "tokens_per_s"): (15.0, 35.0),
    # Mixture-of-experts training, predicted by the fit on dense points alone (issue 21: median 15%).
    ("moe_train", "tokens_per_s"): (15.0, 35.0),
    ("encoder_train", "sequences_per_s"): (15.0, 35.0),
    ("encoder_infer", "sequences_per_s"): (15.0, 35.0),
    ("llm_serve", "tpot_ms"): (15.0, 35.0),
    ("llm_serve", "output_tokens_per_s"): (15.0, 35.0),
    ("llm_serve", "ttft_ms"): (15.0, 35.0),
    # Measured power (power/fit.py), held out by group: issue 20's targets.
    ("power_train", "power_w"): (10.0, 25.0),
    ("power_serve", "power_w"): (10.0, 25.0),
    ("power_infer", "power_w"): (10.0, 25.0),
    ("power_serve", "energy_j_per_output_token"): (10.0, 25.0),
}
POWER_KINDS = ("power_train", "power_serve", "power_infer")
NEURON_KIND = "neuron_emulated"  # the emulated NeuronCore's held-out throughput rows
NEURON_SERVE_KIND = "emulated_serve"  # its held-out serving rows, as emulated_serve_<family>


def kinds() -> tuple[str, ...]:
    """The kinds ``validate --kind`` selects: the analytic model's and power's (as
    :data:`HOLDOUT_TARGETS` names them), the emulated NeuronCore's throughput, and its serving (every
    ``emulated_serve_<family>`` row)."""
    return (*dict.fromkeys(k for k, _ in HOLDOUT_TARGETS), NEURON_KIND, NEURON_SERVE_KIND)

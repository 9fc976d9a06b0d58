"""What ecobench's own GPU measurements' corpus points must equal: their recorded windows' figures."""

from __future__ import annotations

import pytest


def assert_decode_point_is_its_windows(p: object, windows: list[dict]) -> None:
    """A decode point's draw, throughput and energy per token are its windows' energy over their time
    and their output tokens (``tools/measure_gpu_states.py``'s ``decode`` runs)."""
    seconds = sum(w["seconds"] for w in windows)
    energy_j = sum(w["energy_j"] for w in windows)
    tokens = sum(w["batch"] * w["output_tokens"] for w in windows)
    assert p.power_w == pytest.approx(energy_j / seconds, rel=1e-3)
    assert p.output_tokens_per_s == pytest.approx(tokens / seconds, rel=1e-3)
    assert p.energy_j_per_output_token == pytest.approx(energy_j / tokens, rel=1e-3)

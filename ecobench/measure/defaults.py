"""Defaults for measured runs, shared by the measuring backends and the regression gate."""

# Repetitions of a measured window. Ten keep the gate's false-failure rate under 5% and catch a
# 10% regression over 90% of the time at a 5% coefficient of variation (tests/integration/test_gate.py).
DEFAULT_REPETITIONS = 10

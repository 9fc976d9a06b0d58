"""Defaults for measured runs, shared by the measuring backends and the regression gate."""

from contextvars import ContextVar

# Whether a measuring backend draws its progress bar on stderr: off when the evaluation was given
# no progress callback (``ecobench run -q``, the API), on otherwise (planning/evaluate.evaluate_all).
SHOW_PROGRESS: ContextVar[bool] = ContextVar("ecobench_show_progress", default=True)

# Repetitions of a measured window. Ten keep the gate's false-failure rate under 5% and catch a
# 10% regression over 90% of the time at a 5% coefficient of variation (tests/integration/test_gate.py).
DEFAULT_REPETITIONS = 10

# Depth extrapolation (reference backend): the fewest alternated pairs of steps behind each window's
# ratio of a layer to the measured depth; the pairs run for as long as the windows at least.
MIN_PAIRS_PER_WINDOW = 5

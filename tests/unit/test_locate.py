"""Errors about one configuration are raised without its location; the evaluation loop adds it once."""

import pytest

from ecobench.errors import EXIT_BAD_INPUT, BackendError, InputError
from ecobench.planning.configs import locate
from ecobench.scenario.model import HardwareConfig

CFG = HardwareConfig(id="a", instance_type="g4dn.xlarge", precision="bf16")


@pytest.mark.parametrize(("exc", "message"), [
    (InputError("no fit").in_config("parallelism"), "configs[3].parallelism: no fit"),
    (InputError("too slow").in_config(), "configs[3]: too slow"),
    (InputError("no price").in_config(by_id=True), "configs[a]: no price"),
    (BackendError("no bf16 peak").in_config(by_id=True, detail=True),
     "configs[a] (g4dn.xlarge, bf16): no bf16 peak"),
    (InputError("inference.latency_ms_p99 0.01 is below"), "inference.latency_ms_p99 0.01 is below"),
])
def test_the_location_is_added_as_the_error_says(exc, message):
    out = locate(exc, CFG, 3)
    assert out is exc and str(out) == message and out.exit_code == EXIT_BAD_INPUT
    assert str(locate(out, CFG, 3)) == message  # once

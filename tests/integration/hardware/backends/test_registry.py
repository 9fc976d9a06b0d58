import subprocess
import sys

import pytest

from ecobench.hardware.backends import BACKENDS
from ecobench.hardware.backends.base import Capabilities, LazyBackend


def test_every_backend_is_registered_and_the_heavy_ones_load_on_first_use():
    code = ("import sys; from ecobench.hardware.backends import BACKENDS; "
            "print(sorted(BACKENDS), 'ecobench.hardware.backends.emulated' in sys.modules, "
            "type(BACKENDS['emulated']).__name__); "
            "BACKENDS['emulated'].step_evaluator; "
            "print('ecobench.hardware.backends.emulated' in sys.modules, "
            "type(BACKENDS['emulated']).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["['analytic', 'emulated', 'reference'] False LazyBackend",
                                "True EmulatedBackend"]


def test_a_module_that_does_not_register_its_backend_is_an_error():
    BACKENDS["nothing"] = lazy = LazyBackend("nothing", "ecobench.units", Capabilities())
    try:
        with pytest.raises(ImportError, match="did not register"):
            lazy.evaluate(None, None, None)
        with pytest.raises(AttributeError):
            lazy._private  # noqa: B018 - dunder and private probes never import
    finally:
        del BACKENDS["nothing"]

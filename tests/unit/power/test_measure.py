"""The energy method is written out honestly: a VM without RAPL is a TDP x load model, not a meter."""

from types import SimpleNamespace

from ecobench.measure.codecarbon_meter import Tracker


def _tracker(*hardware):
    t = Tracker.__new__(Tracker)  # no codecarbon run: only the hardware it would have detected
    t._tracker = SimpleNamespace(_hardware=list(hardware))
    return t


class CPU:
    def __init__(self, mode):
        self._mode = mode


class RAM:
    pass


class GPU:
    pass


def test_no_rapl_is_labelled_a_model():
    t = _tracker(CPU("cpu_load"), RAM())
    assert t.power_method.startswith("CPU power: TDP × load model, no RAPL")
    assert "RAM power: codecarbon model" in t.power_method
    assert t.energy_provenance == "modelled"


def test_counters_are_measured_and_a_mix_is_partly_measured():
    assert _tracker(CPU("intel_rapl"), RAM()).energy_provenance == "measured"
    assert "whole CPU package" in _tracker(CPU("intel_rapl")).power_method
    assert _tracker(CPU("cpu_load"), GPU(), RAM()).energy_provenance == "partly measured"
    assert _tracker(CPU("constant"), RAM()).energy_provenance == "modelled"


def test_a_cpu_without_counters_is_a_fallback_the_run_warns_about():
    from ecobench.planning.evaluate import row_warnings

    assert _tracker(CPU("cpu_load"), RAM()).cpu_power_fallback is True
    assert _tracker(CPU("constant"), RAM()).cpu_power_fallback is True
    assert _tracker(CPU("intel_rapl"), GPU(), RAM()).cpu_power_fallback is False
    assert _tracker(RAM()).cpu_power_fallback is None
    row = {"config_id": "host", "instance_type": "local", "price_usd_per_h": 0.0}
    assert row_warnings([row | {"cpu_power_fallback": False}]) == []
    [w] = row_warnings([row | {"cpu_power_fallback": True}])
    assert w.startswith("host: this host exposes no CPU energy counter (RAPL)") and "TDP" in w


def test_zeus_replaces_codecarbons_gpu_reading():
    from ecobench.hardware.backends.torch_ref import energy_methods
    from ecobench.measure.testing import ReplayZeusMonitor
    from ecobench.measure.zeus_meter import GpuMeter

    t = _tracker(CPU("cpu_load"), GPU(), RAM())
    method, power_method, provenance = energy_methods(t, GpuMeter(ReplayZeusMonitor([1.0]), version="0.16.0"))
    assert method.startswith("Zeus (NVML energy counter), zeus 0.16.0 for the GPU; codecarbon ")
    assert "NVML counters" not in method and "for the CPU and RAM" in method
    assert power_method.count("GPU power:") == 1 and "GPU power: Zeus (NVML energy counter)" in power_method
    assert provenance == "partly measured"  # the GPU from a counter, the CPU from a TDP model
    method, _, _ = energy_methods(t, None, "zeus is not installed (pip install 'ecobench-ml[gpu]')")
    assert method.endswith("(Zeus not used: zeus is not installed (pip install 'ecobench-ml[gpu]'))")


def test_measuring_without_codecarbon_names_the_extra(monkeypatch):
    """codecarbon comes with the torch extra only: a run that meters without it is told what to install."""
    import sys

    import pytest

    from ecobench.errors import BackendError
    from ecobench.measure.codecarbon_meter import require_codecarbon

    monkeypatch.setitem(sys.modules, "codecarbon", None)  # import codecarbon -> ImportError
    with pytest.raises(BackendError, match=r"\[torch\]'.*track_energy: false"):
        require_codecarbon()

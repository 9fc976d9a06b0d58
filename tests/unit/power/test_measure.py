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

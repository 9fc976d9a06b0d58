"""The energy method is written out honestly: a VM without RAPL is a TDP x load model, not a meter."""

from types import SimpleNamespace

from ecobench.measure.codecarbon_meter import CPU_MODES, Tracker


def _tracker(*hardware):
    t = Tracker.__new__(Tracker)  # no codecarbon run: only the hardware it would have detected
    t._tracker = SimpleNamespace(_hardware=list(hardware))
    return t


class CPU:
    def __init__(self, mode, tdp=None, model=None):
        self._mode = mode
        if tdp is not None:  # the TDP codecarbon scales, and the CPU model it looked it up for
            self._tdp, self._model = tdp, model


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


def test_the_tdp_behind_a_cpu_model_and_its_source_are_said():
    """codecarbon scales a TDP by the load: which TDP, and whether it is its table's figure for this
    CPU or its per-thread default for a CPU it does not know (said by codecarbon in a log line only)."""
    import pytest

    pytest.importorskip("codecarbon")
    unknown = _tracker(CPU("cpu_load", 8, "Intel(R) Xeon(R) Processor")).power_method
    assert unknown.startswith("CPU power: TDP × load model, no RAPL (this process's CPU time; TDP 8 W, "
                              "codecarbon's default of ")
    assert unknown.endswith(" W a thread: its table lacks the Intel(R) Xeon(R) Processor)")
    known = _tracker(CPU("cpu_load", 300, "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz")).power_method
    assert known.endswith("TDP 300 W, codecarbon's table figure for the Intel(R) Xeon(R) Platinum 8375C CPU "
                          "@ 2.90GHz (whole packages))")
    assert _tracker(CPU("intel_rapl", 300, "x")).power_method == CPU_MODES["intel_rapl"]


def test_the_ram_models_floor_is_said():
    """codecarbon's RAM model is a draw a DIMM with at least two DIMMs on x86: a process holding a
    few hundred MB reads 10 W, more than this host's modelled CPU; 'this process's memory' alone hid it."""
    import pytest

    pytest.importorskip("codecarbon")
    from codecarbon.external.ram import RAM_SLOT_POWER_X86

    assert _tracker(RAM()).power_method == (
        f"RAM power: codecarbon model ({RAM_SLOT_POWER_X86:g} W a DIMM, DIMMs guessed from this process's "
        f"memory; at least 2, {2 * RAM_SLOT_POWER_X86:g} W, whatever it holds)")

"""The Zeus GPU meter, without a GPU: recorded windows replayed through ZeusMonitor's window API."""

import sys
import types
from types import SimpleNamespace

import pytest

from ecobench.errors import InputError
from ecobench.measure.testing import ReplayZeusMonitor
from ecobench.measure.zeus_meter import ZEUS_COUNTER, ZEUS_SAMPLED, GpuMeter, open_zeus


def test_each_window_gets_its_recorded_energy_summed_over_gpus():
    meter = GpuMeter(ReplayZeusMonitor([120.0, {0: 100.0, 1: 50.0}], times_s=[1.0, 0.5]), version="0.16.0")
    got = []
    for name in ("rep0", "rep1"):
        with meter.window(name) as w:
            pass
        got.append(w[0])
    assert [(g.duration_s, g.energy_j) for g in got] == [(1.0, 120.0), (0.5, 150.0)]
    assert got[0].energy_kwh == pytest.approx(120.0 / 3.6e6)
    assert meter.component == ("GPU power: Zeus (NVML energy counter) (whole device)", True)
    assert meter.description == "Zeus (NVML energy counter), zeus 0.16.0"


def test_replay_follows_zeus_window_rules():
    mon = ReplayZeusMonitor([1.0])
    mon.begin_window("a")
    with pytest.raises(ValueError, match="already exists"):
        mon.begin_window("a")
    with pytest.raises(ValueError, match="does not exist"):
        mon.end_window("b")
    assert mon.end_window("a").total_energy == 1.0 and mon.keys == ["a"]
    mon.begin_window("c")
    with pytest.raises(ValueError, match="window 2 asked for, 1 recorded"):
        mon.end_window("c")
    with pytest.raises(ValueError, match="2 times for 1 windows"):
        ReplayZeusMonitor([1.0], times_s=[1.0, 2.0])


def test_replay_reads_a_zeus_log_file(tmp_path):
    log = tmp_path / "zeus.csv"  # the header ZeusMonitor(log_file=...) writes, one row per window
    log.write_text("start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
                   "1700000000.0,rep0,2.0,410.5,399.5\n1700000002.1,rep1,2.5,500.0,520.0\n")
    mon = ReplayZeusMonitor.from_log(log)
    assert mon.times_s == [2.0, 2.5]
    mon.begin_window("x")
    m = mon.end_window("x")
    assert m.time == 2.0 and m.gpu_energy == {0: 410.5, 1: 399.5}
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="not a Zeus log"):
        ReplayZeusMonitor.from_log(bad)


def _fake_zeus(monkeypatch, monitor_class):
    zeus = types.ModuleType("zeus")
    monitor = types.ModuleType("zeus.monitor")
    monitor.ZeusMonitor = monitor_class
    zeus.monitor = monitor
    monkeypatch.setitem(sys.modules, "zeus", zeus)
    monkeypatch.setitem(sys.modules, "zeus.monitor", monitor)


def test_without_zeus_the_reason_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "zeus", None)
    monkeypatch.setitem(sys.modules, "zeus.monitor", None)
    meter, why = open_zeus(0)
    assert meter is None and "pip install 'ecobench-ml[gpu]'" in why


def test_zeus_failing_to_open_the_gpu_is_a_reason_not_a_crash(monkeypatch):
    def no_gpu(**kwargs):
        raise ValueError("No GPUs available.")

    _fake_zeus(monkeypatch, no_gpu)
    meter, why = open_zeus(0)
    assert meter is None and why == "Zeus could not open GPU 0: ValueError: No GPUs available."


@pytest.mark.parametrize("counter", [True, False])
def test_zeus_is_opened_for_the_gpu_only_and_says_whether_it_reads_a_counter(monkeypatch, counter):
    seen = {}

    class Monitor:
        def __init__(self, **kwargs):
            seen.update(kwargs)
            self.gpus = SimpleNamespace(supports_get_total_energy_consumption=lambda i: counter)

    _fake_zeus(monkeypatch, Monitor)
    meter, why = open_zeus(1)
    assert why == "" and meter is not None
    assert seen["gpu_indices"] == [1] and seen["cpu_indices"] == []  # the CPU stays with codecarbon
    assert meter.method == (ZEUS_COUNTER if counter else ZEUS_SAMPLED) and meter.counter is counter


@pytest.mark.parametrize(("row", "field", "shown"), [
    ("1.0,rep0,2.0,abc", "gpu0_energy", "'abc'"),  # not a number
    ("1.0,rep0,2.0,", "gpu0_energy", "''"),  # empty
    ("1.0,rep0,2.0", "gpu0_energy", "''"),  # a short row
    ("1.0,rep0,2.0,nan", "gpu0_energy", "'nan'"),  # NaN would reach the row's draw
    ("1.0,rep0,2.0,-5", "gpu0_energy", "'-5'"),  # a counter does not run backwards
    ("1.0,rep0,0,410.5", "elapsed_time", "'0'"),  # a window of no length: a draw of inf W
    ("1.0,rep0,inf,410.5", "elapsed_time", "'inf'"),
])
def test_a_corrupted_zeus_log_names_the_file_line_and_field(tmp_path, row, field, shown):
    log = tmp_path / "zeus.csv"
    log.write_text("start_time,window_name,elapsed_time,gpu0_energy\n1700000000.0,rep0,2.0,410.5\n"
                   f"{row}\n")
    with pytest.raises(InputError) as err:
        ReplayZeusMonitor.from_log(log)
    assert str(err.value).startswith(f"{log}: line 3: field {field} is {shown}; allowed: ")


def test_a_zeus_log_column_that_names_no_gpu_is_bad_input(tmp_path):
    log = tmp_path / "zeus.csv"
    log.write_text("start_time,window_name,elapsed_time,gpuX_energy\n1700000000.0,rep0,2.0,410.5\n")
    with pytest.raises(InputError, match=r"zeus\.csv: column 'gpuX_energy'; allowed: gpu<i>_energy"):
        ReplayZeusMonitor.from_log(log)

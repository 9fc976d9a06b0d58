"""benchmarks/bench_depth.py: its workloads (the CPU test model and the GPU ones) as scenarios on the
device asked for, and the options it refuses (exit 2), without measuring anything."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[4] / "benchmarks" / "bench_depth.py"


@pytest.fixture()
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_depth", BENCH)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_depth", module)  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def test_the_default_is_the_depth_tests_model_on_the_cpu(bench):
    s = bench.scenario(1)
    c = s.configs[0]
    assert (c.device, c.layers, c.backend, s.workload.mode) == ("cpu", 1, "reference", "inference")
    assert s.workload.arch().layers == bench.ARCH["layers"] == 4


@pytest.mark.parametrize("name,layers,of,precision", [("bert-large", 3, 24, "fp16"),
                                                       ("llama-8layer", 2, 8, "bf16")])
def test_the_gpu_workloads_run_on_cuda(bench, name, layers, of, precision):
    w = bench.WORKLOADS[name]
    s = bench.scenario(w.layers, w, "cuda")
    c = s.configs[0]
    assert (c.device, c.layers, c.precision, s.workload.mode) == ("cuda", layers, precision, "training")
    assert s.workload.arch().layers == of and bench.scenario(None, w, "cuda").configs[0].layers is None


@pytest.mark.parametrize("argv", [["--steps", "5", "--device", "cuda"],
                                  ["--blocks", "--workload", "bert-large"], ["--workload", "nope"],
                                  ["--device", "tpu"], ["--repeats", "1"]])
def test_refused_options_exit_2(bench, capsys, argv):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2 and "Traceback" not in capsys.readouterr().err

"""Record a GPU replay fixture: measure workloads on a real NVIDIA GPU through the reference backend,
with Zeus writing its window log, and save what the live run reported beside the log.

The test `tests/integration/hardware/backends/test_gpu_fixture.py` replays each log through
`ReplayZeusMonitor.from_log` on any host and checks the replayed rows against the live ones, so
the Zeus path is tested on real GPU windows without a GPU.

Needs: a CUDA GPU, torch, transformers and zeus (`pip install 'ecobench-ml[torch,gpu]'`).
Usage: python tools/record_gpu_fixture.py OUT_DIR [CASE,...]   (every case by default)
Writes, per case: OUT_DIR/<case>.zeus.csv (ZeusMonitor's log) and OUT_DIR/<case>.live.json.
"""

from __future__ import annotations

import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

from ecobench.planning.evaluate import evaluate
from ecobench.scenario.load import scenario_from_dict

MEASUREMENT = {"warmup_s": 2.0, "min_window_s": 2.0, "repetitions": 5, "gemm_s": 1.0}
CASES = {
    # BERT-base inference as the LayoutLM seed scenario serves it: 128 tokens, batch 32, fp16
    "bert_base_infer_fp16": {"model": "bert-base",
                             "inference": {"rate_per_h": 1_000_000, "seq_len": 128, "batch_size": 32},
                             "precision": "fp16"},
    # A Llama-3-8B-shaped decoder (2 of its 32 layers) trained at 2,048 tokens, bf16
    "llama3_8b_2l_train_bf16": {"model": "llama3-8b",
                                "training": {"total_sequences": 100_000,
                                             "phases": [{"seq_len": 2048, "fraction": 1.0}],
                                             "batch_size": 4, "global_batch_size": 4},
                                "precision": "bf16", "layers": 2, "instances": 1},
}
KEPT = ["throughput_per_instance_per_s", "power_accelerator_w", "energy_kwh", "mfu", "repetitions",
        "measurement_method", "power_method", "energy_provenance"]


def _scenario(case: str, spec: dict) -> object:
    work = {"model": spec["model"]} | {k: spec[k] for k in ("inference", "training") if k in spec}
    config = {"id": case, "instance_type": "local", "backend": "reference", "device": "cuda",
              "precision": spec["precision"]} | {k: spec[k] for k in ("layers", "instances") if k in spec}
    return scenario_from_dict({"schema_version": 1, "name": case, "workload": work, "configs": [config],
                               "baseline": case, "measurement": MEASUREMENT})


def record(out: Path, only: list[str] | None = None) -> None:
    """Measure each case (every case, or those in ``only``) with a logging ZeusMonitor; write its log
    and the live row."""
    import torch
    from zeus.monitor import ZeusMonitor

    from ecobench.hardware.backends.torch_ref import ReferenceBackend
    from ecobench.measure.zeus_meter import GpuMeter, _version

    out.mkdir(parents=True, exist_ok=True)
    gpu = torch.cuda.get_device_name(0)
    for case, spec in CASES.items():
        if only and case not in only:
            continue
        log = out / f"{case}.zeus.csv"
        monitor = ZeusMonitor(gpu_indices=[0], cpu_indices=[], approx_instant_energy=True,
                              sync_execution_with="torch", log_file=str(log))
        meter = GpuMeter(monitor, version=_version("zeus"))
        backend = ReferenceBackend(gpu_meter=lambda device, m=meter: (m, ""))
        row = evaluate(_scenario(case, spec), backends={"reference": backend}).iloc[0]
        monitor.log_file.close()
        live = {k: (row[k].item() if hasattr(row[k], "item") else row[k]) for k in KEPT}
        live["samples_power_accelerator_w"] = list(row.samples["power_accelerator_w"])
        live |= {"case": case, "gpu": gpu, "torch": torch.__version__, "zeus": _version("zeus"),
                 "python": platform.python_version(),
                 "recorded_utc": datetime.now(UTC).isoformat(timespec="seconds"),
                 "scenario": {"workload": {k: v for k, v in spec.items() if k != "precision"},
                              "precision": spec["precision"], "measurement": MEASUREMENT}}
        (out / f"{case}.live.json").write_text(json.dumps(live, indent=1) + "\n")
        print(f"{case}: {live['throughput_per_instance_per_s']:.1f}/s, "
              f"GPU {live['power_accelerator_w']:.0f} W, windows {live['samples_power_accelerator_w']}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    unknown = set(sys.argv[2].split(",")) - set(CASES) if len(sys.argv) == 3 else set()
    if unknown:
        sys.exit(f"unknown case(s) {', '.join(sorted(unknown))}; known: {', '.join(CASES)}")
    record(Path(sys.argv[1]), sys.argv[2].split(",") if len(sys.argv) == 3 else None)

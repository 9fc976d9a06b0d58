"""Meter one NVIDIA GPU's draw in each activity state the power model names, and LLM/encoder runs
whose draw and throughput go into the measured-power corpus.

Every window's draw is the GPU's NVML total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``,
the counter Zeus's ``ZeusMonitor`` reads on Volta and later GPUs) over the window's wall time, with the
CUDA queue drained at both ends. A sampler thread reads the SM clock and the instantaneous draw every
50 ms beside it. Models are built from their configs with random weights; nothing is downloaded.

States (each a window of steady work):
- idle: a CUDA context, nothing launched, clocks settled (at the start and again at the end);
- compute: back-to-back 8192^3 bf16 matrix products;
- memory: back-to-back 2 GiB device-to-device copies;
- spin: ``torch.cuda._sleep``, one thread block polling a clock (a kernel waiting on a peer's flag);
- gaps: bursts of matrix products separated by host sleeps of 1-300 ms; each gap's draw is the window's
  energy less the burst time at the compute draw, over the gap time (a pipeline bubble or a host stall).
Runs: a Llama-3-8B-shaped decoder served with ``generate`` (128 prompt + 128 output tokens, batch
1-128), a Llama-3.2-1B-shaped decoder trained with AdamW at 2,048 tokens, BERT-Large inference at 384
tokens (batch 1-256).

Needs: a CUDA GPU, torch, transformers, nvidia-ml-py.
Usage: python tools/measure_gpu_states.py OUT_DIR [STEPS]
(STEPS: a comma list of states, decode, train, bert, busy; all by default)
Writes OUT_DIR/gpu_states.json after every step (a failed step is recorded with its error).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import threading
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

STATE_S = 6.0  # seconds per state window
GAPS_MS = [1, 3, 10, 30, 100, 300]
BURST_GEMMS = 8  # about 11 ms of 8192^3 bf16 products on an H100
DECODE_BATCHES = [1, 8, 32, 128]
BERT_BATCHES = [1, 8, 64, 256]
PROMPT_TOKENS, OUTPUT_TOKENS = 128, 128
BUSY_PARTS = os.environ.get("BUSY_PARTS", "decode,bert").split(",")  # what the busy step profiles


class Meter:
    """NVML energy counter windows with a 50 ms sampler of SM clock and instantaneous draw."""

    def __init__(self) -> None:
        import pynvml

        self.nv = pynvml
        pynvml.nvmlInit()
        self.h = pynvml.nvmlDeviceGetHandleByIndex(0)
        self._samples: list[tuple[float, float]] = []
        self._on = False
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            if self._on:
                try:
                    self._samples.append(
                        (
                            self.nv.nvmlDeviceGetClockInfo(self.h, self.nv.NVML_CLOCK_SM),
                            self.nv.nvmlDeviceGetPowerUsage(self.h) / 1000,
                        )
                    )
                except Exception:  # noqa: BLE001 - a missed sample is not a failed window
                    pass
            time.sleep(0.05)

    def energy_j(self) -> float:
        return self.nv.nvmlDeviceGetTotalEnergyConsumption(self.h) / 1000

    def window(self, body) -> dict:
        """Run ``body()`` (it drains the CUDA queue itself) inside one metered window."""
        import torch

        torch.cuda.synchronize()
        self._samples, self._on = [], True
        e0, t0 = self.energy_j(), time.perf_counter()
        extra = body() or {}
        torch.cuda.synchronize()
        t1, e1 = time.perf_counter(), self.energy_j()
        self._on = False
        s = self._samples
        clocks = [c for c, _ in s]
        draws = [w for _, w in s]
        row = {
            "seconds": round(t1 - t0, 4),
            "energy_j": round(e1 - e0, 3),
            "power_w": round((e1 - e0) / (t1 - t0), 2),
            "samples": len(s),
        }
        if s:
            row |= {
                "sm_clock_mhz_mean": round(sum(clocks) / len(clocks)),
                "sm_clock_mhz_min": min(clocks),
                "sample_w_min": round(min(draws), 1),
                "sample_w_max": round(max(draws), 1),
            }
        return row | extra


def _loop(fn, seconds: float):
    def body() -> dict:
        t0, n = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds:
            fn()
            n += 1
        return {"calls": n}

    return body


def states(m: Meter, res: dict, save) -> None:
    import torch

    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    res["idle_start"] = m.window(lambda: time.sleep(STATE_S))
    save()
    _loop(lambda: torch.mm(a, b, out=c), 2.0)()  # warm the clocks and cuBLAS
    row = m.window(_loop(lambda: torch.mm(a, b, out=c), STATE_S))
    row["tflops"] = round(row["calls"] * 2 * n**3 / row["seconds"] / 1e12, 1)
    res["compute"] = row
    save()
    x = torch.empty(2**30, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    row = m.window(_loop(lambda: y.copy_(x), STATE_S))
    row["gb_per_s"] = round(row["calls"] * 2 * x.numel() * 2 / row["seconds"] / 1e9, 1)
    res["memory"] = row
    save()
    row = m.window(_loop(lambda: torch.cuda._sleep(10_000_000), STATE_S))
    res["spin"] = row
    save()
    busy_w = res["compute"]["power_w"]
    res["gaps"] = []
    for gap in GAPS_MS:

        def body(gap=gap) -> dict:
            t0, bursts, busy = time.perf_counter(), 0, 0.0
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            while time.perf_counter() - t0 < STATE_S:
                start.record()
                for _ in range(BURST_GEMMS):
                    torch.mm(a, b, out=c)
                end.record()
                end.synchronize()
                busy += start.elapsed_time(end) / 1000
                time.sleep(gap / 1000)
                bursts += 1
            return {"bursts": bursts, "busy_s": round(busy, 4)}

        row = m.window(body)
        busy_s = row["busy_s"]
        idle_s = row["seconds"] - busy_s
        row |= {
            "gap_ms": gap,
            "gap_w": round((row["energy_j"] - busy_s * busy_w) / idle_s, 2) if idle_s > 0 else None,
        }
        res["gaps"].append(row)
        save()


def _llama_config(hidden_size: int, intermediate_size: int, num_hidden_layers: int, tied: bool):
    """A Llama-3-family config (32 query and 8 key/value heads, 128,256-token vocabulary)."""
    from transformers import LlamaConfig

    return LlamaConfig(hidden_size=hidden_size, intermediate_size=intermediate_size,
                       num_hidden_layers=num_hidden_layers, num_attention_heads=32, num_key_value_heads=8,
                       vocab_size=128256, max_position_embeddings=8192, tie_word_embeddings=tied)


def _llama3_8b():
    """A Llama-3-8B-shaped decoder on the GPU, random weights, bf16, generating without stopping."""
    import torch
    from transformers import LlamaForCausalLM

    cfg = _llama_config(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, tied=False)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def _generate_kwargs(batch: int) -> tuple:
    import torch

    ids = torch.randint(1000, 100000, (batch, PROMPT_TOKENS), device="cuda")
    kw = {
        "attention_mask": torch.ones_like(ids),
        "max_new_tokens": OUTPUT_TOKENS,
        "min_new_tokens": OUTPUT_TOKENS,
        "do_sample": False,
    }
    return ids, kw


def _bert_large():
    """BERT-Large on the GPU, random weights, fp16."""
    import torch
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    with torch.device("cuda"):
        return BertModel(cfg).half().eval()


def decode(m: Meter, res: dict, save) -> None:
    import torch
    import transformers

    model = _llama3_8b()
    res["decode"] = {
        "model": "Llama-3-8B shape (LlamaConfig), random weights, bf16",
        "transformers": transformers.__version__,
        "runs": [],
    }
    for batch in DECODE_BATCHES:
        ids, kw = _generate_kwargs(batch)
        with torch.inference_mode():
            model.generate(ids, **{**kw, "max_new_tokens": 8, "min_new_tokens": 8})
            for rep in range(3):
                out: dict = {}

                def run(out=out, ids=ids, kw=kw) -> None:
                    out["n"] = model.generate(ids, **kw).shape[1]

                row = m.window(run)
                new = out["n"] - PROMPT_TOKENS
                row |= {
                    "batch": batch,
                    "rep": rep,
                    "output_tokens": new,
                    "output_tokens_per_s": round(batch * new / row["seconds"], 2),
                }
                res["decode"]["runs"].append(row)
                save()


def train(m: Meter, res: dict, save) -> None:
    import torch
    from transformers import LlamaForCausalLM

    cfg = _llama_config(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, tied=True)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    batch, seq = 4, 2048
    ids = torch.randint(1000, 100000, (batch, seq), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    steps = 12

    def run() -> None:
        for _ in range(steps):
            step()

    row = m.window(run)
    row |= {
        "model": "Llama-3.2-1B shape (LlamaConfig, tied embeddings), random weights, fp32 weights, "
        "bf16 autocast, fused AdamW",
        "batch": batch,
        "seq_len": seq,
        "steps": steps,
        "tokens_per_s": round(steps * batch * seq / row["seconds"], 1),
        "params": sum(p.numel() for p in model.parameters()),
    }
    res["train"] = row
    save()


def bert(m: Meter, res: dict, save) -> None:
    import torch

    model = _bert_large()
    res["bert"] = []
    for batch in BERT_BATCHES:
        ids = torch.randint(1000, 30000, (batch, 384), device="cuda")
        with torch.inference_mode():
            _loop(lambda ids=ids: model(input_ids=ids), 1.5)()
            row = m.window(_loop(lambda ids=ids: model(input_ids=ids), 5.0))
        row |= {
            "batch": batch,
            "seq_len": 384,
            "samples_per_s": round(row["calls"] * batch / row["seconds"], 1),
        }
        res["bert"].append(row)
        save()


def _kernel_s(body) -> float:
    """Seconds of GPU kernels (and copies) ``body()`` runs, from the CUDA profiler's device times."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        body()
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / 1e6


def _timed_s(body) -> float:
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    body()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def busy(m: Meter, res: dict, save) -> None:
    """The GPU's busy share of the decode and BERT runs: kernel seconds of one profiled call over the
    wall seconds of the same call unprofiled (the profiler slows the host, not the kernels)."""
    import torch

    res["busy"] = {"decode": [], "bert": []}
    if "decode" in BUSY_PARTS:
        model = _llama3_8b()
        for batch in DECODE_BATCHES:
            ids, kw = _generate_kwargs(batch)
            with torch.inference_mode():
                model.generate(ids, **kw)  # the cold call (allocator, kernels for new shapes)
                row = _busy_row(batch, lambda ids=ids, kw=kw: model.generate(ids, **kw))
            res["busy"]["decode"].append(row)
            save()
        del model
        torch.cuda.empty_cache()
    if "bert" in BUSY_PARTS:
        model = _bert_large()
        for batch in BERT_BATCHES:
            ids = torch.randint(1000, 30000, (batch, 384), device="cuda")

            def forwards(ids=ids) -> None:
                for _ in range(10):
                    model(input_ids=ids)

            with torch.inference_mode():
                forwards()
                row = _busy_row(batch, forwards)
            res["busy"]["bert"].append(row)
            save()


def _busy_row(batch: int, body) -> dict:
    """One call's wall seconds unprofiled, then its kernel seconds profiled, and their ratio."""
    wall, kernel = _timed_s(body), _kernel_s(body)
    return {"batch": batch, "wall_s": round(wall, 4), "kernel_s": round(kernel, 4),
            "busy_share": round(kernel / wall, 4)}


def main(out: Path) -> None:
    import torch

    out.mkdir(parents=True, exist_ok=True)
    m = Meter()
    nv, h = m.nv, m.h
    torch.zeros(1, device="cuda")
    name = nv.nvmlDeviceGetName(h)
    res: dict = {
        "recorded_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": name if isinstance(name, str) else name.decode(),
        "driver": nv.nvmlSystemGetDriverVersion(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "power_limit_w": nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000,
        "max_sm_clock_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
        "meter": "NVML nvmlDeviceGetTotalEnergyConsumption over each window (nvidia-ml-py)",
        "errors": {},
    }

    def save() -> None:
        (out / "gpu_states.json").write_text(json.dumps(res, indent=1) + "\n")

    save()
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
    for step in (states, decode, train, bert, busy):
        if only and step.__name__ not in only:
            continue
        t0 = time.perf_counter()
        try:
            step(m, res, save)
        except Exception as exc:  # noqa: BLE001 - record it and go on to the next step
            res["errors"][step.__name__] = "".join(traceback.format_exception_only(exc)).strip()
            traceback.print_exc()
        torch.cuda.empty_cache()
        print(f"{step.__name__}: {time.perf_counter() - t0:.0f} s", flush=True)
        save()
    if only is None or "states" in only:  # the blocked draw again, after 20 s with nothing launched
        torch.cuda.empty_cache()
        time.sleep(20)
        res["idle_end"] = m.window(lambda: time.sleep(STATE_S))
        save()
    shown = ("idle_start", "compute", "memory", "spin", "idle_end", "busy")
    print(json.dumps({k: v for k, v in res.items() if k in shown}))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(Path(sys.argv[1]))

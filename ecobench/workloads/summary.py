"""`ecobench workload`: the numbers an engineer checks first about a model."""

from __future__ import annotations

from typing import Any

from ecobench.units import BYTES_PER_DTYPE, DTYPES, GIB
from ecobench.workloads.architecture import Architecture, Task
from ecobench.workloads.transformer import matmul_flops_per_token

# Training state per parameter by compute precision (bytes): weights, gradients, optimizer state.
# Mixed precision keeps fp32 master weights and two fp32 Adam moments (12 bytes); fp32 training keeps
# the two moments (8 bytes) beside its fp32 weights.
OPTIMIZER_BYTES_PER_PARAM = {"fp32": 8, "tf32": 8}
MIXED_OPTIMIZER_BYTES_PER_PARAM = 12


def state_bytes_per_param(dtype: str) -> tuple[int, int, int]:
    """(weights, gradients, optimizer state) bytes per parameter when training in ``dtype``."""
    w = max(BYTES_PER_DTYPE[dtype], 2)  # 8-bit compute keeps 16-bit weights for training
    return w, w, OPTIMIZER_BYTES_PER_PARAM.get(dtype, MIXED_OPTIMIZER_BYTES_PER_PARAM)


def summary(arch: Architecture, seq_len: int, task: Task = "pretrain", num_labels: int = 2) -> dict[str, Any]:
    """Parameters, FLOPs per token and training-state bytes of ``arch`` at ``seq_len``."""
    if seq_len > arch.max_position_embeddings:
        raise ValueError(f"--seq-len {seq_len} exceeds the model's max_position_embeddings "
                         f"({arch.max_position_embeddings})")
    mode = "training"
    fwd = matmul_flops_per_token(arch, seq_len, mode, task, num_labels)  # type: ignore[arg-type]
    params = arch.params + arch.head_params(task, num_labels)
    per_precision = {}
    for d in DTYPES:
        w, g, o = state_bytes_per_param(d)
        per_precision[d] = {"weights_bytes": params * BYTES_PER_DTYPE[d],
                            "training_weights_bytes": params * w,
                            "gradients_bytes": params * g, "optimizer_bytes": params * o,
                            "training_state_gib": params * (w + g + o) / GIB}
    return {
        "model": arch.name, "kind": arch.kind, "seq_len": seq_len, "task": task,
        "layers": arch.layers, "hidden_size": arch.hidden_size, "heads": arch.heads, "kv_heads": arch.kv,
        "intermediate_size": arch.intermediate_size, "ffn": arch.ffn, "vocab_size": arch.vocab_size,
        "tied_embeddings": arch.tied_embeddings, "params": params, "params_base_model": arch.params,
        "params_active": params - (arch.params - arch.active_params),
        "head_dim": arch.mla.qk_head_dim if arch.mla else arch.head_dim,
        "v_head_dim": arch.mla.v_head_dim if arch.mla else arch.head_dim,
        "kv_lora_rank": arch.mla.kv_lora_rank if arch.mla else None,
        "attention": "mla" if arch.mla else ("mha" if arch.kv == arch.heads else
                                             "mqa" if arch.kv == 1 else "gqa"),
        "moe": None if arch.moe is None else {
            "experts": arch.moe.experts, "experts_per_token": arch.moe.experts_per_token,
            "shared_experts": arch.moe.shared_experts,
            "expert_intermediate_size": arch.moe.expert_intermediate_size, "moe_layers": arch.moe_layers,
            "capacity_factor": arch.moe.capacity_factor},
        "flops_per_token_forward": fwd, "flops_per_token_training": 3 * fwd,
        "flops_per_token_6n": 6.0 * (params - (arch.params - arch.active_params)),  # active parameters
        "bytes_per_precision": per_precision,
    }


def format_summary(s: dict[str, Any]) -> str:
    """The summary as aligned text."""
    v = s.get("v_head_dim", s["head_dim"])  # MLA: values narrower than queries and keys
    heads = f"head_dim {s['head_dim']}" + (f", v {v}" if v != s["head_dim"] else "")
    lines = [
        f"{s['model']} ({s['kind']}, task {s['task']}, {s['seq_len']} tokens)",
        f"  layers {s['layers']}, hidden {s['hidden_size']}, heads {s['heads']} (kv {s['kv_heads']}, "
        f"{heads}, {str(s['attention']).upper()}), "
        f"ffn {s['ffn']} {s['intermediate_size']}, vocab {s['vocab_size']}, "
        f"tied embeddings {s['tied_embeddings']}",
        f"  params                     {s['params']:>20,}",
        *([f"  params active per token    {s['params_active']:>20,}   ({m['experts_per_token']} of "
           f"{m['experts']} experts + {m['shared_experts']} shared in {m['moe_layers']} MoE layers)"]
          if (m := s.get("moe")) else []),
        *([f"  attention                  {'MLA (latent)':>20}"] if s.get("attention") == "mla" else []),
        f"  FLOPs per token, forward   {s['flops_per_token_forward']:>20,.4g}",
        f"  FLOPs per token, training  {s['flops_per_token_training']:>20,.4g}   (forward + backward; 6N = "
        f"{s['flops_per_token_6n']:,.4g})",
        "",
        f"  {'precision':<9} {'weights GiB':>12} {'training GiB: weights':>22} {'gradients':>10} "
        f"{'optimizer':>10} "
        f"{'state GiB':>10}",
    ]
    for d, b in s["bytes_per_precision"].items():
        lines.append(f"  {d:<9} {b['weights_bytes'] / GIB:>12,.1f} "
                     f"{b['training_weights_bytes'] / GIB:>22,.1f} "
                     f"{b['gradients_bytes'] / GIB:>10,.1f} {b['optimizer_bytes'] / GIB:>10,.1f} "
                     f"{b['training_state_gib']:>10,.1f}")
    lines.append("  (training state before ZeRO sharding; activations depend on the layout: "
                 "see `ecobench run`)")
    return "\n".join(lines)

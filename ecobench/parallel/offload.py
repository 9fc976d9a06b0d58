"""ZeRO offload: the optimizer state (and fp32 master weights) kept in host memory (``cpu``,
ZeRO-Offload: Ren et al., USENIX ATC 2021) or on the instance's NVMe drives (``nvme``,
ZeRO-Infinity: Rajbhandari et al., SC21), and what it costs each step.

Per rank and step: the rank's shard of 16-bit gradients goes down the host link (overlapping the
last backward pass), the host runs the optimizer (memory-bound: the state streamed once at the
host's DRAM bandwidth, shared by the instance's ranks), the updated 16-bit parameters come back up
(exposed); ``nvme`` also reads and writes the state from the drives. DeepSpeed offers optimizer
offload with ZeRO stages 1-3 and NVMe offload with stage 3 only (DeepSpeed configuration docs,
``zero_optimization.offload_optimizer``, https://www.deepspeed.ai/docs/config-json/, 2025).

The host figures per instance type are below, each with its source; an instance type without them
cannot plan offload (the planner says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

Offload = Literal["none", "cpu", "nvme"]
OFFLOADS: tuple[Offload, ...] = ("none", "cpu", "nvme")
# Share of the host link a pinned copy reaches, and of DRAM bandwidth a vectorised CPU Adam
# streams: assumptions (NVIDIA's bandwidthTest reaches about 25 of 32 GB/s on A100 SXM4 hosts;
# STREAM triad on two-socket servers about 70-80% of the channels' peak, and the optimizer's
# mix of reads and writes less).
HOST_LINK_EFFICIENCY = 0.8
HOST_MEMORY_EFFICIENCY = 0.5
NVME_GB_PER_S_PER_DRIVE = 2.0  # assumption: sustained mixed read/write of a datacenter PCIe Gen4 SSD


@dataclass(frozen=True)
class HostFigures:
    """What offload needs of an instance: host link per device (one direction), host DRAM and
    NVMe bandwidth per instance, and where each comes from."""

    link_gb_per_s: float  # per device, one direction
    dram_gb_per_s: float  # per instance, both sockets
    nvme_drives: int
    source: str


_A100 = "NVIDIA A100 datasheet (2021): PCIe Gen4 64 GB/s (both directions)"
_H100 = "NVIDIA H100 / H200 datasheets (2023-2024): PCIe Gen5 128 GB/s (both directions)"
_CASCADE = ("Intel Xeon Platinum 8275CL (Cascade Lake): 6 DDR4-2933 channels per socket, 140.8 GB/s, "
            "x2 sockets (inferred from the Cascade Lake 82xx specification, ark.intel.com)")
_MILAN = ("AMD EPYC 7R13 (Milan): 8 DDR4-3200 channels per socket, 204.8 GB/s, x2 sockets (inferred "
          "from the EPYC 7003 series specification, amd.com)")
_SPR = ("Intel Xeon (Sapphire Rapids): 8 DDR5-4800 channels per socket, 307.2 GB/s, x2 sockets "
        "(inferred from the 4th-gen Xeon Scalable specification)")
_DRIVES = "8 local NVMe SSDs (aws.amazon.com/ec2/instance-types/p4 and /p5, 2025)"
HOST: dict[str, HostFigures] = {
    "p4d.24xlarge": HostFigures(32.0, 281.6, 8, f"{_A100}; {_CASCADE}; {_DRIVES}"),
    "p4de.24xlarge": HostFigures(32.0, 281.6, 8, f"{_A100}; {_CASCADE}; {_DRIVES}"),
    "p5.48xlarge": HostFigures(64.0, 409.6, 8, f"{_H100}; {_MILAN}; {_DRIVES}"),
    "p5e.48xlarge": HostFigures(64.0, 409.6, 8, f"{_H100}; {_MILAN}; {_DRIVES}"),
    "p5en.48xlarge": HostFigures(64.0, 614.4, 8, f"{_H100}; {_SPR}; {_DRIVES}"),
}


def host_rates(instance_type: str, ranks_per_node: int,
               ranks_per_chip: int = 1) -> tuple[float, float, float]:
    """(host link, host optimizer bandwidth, NVMe bandwidth) per rank in GB/s at the efficiencies
    above; NaN where the instance type has no sourced figures."""
    h = HOST.get(instance_type)
    if h is None:
        return float("nan"), float("nan"), float("nan")
    return (h.link_gb_per_s / ranks_per_chip * HOST_LINK_EFFICIENCY,
            h.dram_gb_per_s * HOST_MEMORY_EFFICIENCY / ranks_per_node,
            h.nvme_drives * NVME_GB_PER_S_PER_DRIVE / ranks_per_node)


def offload_step_s(off: Any, shard_params: Any, grad_bytes: Any, weight_bytes: Any, state_bytes: Any,
                   step_bytes: Any, link_gb_per_s: Any, host_gb_per_s: Any, nvme_gb_per_s: Any,
                   backward_window_s: Any, exposed: Any) -> Any:
    """Seconds the optimizer step takes per rank with offload ``off`` (index into :data:`OFFLOADS`;
    0 gives 0): gradients down (overlapping ``backward_window_s``), the host's optimizer step,
    parameters up, and for NVMe the state read and written."""
    down = shard_params * grad_bytes / (link_gb_per_s * 1e9)
    up = shard_params * weight_bytes / (link_gb_per_s * 1e9)
    cpu = shard_params * step_bytes / (host_gb_per_s * 1e9)
    nvme = np.where(off == 2, 2 * shard_params * state_bytes / (nvme_gb_per_s * 1e9), 0.0)
    return np.where(off > 0, exposed(down, backward_window_s) + cpu + up + nvme, 0.0)

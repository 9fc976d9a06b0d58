"""NeuronCore generations described by their engines, from the Neuron architecture documentation.

Every figure names its source; ``inferred`` says how a figure the documents do not give was derived.
Constants of the engine model (instruction costs, DMA engines and their overheads, PSUM banks) live
here, with the sentence of the NKI guides they come from; the few parameters the documents do not
give are fitted on published points (``hardware/neuron/fit.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

SDK = "aws-neuron/aws-neuron-sdk at 81ce03ae (2026-08-21)"
NC_V1_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v1.html"
NC_V2_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v2.html"
NC_V3_DOC = f"{SDK} about-neuron/arch/neuron-hardware/neuron-core-v3.rst"
NKI_V2_DOC = f"{SDK} nki/guides/architecture/trainium_inferentia2_arch.rst"
NKI_V3_DOC = f"{SDK} nki/guides/architecture/trainium2_arch.rst"
NKI_PERF_DOC = f"{SDK} nki/deep-dives/nki_perf_guide.rst"
NKI_DMA_DOC = f"{SDK} nki/deep-dives/nki-dma-bandwidth-guide.rst"
PROFILER_DOC = f"{SDK} tools/neuron-explorer/overview-summary-page.rst"
TRN1_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html"
TRN2_DOC = f"{SDK} about-neuron/arch/neuron-hardware/trainium2.rst, trn2-arch.rst"
COLLECTIVES_DOC = f"{SDK} neuron-runtime/explore/intranode-collective-comm.rst"


@dataclass(frozen=True)
class NeuronCoreSpec:
    """One NeuronCore: its engines (tensor, vector, scalar, GpSimd), on-chip SRAM and DMA queues.

    A logical core made of ``physical`` NeuronCores (Trainium2's LNC=2) has ``physical`` times the
    engines and DMA queues; instruction costs stay those of one core (both issue in parallel).
    """

    name: str
    generation: str  # "v1", "v2", "v3": the fitted parameters are per generation
    array_rows: int  # contraction (partition) dimension of one matmul instruction
    array_cols: int  # stationary free size: output partitions of one instruction
    max_moving: int  # moving free size of one instruction: one PSUM bank of FP32 per partition
    tensor_ghz: float
    mm_init_cycles: int  # MultiplyMoving initiation interval floor (MM_INIT_LATENCY)
    fp32_slowdown: float | None  # FP32 matmul instruction cost over BF16 (None: not supported)
    fp8_speedup: float  # FP8 matmul throughput over BF16
    int8_speedup: float | None
    vector_lanes: int  # elements per cycle (FP32 arithmetic)
    vector_ghz: float
    scalar_lanes: int
    scalar_ghz: float
    gpsimd_lanes: int | None
    gpsimd_ghz: float | None
    instruction_cycles: int  # static cost of one vector/scalar instruction
    psum_parallel: bool  # VectorE and ScalarE may evacuate PSUM at the same time
    sbuf_mib: float | None  # None: unpublished; activations are taken to stay on chip (NeuronCore-v1)
    dma_engines: int
    dma_gb_per_s_per_engine: float
    dma_transfer_s: float  # fixed cost of one DMA transfer on its engine
    dma_transfer_bytes: int  # bytes one transfer moves when the tensor is large
    throttle_ramp_s: float = 0.0  # TensorE starts at half rate for this long after an idle gap
    physical: int = 1
    sources: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    @property
    def tensor_tflops(self) -> float:
        """Dense BF16 peak of the logical core: 2 FLOPs per processing element and cycle."""
        return 2 * self.array_rows * self.array_cols * self.tensor_ghz * self.physical / 1e3

    @property
    def dma_gb_per_s(self) -> float:
        """What the core's DMA engines move at full rate, together."""
        return self.dma_engines * self.dma_gb_per_s_per_engine * self.physical


NEURONCORE_V2 = NeuronCoreSpec(
    name="NeuronCore-v2", generation="v2",
    array_rows=128, array_cols=128, max_moving=512, tensor_ghz=2.8, mm_init_cycles=64,
    fp32_slowdown=4.0, fp8_speedup=1.0, int8_speedup=2.0,
    vector_lanes=128, vector_ghz=1.12, scalar_lanes=128, scalar_ghz=1.4,
    gpsimd_lanes=128, gpsimd_ghz=1.4, instruction_cycles=100, psum_parallel=False,
    sbuf_mib=24.0, dma_engines=16, dma_gb_per_s_per_engine=17.0, dma_transfer_s=1.3e-6,
    dma_transfer_bytes=64 * 1024,
    sources={
        "tensor 128x128, 2.8 GHz; vector 1.12 GHz, scalar 1.4 GHz, GpSimd 1.4 GHz, 128 lanes; SBUF 24 MiB; "
        "PSUM 8 banks of 512 FP32 per partition; MM_INIT_LATENCY 64 cycles; FP32 matmul ~4x slower; "
        "'static instruction overhead of 100 engine cycles'; VectorE and ScalarE cannot access PSUM in "
        "parallel; 16 DMA engines per core": NKI_V2_DOC,
        "17 B/ns per DMA engine; 'semaphore-to-start latency (~1300 ns cross-engine)' per transfer":
            NKI_DMA_DOC,
        "transfers 'larger than 32KiB to achieve ideal bandwidth'": NKI_PERF_DOC,
        "INT8 380 TOPS per chip (2x BF16)": TRN1_DOC,
        "inferred": "the transfer size the compiler reaches on large tensors (64 KiB) is an assumption "
                    "between the guide's 32 KiB minimum and its 4 KiB-per-partition x 16 partitions",
    },
)

NEURONCORE_V3 = NeuronCoreSpec(
    name="NeuronCore-v3 (LNC=2)", generation="v3",
    array_rows=128, array_cols=128, max_moving=512, tensor_ghz=2.4, mm_init_cycles=64,
    fp32_slowdown=4.0, fp8_speedup=2.0, int8_speedup=None,
    vector_lanes=256, vector_ghz=0.96, scalar_lanes=128, scalar_ghz=1.2,
    gpsimd_lanes=128, gpsimd_ghz=1.2, instruction_cycles=100, psum_parallel=True,
    sbuf_mib=28.0, dma_engines=16, dma_gb_per_s_per_engine=23.0, dma_transfer_s=1.3e-6,
    dma_transfer_bytes=64 * 1024, throttle_ramp_s=3e-6, physical=2,
    sources={
        "tensor 2.4 GHz, 79 BF16 / 158 FP8 / 20 FP32 TFLOPS; vector 512 BF16 / 256 other lanes at "
        "0.96 GHz; scalar 128 lanes at 1.2 GHz; GpSimd 1.2 GHz; SBUF 28 MiB; VectorE and ScalarE "
        "evacuate PSUM in parallel; 16 DMA engines per core": NKI_V3_DOC,
        "23 B/ns per DMA engine": NKI_DMA_DOC,
        "TensorE starts at ~50% after idle and ramps over ~3 us (dI/dt throttling, Trn2)": PROFILER_DOC,
        "8 NeuronCore-v3 per chip; LNC=2 default": TRN2_DOC,
        "inferred": "MM_INIT_LATENCY, the 100-cycle instruction cost and the DMA transfer overhead are "
                    "NeuronCore-v2's (no v3 figure published); a logical core is two physical cores "
                    "working in parallel",
    },
)

NEURONCORE_V1 = NeuronCoreSpec(
    name="NeuronCore-v1", generation="v1",
    array_rows=128, array_cols=64, max_moving=512, tensor_ghz=16e12 / (2 * 128 * 64) / 1e9,
    mm_init_cycles=64, fp32_slowdown=None, fp8_speedup=1.0, int8_speedup=2.0,
    vector_lanes=256, vector_ghz=1.0, scalar_lanes=512, scalar_ghz=1.0,
    gpsimd_lanes=None, gpsimd_ghz=None, instruction_cycles=100, psum_parallel=False,
    sbuf_mib=None, dma_engines=16, dma_gb_per_s_per_engine=17.0 / 4, dma_transfer_s=1.3e-6,
    dma_transfer_bytes=64 * 1024,
    sources={
        "tensor engine 16 TFLOPS BF16/FP16; scalar 512 and vector 256 FLOP per cycle; large on-chip "
        "cache": NC_V1_DOC,
        "inferred": "array 128x64, a 1 GHz vector/scalar clock, NeuronCore-v2's instruction and DMA "
                    "costs are assumptions (not published); activations stay on chip, weights stream "
                    "from the chip's DRAM (53.7 GB/s shared by its 4 cores)",
    },
)


@dataclass(frozen=True)
class NeuronDeviceSpec:
    """A Neuron chip: logical cores (the ranks the Neuron docs count), device memory, links."""

    name: str
    core: NeuronCoreSpec
    cores: int
    hbm_gb_per_s: float
    neuronlink_gb_per_s: float | None
    cc_cores: int | None
    source: str

    @property
    def core_hbm_gb_per_s(self) -> float:
        """Device memory bandwidth one logical core gets when every core streams."""
        return self.hbm_gb_per_s / self.cores

    @property
    def core_dma_gb_per_s(self) -> float:
        """The slower of the core's DMA engines and its share of device memory."""
        return min(self.core.dma_gb_per_s, self.core_hbm_gb_per_s)


DEVICES: dict[str, NeuronDeviceSpec] = {
    "inferentia": NeuronDeviceSpec(
        "Inferentia", NEURONCORE_V1, 4, 53.7, None, None,
        "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/inferentia.html"),
    "inferentia2": NeuronDeviceSpec("Inferentia2", NEURONCORE_V2, 2, 820.0, None, 6, NKI_V2_DOC),
    "trainium": NeuronDeviceSpec("Trainium", NEURONCORE_V2, 2, 820.0, 384 * 1.073741824, 6,
                                 TRN1_DOC + " (NeuronLink-v2 384 GiB/s per device); 6 CC-cores: "
                                 + NKI_V2_DOC),
    "trainium2": NeuronDeviceSpec("Trainium2", NEURONCORE_V3, 4, 2900.0, 1280.0, 20,
                                  TRN2_DOC + " (96 GiB at 2.9 TB/s, NeuronLink-v3 1.28 TB/s per chip); "
                                  "4 logical cores at LNC=2, 20 CC-cores: " + NKI_V3_DOC),
}


def logical_core_size(accelerator: str | None) -> int:
    """Physical NeuronCores per logical core (LNC) of an accelerator: 2 on Trainium2 at its default, 1 on
    the other Neuron chips and on anything that is not a Neuron chip."""
    dev = DEVICES.get(accelerator or "")
    return dev.core.physical if dev else 1

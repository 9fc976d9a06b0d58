"""NeuronCore generations described by their engines, from the Neuron architecture documentation.

Every figure names its source; ``inferred`` says how a figure the documents do not give was derived.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NC_V1_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v1.html"
NC_V2_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v2.html"
NKI_V2_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/arch/trainium_inferentia2_arch.html"
TRN1_DOC = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trn1-arch.html"


@dataclass(frozen=True)
class NeuronCoreSpec:
    """One NeuronCore: tensor engine (systolic array), scalar, vector, GPSIMD engines, on-chip SRAM."""

    name: str
    array_rows: int  # contraction (partition) dimension of one pass
    array_cols: int  # output columns held stationary in one pass
    max_moving: int  # rows streamed per matmul instruction (one PSUM bank of FP32)
    tensor_bf16_tflops: float
    tensor_fp32_rate: float  # FP32 throughput as a fraction of BF16 (None: FP32 not supported)
    scalar_gflops: float  # activation functions (exp, GELU, ...)
    vector_gflops: float  # reductions, layernorm, residual adds, PSUM evacuation
    gpsimd_gflops: float | None
    sbuf_mib: float | None
    psum_mib: float | None
    fill_cycles: int  # systolic pipeline fill/drain per pass
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def clock_hz(self) -> float:
        """Tensor-engine clock implied by the peak and the array size (2 FLOPs per MAC)."""
        return self.tensor_bf16_tflops * 1e12 / (2 * self.array_rows * self.array_cols)


NEURONCORE_V2 = NeuronCoreSpec(
    name="NeuronCore-v2",
    array_rows=128, array_cols=128, max_moving=512,
    tensor_bf16_tflops=95.0,  # 190 TFLOPS per 2-core chip
    tensor_fp32_rate=0.25,  # 47.5 of 190 TFLOPS
    scalar_gflops=2900.0, vector_gflops=2300.0,
    gpsimd_gflops=8 * 16 * 2 * 1.4,  # see sources: inferred
    sbuf_mib=24.0, psum_mib=2.0, fill_cycles=128,
    sources={
        "tensor/scalar/vector/gpsimd engines": NC_V2_DOC,
        "peaks per chip (190 BF16, 47.5 FP32 TFLOPS)": TRN1_DOC,
        "128x128 array, 24 MiB SBUF (128 partitions), 2 MiB PSUM, 512 FP32 per PSUM bank": NKI_V2_DOC,
        "inferred": "GPSIMD: 8 x 512-bit (16 FP32 lanes) processors, FMA, at an assumed 1.4 GHz; "
                    "pipeline fill of one array height per pass; the clock follows from the peak",
    },
)

NEURONCORE_V1 = NeuronCoreSpec(
    name="NeuronCore-v1",
    array_rows=128, array_cols=64, max_moving=512,
    tensor_bf16_tflops=16.0,
    tensor_fp32_rate=0.0,
    scalar_gflops=512 * 1.0, vector_gflops=256 * 1.0,
    gpsimd_gflops=None, sbuf_mib=None, psum_mib=None, fill_cycles=128,
    sources={
        "tensor engine 16 TFLOPS BF16/FP16; scalar 512 and vector 256 FLOP per cycle": NC_V1_DOC,
        "inferred": "array 128x64 and a 1 GHz scalar/vector clock are assumptions (not published); "
                    "the tensor clock follows from the 16 TFLOPS peak",
    },
)


@dataclass(frozen=True)
class NeuronDeviceSpec:
    """A Neuron chip: cores, device memory, and (Trainium) the collective links."""

    name: str
    core: NeuronCoreSpec
    cores: int
    hbm_gb_per_s: float
    dma_gb_per_s: float
    neuronlink_gb_per_s: float | None
    source: str


DEVICES: dict[str, NeuronDeviceSpec] = {
    "inferentia": NeuronDeviceSpec("Inferentia", NEURONCORE_V1, 4, 53.7, 53.7, None,
                                   "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/inferentia.html"),
    "inferentia2": NeuronDeviceSpec("Inferentia2", NEURONCORE_V2, 2, 820.0, 1000.0, None, NKI_V2_DOC),
    "trainium": NeuronDeviceSpec("Trainium", NEURONCORE_V2, 2, 820.0, 1000.0, 384 * 1.073741824,
                                 TRN1_DOC + " (NeuronLink-v2 384 GiB/s per device; 1 TB/s DMA)"),
}

"""What one kernel asks of each NeuronCore engine, by mechanism, from the NKI guides' cost rules.

For a batch on one (logical) core, every kernel becomes busy seconds of the tensor, vector, scalar
and GpSimd engines and of the DMA queues, split by the mechanism that causes them (the columns of
:data:`MECHANISMS`):

* **matmul** (TensorE): ``nc_matmul`` instructions of at most ``array_rows`` contraction x
  ``array_cols`` stationary columns x 512 moving rows (one PSUM bank), each costing
  ``max(moving rows, MM_INIT_LATENCY)`` cycles; the compiler takes the cheaper of weights or
  activations as the stationary operand (fast LoadStationary, NKI perf guide Opt #7). FP32 costs
  4x, FP8 on NeuronCore-v3 halves the contraction tiles, INT8 runs at twice the BF16 rate.
* **transpose** (TensorE): operands must have their contraction on the partition dimension. The
  attention probabilities and values (P.V), the weight-gradient operands (tokens on partitions),
  LayerNorm's input and output (its statistics run along the free dimension; RMSNorm needs none,
  perf guide Opt #8) and, in training, each weight once per micro-batch are transposed by
  identity matmuls (128 elements per cycle) whose outputs are evacuated like any matmul's.
* **evacuation** (VectorE, with ScalarE on NeuronCore-v3): every matmul output is copied from PSUM
  (FP32) to SBUF, one lane per partition per cycle; NeuronCore-v2 cannot read PSUM from both
  engines at once.
* **elementwise**: passes over each element on VectorE / ScalarE / GpSimdE (:data:`PASSES`); a
  two-input VectorE instruction costs two cycles per element.
* **instructions**: each vector/scalar instruction costs a static ~100 cycles (one per PSUM bank
  evacuated, one per pass over a tile of :data:`TILE_FREE` elements per partition).
* **weights / activations** (DMA): weights stream from device memory once per batch (they do not
  fit the 24-28 MiB SBUF), saved activations are written for the backward pass and read back, and
  a kernel's activations spill when one sample's exceed half the SBUF; at the core's DMA rate (16 engines x
  17-23 B/ns, or its share of device memory if lower).
* **transfers** (DMA): a transfer generated at run time (an embedding row, a block of cached
  keys and values) costs ~1.3 us on its engine (descriptor, semaphore-to-start); bulk transfers of
  weights and activations are large (>= 32 KiB) and prefetched, which the DMA guide says amortises
  that cost.

NeuronCore-v1's on-chip memory is not published: its activations are taken to stay on chip, its
weights to stream from the chip's DRAM (a BERT-base copy per core, 170 MB in BF16, exceeds any
cache the documents describe).
"""

from __future__ import annotations

import math

import numpy as np

from ecobench.hardware.neuron.arch import NeuronCoreSpec, NeuronDeviceSpec
from ecobench.units import BYTES_PER_DTYPE
from ecobench.workloads.kernels import Kernel
from ecobench.workloads.transformer import OPTIMIZER_FLOPS_PER_PARAM

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
MECHANISMS: tuple[tuple[str, str], ...] = (
    ("tensor", "matmul"), ("tensor", "transpose"),
    ("vector", "evacuation"), ("vector", "elementwise"), ("vector", "instructions"),
    ("scalar", "evacuation"), ("scalar", "elementwise"), ("scalar", "instructions"),
    ("gpsimd", "elementwise"),
    ("dma", "weights"), ("dma", "activations"), ("dma", "transfers"),
)
MECH_INDEX = {m: i for i, m in enumerate(MECHANISMS)}
# Mechanism -> engine matrix: busy seconds per engine = work @ ENGINE_OF.
ENGINE_OF = np.array([[float(e == eng) for eng in ENGINES] for e, _ in MECHANISMS])
TILE_FREE = 2048  # elements per partition one vector/scalar instruction processes (assumed tile)
SPILL_SHARE = 0.5  # a kernel's activations spill when they need more than this share of SBUF

# Passes over each element (VectorE, ScalarE, GpSimdE) for the forward and backward kernels, from
# the NKI ISA's instruction set: a residual add is tensor_tensor (2 cycles per element), LayerNorm
# is bn_stats + normalise (activation with per-partition scale and bias) + affine (tensor_tensor),
# RMSNorm is a squared sum (activation_reduce) + scale (2), softmax is max (vector) + exp with a
# running sum (activation_reduce) + scale, GELU/SiLU are ScalarE activations, SwiGLU's product and
# the gradients' products are tensor_tensor. The backward figures count the same instructions for
# each gradient term.
PASSES: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "attention.softmax": ((2, 1, 0), (4, 0, 0)),
    "residual_norm.layernorm": ((5, 1, 0), (8, 2, 0)),
    "residual_norm.rmsnorm": ((4, 2, 0), (7, 2, 0)),
    "norm.layernorm": ((3, 1, 0), (6, 1, 0)),
    "norm.rmsnorm": ((2, 2, 0), (5, 1, 0)),
    "ffn.gelu": ((0, 1, 0), (2, 1, 0)),
    "ffn.swiglu": ((2, 1, 0), (6, 2, 0)),
    "mlm.gelu_norm": ((3, 2, 0), (8, 3, 0)),
    "loss.softmax_xent": ((2, 1, 0), (2, 0, 0)),
}
# Fused (flash) attention, per executed score: forward max (vector) and exp (scalar), backward
# dS = P * (dP - rowsum) (tensor_tensor + tensor_scalar) and exp; plus the PSUM evacuations
# counted with the matmuls below.
ATTENTION_PASSES = ((1, 1, 0), (3, 1, 0))


def _base(name: str) -> str:
    return name.removesuffix(".grad")


def _passes(k: Kernel, norm: str) -> tuple[float, float, float]:
    name = _base(k.name)
    if name.endswith("residual_norm"):
        key = f"residual_norm.{norm}"
    elif name.endswith("norm") and name != "mlm.gelu_norm":
        key = f"norm.{norm}"
    else:
        key = name
    fwd, bwd = PASSES.get(key, ((1, 0, 0), (2, 0, 0)))
    return bwd if k.phase == "backward" else fwd


def _chunks_cycles(length: int, chunk: int, floor: int) -> int:
    """Cycles of instructions streaming ``length`` rows in chunks of ``chunk``, each at least
    ``floor`` cycles."""
    full, rem = divmod(length, chunk)
    return full * max(chunk, floor) + (max(rem, floor) if rem else 0)


def mm_cycles(core: NeuronCoreSpec, rows: int, k: int, n: int, dtype: str) -> tuple[float, int]:
    """TensorE cycles and instructions of one [rows x k] @ [k x n] product: the cheaper of the two
    operand mappings (which one is stationary)."""
    fp8 = dtype == "fp8" and core.fp8_speedup > 1
    kt = math.ceil(k / (core.array_rows * (2 if fp8 else 1)))
    a = kt * math.ceil(n / core.array_cols) * _chunks_cycles(rows, core.max_moving, core.mm_init_cycles)
    b = kt * math.ceil(rows / core.array_cols) * _chunks_cycles(n, core.max_moving, core.mm_init_cycles)
    if a <= b:
        instr = kt * math.ceil(n / core.array_cols) * math.ceil(rows / core.max_moving)
    else:
        instr = kt * math.ceil(rows / core.array_cols) * math.ceil(n / core.max_moving)
    return float(min(a, b)) * _dtype_cost(core, dtype), instr


def _dtype_cost(core: NeuronCoreSpec, dtype: str) -> float:
    if dtype in ("fp32",):
        if core.fp32_slowdown is None:
            raise ValueError(f"{core.name} has no FP32 TensorEngine mode")
        return core.fp32_slowdown
    if dtype == "int8":
        if core.int8_speedup is None:
            raise ValueError(f"{core.name} has no INT8 TensorEngine mode")
        return 1.0 / core.int8_speedup
    if dtype == "tf32" and core.fp32_slowdown is None:
        raise ValueError(f"{core.name} has no TF32 TensorEngine mode")
    return 1.0


class WorkModel:
    """Engine work of kernels on one logical core of ``dev`` (see the module docstring)."""

    def __init__(self, dev: NeuronDeviceSpec, norm: str = "layernorm", training: bool = False,
                 weight_matmul_dtype: str | None = None) -> None:
        self.dev, self.core, self.norm, self.training = dev, dev.core, norm, training
        # the type weight matmuls run their TensorE instructions in where it differs from the kernels'
        # (FP8 training: FP8 weight matmuls over BF16 activations, parallel/step.py FP8_ACTIVATION_DTYPE)
        self.weight_matmul_dtype = weight_matmul_dtype
        c = dev.core
        self.sbuf_bytes = (c.sbuf_mib or float("inf")) * 2**20 * c.physical
        self.dma_bps = dev.core_dma_gb_per_s * 1e9
        self.t_hz = c.tensor_ghz * 1e9 * c.physical
        # PSUM evacuation rate (elements per second) and its split between VectorE and ScalarE
        v_rate = c.vector_lanes * c.vector_ghz * 1e9 * c.physical
        s_rate = c.scalar_lanes * c.scalar_ghz * 1e9 * c.physical
        self.v_rate, self.s_rate = v_rate, s_rate
        self.evac_share_vector = v_rate / (v_rate + s_rate) if c.psum_parallel else 1.0
        self.evac_rate = (v_rate + s_rate) if c.psum_parallel else v_rate
        g = (c.gpsimd_lanes or 0) * (c.gpsimd_ghz or 0) * 1e9 * c.physical
        self.g_rate = g or v_rate

    # -- pieces -------------------------------------------------------------------------------
    def _evacuate(self, w: np.ndarray, elements: float) -> None:
        if elements <= 0:
            return
        c = self.core
        t = elements / self.evac_rate
        instr = math.ceil(elements / (c.array_rows * c.max_moving))
        sv = self.evac_share_vector
        w[MECH_INDEX["vector", "evacuation"]] += t * sv
        w[MECH_INDEX["scalar", "evacuation"]] += t * (1 - sv)
        w[MECH_INDEX["vector", "instructions"]] += instr * sv * c.instruction_cycles / (c.vector_ghz * 1e9)
        w[MECH_INDEX["scalar", "instructions"]] += (instr * (1 - sv) * c.instruction_cycles
                                                    / (c.scalar_ghz * 1e9))

    def _transpose(self, w: np.ndarray, elements: float) -> None:
        """TensorE PF-transposes (identity matmuls, 128 elements per cycle) and their evacuation."""
        if elements <= 0:
            return
        w[MECH_INDEX["tensor", "transpose"]] += elements / self.core.array_rows / self.t_hz
        self._evacuate(w, elements)

    def _elementwise(self, w: np.ndarray, elements: float, passes: tuple[float, float, float]) -> None:
        c = self.core
        pv, ps, pg = passes
        w[MECH_INDEX["vector", "elementwise"]] += pv * elements / self.v_rate
        w[MECH_INDEX["scalar", "elementwise"]] += ps * elements / self.s_rate
        w[MECH_INDEX["gpsimd", "elementwise"]] += pg * elements / self.g_rate
        tiles = math.ceil(elements / (c.array_rows * TILE_FREE * c.physical))
        cost = tiles * c.instruction_cycles
        w[MECH_INDEX["vector", "instructions"]] += math.ceil(pv) * cost / (c.vector_ghz * 1e9)
        w[MECH_INDEX["scalar", "instructions"]] += math.ceil(ps) * cost / (c.scalar_ghz * 1e9)

    def _dma(self, w: np.ndarray, nbytes: float, mechanism: str, transfer_bytes: float | None = None) -> None:
        """Bulk transfers (weights, spilled and saved activations) are large and prefetched: the
        DMA guide's per-transfer cost is amortised (bandwidth only). Transfers of ``transfer_bytes``
        generated at run time (embedding rows, cache blocks) each pay it on their engine."""
        if nbytes <= 0:
            return
        c = self.core
        w[MECH_INDEX["dma", mechanism]] += nbytes / self.dma_bps
        if transfer_bytes is not None:
            transfers = math.ceil(nbytes / max(1.0, min(transfer_bytes, c.dma_transfer_bytes)))
            w[MECH_INDEX["dma", "transfers"]] += transfers * c.dma_transfer_s / (c.dma_engines * c.physical)

    # -- kernels ------------------------------------------------------------------------------
    def work(self, k: Kernel, batch: int, saved_bytes: float = 0.0) -> np.ndarray:
        """Busy seconds per mechanism (:data:`MECHANISMS`) of ``k`` for ``batch`` samples.
        ``saved_bytes``: activations per sample this kernel writes (forward) or reads back
        (backward) for the backward pass."""
        w = np.zeros(len(MECHANISMS))
        if k.kind == "matmul":
            self._matmul(w, k, batch)
        elif k.kind == "attention":
            self._attention(w, k, batch)
        elif k.kind == "gather":
            self._gather(w, k, batch)
        elif k.kind == "optimizer":  # per step: fp32 state streamed, ~6 vector passes per parameter
            self._dma(w, k.bytes, "weights")
            self._elementwise(w, k.flops / OPTIMIZER_FLOPS_PER_PARAM, (6, 0, 0))
        else:
            elements = float(k.shape) * batch
            self._elementwise(w, elements, _passes(k, self.norm))
            if self.norm == "layernorm" and _base(k.name).endswith("norm"):
                self._transpose(w, elements * (4 if k.phase == "backward" else 2))
            self._activations(w, k.bytes, batch)
        self._dma(w, saved_bytes * batch, "activations")
        return w

    def _activations(self, w: np.ndarray, per_sample: float, batch: int) -> None:
        """A kernel's inputs and outputs go through device memory when one sample's do not fit
        the SBUF share (the compiler tiles a batch, not one sample's rows, across kernels)."""
        if per_sample > SPILL_SHARE * self.sbuf_bytes:
            self._dma(w, per_sample * batch, "activations")

    def _matmul(self, w: np.ndarray, k: Kernel, batch: int) -> None:
        assert k.dims is not None
        count, m, kk, n = k.dims
        b = BYTES_PER_DTYPE[k.dtype]
        bwd = k.phase == "backward"
        if bwd:
            count //= 2  # backward_of doubles the count: input and weight gradients
        act = count * (m * kk + m * n) * b * (2 if bwd else 1)
        if k.weights:
            rows = m * batch
            mdt = self.weight_matmul_dtype or k.dtype
            fwd_c, _ = mm_cycles(self.core, rows, kk, n, mdt)
            cycles = fwd_c
            evac = rows * n
            if bwd:
                dx, _ = mm_cycles(self.core, rows, n, kk, mdt)  # dY . W^T
                dw, _ = mm_cycles(self.core, kk, rows, n, mdt)  # X^T . dY, tokens contracted
                cycles = dx + dw
                evac = rows * kk + kk * n
                self._transpose(w, count * (rows * (kk + n) + (kk * n if self.training else 0)))
            w[MECH_INDEX["tensor", "matmul"]] += count * cycles / self.t_hz
            self._evacuate(w, count * evac)
            # kernels built for this batch carry their weight bytes divided by it
            self._dma(w, max(k.bytes - act, 0.0) * batch, "weights")
            self._activations(w, act, batch)
            return
        # activation x activation (attention scores and context of unfused attention): per sample
        cyc, _ = mm_cycles(self.core, m, kk, n, k.dtype)
        reps = 2 if bwd else 1
        w[MECH_INDEX["tensor", "matmul"]] += batch * count * reps * cyc / self.t_hz
        self._evacuate(w, batch * count * reps * m * n)
        if _base(k.name) == "attention.context":  # P^T and V with the keys on partitions
            self._transpose(w, batch * count * reps * (m * kk + kk * n))
        self._activations(w, k.bytes, batch)

    def _attention(self, w: np.ndarray, k: Kernel, batch: int) -> None:
        """Fused (flash) attention, or one decode token's attention over its cached keys."""
        assert k.dims is not None
        heads, sq, d, sk = k.dims
        bwd = k.phase == "backward"
        if bwd:
            heads //= 2
        share = (k.executed_flops / k.flops) if k.flops else 1.0
        if bwd:
            share /= 1.25  # exec flops of the backward are 2.5x the forward's executed ones
        scores = batch * heads * sq * sk * share
        kt = math.ceil(d / self.core.array_rows)
        r = self.core.array_rows
        if sq == 1:  # decode: q . K^T and p . V per head, keys and values read from the cache
            qk, _ = mm_cycles(self.core, 1, d, sk, k.dtype)
            pv, _ = mm_cycles(self.core, 1, sk, d, k.dtype)
            w[MECH_INDEX["tensor", "matmul"]] += batch * heads * (qk + pv) / self.t_hz
            self._evacuate(w, 2 * scores)
            self._elementwise(w, scores, (2, 1, 0))
            kv_bytes = k.bytes * batch
            self._dma(w, kv_bytes, "activations", transfer_bytes=min(self.core.dma_transfer_bytes,
                                                                     max(1.0, kv_bytes / heads)))
            return
        mm = 5 if bwd else 2  # S = QK^T, O = PV; backward: S, dP, dV, dQ, dK
        tr = 2 if bwd else 1  # P (and dS) transposed for the products over keys
        w[MECH_INDEX["tensor", "matmul"]] += scores * mm * kt / r / self.t_hz
        vd = batch * heads * sk * d
        self._transpose(w, scores * tr + vd * (4 if bwd else 1))
        self._evacuate(w, scores * (3 if bwd else 1) + vd * (3 if bwd else 1))
        self._elementwise(w, scores, ATTENTION_PASSES[1 if bwd else 0])
        if share < 1:  # causal: GpSimdE masks the diagonal blocks
            self._elementwise(w, batch * heads * sq * min(sk, r), (0, 0, 1))
        self._activations(w, k.bytes, batch)

    def _gather(self, w: np.ndarray, k: Kernel, batch: int) -> None:
        """Embedding lookups: one DMA transfer per looked-up row, then the sum of the tables."""
        lookups, rest = k.shape.split("x[", 1)
        s, h = (int(v) for v in rest.rstrip("]").split("x"))
        n = int(lookups)
        row = h * BYTES_PER_DTYPE[k.dtype]
        self._dma(w, k.bytes * batch, "activations", transfer_bytes=row)
        if n > 1:
            self._elementwise(w, (n - 1) * s * h * batch, (2, 0, 0))

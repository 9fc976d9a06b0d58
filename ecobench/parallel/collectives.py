"""Collectives on one fabric: latency + bandwidth (the alpha-beta model).

Every function takes ``nbytes`` as the size of the whole buffer, ``peers`` as the group size,
``gb_per_s`` as the bandwidth each member can drive in one direction, and ``latency_s`` per step;
all accept numpy arrays and broadcast. The algorithms are bandwidth-optimal with logarithmic
latency, as the collective libraries choose for messages of every size (recursive halving and
doubling: Thakur, Rabenseifner and Gropp, "Optimization of collective communication operations in
MPICH", IJHPCA 2005; NCCL switches to tree and low-latency protocols for small messages): an
all-gather or a reduce-scatter moves (n-1)/n of the buffer in ceil(log2 n) steps, an all-reduce
twice that. Large collectives are bandwidth-bound; the decode steps of LLM serving, whose
tensor-parallel all-reduces carry a few kilobytes, are latency-bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = Any  # float or numpy array


def all_gather_s(nbytes: Array, peers: Array, gb_per_s: Array, latency_s: Array) -> Array:
    """Ring all-gather (or reduce-scatter) of a buffer of ``nbytes`` over ``peers``."""
    n = np.maximum(peers, 1)
    steps = np.ceil(np.log2(n))
    return np.where(n > 1, steps * latency_s + (n - 1) / n * nbytes / (gb_per_s * 1e9), 0.0)


reduce_scatter_s = all_gather_s


def all_reduce_s(nbytes: Array, peers: Array, gb_per_s: Array, latency_s: Array) -> Array:
    """Ring all-reduce: a reduce-scatter followed by an all-gather."""
    return 2 * all_gather_s(nbytes, peers, gb_per_s, latency_s)


def send_s(nbytes: Array, gb_per_s: Array, latency_s: Array) -> Array:
    """One point-to-point transfer."""
    return latency_s + nbytes / (gb_per_s * 1e9)


def hierarchical_all_reduce_s(nbytes: Array, peers: Array, peers_per_node: Array, intra_gb_per_s: Array,
                              intra_latency_s: Array, inter_gb_per_s: Array, inter_latency_s: Array) -> Array:
    """All-reduce over ``peers`` of which ``peers_per_node`` share an instance: reduce-scatter
    inside the instance, all-reduce of each shard across instances, all-gather inside
    (NCCL's and the Neuron collectives' two-level scheme). ``inter_gb_per_s`` is what one member
    gets of the instance network."""
    inside = np.minimum(np.maximum(peers_per_node, 1), np.maximum(peers, 1))
    nodes = np.maximum(peers, 1) / inside
    intra = all_reduce_s(nbytes, inside, intra_gb_per_s, intra_latency_s)
    inter = all_reduce_s(nbytes / inside, nodes, inter_gb_per_s, inter_latency_s)
    return intra + inter


def all_to_all_s(nbytes: Array, peers: Array, peers_per_node: Array, intra_gb_per_s: Array,
                 intra_latency_s: Array, inter_gb_per_s: Array, inter_latency_s: Array,
                 inter_share: Array = 1.0) -> Array:
    """All-to-all of a buffer of ``nbytes`` per member over ``peers`` (expert parallelism's dispatch
    or combine): each member keeps ``1/peers`` and sends the rest, the share bound for members on
    other instances over the instance network (``inter_gb_per_s``: what one member gets of it), the
    rest over the instance link; the two proceed at once (NCCL's pairwise exchange). Latency: one
    step per peer on each fabric, as the pairwise algorithm sends to each in turn. ``inter_share``
    scales the bytes that cross instances (a deduplicated dispatch sends fewer)."""
    n = np.maximum(peers, 1)
    inside = np.minimum(np.maximum(peers_per_node, 1), n)
    intra = (inside - 1) / n * nbytes / (intra_gb_per_s * 1e9) + (inside - 1) * intra_latency_s
    inter = ((n - inside) / n * nbytes * inter_share / (inter_gb_per_s * 1e9)
             + np.ceil(n / inside - 1) * inter_latency_s)
    return np.where(n > 1, np.maximum(intra, inter), 0.0)

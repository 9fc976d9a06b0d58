"""Context parallelism: ``c`` ranks split every sequence's tokens, so each computes and stores
``1/c`` of a micro-batch's activations (causal attention balanced over the ranks by giving each two
mirrored chunks, as Megatron-Core's context parallelism does), and the attention exchanges keys and
values on the fabric the context group spans.

* ``ring`` (Megatron-Core ``cp_comm_type: p2p``; Liu et al., "Ring Attention", 2023): each layer's
  forward passes the rank's key/value chunk around the ring ``c - 1`` times, overlapping the
  attention blocks it computes; the backward passes keys/values and their gradients (twice the
  bytes), overlapping the attention backward.
* ``all_to_all`` (DeepSpeed-Ulysses, Jacobs et al., 2023): an all-to-all of queries, keys and
  values before attention and of its output after, each rank then holding whole sequences for
  ``heads / c`` heads; on the critical path, the same again in the backward pass.

Ranks are ordered tensor, then context, then data, then pipeline (Megatron's order): the context
group stays inside an instance while ``tensor x context`` fits in one.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from ecobench.parallel.collectives import all_gather_s, send_s

ContextComm = Literal["ring", "all_to_all"]
CONTEXT_COMMS: tuple[ContextComm, ...] = ("ring", "all_to_all")


def context_layer_comm_s(comm: Any, c: Any, b: Any, kv_bytes: Any, qkvo_bytes: Any, att_fwd_s: Any,
                         link_gb_per_s: Any, latency_s: Any, exposed: Any, forwards: Any = 1) -> Any:
    """Exposed seconds of one layer's context-parallel communication per micro-batch on one rank
    (forward ``forwards`` times, as with full recomputation, and backward once). ``kv_bytes`` and
    ``qkvo_bytes`` are per sample over the whole sequence on one tensor-parallel rank;
    ``att_fwd_s`` is the rank's attention-core forward time (the ring's overlap window)."""
    c = np.asarray(c)
    chunk = b * kv_bytes / np.maximum(c, 1)
    hops = np.maximum(c - 1, 0)
    ring_fwd = hops * send_s(chunk, link_gb_per_s, latency_s)
    ring = forwards * exposed(ring_fwd, att_fwd_s) + exposed(2 * ring_fwd, 2 * att_fwd_s)
    a2a_pass = all_gather_s(b * qkvo_bytes / np.maximum(c, 1), c, link_gb_per_s, latency_s)
    a2a = (forwards + 1) * a2a_pass
    return np.where(c > 1, np.where(comm == 1, a2a, ring), 0.0)
